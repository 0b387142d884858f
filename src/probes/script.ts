/**
 * The one read-only script that gathers everything decom needs to know about a node,
 * run in ONE exec per host per phase. It prints sections, each opened by a marker
 * line carrying a per-run nonce, so nothing found on the node (a file name with a
 * newline, a hostile mount target) can forge a section. Parsing is elsewhere and pure.
 *
 * Fork budget matters at fleet scale: shell globs and builtins where they do, one
 * process per view otherwise, and no runtime client when its daemon is not running
 * (ctr waits ~10 s on a stale socket).
 */

/** Paths whose entries are Kubernetes' state, by finding kind. Globs, expanded by the node's sh. */
export const STATE_PATHS = {
  'static-pod-manifest': ['/etc/kubernetes/manifests/*'],
  'kubernetes-config': ['/etc/kubernetes/*'],
  'kubelet-state': ['/var/lib/kubelet/*', '/var/lib/kubelet/pods/*'],
  'cni-config': ['/etc/cni/net.d/*'],
  'cni-state': ['/var/lib/cni/*', '/var/lib/cni/networks/*/*', '/run/flannel/*'],
  'etcd-data': ['/var/lib/etcd/member'],
  'kubelet-unit': [
    '/etc/systemd/system/kubelet.service',
    '/etc/systemd/system/kubelet.service.d',
    '/lib/systemd/system/kubelet.service',
    '/usr/lib/systemd/system/kubelet.service',
  ],
} as const;

export type StatePathKind = keyof typeof STATE_PATHS;

export function probeScript(nonce: string): string {
  const paths = Object.entries(STATE_PATHS)
    .flatMap(([kind, globs]) => globs.map((g) => `for p in ${g}; do [ -e "$p" ] || [ -L "$p" ] && printf '%s\\t%s\\0' ${kind} "$p"; done`))
    .join('\n');
  return `
exec 2>/dev/null
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
s() { printf '\\n@@decom-${nonce} %s\\n' "$1"; }
has() { command -v "$1" >/dev/null; }
T="timeout 10"

s meta
read -r v < /proc/sys/kernel/hostname; printf 'hostname=%s\\n' "$v"
v=; read -r v < /etc/machine-id; printf 'machine_id=%s\\n' "$v"
read -r PID1 < /proc/1/comm; printf 'pid1=%s\\n' "$PID1"
printf 'uid=%s\\n' "$(id -u)"
for t in crictl ctr docker iptables-nft-save iptables-legacy-save ip6tables-nft-save ip6tables-legacy-save iptables-save nft ss systemctl; do has "$t" && printf 'tool=%s\\n' "$t"; done

s paths
${paths}

s ps
PS=$(ps -e -ww -o pid=,ppid=,args=)
printf '%s\\n' "$PS"
# Is a daemon running? Matched on argv[0] in the listing above: no pgrep, no fork.
NL='
'
running() { case "$NL$PS$NL" in *"/$1$NL"* | *"/$1 "*) return 0 ;; esac; return 1; }

s cgroups
grep -E 'kubepods|/k8s\\.io/|cri-containerd' /proc/[0-9]*/cgroup

s listen
ss -Hltnp

s mountinfo
cat /proc/self/mountinfo

s netns
for n in /run/netns/*; do [ -e "$n" ] && printf '%s\\0' "$n"; done

s links
ip -o link show

# Both backends: a node that switched (or ran two kube-proxy versions) carries both.
# Legacy tables are read only when the kernel has them loaded: reading must not load modules.
s iptables-nft
if has iptables-nft-save; then $T iptables-nft-save; elif has iptables-save; then $T iptables-save; fi
s ip6tables-nft
if has ip6tables-nft-save; then $T ip6tables-nft-save; elif has ip6tables-save; then $T ip6tables-save; fi
s iptables-legacy
v=; read -r v < /proc/net/ip_tables_names; [ -n "$v" ] && has iptables-legacy-save && $T iptables-legacy-save
s ip6tables-legacy
v=; read -r v < /proc/net/ip6_tables_names; [ -n "$v" ] && has ip6tables-legacy-save && $T ip6tables-legacy-save
s nft-tables
has nft && $T nft list tables
s ipvs
[ -r /proc/net/ip_vs ] && cat /proc/net/ip_vs

s systemd
# Asked even when the unit file is gone: a unit removed without daemon-reload can still be auto-restarting.
[ "$PID1" = systemd ] && has systemctl && $T systemctl show -p Id,LoadState,ActiveState,UnitFileState kubelet.service

# Runtime clients only when their daemon runs (a stale socket makes them hang).
CONTAINERD=; running containerd && CONTAINERD=1
s crictl-pods
[ -n "$CONTAINERD" ] && has crictl && $T crictl pods -o json
s crictl-containers
[ -n "$CONTAINERD" ] && has crictl && $T crictl ps -a -o json
s ctr-containers
[ -n "$CONTAINERD" ] && has ctr && $T ctr -n k8s.io containers ls -q
# Every task bundle's CRI annotations and init PID: there even when containerd is down.
s task-bundles
set -- /run/containerd/io.containerd.runtime.v2.task/k8s.io/*/config.json /run/containerd/io.containerd.runtime.v2.task/k8s.io/*/init.pid
grep -H -o -E '"io\\.kubernetes\\.cri\\.[a-z-]*":"[^"]*"|^[0-9]+$' "$@"
s docker
running dockerd && has docker && $T docker ps -a --no-trunc --filter name=^k8s_ --format '{{.ID}}\\t{{.Names}}\\t{{.State}}'
s end
exit 0
`;
}
