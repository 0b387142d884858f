# Building blocks of the sandbox scenarios. Sourced (with one scenario file after
# it) into a shell that runs inside a node, in all of the node's namespaces.
# Every object is real: netns, links, mounts, iptables rules in both backends,
# containerd tasks, listening sockets (the catalogue they come from:
# docs/design.md#the-residue-catalogue). Pods run through containerd's CRI (the
# kubelet stand-in's code), and their networks are made by the real CNI plugins
# containerd calls; what no component here can make (Calico's and Cilium's traces,
# CSI and projected volumes, kube-proxy's rules) is planted by hand, as those
# components leave it (docs/sandbox.md#fidelity-what-is-real-and-what-stands-in-for-what).
#
# Environment: NODE_NAME NODE_ADDR SUBNET_PREFIX (the instance's /24, "198.18.S.") NODE_INDEX
# ROLES INIT REAL_ETCD KUBELET_JS, and on a node whose containerd paths are moved
# (--containerd-paths moved) CONTAINERD_ADDRESS (ctr honours it), CONTAINERD_ROOT and
# CONTAINERD_STATE. Daemons started here do not get
# those three: an init would not pass them on, and decom must find the paths itself.
# stdin: the busybox image tar (docker-archive + OCI layout)
set -eu

: "${KUBELET_JS:?}"
IMAGE=registry.k8s.io/busybox:sandbox
PIDS=/run/decom-sandbox
mkdir -p "$PIDS" /var/log

running() { s=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) && [ "$s" != Z ]; } # zombies do not count
has_role() { case ",$ROLES," in *",$1,"*) return 0 ;; esac; return 1; }
uuid() { cat /proc/sys/kernel/random/uuid; }
hex() { uuid | tr -d - | cut -c1-"$1"; }

# The nsenter'd shell starts in the host's cgroup; join the node's own, so what it
# starts (plain processes on init-less nodes) is accounted to the node.
for f in /sys/fs/cgroup/*/cgroup.procs; do echo $$ > "$f" 2>/dev/null || true; done

wait_port() { # port [seconds]: until something listens on it
  n=$(( ${2:-30} * 10 ))
  while [ "$n" -gt 0 ]; do
    [ -n "$(ss -Hltn "sport = :$1")" ] && return 0
    n=$((n - 1)); sleep 0.1
  done
  echo "nothing listens on :$1 after ${2:-30} s" >&2; return 1
}

wait_containerd() {
  n=100
  until ctr version >/dev/null 2>&1; do
    n=$((n - 1)); [ "$n" -gt 0 ] || { echo "containerd does not answer" >&2; return 1; }
    sleep 0.1
  done
}

# --- services: systemd units on systemd nodes, plain processes (pid files) otherwise
svc_start() { # name
  if [ "$INIT" = systemd ]; then systemctl enable --now "$1" >/dev/null 2>&1 || systemctl start "$1"; return; fi
  daemon="env -u CONTAINERD_ADDRESS -u CONTAINERD_ROOT -u CONTAINERD_STATE setsid"
  case $1 in
    kubelet) # The drop-in's args when the node joined (join_cluster), as systemd passes them on every start.
             args=${KUBELET_KUBECONFIG_ARGS:-$(cat "$PIDS/kubelet.args" 2>/dev/null || true)}
             # shellcheck disable=SC2086 # the args are words, as systemd splits $VAR
             $daemon /usr/bin/node "$KUBELET_JS" $args </dev/null >/var/log/kubelet.log 2>&1 & echo $! > "$PIDS/kubelet.pid" ;;
    docker) $daemon /usr/sbin/dockerd </dev/null >/var/log/dockerd.log 2>&1 & echo $! > "$PIDS/docker.pid" ;;
    containerd) $daemon /usr/bin/containerd </dev/null >/var/log/containerd.log 2>&1 & echo $! > "$PIDS/containerd.pid" ;;
    etcd) . /etc/default/etcd; export $(sed -n 's/^\(ETCD_[A-Z_]*\)=.*/\1/p' /etc/default/etcd)
          $daemon /usr/bin/etcd </dev/null >/var/log/etcd.log 2>&1 & echo $! > "$PIDS/etcd.pid" ;;
  esac
}

svc_stop() { # name: as a reset would, without killing what KillMode=process leaves behind
  if [ "$INIT" = systemd ]; then systemctl disable --now "$1" >/dev/null 2>&1; return; fi
  if [ "$1" = containerd ] && [ ! -s "$PIDS/containerd.pid" ]; then
    pid=$(pgrep -x containerd || true)  # started by the node's init, before any pid file
  else
    pid=$(cat "$PIDS/$1.pid" 2>/dev/null || true)
  fi
  if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
    n=100  # like systemctl stop: return once it is gone, or a dying kubelet still acts
    while running "$pid" && [ "$n" -gt 0 ]; do n=$((n - 1)); sleep 0.1; done
  fi
  rm -f "$PIDS/$1.pid"
}

