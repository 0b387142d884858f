#!/bin/sh
# Runs a one-container pod in containerd's k8s.io namespace the way the CRI plugin
# lays it out: a sandbox ("pause") container and the app container, both carrying
# the CRI's labels and annotations, one shim for the pod, cgroups under kubepods.
# Used by the kubelet stand-in and by the scenarios, so both plant the same shape.
#
#   pod.sh run  POD NAMESPACE UID NET CONTAINER CMD...   NET: host | /run/netns/NAME
#   pod.sh rm   UID CONTAINER                            kill and remove the pod
#   pod.sh ids  UID CONTAINER                            print sandbox and container ids
#   pod.sh net-up   UID CIDR    a cni-* netns on cni0 with a host-local lease: prints "NETNS IP"
#   pod.sh net-down UID         what CNI DEL does: the netns, its veth and the lease go
set -eu
IMAGE=registry.k8s.io/busybox:sandbox
CTR="ctr -n k8s.io"

ids() { # uid container -> "sandbox-id container-id" (64 hex each, stable per pod)
  s=$(printf '%s/sandbox' "$1" | sha256sum | cut -c1-64)
  c=$(printf '%s/%s' "$1" "$2" | sha256sum | cut -c1-64)
  echo "$s $c"
}

netns_of() { # uid -> the pod's netns name, stable per pod (cni-<uuid>, as CNI names them)
  printf '%s/netns' "$1" | sha256sum | sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)\(.\{12\}\).*/cni-\1-\2-\3-\4-\5/'
}
LEASES=/var/lib/cni/networks/cbr0

cmd=$1; shift
case $cmd in
  ids) ids "$1" "$2" ;;
  run)
    pod=$1 ns=$2 uid=$3 net=$4 cname=$5; shift 5
    read -r sid cid <<EOF
$(ids "$uid" "$cname")
EOF
    uidp=$(echo "$uid" | tr - _)
    cg=/kubepods/besteffort/pod$uidp
    if [ "$net" = host ]; then netflag=--net-host; else netflag="--with-ns network:$net"; fi
    common="--label io.kubernetes.pod.name=$pod --label io.kubernetes.pod.namespace=$ns --label io.kubernetes.pod.uid=$uid
      --annotation io.kubernetes.cri.sandbox-id=$sid --annotation io.kubernetes.cri.sandbox-name=$pod
      --annotation io.kubernetes.cri.sandbox-namespace=$ns --annotation io.kubernetes.cri.sandbox-uid=$uid"
    # shellcheck disable=SC2086 # word splitting of the flag lists is intended
    $CTR run -d $netflag --cgroup "$cg/$sid" $common \
      --label io.cri-containerd.kind=sandbox --annotation io.kubernetes.cri.container-type=sandbox \
      "$IMAGE" "$sid" /bin/sleep 2147483647 </dev/null >/dev/null
    # shellcheck disable=SC2086
    $CTR run -d $netflag --cgroup "$cg/$cid" $common \
      --label io.cri-containerd.kind=container --label io.kubernetes.container.name="$cname" \
      --annotation io.kubernetes.cri.container-type=container --annotation io.kubernetes.cri.container-name="$cname" \
      "$IMAGE" "$cid" "$@" </dev/null >/dev/null
    echo "$sid $cid"
    ;;
  rm)
    read -r sid cid <<EOF
$(ids "$1" "$2")
EOF
    for id in $cid $sid; do
      $CTR task kill -s SIGKILL "$id" 2>/dev/null || true
      $CTR task rm -f "$id" >/dev/null 2>&1 || true
      $CTR container rm "$id" >/dev/null 2>&1 || true
    done
    ;;
  net-up)
    uid=$1 cidr=$2   # CIDR: the node's podCIDR, a /24 (10.244.N.0/24)
    netns=$(netns_of "$uid")
    sid=$(ids "$uid" x | cut -d' ' -f1)
    prefix=${cidr%.*}
    mkdir -p "$LEASES"
    exec 9>"$LEASES/lock"; flock 9   # host-local's own lock: one allocation (and one bridge) at a time
    if ! ip link show cni0 >/dev/null 2>&1; then
      ip link add cni0 type bridge && ip addr add "$prefix.1/24" dev cni0 && ip link set cni0 up
    fi
    octet=2
    while [ -e "$LEASES/$prefix.$octet" ]; do octet=$((octet + 1)); done
    ip=$prefix.$octet
    printf '%s\neth0' "$sid" > "$LEASES/$ip"
    echo "$ip" > "$LEASES/last_reserved_ip.0"
    ip netns add "$netns"
    host_if=veth$(printf '%s/veth' "$uid" | sha256sum | cut -c1-8)
    ip link add "$host_if" type veth peer name eth0 netns "$netns"
    ip link set "$host_if" master cni0 up
    ip -n "$netns" addr add "$ip/24" dev eth0
    ip -n "$netns" link set lo up
    ip -n "$netns" link set eth0 up
    echo "$netns $ip"
    ;;
  net-down)
    netns=$(netns_of "$1")
    sid=$(ids "$1" x | cut -d' ' -f1)
    ip netns del "$netns" 2>/dev/null || true   # the pod's veth goes with it
    grep -lx "$sid" "$LEASES"/[0-9]* 2>/dev/null | xargs -r rm -f
    ;;
  *) echo "pod.sh: unknown command $cmd" >&2; exit 2 ;;
esac
