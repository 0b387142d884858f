/**
 * The one read-only script that gathers everything decom needs to know about a node,
 * run in ONE exec per host per phase. It prints sections, each opened by a marker
 * line carrying a per-run secret, so nothing found on the node (a file name with a
 * newline, a hostile mount target) can forge a section. Parsing is elsewhere and pure.
 *
 * Fork budget matters at fleet scale (each exec costs ~1.5 ms of node CPU, systemctl
 * and the Go clients ~10): shell globs and builtins where they do, one process per
 * view otherwise, no runtime client when its daemon is not running (ctr waits ~10 s
 * on a stale socket), and `timeout` only around clients that can hang on a daemon.
 */

/** Paths whose entries are Kubernetes' state, by finding kind. Globs, expanded by the node's sh. */
export const STATE_PATHS = {
  'static-pod-manifest': ['/etc/kubernetes/manifests/*'],
  'kubernetes-config': ['/etc/kubernetes/*'],
  'kubelet-state': ['/var/lib/kubelet/*', '/var/lib/kubelet/pods/*'],
  'cni-config': ['/etc/cni/net.d/*'],
  'cni-state': ['/var/lib/cni/*', '/var/lib/cni/networks/*/*', '/run/flannel/*'],
  'etcd-data': ['/var/lib/etcd/member'],
  // The unit's cgroup (v1, hybrid, v2): it exists only while systemd runs the kubelet.
  'kubelet-unit-cgroup': [
    '/sys/fs/cgroup/systemd/system.slice/kubelet.service',
    '/sys/fs/cgroup/unified/system.slice/kubelet.service',
    '/sys/fs/cgroup/system.slice/kubelet.service',
  ],
} as const;

export type StatePathKind = keyof typeof STATE_PATHS;

/**
 * The script for one run. `nonce` is the client's; the script adds a key of its own,
 * read from the node's kernel and printed first, because the script text (and so the
 * nonce) is readable by any process in /proc/PID/cmdline while it runs. Markers carry
 * both; only the key line is trusted to say what the key is (see splitSections).
 */
export function probeScript(nonce: string): string {
  const paths = Object.entries(STATE_PATHS)
    .flatMap(([kind, globs]) => globs.map((g) => `for p in ${g}; do [ -e "$p" ] || [ -L "$p" ] && printf '%s\\t%s\\0' ${kind} "$p"; done`))
    .join('\n');
  return `
exec 2>/dev/null
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Bytes, not characters: in a UTF-8 locale grep skips a file whose process name is not valid UTF-8.
export LC_ALL=C
K=; read -r K < /proc/sys/kernel/random/uuid
printf '\\n@@decom-${nonce} key %s\\n' "$K"
s() { printf '\\n@@decom-${nonce}-%s %s\\n' "$K" "$1"; }
has() { command -v "$1" >/dev/null; }
T="timeout 10"

s meta
read -r v < /proc/sys/kernel/hostname; printf 'hostname=%s\\n' "$v"
v=; read -r v < /etc/machine-id; printf 'machine_id=%s\\n' "$v"
read -r PID1 < /proc/1/comm; printf 'pid1=%s\\n' "$PID1"
# The effective uid (Uid: real effective saved fs), without forking id -u.
while read -r k _ v _; do [ "$k" = Uid: ] && printf 'uid=%s\\n' "$v" && break; done < /proc/self/status
for t in crictl ctr docker iptables-nft-save iptables-legacy-save ip6tables-nft-save ip6tables-legacy-save iptables-save nft ss systemctl; do has "$t" && printf 'tool=%s\\n' "$t"; done

s paths
${paths}

# Processes straight from /proc (ps reads five files per process): pid, comm and ppid
# from stat, argv from cmdline. grep -H prefixes every line with the file it came
# from, so no process can forge another's entry.
s stat
ST=$(grep -a -H '' /proc/[0-9]*/stat)
printf '%s\\n' "$ST"
# Is a daemon running? Matched on its comm in the listing above: no pgrep, no fork.
running() { case "$ST" in *" ($1) "*) return 0 ;; esac; return 1; }
s cmdline
grep -a -H '' /proc/[0-9]*/cmdline

s cgroups
# One line per process is enough (-m 1 counts per file): v1 repeats the path per controller.
grep -a -H -m 1 -E 'kubepods|/k8s\\.io/|cri-containerd' /proc/[0-9]*/cgroup

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
if has iptables-nft-save; then iptables-nft-save; elif has iptables-save; then iptables-save; fi
s ip6tables-nft
if has ip6tables-nft-save; then ip6tables-nft-save; elif has ip6tables-save; then ip6tables-save; fi
s iptables-legacy
v=; read -r v < /proc/net/ip_tables_names; [ -n "$v" ] && has iptables-legacy-save && iptables-legacy-save
s ip6tables-legacy
v=; read -r v < /proc/net/ip6_tables_names; [ -n "$v" ] && has ip6tables-legacy-save && ip6tables-legacy-save
s nft-tables
has nft && nft list tables
s ipvs
[ -r /proc/net/ip_vs ] && cat /proc/net/ip_vs

s systemd
# Not while the unit's cgroup shows it running (the common dirty node): otherwise only
# systemd knows whether the kubelet is enabled (a wants link may dangle, the unit may
# be masked) or auto-restarting, even with its unit file removed without a daemon-reload.
KU=; for p in ${STATE_PATHS['kubelet-unit-cgroup'].join(' ')}; do [ -d "$p" ] && KU=1; done
[ "$PID1" = systemd ] && [ -z "$KU" ] && has systemctl && $T systemctl show -p Id,LoadState,ActiveState,UnitFileState kubelet.service

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
grep -H -o -E '"io\\.kubernetes\\.cri\\.(container-type|container-name|sandbox-name|sandbox-namespace)":"[^"]*"|^[0-9]+$' "$@"
s docker
running dockerd && has docker && $T docker ps -a --no-trunc --filter name=^k8s_ --format '{{.ID}}\\t{{.Names}}\\t{{.State}}'
s end
exit 0
`;
}