import_image() { # into containerd's k8s.io and default namespaces (and Docker when asked)
  mkdir -p /var/lib/decom-sandbox
  [ -s /var/lib/decom-sandbox/busybox.tar ] || cat > /var/lib/decom-sandbox/busybox.tar
  wait_containerd
  for ns in k8s.io default; do ctr -n "$ns" image import /var/lib/decom-sandbox/busybox.tar >/dev/null; done
}

# --- pods
static_pod() { # name container-cmd...: a manifest the kubelet (stand-in) runs
  name=$1; shift
  mkdir -p /etc/kubernetes/manifests
  {
    echo "apiVersion: v1"
    echo "kind: Pod"
    echo "metadata:"
    echo "  name: $name"
    echo "  namespace: kube-system"
    echo "  labels: {component: $name, tier: control-plane}"
    echo "spec:"
    echo "  hostNetwork: true"
    echo "  priorityClassName: system-node-critical"
    echo "  containers:"
    echo "  - name: $name"
    echo "    image: $IMAGE"
    printf '    command: ['
    sep=''
    for a in "$@"; do printf '%s"%s"' "$sep" "$a"; sep=', '; done
    echo ']'
  } > "/etc/kubernetes/manifests/$name.yaml"
}

# A pod the kubelet ran while it was a cluster member, through CRI (kubelet.js run-pod):
# prints "uid sandbox-id netns pod-ip" (netns "host" and pod-ip "-" on the host network).
# containerd loads the CNI config a moment after it is written, and its CRI serves a moment
# after containerd answers: retried until then.
run_pod() { # pod-name namespace container [--host-network] [--host-port P] [--memory-volume N:PATH] -- cmd...
  n=50
  until out=$(node "$KUBELET_JS" run-pod "$@" 2>&1); do
    n=$((n - 1))
    case $out in *"not initialized"*|*"cni config"*) [ "$n" -gt 0 ] && { sleep 0.2; continue; } ;; esac
    echo "$out" >&2; return 1
  done
  printf '%s\n' "$out"
}

host_pod() { # pod-name namespace container cmd...: a hostNetwork pod (DaemonSet-style); prints its uid
  pod=$1 ns=$2 c=$3; shift 3
  run_pod "$pod" "$ns" "$c" --host-network -- "$@" | cut -d' ' -f1
}

