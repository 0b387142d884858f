#!/bin/bash
# The reference reset: the same removals as decom's reset playbook, as a plain script
# an SRE would write by hand, run as root on one node (bench/reset.sh runs it on every
# node at once over OpenSSH). No checks, no waiting for the kubelet, no verify.
B=/var/backups/reference-reset
mkdir -p -m 0700 "$B"
tar -C / -czf "$B/files.tar.gz" etc/kubernetes var/lib/kubelet/config.yaml var/lib/kubelet/pki etc/cni/net.d 2>/dev/null
iptables-save > "$B/iptables-nft.rules"; iptables-legacy-save > "$B/iptables-legacy.rules" 2>/dev/null; nft list ruleset > "$B/nftables.conf"
mkdir -p "$B/manifests"; mv /etc/kubernetes/manifests/* "$B/manifests/" 2>/dev/null
if [ "$(cat /proc/1/comm)" = systemd ]; then systemctl disable --now kubelet 2>/dev/null; else pkill -x kubelet; fi
# No crictl: the pods' processes are killed first (ctr's task rm can hang on a CRI task), then ctr forgets them.
for p in $(grep -l -E 'kubepods|/k8s\.io/' /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3); do kill -9 "$p" 2>/dev/null; done
pkill -9 -f 'containerd-shim.*-namespace k8s\.io'
ids=$(timeout 10 ctr -n k8s.io containers ls -q 2>/dev/null)
[ -z "$ids" ] || { timeout 30 ctr -n k8s.io task rm -f $ids >/dev/null 2>&1; timeout 30 ctr -n k8s.io container rm $ids; }
command -v docker >/dev/null && docker ps -aq --filter name=^k8s_ 2>/dev/null | xargs -r docker rm -f >/dev/null
[ "$(cat /proc/1/comm)" = systemd ] && systemctl stop kubepods.slice 2>/dev/null
find /sys/fs/cgroup/*/kubepods* -depth -type d -exec rmdir {} + 2>/dev/null
systemctl disable --now etcd 2>/dev/null
grep -E ' /var/lib/kubelet/| /run/containerd/io\.containerd\.(runtime\.v2\.task/k8s\.io|grpc\.v1\.cri/sandboxes)/' /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount
for l in $(ip -o link | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^(veth|cali|cni0|flannel|vxlan\.calico|tunl0|kube-)'); do ip link del "$l"; done
for n in $(ip netns list | awk '{print $1}' | grep '^cni-'); do ip netns del "$n"; done
for p in 12 17 80; do ip route show table all proto $p | while read -r r; do ip route del $r proto $p; done; done
for b in nft legacy; do
  "iptables-$b-save" 2>/dev/null | grep -v -E 'KUBE-|CNI-|cali|FLANNEL|flannel' | "iptables-$b-restore"
done
nft delete table ip kube-proxy 2>/dev/null; nft delete table ip6 kube-proxy 2>/dev/null
for s in $(ipset list -n | grep -E '^(KUBE-|cali40|cilium_)'); do ipset destroy "$s"; done
rm -f /usr/local/share/ca-certificates/kube-ca.crt /usr/local/share/ca-certificates/etcd-ca.crt && update-ca-certificates >/dev/null
rm -rf /etc/kubernetes /var/lib/kubelet /etc/cni/net.d /var/lib/cni /run/flannel /var/lib/etcd/member \
  /etc/ssl/etcd /etc/etcd.env /var/lib/etcd-events /root/.kube/config /var/log/pods /var/log/containers \
  /var/lib/calico /etc/calico /var/lib/kube-router /etc/nginx/nginx.conf /sys/fs/bpf/tc/globals/cilium_*
true
