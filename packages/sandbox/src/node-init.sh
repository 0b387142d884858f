#!/bin/sh
# Becomes PID 1 of one sandbox node. Started by `decom sandbox up` under
#   unshare --net --mount --uts --ipc --pid --cgroup --fork --propagation private
# so every mount, link, rule and process made here or later on the node stays
# invisible to the host and to the other nodes, and dies with this process.
#
# Environment (set by the host side, node.ts):
#   NODE_NAME      hostname of the node
#   NODE_ADDR      address/prefix of its uplink (eth0, a macvlan)
#   NODE_INIT      systemd | none
#   NODE_FILES     host folder whose tree is copied over the node's root
#   NODE_GO        fifo: the host writes one line once eth0 is in our netns
#   CHECKOUT_DIR   the checkout (both packages), bound read-only at the same path
#   NODE_BINDS     lines "HOST_PATH|NODE_PATH": the node's container runtime when it is
#                  not the host's (runtimes.ts), bound read-only over the host's files
#   NODE_TMPFS     more dirs (space-separated, absolute) that get a tmpfs of their own:
#                  a containerd root moved away from /var/lib/containerd
set -eu

fail() { echo "node-init: $*" >&2; exit 1; }

read -r _go < "$NODE_GO" || fail "no go from the host"
[ -e /sys/class/net/eth0 ] || [ -n "$(ip -o link show eth0 2>/dev/null)" ] || fail "eth0 was not moved in"

# A private writable root: overlayfs over the host's / with a tmpfs upper.
base=$NODE_FILES/.mnt
mkdir -p "$base"
mount -t tmpfs -o mode=0755 decom-node "$base"
mkdir -p "$base/upper" "$base/work" "$base/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$base/upper,workdir=$base/work" "$base/root"
R=$base/root

# Kernel file systems as a container gets them (nspawn's layout): /proc/sys and
# /sys read-only, except the node's own network settings.
mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
mount --bind "$R/proc/sys" "$R/proc/sys"
mount --bind "$R/proc/sys/net" "$R/proc/sys/net"
mount -o remount,bind,ro "$R/proc/sys"
mount -o remount,bind,rw "$R/proc/sys/net"
# No rebooting the host from a node, no poking its IRQs or buses.
for p in sysrq-trigger irq bus; do
  [ -e "$R/proc/$p" ] || continue
  mount --bind "$R/proc/$p" "$R/proc/$p"
  mount -o remount,bind,ro "$R/proc/$p"
done
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$R/sys"

# Cgroups: the host hierarchies seen through our cgroup namespace, so the node's
# root is the cgroup the host made for it (v1 controllers, name=systemd, and v2).
mount -t tmpfs -o mode=0755,nosuid,nodev,noexec cgroup "$R/sys/fs/cgroup"
for h in /sys/fs/cgroup/*; do
  [ -L "$h" ] && continue # co-mounted hierarchies (cpu,cpuacct) also appear as symlinks
  n=${h##*/}
  mkdir -p "$R/sys/fs/cgroup/$n"
  case $n in
    unified) mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$R/sys/fs/cgroup/$n" ;;
    systemd) mount -t cgroup -o nosuid,nodev,noexec,none,name=systemd cgroup "$R/sys/fs/cgroup/$n" ;;
    *) mount -t cgroup -o "nosuid,nodev,noexec,$n" cgroup "$R/sys/fs/cgroup/$n" ;;
  esac
done

# A private /dev: a handful of device nodes, its own pty instance.
mount -t tmpfs -o mode=0755,nosuid decom-dev "$R/dev"
for d in null zero full random urandom tty; do
  : > "$R/dev/$d"
  mount --bind "/dev/$d" "$R/dev/$d"
done
# The console is the node's console.log on the host: what systemd says at boot
# (and why it died, if it did) stays readable there.
: > "$R/dev/console"
mount --bind "$NODE_FILES/console.log" "$R/dev/console"
mkdir -p "$R/dev/pts" "$R/dev/shm" "$R/dev/mqueue"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "$R/dev/pts"
ln -s pts/ptmx "$R/dev/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$R/dev/shm"
ln -s /proc/self/fd "$R/dev/fd"
ln -s /proc/self/fd/0 "$R/dev/stdin"
ln -s /proc/self/fd/1 "$R/dev/stdout"
ln -s /proc/self/fd/2 "$R/dev/stderr"