# The pod network's config, as a flannel node carries it once flannel's delegate is
# resolved: the bridge plugin on cni0 (gateway, masquerade), host-local IPAM on the
# node's podCIDR, portmap for hostPorts. containerd calls them from /usr/lib/cni.
cni_config() {
  mkdir -p /etc/cni/net.d
  cat > /etc/cni/net.d/10-containerd-net.conflist <<EOF
{"cniVersion":"0.4.0","name":"cbr0","plugins":[
 {"type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":true,"hairpinMode":true,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.244.$NODE_INDEX.0/24"}]],"routes":[{"dst":"0.0.0.0/0"}]}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}
EOF
}

# Calico's traces of a pod, planted by hand (there is no Calico CNI plugin here): its
# cni-* netns, the cali* host veth and the pod's /32 route. Calico's IPAM keeps no
# host-local lease. Prints the netns.
calico_pod_traces() {
  netns=cni-$(uuid)
  ip netns add "$netns"
  podip=10.233.$((64 + NODE_INDEX)).$((2 + $(ip -o link show | grep -c ' cali' || true)))
  host_if=cali$(hex 11)
  ip link add "$host_if" type veth peer name eth0 netns "$netns"
  ip link set "$host_if" up
  ip -n "$netns" addr add "$podip/32" dev eth0
  ip -n "$netns" link set lo up
  ip -n "$netns" link set eth0 up
  ip route add "$podip/32" dev "$host_if"
  echo "$netns"
}

# What a runtime that lost its state leaves (a crash, then a reinstall or a failed
# upgrade that wiped its root and state, /var/lib/containerd and /run/containerd unless
# moved): the kubelet stopped,
# containerd killed with its shims and every pod process (no CNI DEL ran), its mounts
# gone with the wipe, then containerd started again knowing nothing. Netns, veths,
# leases, CNI chains, pod dirs with their volume mounts and pod cgroups stay.
lose_runtime_state() {
  svc_stop kubelet
  for p in $(grep -l -E ':/(kubepods|k8s\.io)' /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3) $(pgrep -f '^/usr/bin/containerd-shim') $(pgrep -x containerd); do
    kill -9 "$p" 2>/dev/null || true
  done
  if [ "$INIT" = systemd ]; then systemctl kill -s KILL containerd >/dev/null 2>&1; systemctl stop containerd >/dev/null 2>&1; fi
  sleep 0.3
  root=${CONTAINERD_ROOT:-/var/lib/containerd} state=${CONTAINERD_STATE:-/run/containerd}
  grep -F " $state/" /proc/self/mountinfo | cut -d' ' -f5 | sort -r | while read -r m; do umount "$m"; done
  rm -rf "${root:?}"/* "${state:?}"/*
  rm -f "$PIDS/containerd.pid"
  svc_start containerd
  wait_containerd
  for ns in k8s.io default; do ctr -n "$ns" image import /var/lib/decom-sandbox/busybox.tar >/dev/null; done
}

# Volumes the kubelet and a CSI driver mount, planted by hand beside a pod's own
# (its memory emptyDir is the kubelet's: run_pod --memory-volume): a disk emptyDir,
# a projected service-account token (tmpfs), and a CSI volume: the driver's
# globalmount (staged) bound into the pod dir (published), with data that must survive.
# The token volume's name ends in apimachinery's rand.String: no vowels, no look-alikes.
randname() { # length
  _rn=''
  while [ "${#_rn}" -lt "$1" ]; do _rn=$_rn$(head -c 32 /dev/urandom | tr -dc 'bcdfghjklmnpqrstvwxz2456789'); done
  printf '%s' "$_rn" | cut -c1-"$1"
}
pod_volumes() { # uid
  d=/var/lib/kubelet/pods/$1
  mkdir -p "$d/containers" "$d/plugins" "$d/volumes/kubernetes.io~empty-dir/scratch"
  # What the pod wrote to its memory emptyDir (the kubelet's tmpfs), if it has one.
  [ -d "$d/volumes/kubernetes.io~empty-dir/cache" ] && echo "cached" > "$d/volumes/kubernetes.io~empty-dir/cache/data"
  tok=$d/volumes/kubernetes.io~projected/kube-api-access-$(randname 5)
  mkdir -p "$tok"
  mount -t tmpfs -o size=1m tmpfs "$tok"
  echo "eyJhbGciOiJSUzI1NiJ9.sandbox" > "$tok/token"
  echo kube-system > "$tok/namespace"
  cp /etc/kubernetes/pki/ca.crt "$tok/ca.crt" 2>/dev/null || : > "$tok/ca.crt"
  pv=pvc-$(uuid)
  g=/var/lib/kubelet/plugins/kubernetes.io/csi/csi.sandbox.decom.io/$(hex 32)/globalmount
  mkdir -p "$g" "$d/volumes/kubernetes.io~csi/$pv/mount"
  mount -t tmpfs -o size=16m "csi-$pv" "$g"
  echo "persistent data of $pv" > "$g/PV-DATA"
  printf '{"driverName":"csi.sandbox.decom.io","volumeHandle":"%s"}' "$pv" > "$(dirname "$g")/vol_data.json"
  mount --bind "$g" "$d/volumes/kubernetes.io~csi/$pv/mount"
  printf '{"driverName":"csi.sandbox.decom.io","volumeHandle":"%s","specVolID":"%s"}' "$pv" "$pv" > "$d/volumes/kubernetes.io~csi/$pv/vol_data.json"
}

cni_links() { # overlay devices of flannel and calico
  ip link add flannel.1 type vxlan id 1 local "$NODE_ADDR" dev eth0 dstport 8472 nolearning
  ip link set flannel.1 up
  ip link add vxlan.calico type vxlan id 4096 local "$NODE_ADDR" dev eth0 dstport 4789
  ip link set vxlan.calico up
}

# kube-proxy, kubelet, flannel and calico chains, the same in BOTH iptables backends:
# nodes that switched backends (or ran two kube-proxy versions) carry both.
kube_iptables() {
  for ipt in iptables iptables-legacy; do
    "$ipt" -w -t nat -N KUBE-SERVICES
    "$ipt" -w -t nat -N KUBE-NODEPORTS
    "$ipt" -w -t nat -N KUBE-POSTROUTING
    "$ipt" -w -t nat -N KUBE-MARK-MASQ
    "$ipt" -w -t nat -N KUBE-SVC-NPX46M4PTMTKRN6Y
    "$ipt" -w -t nat -N KUBE-SEP-6E7XQMQ4RAYOWTTM
    "$ipt" -w -t nat -A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
    "$ipt" -w -t nat -A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
    "$ipt" -w -t nat -A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
    "$ipt" -w -t nat -A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
    "$ipt" -w -t nat -A KUBE-SERVICES -d 10.233.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y
    "$ipt" -w -t nat -A KUBE-SVC-NPX46M4PTMTKRN6Y -j KUBE-SEP-6E7XQMQ4RAYOWTTM
    "$ipt" -w -t nat -A KUBE-SEP-6E7XQMQ4RAYOWTTM -p tcp -m tcp -j DNAT --to-destination "$NODE_ADDR:6443"
    "$ipt" -w -t filter -N KUBE-FIREWALL
    "$ipt" -w -t filter -N KUBE-FORWARD
    "$ipt" -w -t filter -A INPUT -j KUBE-FIREWALL
    "$ipt" -w -t filter -A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
    "$ipt" -w -t filter -A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
    "$ipt" -w -t mangle -N KUBE-KUBELET-CANARY
    if [ "$ipt" = iptables-legacy ]; then  # an older portmap's, from before the switch to nft (the nft one is portmap's own)
      "$ipt" -w -t nat -N CNI-HOSTPORT-DNAT
      "$ipt" -w -t nat -A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
    fi
    "$ipt" -w -t filter -N FLANNEL-FWD
    "$ipt" -w -t filter -A FLANNEL-FWD -s 10.244.0.0/16 -m comment --comment "flanneld forward" -j ACCEPT
    "$ipt" -w -t filter -A FORWARD -m comment --comment "flanneld forward" -j FLANNEL-FWD
    "$ipt" -w -t filter -N cali-FORWARD
    "$ipt" -w -t filter -A FORWARD -m comment --comment "cali:wUHhoiAYhphO9Mso" -j cali-FORWARD
  done
}

kube_nftables() { # kube-proxy's nftables mode
  nft -f - <<'EOF'
table ip kube-proxy {
  chain services { type nat hook prerouting priority dstnat; policy accept; }
  chain filter-forward { type filter hook forward priority -110; policy accept; }
}
table ip6 kube-proxy {
  chain services { type nat hook prerouting priority dstnat; policy accept; }
}
EOF
}

calico_nftables() { # Calico Felix's nftables dataplane (GA in v3.31)
  # Tables from felix/dataplane/linux/int_dataplane.go: NewTable("calico", 4|6) and, from
  # v3.32, NewARPTable("calico-arp"). Base chains from felix/nftables/table.go `baseChains`
  # (stored commit a91c52b8, the v3.29-v3.31 shape). Chains are "<layer>-<name>".
  # calico-arp's base chain is not named in the source read, so filter-OUTPUT is a guess.
  nft -f - <<'EOF'
table ip calico {
  set cali40masq-ipam-pools { type ipv4_addr; flags interval; elements = { 10.233.64.0/18 }; }
  set cali40all-ipam-pools { type ipv4_addr; flags interval; elements = { 10.233.64.0/18 }; }
  chain filter-cali-FORWARD { }
  chain filter-cali-INPUT { }
  chain nat-cali-PREROUTING { }
  chain nat-cali-nat-outgoing { ip saddr @cali40masq-ipam-pools ip daddr != @cali40all-ipam-pools counter masquerade fully-random; }
  chain nat-cali-POSTROUTING { counter jump nat-cali-nat-outgoing; }
  chain mangle-cali-PREROUTING { }
  chain raw-cali-PREROUTING { }
  chain filter-FORWARD { type filter hook forward priority filter; policy accept; counter jump filter-cali-FORWARD comment "cali:wUHhoiAYhphO9Mso"; }
  chain filter-INPUT { type filter hook input priority filter; policy accept; counter jump filter-cali-INPUT comment "cali:Cz_u1IQiXIMmKD4c"; }
  chain nat-PREROUTING { type nat hook prerouting priority dstnat; policy accept; counter jump nat-cali-PREROUTING comment "cali:6gwbT8clXdHdC1b1"; }
  chain nat-POSTROUTING { type nat hook postrouting priority srcnat; policy accept; counter jump nat-cali-POSTROUTING comment "cali:O3lYWMrLQYEMJtB5"; }
  chain mangle-PREROUTING { type filter hook prerouting priority mangle; policy accept; counter jump mangle-cali-PREROUTING; }
  chain raw-PREROUTING { type filter hook prerouting priority raw; policy accept; counter jump raw-cali-PREROUTING; }
}
table ip6 calico {
  chain filter-cali-FORWARD { }
  chain filter-FORWARD { type filter hook forward priority filter; policy accept; counter jump filter-cali-FORWARD comment "cali:wUHhoiAYhphO9Mso"; }
  chain nat-POSTROUTING { type nat hook postrouting priority srcnat; policy accept; }
}
table arp calico-arp {
  chain filter-cali-arp-cali12345-ab { oifname "cali12345-ab" arp operation reply arp saddr ip 10.233.65.2 drop; }
  chain filter-cali-arp-dispatch { oifname "cali12345-ab" goto filter-cali-arp-cali12345-ab; }
  chain filter-OUTPUT { type filter hook output priority filter; policy accept; counter jump filter-cali-arp-dispatch; }
}
EOF
}

flannel_nftables() { # flannel's nftables mode (EnableNFTables, v0.25+)
  # pkg/trafficmngr/nftables/nftables.go (stored commits 5c96864f and 41a4a4d5): one table
  # per family, flannel-ipv4 and flannel-ipv6, each with chains postrtg and forward.
  nft -f - <<'EOF'
table ip flannel-ipv4 {
  comment "rules for flannel-ipv4"
  chain postrtg {
    comment "chain to manage traffic masquerading by flannel"
    type nat hook postrouting priority srcnat; policy accept;
    meta mark 0x4000 return
    ip saddr 10.244.1.0/24 ip daddr 10.244.0.0/16 return
    ip saddr 10.244.0.0/16 ip daddr != 224.0.0.0/4 masquerade fully-random
  }
  chain forward {
    comment "chain to accept flannel traffic"
    type filter hook forward priority filter; policy accept;
    ip saddr 10.244.0.0/16 accept
    ip daddr 10.244.0.0/16 accept
  }
}
table ip6 flannel-ipv6 {
  comment "rules for flannel-ipv6"
  chain postrtg {
    comment "chain to manage traffic masquerading by flannel"
    type nat hook postrouting priority srcnat; policy accept;
    meta mark 0x4000 return
  }
  chain forward {
    comment "chain to accept flannel traffic"
    type filter hook forward priority filter; policy accept;
    ip6 saddr fd00:10:244::/56 accept
  }
}
EOF
}

# kube-proxy's IPVS-mode sets and Calico's, one in use by a KUBE- rule (so it can go only after the rule).
kube_ipsets() {
  ipset create KUBE-CLUSTER-IP hash:ip,port
  ipset add KUBE-CLUSTER-IP 10.233.0.1,tcp:443
  ipset create KUBE-LOOP-BACK hash:ip,port,ip
  ipset create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
  ipset create cali40all-ipam-pools hash:net
  ipset add cali40all-ipam-pools 10.233.64.0/18
  ipset create cali40masq-ipam-pools hash:net
  iptables -w -t nat -A KUBE-POSTROUTING -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE
}

# Calico's BIRD (BGP mode): a blackhole for this node's pod block, and a route to a peer's;
# a kube-router BGP route too. They never carry traffic here.
bird_routes() {
  ip route add blackhole "10.233.$((64 + NODE_INDEX)).0/24" proto bird
  ip route add 10.233.120.0/24 via "${SUBNET_PREFIX}250" dev eth0 proto bird
  ip route add 10.240.3.0/24 via "${SUBNET_PREFIX}251" dev eth0 proto 17
}

# Cilium's maps, pinned where its agent pins them, on the node's own BPF filesystem.
cilium_pins() {
  bpf_fs || return 0
  mkdir -p /sys/fs/bpf/tc/globals
  for m in cilium_lxc cilium_ipcache cilium_policy_00123; do
    bpftool map create "/sys/fs/bpf/tc/globals/$m" type hash key 4 value 4 entries 16 name "${m%_00123}"
  done
}
bpf_fs() { # mounts a BPF filesystem at /sys/fs/bpf when the kernel lets the node
  findmnt -n -t bpf /sys/fs/bpf >/dev/null || mount -t bpf bpf /sys/fs/bpf 2>/dev/null
}

# What kubespray installs outside packages, under its names and paths: stand-ins
# (they say what they stand for; the etcd clients exec Debian's, which the probe
# and the sandbox's real etcd use), unit files and drop-ins, tool configs, the API
# proxy's nginx config (static pod nginx-proxy reads it), kernel settings.
kubespray_install() {
  for b in kubelet kubeadm kubectl helm calicoctl nerdctl k8s-certs-renew.sh; do
    printf '#!/bin/sh\necho "decom sandbox stand-in for kubespray'"'"'s %s"\n' "$b" > "/usr/local/bin/$b"
    chmod 755 "/usr/local/bin/$b"
  done
  for b in etcd etcdctl; do printf '#!/bin/sh\nexec /usr/bin/%s "$@"\n' "$b" > "/usr/local/bin/$b"; chmod 755 "/usr/local/bin/$b"; done
  mkdir -p /opt/cni/bin /usr/libexec/kubernetes/kubelet-plugins/volume/exec
  for b in bridge host-local loopback portmap calico calico-ipam; do printf '#!/bin/sh\nexit 0\n' > "/opt/cni/bin/$b"; chmod 755 "/opt/cni/bin/$b"; done
  mkdir -p /etc/systemd/system/kubelet.service.d /etc/systemd/system/containerd.service.d
  printf '[Service]\nEnvironment="KUBELET_EXTRA_ARGS=--node-ip=%s"\n' "$NODE_ADDR" > /etc/systemd/system/kubelet.service.d/10-kubeadm.conf
  printf '[Service]\nEnvironment="HTTP_PROXY=" "HTTPS_PROXY=" "NO_PROXY="\n' > /etc/systemd/system/containerd.service.d/http-proxy.conf
  printf '[Unit]\nDescription=Renew K8S control plane certificates\n[Service]\nType=oneshot\nExecStart=/usr/local/bin/k8s-certs-renew.sh\n' > /etc/systemd/system/k8s-certs-renew.service
  printf '[Unit]\nDescription=Timer to renew K8S control plane certificates\n[Timer]\nOnCalendar=Mon *-*-1,2,3,4,5,6,7 03:00:00\n[Install]\nWantedBy=multi-user.target\n' > /etc/systemd/system/k8s-certs-renew.timer
  mkdir -p /etc/systemd/system/timers.target.wants
  ln -sf /etc/systemd/system/k8s-certs-renew.timer /etc/systemd/system/timers.target.wants/k8s-certs-renew.timer
  sock=${CONTAINERD_ADDRESS:-/var/run/containerd/containerd.sock}
  printf 'runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 30\n' "$sock" "$sock" > /etc/crictl.yaml
  printf 'overlay\nbr_netfilter\n' > /etc/modules-load.d/kubespray-br_netfilter.conf
  mkdir -p /etc/bash_completion.d
  printf '# bash completion for kubectl (stand-in)\n' > /etc/bash_completion.d/kubectl
  mkdir -p /etc/nginx
  cat > /etc/nginx/nginx.conf <<EOF
error_log stderr notice;
worker_processes 2;
events { multi_accept on; use epoll; worker_connections 16384; }
stream {
  upstream kube_apiserver {
    least_conn;
    server $NODE_ADDR:6443;
  }
  server {
    listen 127.0.0.1:6443;
    proxy_pass kube_apiserver;
    proxy_timeout 10m;
    proxy_connect_timeout 1s;
  }
}
EOF
  # kubespray writes its settings to /etc/sysctl.d/99-sysctl.conf: on Debian the OS's link to /etc/sysctl.conf.
  printf 'net.ipv4.ip_forward=1\nnet.bridge.bridge-nf-call-iptables=1\nkernel.panic=10\n' >> /etc/sysctl.d/99-sysctl.conf
  [ -d /run/systemd/system ] && systemctl daemon-reload
  return 0
}

# /etc/kubernetes (kubeconfigs, PKI), kubelet state, CNI config: what reset must back up, then remove.
kube_files() {
  user_netns
  mkdir -p /etc/kubernetes/pki /etc/kubernetes/manifests /var/lib/kubelet/pki /etc/cni/net.d /var/lib/cni
  if [ ! -s /etc/kubernetes/pki/ca.crt ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 \
      -subj "/CN=kubernetes" -keyout /etc/kubernetes/pki/ca.key -out /etc/kubernetes/pki/ca.crt 2>/dev/null
  fi
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 \
    -subj "/O=system:nodes/CN=system:node:$NODE_NAME" -keyout /var/lib/kubelet/pki/kubelet-client.key \
    -out /var/lib/kubelet/pki/kubelet-client.crt 2>/dev/null
  cat /var/lib/kubelet/pki/kubelet-client.crt /var/lib/kubelet/pki/kubelet-client.key > "/var/lib/kubelet/pki/kubelet-client-$(date +%Y-%m-%d-%H-%M-%S).pem"
  ln -sf "$(ls /var/lib/kubelet/pki/kubelet-client-2*.pem | tail -1)" /var/lib/kubelet/pki/kubelet-client-current.pem
  kubeconfig() { # file user
    cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- cluster: {certificate-authority: /etc/kubernetes/pki/ca.crt, server: "https://127.0.0.1:6443"}
  name: cluster.local
contexts:
- context: {cluster: cluster.local, user: $2}
  name: $2@cluster.local
current-context: $2@cluster.local
users:
- name: $2
  user: {client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem, client-key: /var/lib/kubelet/pki/kubelet-client-current.pem}
EOF
    chmod 600 "$1"
  }
  kubeconfig /etc/kubernetes/kubelet.conf "system:node:$NODE_NAME"
  if has_role control-plane; then
    kubeconfig /etc/kubernetes/admin.conf kubernetes-admin
    kubeconfig /etc/kubernetes/controller-manager.conf system:kube-controller-manager
    kubeconfig /etc/kubernetes/scheduler.conf system:kube-scheduler
    cp /etc/kubernetes/pki/ca.crt /etc/kubernetes/pki/apiserver.crt
    cp /etc/kubernetes/pki/ca.key /etc/kubernetes/pki/apiserver.key
    echo "kubernetes: {}" > /etc/kubernetes/kubeadm-config.yaml
  fi
  kubelet_config
  echo "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix://${CONTAINERD_ADDRESS:-/run/containerd/containerd.sock}\"" > /var/lib/kubelet/kubeadm-flags.env
  echo '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}' > /var/lib/kubelet/cpu_manager_state
  echo '{"policyName":"None","machineState":{},"checksum":1352335701}' > /var/lib/kubelet/memory_manager_state
  cni_config
  echo '{"kind":"Config","users":[{"name":"calico"}]}' > /etc/cni/net.d/calico-kubeconfig
  mkdir -p /run/flannel
  printf 'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.%s.1/24\nFLANNEL_MTU=1450\n' "$NODE_INDEX" > /run/flannel/subnet.env
  footprint
  if has_role etcd && [ "$REAL_ETCD" != 1 ]; then
    mkdir -p /var/lib/etcd/member/snap /var/lib/etcd/member/wal
    head -c 4096 /dev/urandom > /var/lib/etcd/member/snap/db
    head -c 4096 /dev/urandom > /var/lib/etcd/member/wal/0000000000000000-0000000000000000.wal
  fi
}

# The kubelet's KubeletConfiguration, as kubeadm writes it: what the stand-in, its run-pod
# and the pods' cgroups read (cgroupDriver), and where the runtime listens when containerd
# was moved (containerRuntimeEndpoint; the kubelet's default socket otherwise).
kubelet_config() {
  mkdir -p /var/lib/kubelet
  cat > /var/lib/kubelet/config.yaml <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /etc/kubernetes/manifests
cgroupDriver: $([ "$INIT" = systemd ] && echo systemd || echo cgroupfs)
EOF
  if [ -n "${CONTAINERD_ADDRESS:-}" ]; then echo "containerRuntimeEndpoint: unix://$CONTAINERD_ADDRESS" >> /var/lib/kubelet/config.yaml; fi
}

# The rest of a member's footprint, as kubespray lays it out: etcd's PKI and
# environment, the cluster's CAs in the trust store, root's kubeconfig with the CA
# inlined, pod logs, and the CNI daemons' state.
footprint() {
  mkdir -p /etc/ssl/etcd/ssl
  if [ ! -s /etc/ssl/etcd/ssl/ca.pem ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 \
      -subj "/CN=etcd-ca" -keyout /etc/ssl/etcd/ssl/ca-key.pem -out /etc/ssl/etcd/ssl/ca.pem 2>/dev/null
  fi
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 -subj "/CN=etcd-node-$NODE_NAME" \
    -keyout "/etc/ssl/etcd/ssl/node-$NODE_NAME-key.pem" -out "/etc/ssl/etcd/ssl/node-$NODE_NAME.pem" 2>/dev/null
  if has_role etcd && [ "$REAL_ETCD" != 1 ]; then
    printf 'ETCD_DATA_DIR=/var/lib/etcd\nETCD_NAME=%s\n' "$NODE_NAME" > /etc/etcd.env
    mkdir -p /var/lib/etcd-events
  fi
  cp /etc/kubernetes/pki/ca.crt /usr/local/share/ca-certificates/kube-ca.crt
  cp /etc/ssl/etcd/ssl/ca.pem /usr/local/share/ca-certificates/etcd-ca.crt   # trusted once not_kubernetes rebuilds the bundle
  mkdir -p /root/.kube
  {
    echo "apiVersion: v1"
    echo "kind: Config"
    echo "clusters:"
    echo "- cluster:"
    echo "    certificate-authority-data: $(base64 -w0 /etc/kubernetes/pki/ca.crt)"
    echo "    server: https://127.0.0.1:6443"
    echo "  name: cluster.local"
    echo "users:"
    echo "- name: kubernetes-admin"
    echo "  user: {token: sandbox-admin-token}"
  } > /root/.kube/config
  chmod 600 /root/.kube/config
  logdir=/var/log/pods/kube-system_kube-proxy-${NODE_NAME}_$(uuid)/kube-proxy
  mkdir -p "$logdir" /var/log/containers
  echo '2026-01-01T00:00:00Z stderr F token=sandbox-secret' > "$logdir/0.log"
  ln -sf "$logdir/0.log" "/var/log/containers/kube-proxy-${NODE_NAME}_kube-system_kube-proxy-$(hex 16).log"
  mkdir -p /var/lib/calico /etc/calico /var/lib/kube-router
  echo "$NODE_NAME" > /var/lib/calico/nodename
  echo 'datastoreType: kubernetes' > /etc/calico/calicoctl.cfg
  : > /var/lib/kube-router/kubeconfig
}

control_plane_static_pods() {
  static_pod kube-apiserver /bin/httpd -f -p 6443
  static_pod kube-controller-manager /bin/httpd -f -p 10257
  static_pod kube-scheduler /bin/httpd -f -p 10259
  if [ "$REAL_ETCD" != 1 ]; then
    static_pod etcd /bin/sh -c "httpd -p $NODE_ADDR:2380 && exec httpd -f -p 2379"
  fi
}

wait_control_plane_ports() {
  if has_role control-plane; then
    for p in 6443 10257 10259; do wait_port "$p"; done
    if [ "$REAL_ETCD" != 1 ]; then wait_port 2379; wait_port 2380; fi
  else
    wait_port 6443
  fi
}

# The kubelet joins the sandbox's API as kubeadm join leaves it: kubelet.conf, and
# the drop-in whose KUBELET_KUBECONFIG_ARGS the unit passes on (init-less: svc_start).
join_cluster() {
  if [ -n "${API_KUBECONFIG:-}" ]; then
    printf '%s' "$API_KUBECONFIG" | base64 -d > /etc/kubernetes/kubelet.conf
    chmod 600 /etc/kubernetes/kubelet.conf
    KUBELET_KUBECONFIG_ARGS=--kubeconfig=/etc/kubernetes/kubelet.conf
    echo "nodeLeaseDurationSeconds: ${NODE_LEASE_SECONDS:-40}" >> /var/lib/kubelet/config.yaml
    if [ "$INIT" = systemd ]; then
      mkdir -p /etc/systemd/system/kubelet.service.d
      printf '[Service]\nEnvironment="KUBELET_KUBECONFIG_ARGS=%s"\n' "$KUBELET_KUBECONFIG_ARGS" > /etc/systemd/system/kubelet.service.d/10-kubeadm.conf
      systemctl daemon-reload
    else
      printf '%s\n' "$KUBELET_KUBECONFIG_ARGS" > "$PIDS/kubelet.args"
    fi
  fi
  svc_start kubelet
}

# --- what is NOT Kubernetes' and must survive any reset ----------------------
app_iptables() {
  iptables -w -N APP-FIREWALL                         # another application's chain, nft backend
  iptables -w -A APP-FIREWALL -p tcp --dport 8080 -m comment --comment "app: allow web" -j ACCEPT
  iptables -w -A INPUT -m comment --comment "app: firewall" -j APP-FIREWALL
  iptables-legacy -w -N APP-LEGACY                    # ... and one in the legacy backend
  iptables-legacy -w -A APP-LEGACY -s 203.0.113.0/24 -m comment --comment "app: block" -j DROP
  iptables-legacy -w -A INPUT -j APP-LEGACY
}

# A netns not named cni-*, with the node's own veth. Made before any pod: `ip netns add`
# makes /run/netns a mount point of its own, and the kernel does not carry the nsfs
# mounts containerd made before that into it (they would be hidden under it).
user_netns() {
  [ -e /run/netns/app-vpn ] && return 0
  ip netns add app-vpn
  ip link add app-veth0 type veth peer name eth0 netns app-vpn
  ip link set app-veth0 up
}

not_kubernetes() {
  user_netns
  app_iptables
  nft add table inet app-filter
  nft add chain inet app-filter input '{ type filter hook input priority 10; policy accept; }'
  nft add rule inet app-filter input tcp dport 8088 accept   # the nginx site below
  mkdir -p /srv/appdata                              # user data on a tmpfs outside kubelet's dirs
  mount -t tmpfs -o size=8m app-data /srv/appdata
  echo "user data: must survive" > /srv/appdata/important.db
  mkdir -p /etc/app                                  # a user file under /etc
  echo "listen: 8080" > /etc/app/app.conf
  # The user's own CA in the trust store, a certificate it signed, and a kubeconfig for
  # another cluster in another user's home: none of it is this cluster's.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 -subj "/CN=app-ca" \
    -keyout /etc/app/ca.key -out /usr/local/share/ca-certificates/app-ca.crt 2>/dev/null
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=app.example" -keyout /etc/app/app.key 2>/dev/null |
    openssl x509 -req -CA /usr/local/share/ca-certificates/app-ca.crt -CAkey /etc/app/ca.key -CAserial /etc/app/ca.srl -CAcreateserial -days 365 -out /etc/app/app.crt 2>/dev/null
  update-ca-certificates >/dev/null 2>&1   # (and the cluster's CAs kube_files placed, as kubespray's own run does)
  # The user's own nginx site, route (to a prefix like a pod block, but the OS's), ipset and BPF pin.
  mkdir -p /etc/nginx/conf.d
  printf 'upstream app_backend { server 127.0.0.1:8080; }\nserver { listen 8088; location / { proxy_pass http://app_backend; } }\n' > /etc/nginx/conf.d/app.conf
  ip route add 10.233.121.0/24 via "${SUBNET_PREFIX}252" dev eth0
  ip route add 192.0.2.0/24 via "${SUBNET_PREFIX}253" dev eth0 proto static
  ipset create app-blocklist hash:net
  ipset add app-blocklist 203.0.113.0/24
  if bpf_fs; then bpftool map create /sys/fs/bpf/app_ratelimit type hash key 4 value 4 entries 16 name app_ratelimit; fi
  mkdir -p /home/alice/.kube
  printf 'apiVersion: v1\nkind: Config\nclusters:\n- cluster: {server: "https://staging.example.com:6443"}\n  name: staging\n' > /home/alice/.kube/config
  # a container outside containerd's k8s.io namespace
  ctr -n default run -d --net-host "$IMAGE" app-cache /bin/httpd -f -p 8081 </dev/null >/dev/null
  wait_port 8081
}
