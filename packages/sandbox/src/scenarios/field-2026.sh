# What a node of today's clusters leaves, beside collateral of the same shapes that is
# not the cluster's and must survive. Runs on any node (either init, any containerd,
# its paths moved or not). Sources of each shape:
#
# The cluster's:
# - the kubelet (stand-in) running, and a pod it ran through CRI on the pod network
#   (lib.sh cni_config: bridge + host-local + portmap, a flannel node's resolved
#   delegate), gpu-job, which held a DRA ResourceClaim;
# - nftables tables of kube-proxy's nftables mode, Calico Felix's nftables dataplane
#   and flannel's nftables mode (lib.sh kube_nftables, calico_nftables, flannel_nftables:
#   their sources are named there);
# - the transient CDI spec a DRA driver wrote for that claim in /var/run/cdi, named as
#   tags.cncf.io/container-device-interface's pkg/cdi GenerateTransientSpecName(vendor,
#   class, claimUID) + ".json" names it (vendor-class_claimUID; the DRA drivers call it
#   with the claim's UID). Format: the CDI spec (tags.cncf.io/container-device-interface
#   SPEC.md, cdiVersion 0.6.0: kind VENDOR/CLASS, devices[] with containerEdits,
#   top-level containerEdits); env-only edits, as dra-example-driver's fake GPUs. It is
#   planted: no driver runs here, and the pod does not ask for the device (CRI would
#   then inject it);
# - Cilium's traces (the cluster tried Cilium over flannel and backed out):
#   /etc/sysctl.d/99-zzz-override_cilium.conf as its sysctlfix init container
#   (apply-sysctl-overwrites) writes it, byte for byte: cilium/cilium
#   tools/sysctlfix/main.go `sysctlConfig` (stored commit e0cc421a: the "-"-prefixed
#   globs and conf.all, no release tag matched; an older stored commit, 0ed3f9e2, wrote
#   the two globs alone); and /etc/cni/net.d/10-flannel.conflist.cilium_bak: with
#   cni.exclusive (its default) the agent renames every other *.conf, *.conflist and
#   *.json in the CNI conf dir to NAME.cilium_bak (daemon/cmd/cni/config.go
#   cleanupOtherCNI, stored commit 01990e1c). Its content is flannel's cni-conf.json
#   (Documentation/kube-flannel.yml, which flannel's install-cni copies to
#   10-flannel.conflist). Cilium's own 05-cilium.conflist is not planted: containerd
#   would pick it first, and no cilium-cni plugin runs here;
# - the cluster's old etcd data, /var/lib/etcd/member/{snap,wal}, as kubespray's host
#   etcd (ETCD_DATA_DIR=/var/lib/etcd) leaves it: root's, mode 700, random bytes in
#   etcd's file names. No running etcd uses it.
#
# Not the cluster's, and of the same shapes:
# - an administrator's static CDI spec, /etc/cdi/vendor.yaml (YAML, kind
#   vendor.com/device): the spec dir containerd also reads, but no driver's;
# - Debian's own etcd (etcd-server's etcd.service, ETCD_DATA_DIR=/var/lib/etcd/default
#   under the same /var/lib/etcd), started, holding the key owner=not-kubernetes.
#   Systemd nodes only: on init-less nodes there is no etcd.service, and the etcd part
#   (Debian's etcd) is skipped. With --etcd on an etcd node both etcd parts are skipped:
#   the sandbox's real etcd is etcd.service there, on /var/lib/etcd itself;
# - everything not_kubernetes plants (lib.sh), the inet app-filter table among it.
import_image
user_netns # before any pod (see user_netns)
kubelet_config
cni_config
svc_start kubelet
claim=$(uuid)
run_pod "gpu-job-$(hex 10)-$(hex 5)" ml trainer -- /bin/sleep 2147483647 >/dev/null

kube_nftables
calico_nftables
flannel_nftables

mkdir -p /var/run/cdi
cat > "/var/run/cdi/example.com-gpu_$claim.json" <<EOF
{"cdiVersion":"0.6.0","kind":"example.com/gpu","devices":[{"name":"$claim-gpu-0","containerEdits":{"env":["GPU_DEVICE_0=gpu-0","GPU_DEVICE_0_RESOURCE_CLAIM=$claim"]}}],"containerEdits":{"env":["EXAMPLE_GPU_DRIVER=example.com"]}}
EOF

printf '%s' '
# Disable rp_filter on Cilium interfaces since it may cause mangled packets to be dropped
-net.ipv4.conf.lxc*.rp_filter = 0
-net.ipv4.conf.cilium_*.rp_filter = 0
# The kernel uses max(conf.all, conf.{dev}) as its value, so we need to set .all. to 0 as well.
# Otherwise it will overrule the device specific settings.
net.ipv4.conf.all.rp_filter = 0
' > /etc/sysctl.d/99-zzz-override_cilium.conf
mkdir -p /etc/cni/net.d
cat > /etc/cni/net.d/10-flannel.conflist.cilium_bak <<'EOF'
{
  "name": "cbr0",
  "cniVersion": "0.3.1",
  "plugins": [
    {
      "type": "flannel",
      "delegate": {
        "hairpinMode": true,
        "isDefaultGateway": true
      }
    },
    {
      "type": "portmap",
      "capabilities": {
        "portMappings": true
      }
    }
  ]
}
EOF

if [ "$REAL_ETCD" != 1 ]; then
  mkdir -p /var/lib/etcd/member/snap /var/lib/etcd/member/wal
  head -c 16384 /dev/urandom > /var/lib/etcd/member/snap/db
  head -c 2048 /dev/urandom > /var/lib/etcd/member/snap/0000000000000002-00000000000186a1.snap
  head -c 8192 /dev/urandom > /var/lib/etcd/member/wal/0000000000000000-0000000000000000.wal
  head -c 8192 /dev/urandom > /var/lib/etcd/member/wal/0.tmp
  chown -R root:root /var/lib/etcd/member
  chmod 700 /var/lib/etcd/member /var/lib/etcd/member/snap /var/lib/etcd/member/wal
fi

mkdir -p /etc/cdi
cat > /etc/cdi/vendor.yaml <<'EOF'
cdiVersion: "0.6.0"
kind: vendor.com/device
devices:
  - name: dev0
    containerEdits:
      env:
        - VENDOR_DEVICE=dev0
containerEdits:
  env:
    - VENDOR_LIB_DIR=/opt/vendor/lib
EOF

if [ "$INIT" = systemd ] && [ "$REAL_ETCD" != 1 ]; then
  systemctl start etcd
  ETCDCTL_API=3 etcdctl put owner not-kubernetes >/dev/null
fi

not_kubernetes
wait_port 10250