# Runtime dirs. containerd's and Docker's snapshotters cannot sit on overlayfs,
# so their state gets a tmpfs of its own (and a moved containerd root, NODE_TMPFS).
# A fresh /root hides the host's dotfiles.
for d in run tmp root var/lib/containerd var/lib/docker ${NODE_TMPFS:-}; do
  d=${d#/}
  mkdir -p "$R/$d"
  mount -t tmpfs -o mode=0755 "decom-$(echo "$d" | tr / -)" "$R/$d"
done
chmod 1777 "$R/tmp"
mkdir -p "$R/run/lock" "$R/run/sshd"

# decom itself (the kubelet stand-in runs from it), read-only at the same path.
if [ -n "${CHECKOUT_DIR:-}" ]; then
  mkdir -p "$R$CHECKOUT_DIR"
  mount --bind "$CHECKOUT_DIR" "$R$CHECKOUT_DIR"
  mount -o remount,bind,ro "$R$CHECKOUT_DIR"
fi

# The node's own containerd version (and CNI plugins): over the host's, for this node only.
while IFS='|' read -r src dst; do
  [ -n "$src" ] || continue
  [ -e "$src" ] || fail "runtime file $src is missing (run scripts/setup again)"
  # A program the host's package lacks: its mount point made on the node's own overlay.
  if [ ! -e "$R$dst" ]; then
    mkdir -p "$(dirname "$R$dst")"
    if [ -d "$src" ]; then mkdir "$R$dst"; else : > "$R$dst"; fi
  fi
  mount --bind "$src" "$R$dst" || fail "could not bind the node's runtime file $src over $dst"
  mount -o remount,bind,ro "$R$dst"
done <<EOF
${NODE_BINDS:-}
EOF

# The sandbox's shared storage, the same dir on every node (an NFS export's stand-in).
if [ -n "${SHARED_DIR:-}" ]; then
  mkdir -p "$R$SHARED_MOUNT"
  mount --bind "$SHARED_DIR" "$R$SHARED_MOUNT"
fi

# The node's own files: host key, authorized_keys, sshd drop-in, units, machine-id.
cp -a "$NODE_FILES/rootfs/." "$R/"

hostname "$NODE_NAME"
ip link set lo up
ip addr add "$NODE_ADDR" dev eth0
ip link set eth0 up

if [ "$NODE_INIT" = systemd ]; then
  # Units that cannot work in a container are masked; services the image enables
  # but a Kubernetes node does not run at boot are disabled.
  for u in systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket \
      systemd-udev-trigger.service systemd-udev-settle.service systemd-modules-load.service \
      systemd-timesyncd.service systemd-remount-fs.service systemd-sysctl.service \
      systemd-journald-audit.socket systemd-logind.service console-getty.service \
      getty@tty1.service getty.target serial-getty@.service sys-kernel-debug.mount \
      sys-kernel-tracing.mount sys-kernel-config.mount sys-fs-fuse-connections.mount \
      dev-hugepages.mount dev-mqueue.mount proc-sys-fs-binfmt_misc.automount \
      systemd-binfmt.service systemd-networkd.service systemd-resolved.service \
      apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_all.timer \
      e2scrub_reap.service fstrim.timer logrotate.timer dpkg-db-backup.timer; do
    ln -sf /dev/null "$R/etc/systemd/system/$u"
  done
  rm -f "$R/etc/systemd/system/multi-user.target.wants/docker.service" \
        "$R/etc/systemd/system/sockets.target.wants/docker.socket" \
        "$R/etc/systemd/system/multi-user.target.wants/postgresql.service" \
        "$R/etc/systemd/system/multi-user.target.wants/etcd.service"
  mkdir -p "$R/etc/systemd/journald.conf.d"
  printf '[Journal]\nStorage=volatile\nRuntimeMaxUse=2M\n' > "$R/etc/systemd/journald.conf.d/decom-sandbox.conf"
fi

cd "$R"
mkdir -p .oldroot
pivot_root . .oldroot
umount -l /.oldroot
rmdir /.oldroot
cd /
# As on a real node, where systemd makes every mount shared at boot (it skips that in
# a container, which this node must not look like to the kubelet's runtime): a pod's
# HostToContainer volume needs its source shared or slave, or containerd refuses it.
# The peer groups made here are the node's own: nothing propagates to the host.
mount --make-rshared /

# No module loading, no clock setting, no raw I/O: as in any container.
drop="--bounding-set -sys_module,-sys_time,-sys_rawio"
if [ "$NODE_INIT" = systemd ]; then
  exec setpriv $drop -- env -i container=lxc PATH=/usr/sbin:/usr/bin:/sbin:/bin /lib/systemd/systemd
fi
# Without systemd: tini reaps orphans (a killed shim's container lands here),
# sshd and containerd run as plain processes, children of tini (hence the subshell).
exec setpriv $drop -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/bin/tini -s -- /bin/sh -c '
  /usr/sbin/sshd -E /var/log/sshd.log
  (setsid /usr/bin/containerd </dev/null >/var/log/containerd.log 2>&1 &)
  exec sleep infinity'
