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

import { CONTAINERD_CONFIG, CONTAINERD_DEFAULTS, type ContainerdPaths } from '../cri/containerd-config.js';
import { NODE_BACKUPS, PATH_GUARD, holdsSystemDir, normalPath } from '../util/confine.js';
import { shQuote } from '../util/run.js';

/** Paths whose entries are Kubernetes' state, by finding kind. Globs, expanded by the node's sh. */
export const STATE_PATHS = {
  'static-pod-manifest': ['/etc/kubernetes/manifests/*'],
  'kubernetes-config': ['/etc/kubernetes/*'],
  'kubelet-state': ['/var/lib/kubelet/*', '/var/lib/kubelet/pods/*'],
  // The CNI configs (containerd's conf dirs, added per node), and what Cilium writes beside
  // them: its kernel settings' override, and the other CNIs' configs it renamed aside (*.cilium_bak).
  'cni-config': ['/etc/cni/net.d/*', '/etc/sysctl.d/99-zzz-override_cilium.conf'],
  'cni-state': [
    '/var/lib/cni/*', '/var/lib/cni/networks/*/*', '/run/flannel/*', '/etc/flannel',
    '/var/lib/calico', '/run/calico', '/etc/calico', '/var/lib/kube-router', '/etc/cilium',
  ],
  'etcd-data': ['/var/lib/etcd/member'],
  // kubespray's etcd certificates (the keys among them are reported as credentials), its environment, etcd-events.
  'etcd-config': ['/etc/ssl/etcd', '/etc/ssl/etcd/ssl/*', '/etc/etcd.env', '/var/lib/etcd-events'],
  // Pod logs can hold secrets: the kubelet's files and the runtime's links to them.
  'pod-logs': ['/var/log/pods/*', '/var/log/containers/*'],
  // Cilium's maps and programs pinned on the BPF filesystem outlive the agent.
  'bpf-pin': ['/sys/fs/bpf/tc/globals/cilium_*', '/sys/fs/bpf/cilium'],
  // CDI specs the cluster's device drivers wrote for their claims in containerd's transient spec dirs (per node).
  'cdi-spec': [] as string[],
  // What an administrator may have written for the runtime: static CDI specs, NRI plugins and their
  // configs, containerd's conf.d drop-ins (per node). Warned about; removed only with --purge.
  'runtime-config': [] as string[],
} as const;

/** Spec dirs below /run hold what drivers write while they run; the others are static (an administrator's). */
const transient = (dir: string) => /^\/(var\/)?run\//.test(dir);

/**
 * A dir from the node's config, quoted as the prefix of the probe's globs; undefined for
 * one decom does not take: relative, with `..`, or a system dir or one above it in any
 * spelling (`/usr//bin`, `/etc/.`: see util/confine.ts). What a symlink makes of it only
 * the node can tell: the probe judges it there too (judgedGlob).
 */
export function configDir(dir: string): string | undefined {
  const d = normalPath(dir);
  if (!d || holdsSystemDir(d)) return undefined;
  return shQuote(d);
}

/**
 * A glob's loop in the probe. One below a dir a config named (quoted first, as configDir
 * writes it) runs only once judge_dir lets that dir through on the node: a dir that
 * resolves to or above a system dir through a symlink is never listed, so never deleted.
 */
function judgedGlob(glob: string, body: string): string {
  const quoted = /^('.*')(\/[^']*)?$/s.exec(glob)?.[1];
  return `${quoted ? `judge_dir ${quoted} && ` : ''}for p in ${glob}; do ${body}; done`;
}

/** Globs (as sh reads them) of the entries of `dirs` named by `patterns`: each dir quoted (a config's value is anyone's text), the pattern not. */
const entries = (dirs: readonly string[], patterns: readonly string[] = ['*']): string[] =>
  dirs.flatMap((d) => {
    const q = configDir(d);
    return q ? patterns.map((p) => `${q}/${p}`) : [];
  });

/**
 * The state paths of one node: the fixed ones, and those its containerd config names:
 * CNI configs in its other conf dirs (the extensions libcni reads, and Cilium's
 * renamed ones); in its transient CDI spec dirs, the specs named as drivers name a
 * claim's (VENDOR-CLASS_ID, the CDI library's transient names), while any other spec
 * there (a toolkit's generated one) is an administrator's; static CDI specs, NRI
 * plugins and their configs, and the conf.d drop-ins it imports.
 */
export function statePaths(rt: ContainerdPaths): Record<StatePathKind, readonly string[]> {
  const defaultConf = (d: string) => d.replace(/\/+$/, '') === '/etc/cni/net.d';
  const dropIns = rt.files.slice(1).filter((f) => /\/conf\.d\/[^/]+$/.test(f)).map(shQuote);
  const runtimeDirs = rt.cdiSpecDirs.filter(transient);
  return {
    ...STATE_PATHS,
    'cni-config': [...STATE_PATHS['cni-config'], ...entries(rt.cniConfDirs.filter((d) => !defaultConf(d)), ['*.conf', '*.conflist', '*.json', '*.cilium_bak'])],
    'cdi-spec': entries(runtimeDirs, ['*-*_*.json', '*-*_*.yaml']),
    'runtime-config': [...entries(rt.cdiSpecDirs.filter((d) => !transient(d))), ...entries(runtimeDirs), ...entries(rt.nriPluginDirs), ...entries(rt.nriConfDirs), ...dropIns],
  };
}

/**
 * Shared paths holding a Kubernetes file only by content: kubespray's nginx-proxy
 * and haproxy configs, the local load balancer to the API servers. A user's nginx
 * config has no upstream of that name.
 */
const PROXY_CONFIGS = ['/etc/nginx/nginx.conf', '/etc/haproxy/haproxy.cfg'];
const PROXY_MARK = '^[[:space:]]*(upstream kube_apiserver|backend kube_api_backend)\\b';

/** Kernel settings kubespray and kubeadm's guide write into sysctl files: reported, never changed (other workloads may rely on them). */
const SYSCTL_KEYS = [
  'net.ipv4.ip_forward', 'net.ipv6.conf.all.forwarding', 'net.bridge.bridge-nf-call-iptables', 'net.bridge.bridge-nf-call-ip6tables',
  'net.bridge.bridge-nf-call-arptables', 'net.ipv4.ip_local_reserved_ports', 'kernel.keys.root_maxbytes', 'kernel.keys.root_maxkeys',
  'vm.overcommit_memory', 'kernel.panic', 'kernel.panic_on_oops', 'fs.may_detach_mounts',
];

/**
 * The installation footprint (the purge tier), by path and name: what kubespray or
 * kubeadm's packages put on the node. A path a Debian or RPM package owns is the
 * package manager's (reported, never deleted).
 */
export const INSTALL_PATHS = {
  'installed-binary': [
    ...['kubelet', 'kubeadm', 'kubectl', 'crictl', 'etcd', 'etcdctl', 'etcdutl', 'helm', 'calicoctl', 'cri-dockerd', 'nerdctl', 'k8s-certs-renew.sh', 'etcd-scripts']
      .flatMap((b) => [`/usr/local/bin/${b}`, `/usr/bin/${b}`]),
    '/opt/cni/bin', '/usr/libexec/kubernetes',
  ],
  'installed-unit': [
    ...['kubelet.service', 'kubelet.service.d', 'etcd.service', 'etcd-events.service', 'calico-node.service', 'k8s-certs-renew.service', 'k8s-certs-renew.timer', 'cri-dockerd.service', 'cri-dockerd.socket']
      .flatMap((u) => [`/etc/systemd/system/${u}`, `/usr/lib/systemd/system/${u}`, `/etc/systemd/system/*.wants/${u}`]),
    '/etc/systemd/system/containerd.service.d/http-proxy.conf',
  ],
  'installed-config': [
    '/etc/crictl.yaml', '/etc/modules-load.d/kubespray-*',
    ...['kubectl', 'kubeadm', 'crictl', 'helm', 'calicoctl', 'nerdctl'].map((c) => `/etc/bash_completion.d/${c}`),
  ],
} as const;
export type InstallKind = keyof typeof INSTALL_PATHS;

/** The installation footprint of one node: the CNI plugins where its containerd config says they are (never a system dir). */
export const installPaths = (rt: ContainerdPaths): Record<InstallKind, readonly string[]> => ({
  ...INSTALL_PATHS,
  'installed-binary': [...INSTALL_PATHS['installed-binary'], ...rt.cniBinDirs.filter((d) => d.replace(/\/+$/, '') !== '/opt/cni/bin').flatMap((d) => configDir(d) ?? [])],
});

/** The cluster's CAs as kubeadm and kubespray lay them out: what trust anchors and kubeconfigs are judged against. */
export const CLUSTER_CAS = ['/etc/kubernetes/pki/ca.crt', '/etc/kubernetes/ssl/ca.crt', '/etc/ssl/etcd/ssl/ca.pem'];
/** Kubeconfigs outside /etc/kubernetes that may hold this cluster's credentials (judged by content). */
const KUBECONFIGS = ['/etc/kubernetes/admin.conf', '/etc/kubernetes/kubelet.conf', '/root/.kube/config', '/home/*/.kube/config'];
/** The system trust store's anchor dirs, Debian's and RHEL's, and the anchors in them. */
export const ANCHOR_DIRS = ['/usr/local/share/ca-certificates', '/etc/pki/ca-trust/source/anchors'] as const;
const ANCHORS = [`${ANCHOR_DIRS[0]}/*.crt`, `${ANCHOR_DIRS[0]}/*/*.crt`, `${ANCHOR_DIRS[1]}/*`];
export const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/**
 * The resolver files kubespray's preinstall role writes or edits (docs/findings.md#dns):
 * resolv.conf's block, dhclient's supersede block (either path, by OS) and exit hook (Debian's
 * or Red Hat's), systemd-resolved's drop-in, and NetworkManager's drop-ins.
 */
export const KUBESPRAY_DNS_FILES = [
  '/etc/resolv.conf',
  '/etc/dhclient.conf',
  '/etc/dhcp/dhclient.conf',
  '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate',
  '/etc/dhcp/dhclient.d/zdnsupdate.sh',
  '/etc/systemd/resolved.conf.d/kubespray.conf',
  '/etc/NetworkManager/conf.d/calico.conf',
  '/etc/NetworkManager/conf.d/k8s.conf',
  '/etc/NetworkManager/conf.d/dns.conf',
] as const;
/** A resolver file is read up to this: kubespray's are a few hundred bytes; a larger file is not one it wrote whole. */
export const DNS_FILE_BYTES = 65536;

/** The etcd data archives the etcd step keeps on the node, one per run (etcdArchive, steps/backup.ts): a glob. */
export const ETCD_ARCHIVES = `${NODE_BACKUPS}/*-etcd-data/etcd-data.tar.gz`;

export type StatePathKind = keyof typeof STATE_PATHS;

/**
 * nftables tables the cluster's components make, by family and name: kube-proxy's
 * nftables mode, Calico's nftables dataplane (Felix), Flannel's nftables mode; the
 * shapes each writes are in test/fixtures/nft (with the source each follows). Looked up,
 * backed up and deleted by name only: a table of anyone else's is never listed.
 */
export const NFT_TABLES: readonly { family: string; name: string; owner: string }[] = [
  { family: 'ip', name: 'kube-proxy', owner: "kube-proxy's nftables mode" },
  { family: 'ip6', name: 'kube-proxy', owner: "kube-proxy's nftables mode" },
  { family: 'ip', name: 'calico', owner: "Calico's nftables dataplane" },
  { family: 'ip6', name: 'calico', owner: "Calico's nftables dataplane" },
  // Felix makes its ARP table wherever the kernel has nftables, in its iptables mode too (from 3.32).
  { family: 'arp', name: 'calico-arp', owner: "Calico's ARP table" },
  { family: 'ip', name: 'flannel-ipv4', owner: "Flannel's nftables mode" },
  { family: 'ip6', name: 'flannel-ipv6', owner: "Flannel's nftables mode" },
];

/**
 * What a probe can be asked for. A reset step re-probes only the views its work
 * shows in (one round trip, a fraction of the full probe's cost); verify asks for all.
 */
export const VIEWS = ['files', 'trust-store', 'static-pod-manifests', 'dns', 'processes', 'sockets', 'mounts', 'netns', 'links', 'firewall', 'cni-firewall', 'units', 'containers', 'kubelet', 'etcd', 'cgroups', 'install', 'pods', 'facts'] as const;
export type View = (typeof VIEWS)[number];
/**
 * Views that read again only a part of a bigger one, for a step whose side effects
 * touch only that part: `cni-firewall` is the nat chains a CNI DEL changes (the CNI's
 * per-pod chains and the built-in chains that jump to them), not the whole firewall
 * (on a node of 20,000 Services, seconds); `trust-store` is the cluster's CAs, the
 * anchors and what the built bundle trusts, what the trust step changes of the files;
 * `static-pod-manifests` is the kubelet's manifests, what the static-pods step moves away.
 * Never part of a full probe.
 */
export const NARROWER: Partial<Record<View, View>> = { 'cni-firewall': 'firewall', 'trust-store': 'files', 'static-pod-manifests': 'files' };

/** The views a step's re-probe takes for `views`: containers are judged alive by the process list; a narrower view beside its wider one is read once, as the wider. */
export function reprobedViews(views: Iterable<View>): Set<View> {
  const v = new Set(views);
  if (v.has('containers')) v.add('processes');
  for (const x of [...v]) if (NARROWER[x] && v.has(NARROWER[x])) v.delete(x);
  return v;
}
/**
 * A full probe: membership residue. The installation footprint (`install`) only with
 * --purge. The node's facts only where a report shows them (verify, audit): their
 * runtime `--version` costs a node ~20 ms of CPU, and a reset does not need them.
 */
export const ALL_VIEWS: ReadonlySet<View> = new Set(VIEWS.filter((v) => v !== 'install' && v !== 'pods' && v !== 'facts' && !NARROWER[v]));
export const PURGE_VIEWS: ReadonlySet<View> = new Set([...ALL_VIEWS, 'install']);
/** A full probe with the node's facts, for a report. */
export const withFacts = (views: ReadonlySet<View>): ReadonlySet<View> => new Set([...views, 'facts']);
/**
 * The fleet audit's probe: what pods leave on a live node (their cgroups, netns,
 * veths, IPAM leases, dirs, containers) and the etcd membership. Not the firewall,
 * units or files a reset cares about: at fleet scale they are the probe's cost.
 */
export const AUDIT_VIEWS: ReadonlySet<View> = new Set<View>(['processes', 'sockets', 'mounts', 'netns', 'links', 'containers', 'etcd', 'cgroups', 'pods', 'facts']);

/**
 * Sets CGH to the node's cgroup hierarchies, space-separated: /sys/fs/cgroup alone on
 * pure v2, else every hierarchy mounted below it (v1 controllers, name=systemd, the
 * unified v2 one), since a cgroup can linger in one hierarchy only. Co-mounted
 * controllers' other names (cpu -> cpu,cpuacct) are links: skipped. No fork.
 */
export const CGROUP_HIERARCHIES = `CGH=
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then CGH=/sys/fs/cgroup
else for h in /sys/fs/cgroup/*/; do h=\${h%/}; [ -L "$h" ] || CGH="$CGH $h"; done; fi`;

/**
 * The kubelet's cgroups below a hierarchy, by driver and depth: the root, the QoS
 * level, pods (Guaranteed ones right below the root), their containers. Globs ending
 * in / match directories only, so the control files cost no test each. Containers are
 * named by their 64-hex id (containerd, Docker) or crio-ID: three hex digits first
 * tells them from control files (cgroup.*, cpu.*, blkio.*, devices.*, freezer.*).
 */
const KUBE_CGROUP_GLOBS = [
  '/kubepods/', '/kubepods/besteffort/', '/kubepods/burstable/',
  ...['/kubepods/pod*/', '/kubepods/besteffort/pod*/', '/kubepods/burstable/pod*/'].flatMap((pod) => [pod, `${pod}[0-9a-f][0-9a-f][0-9a-f]*/`, `${pod}crio-*/`]),
  // systemd driver: the QoS slices and Guaranteed pods' below kubepods.slice, the other pods' below their QoS slice; containers are scopes.
  '/kubepods.slice/', '/kubepods.slice/kubepods-*.slice/', '/kubepods.slice/kubepods-*.slice/kubepods-*.slice/',
  '/kubepods.slice/kubepods-*.slice/*.scope/', '/kubepods.slice/kubepods-*.slice/kubepods-*.slice/*.scope/',
];

/** containerd's task bundles of Kubernetes' namespace, below its state dir: they outlive containerd (a task runs on under its shim); a task's directory goes when the runtime deletes it. */
export const k8sBundles = (state: string): string => `${state.replace(/\/+$/, '')}/io.containerd.runtime.v2.task/k8s.io/`;
export const K8S_BUNDLES = k8sBundles(CONTAINERD_DEFAULTS.state);
/** The CRI plugin's state below containerd's state dir, and its per-sandbox dirs there (a sandbox's /dev/shm is mounted in one). */
export const criState = (state: string): string => `${state.replace(/\/+$/, '')}/io.containerd.grpc.v1.cri/`;
export const criSandboxes = (state: string): string => `${criState(state)}sandboxes/`;
/** The state dirs to look in: the configured one, and the default (what a daemon started before the config moved it left there). */
export const stateDirs = (state: string): string[] => [...new Set([state, CONTAINERD_DEFAULTS.state])];

/**
 * What names a containerd container's pod, as grep -o prints it from a bundle's
 * config.json (compact JSON) or `ctr containers info` (indented: a space after the
 * colon). Every containerd since 1.4 writes the sandbox's log directory
 * (/var/log/pods/NS_NAME_UID), a container's sandbox-id, the cgroup path and, on
 * the containerd object, the kubelet's labels; sandbox-name and -namespace since
 * 1.5, sandbox-uid since 1.6.11.
 */
export const CRI_IDENTITY =
  '"(io\\.kubernetes\\.cri\\.(container-type|container-name|sandbox-id|sandbox-name|sandbox-namespace|sandbox-uid|sandbox-log-directory)|io\\.kubernetes\\.(pod\\.(uid|name|namespace)|container\\.name)|io\\.cri-containerd\\.kind|cgroupsPath)": ?"[^"]*"';

/**
 * A stopped sandbox's network namespace, from the spec in its containerd record (the
 * only namespace path under /run/netns: a container's are /proc/PID/ns/…). Its task
 * bundle is gone once its pause process exits, while StopPodSandbox's CNI DEL, and the
 * netns's removal after it, are still to run.
 */
export const SPEC_NETNS = '"path": ?"/(var/)?run/netns/[^"]*"';

/** The `kube-cgroups` section: "@HIERARCHY" lines, each followed by the kubelet's cgroups in it (parseKubeCgroups). */
export const KUBE_CGROUPS_PROBE = `${CGROUP_HIERARCHIES}
for h in $CGH; do
  printf '@%s\\n' "$h"
  for d in ${KUBE_CGROUP_GLOBS.map((g) => `$h${g}`).join(' ')}; do [ -d "$d" ] && d=\${d%/} && printf '%s\\n' "\${d#"$h"}"; done
done`;

/**
 * The `ipam-leases` section: host-local's leases, a file per address naming the
 * sandbox (container ID) that holds it: "ID\r\nIFNAME" since host-local 0.8, the ID
 * alone (no newline) before. The first line is printed as read, its \r too: the
 * parser strips it.
 */
export const IPAM_LEASES_PROBE = `for f in /var/lib/cni/networks/*/*; do
  case \${f##*/} in lock|last_reserved_ip*) continue ;; esac
  [ -f "$f" ] || continue
  v=; read -r v < "$f"; printf '%s\\t%s\\n' "$f" "$v"
done`;

/**
 * The shell prelude every node script starts with: PATH, the C locale, and the
 * section marker function `s`. The script prints a key of its own, read from the
 * node's kernel, first, because the script text (and so the nonce) is readable by
 * any process in /proc/PID/cmdline while it runs. Markers carry both; only the key
 * line is trusted to say what the key is (see splitSections).
 */
export function scriptPrelude(nonce: string, rt: ContainerdPaths = CONTAINERD_DEFAULTS): string {
  // ctr (and so every ctr an action runs) reaches containerd where its config puts the socket.
  const address = rt.address === CONTAINERD_DEFAULTS.address ? '' : `export CONTAINERD_ADDRESS=${shQuote(rt.address)}\n`;
  return `
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Bytes, not characters: in a UTF-8 locale grep skips a file whose process name is not valid UTF-8.
export LC_ALL=C
K=; read -r K < /proc/sys/kernel/random/uuid
printf '\\n@@decom-${nonce} key %s\\n' "$K"
s() { printf '\\n@@decom-${nonce}-%s %s\\n' "$K" "$1"; }
has() { command -v "$1" >/dev/null; }
T="timeout 10"
${address}${PATH_GUARD}`;
}


/**
 * With no answer from kube-proxy and no firewall view to judge by (the audit's probe;
 * with one, the rules read the same from it): the mode its leftovers show, its nftables
 * table, IPVS, its iptables chain, the cheapest look first.
 */
const KUBE_PROXY_LEFT = `if [ -z "$m" ]; then
  L=
  if has nft && nft list table ip kube-proxy >/dev/null 2>&1; then L=nftables
  elif [ -e /sys/class/net/kube-ipvs0 ] || grep -q -E '^(TCP|UDP|SCTP) ' /proc/net/ip_vs; then L=ipvs
  elif has iptables && iptables -w -t nat -S KUBE-SERVICES 1 >/dev/null 2>&1; then L=iptables; fi
  [ -n "$L" ] && printf 'kube-proxy-left %s\\n' "$L"
fi`;

/**
 * The patterns of a containerd config's top-level `imports` array (before its first
 * table), one per line: double- or single-quoted TOML strings, on one line or several.
 * The config itself is parsed on the client (cri/containerd-config.ts); this only says
 * which files to send.
 */
const IMPORTS_AWK = String.raw`/^[ \t]*\[/ && !i { exit } /^[ \t]*imports[ \t]*=/ { i = 1 } i { s = $0; while (match(s, /"[^"]*"|\047[^\047]*\047/)) { print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) } if ($0 ~ /\]/) i = 0 }`;

/** How much of each process's command line the probe sends (bytes): the flags decom reads fit; arguments of any size cannot fill decom's memory. */
export const CMDLINE_BYTES = 4096;

/**
 * The first CMDLINE_BYTES of each process's `grep -H` lines (an argument's line break
 * continues its command line), and `#cut PID` after a line it cut: no grep line starts
 * with #, every one with /proc/. NULs pass through awk as \001 (busybox's awk turns a
 * NUL into a line break, which would let an argument start a line of its own); an
 * argument's own \001 comes back as a NUL, which only splits that argument.
 */
const CMDLINE_AWK = String.raw`{ c = index($0, ":"); f = substr($0, 1, c); v = substr($0, c + 1)
  if (f != last) { last = f; left = max; cut = 0 }
  if (cut) next
  if (length(v) <= left) { print; left -= length(v) + 1; next }
  if (left > 0) print f substr(v, 1, left)
  cut = 1; print "#cut " substr(f, 7, length(f) - 15) }`;

/** The `grep -a -H '' /proc/[0-9]*\/cmdline` lines in, each process's cut to CMDLINE_BYTES out (CMDLINE_AWK). */
export const CUT_CMDLINES = `tr '\\0' '\\001' | awk -F '\\n' -v max=${CMDLINE_BYTES} '${CMDLINE_AWK}' | tr '\\001' '\\0'`;

/**
 * Where each path in "$@" resolves: its dir resolved, its name kept (a symlink named last
 * is the link), as `judge` resolves it when the path is deleted (util/confine.ts). The
 * paths, NUL-terminated, an empty record, then their dirs resolved in the same order
 * (parseResolved). One readlink for them all.
 */
const RESOLVED = `printf '%s\\0' "$@"; printf '\\0'
[ $# -eq 0 ] || printf '%s\\0' "$@" | sed -z 's,/[^/]*$,,; s,^$,/,' | xargs -0 readlink -m -z --`;

/**
 * Where containerd keeps its state, socket and plugin dirs (sections containerd-args and
 * containerd-config): the running daemon's command line and config, `#same` for the daemon
 * the client already read (`daemon`). Sets CP, the daemon's PID. Reads the process listing (ST).
 */
const containerdConfig = (daemon: string | undefined): string => `s containerd-args
# Where containerd keeps its state, socket and plugin dirs is its config's to say (and its
# command line's): the running daemon's command line, else its unit's ExecStart. The
# node's own daemon is the one in PID 1's mount namespace (not a kind node's, in a
# container): the first in the listing, found without a fork, else a search.
CP=
if running containerd; then
  t=\${ST%%" (containerd) "*}; CP=\${t##*:}
  if ! [ /proc/"$CP"/ns/mnt -ef /proc/1/ns/mnt ]; then
    CP=; for p in $(printf '%s\\n' "$ST" | grep -F ' (containerd) ' | cut -d: -f2 | cut -d' ' -f1); do [ /proc/"$p"/ns/mnt -ef /proc/1/ns/mnt ] && CP=$p && break; done
  fi
fi
D=; if [ -n "$CP" ]; then l=; read -r l < /proc/"$CP"/stat; set -- \${l##*) }; D="$CP:\${20}"; printf 'daemon %s\\n' "$D"; fi
s containerd-config
# The daemon the client already read the config of (the same PID and start): its paths stand.
if [ -n "$D" ] && [ "$D" = ${shQuote(daemon ?? '-')} ]; then echo '#same'; else
if [ -n "$CP" ]; then A=$(tr '\\0' '\\n' < /proc/"$CP"/cmdline)
else A=$(sed -n 's/^ExecStart=\\(..*\\)/\\1/p' /lib/systemd/system/containerd.service /usr/local/lib/systemd/system/containerd.service /etc/systemd/system/containerd.service /etc/systemd/system/containerd.service.d/*.conf | tail -n 1 | tr ' ' '\\n'); fi
CF=; o=; set -f
for a in $A; do
  case $o in --config|-c) CF=$a ;; esac
  case $a in --config=*) CF=\${a#--config=} ;; esac
  o=$a; printf 'arg %s\\0' "$a"
done
# The config and its imports, breadth first as containerd merges them (each file once),
# patterns relative to the importing file's dir: "file PATH" NUL TEXT NUL, "missing PATH" NUL.
Q=\${CF:-${CONTAINERD_CONFIG}}; DONE=' '; n=0
while [ -n "$Q" ]; do
  set -- $Q; f=$1; shift; Q=$*
  # ./ and ../ resolved, so a file importing its importer is read once; at most 64 files.
  case $f in */./*|*/../*) f=$(readlink -m -- "$f") ;; esac
  case $DONE in *" $f "*) continue ;; esac; DONE="$DONE$f "; n=$((n + 1)); [ $n -le 64 ] || break
  [ -f "$f" ] || { printf 'missing %s\\0' "$f"; continue; }
  printf 'file %s\\0' "$f"; head -c 262144 "$f"; printf '\\0'
  for g in $(awk '${IMPORTS_AWK}' "$f"); do
    case $g in /*) ;; *) g=\${f%/*}/$g ;; esac
    # A pattern stands for the files it matches; a plain path is read, or said missing.
    case $g in *'*'*) set +f; for m in $g; do [ -f "$m" ] && Q="$Q $m"; done; set -f ;; *) Q="$Q $g" ;; esac
  done
done
set +f
fi
`;

/**
 * The trust store, part of the files view (and the trust step's re-probe alone): the
 * cluster's CAs and the anchors (FILE NUL CONTENT NUL, judged by content on the client),
 * and which cluster CA the built bundle still trusts (a line of its base64 found there).
 * Each anchor is kept in "$@" for the record of where it resolves.
 */
const TRUST_STORE = `s cluster-cas
for f in ${CLUSTER_CAS.join(' ')}; do [ -f "$f" ] && { printf '%s\\0' "$f"; cat "$f"; printf '\\0'; }; done
s anchors
for f in ${ANCHORS.join(' ')}; do [ -f "$f" ] && { printf '%s\\0' "$f"; head -c 65536 "$f"; printf '\\0'; set -- "$@" "$f"; }; done
s bundle
for f in ${CLUSTER_CAS.join(' ')}; do [ -f "$f" ] && l=$(sed -n 2p "$f") && [ -n "$l" ] && grep -q -F -- "$l" ${CA_BUNDLE} && printf '%s\\n' "$f"; done`;

/** The views that ask which processes run (the /proc listing every later check of a daemon reads). */
const PROCESS_VIEWS: ReadonlySet<View> = new Set(['processes', 'containers', 'kubelet', 'etcd', 'install', 'facts']);
/**
 * The views that read containerd's command line and config again: a step's re-probe of
 * its files, mounts or firewall cannot have moved containerd's dirs, so those views go by
 * the paths the run last read (NodeState.containerd).
 */
const RUNTIME_VIEWS: ReadonlySet<View> = new Set(['containers', 'install', 'facts']);

/** The read-only probe of `views` (all by default), after scriptPrelude. Ends with the `end` section. */
export function probeBody(views: ReadonlySet<View> = ALL_VIEWS, rt: ContainerdPaths = CONTAINERD_DEFAULTS, daemon?: string): string {
  const v = (view: View, text: string) => (views.has(view) ? text : '');
  // The configured state dir, and the default one (what a daemon started before the config moved it left there).
  const bundles = stateDirs(rt.state).map((d) => shQuote(k8sBundles(d)));
  // Every path found is also kept in "$@", for the record of where it resolves (RESOLVED).
  const pathsOf = (kinds: readonly [string, readonly string[]][]) =>
    kinds.flatMap(([kind, globs]) => globs.map((g) => judgedGlob(g, `{ [ -e "$p" ] || [ -L "$p" ]; } && printf '%s\\t%s\\0' ${kind} "$p" && set -- "$@" "$p"`))).join('\n');
  const paths = pathsOf(Object.entries(statePaths(rt)));
  // IP holds the found paths (none has a space or newline: they are fixed names) for the ownership query.
  const install = Object.entries(installPaths(rt))
    .flatMap(([kind, globs]) => globs.map((g) => judgedGlob(g, `{ [ -e "$p" ] || [ -L "$p" ]; } && printf '%s\\t%s\\0' ${kind} "$p" && IP="$IP $p" && set -- "$@" "$p"`)))
    .join('\n');
  return `
exec 2>/dev/null
s meta
read -r v < /proc/sys/kernel/hostname; printf 'hostname=%s\\n' "$v"
v=; read -r v < /etc/machine-id; printf 'machine_id=%s\\n' "$v"
read -r PID1 < /proc/1/comm; printf 'pid1=%s\\n' "$PID1"
# The effective uid (Uid: real effective saved fs), without forking id -u.
while read -r k _ v _; do [ "$k" = Uid: ] && printf 'uid=%s\\n' "$v" && break; done < /proc/self/status
for t in crictl ctr docker etcdctl iptables-nft-save iptables-legacy-save ip6tables-nft-save ip6tables-legacy-save iptables-save nft ss systemctl ipvsadm ipset dpkg rpm; do has "$t" && printf 'tool=%s\\n' "$t"; done
${v('files', `
s paths
set --
${paths}
for p in ${PROXY_CONFIGS.join(' ')}; do [ -f "$p" ] && grep -q -E '${PROXY_MARK}' "$p" && printf 'kubernetes-config\\t%s\\0' "$p" && set -- "$@" "$p"; done
# Certificates and kubeconfigs, judged by content on the client: FILE NUL CONTENT NUL.
${TRUST_STORE}
s kubeconfigs
# -o: block and flow style alike ({certificate-authority: …, server: …}).
for f in ${KUBECONFIGS.join(' ')}; do [ -f "$f" ] && { printf '%s\\0' "$f"; grep -o -E '(certificate-authority-data|certificate-authority|server):[[:space:]]*[^,}[:space:]]+' "$f"; printf '\\0'; set -- "$@" "$f"; }; done
s resolved
${RESOLVED}
s etcd-archives
for p in ${ETCD_ARCHIVES}; do [ -f "$p" ] && printf '%s\\0' "$p"; done
s sysctl
# Not through a link: Debian's /etc/sysctl.d/99-sysctl.conf is /etc/sysctl.conf.
set --; for f in /etc/sysctl.conf /etc/sysctl.d/*.conf; do [ -f "$f" ] && [ ! -L "$f" ] && set -- "$@" "$f"; done
[ $# -gt 0 ] && grep -H -n -E '^[[:space:]]*(${SYSCTL_KEYS.map((k) => k.replace(/\./g, '\\.')).join('|')})[[:space:]]*=' "$@"`)}

# Processes straight from /proc (ps reads five files per process): pid, comm, ppid
# and start time from stat, argv from cmdline. grep -H prefixes every line with the
# file it came from, so no process can forge another's entry. The listing is taken for
# the views that ask which daemons run, and printed when asked for.
ST=${[...PROCESS_VIEWS].some((x) => views.has(x)) ? `$(grep -a -H '' /proc/[0-9]*/stat)` : ''}
# Is a daemon running? Matched on its comm in the listing above: no pgrep, no fork.
running() { case "$ST" in *" ($1) "*) return 0 ;; esac; return 1; }
CP=
${[...RUNTIME_VIEWS].some((x) => views.has(x)) ? containerdConfig(daemon) : ''}
${views.has('files') ? '' : v('trust-store', TRUST_STORE)}
${views.has('files') ? '' : v('static-pod-manifests', `s manifest-paths\nset --\n${pathsOf([['static-pod-manifest', statePaths(rt)['static-pod-manifest']]])}`)}
${v('dns', `
# kubespray's resolver files: PATH NUL TYPE NUL TARGET NUL then, for a regular file at the end of its links,
# c NUL TEXT NUL SHA-256 NUL (else n NUL NUL NUL): the sum tells the client whether the text it decoded is the file's bytes.
s dns
for f in ${KUBESPRAY_DNS_FILES.join(' ')}; do
  t=absent x=
  if [ -L "$f" ]; then t=link x=$(readlink -f -- "$f"); elif [ -f "$f" ]; then t=file; elif [ -e "$f" ]; then t=other; fi
  printf '%s\\0%s\\0%s\\0' "$f" "$t" "$x"
  if [ -f "$f" ] && [ -r "$f" ]; then printf 'c\\0'; head -c ${DNS_FILE_BYTES} -- "$f" | tr -d '\\000'; printf '\\0%s\\0' "$(sha256sum < "$f")"; else printf 'n\\0\\0\\0'; fi
done
s dns-backups
for f in /etc/resolv.conf.*~; do [ -f "$f" ] && printf '%s\\0' "$f"; done
s dns-services
# Which of the services that read them run, asked only where kubespray left a file of theirs.
if has systemctl && [ "$PID1" = systemd ] && { [ -e /etc/systemd/resolved.conf.d/kubespray.conf ] || [ -e /etc/NetworkManager/conf.d/calico.conf ] || [ -e /etc/NetworkManager/conf.d/k8s.conf ] || [ -e /etc/NetworkManager/conf.d/dns.conf ]; }; then
  $T systemctl show -p Id -p ActiveState -p CanReload NetworkManager.service systemd-resolved.service
fi`)}
${v('processes', `
s stat
printf '%s\\n' "$ST"
s cmdline
grep -a -H '' /proc/[0-9]*/cmdline | ${CUT_CMDLINES}
s cgroups
# One line per process is enough (-m 1 counts per file): v1 repeats the path per controller.
# Anchored at the root of the node's hierarchy: a kind or k3d cluster in a container
# (/docker/ID/kubepods/…) is someone else's.
grep -a -H -m 1 -E ':/(kubepods|k8s\\.io/)' /proc/[0-9]*/cgroup
s etcd-dirs
if running etcd; then
  # The data dir each etcd uses when its command line does not say: its environment, else its working dir.
  for p in $(printf '%s\\n' "$ST" | grep -F ' (etcd) ' | cut -d: -f2 | cut -d' ' -f1); do
    # Tab-separated: a dir may hold spaces. ETCD_CONFIG_FILE (like --config-file) overrides the rest.
    e=$(tr '\\0' '\\n' < /proc/"$p"/environ | grep -E '^ETCD_(DATA_DIR|NAME|CONFIG_FILE)=' | tr '\\n' '\\t')
    printf 'etcd\\t%s\\t%s\\t%s\\n' "$p" "$(readlink /proc/"$p"/cwd)" "$e"
  done
fi`)}
${v('sockets', `
s listen
# Kept: the facts ask kube-proxy only when something listens on its metrics port.
SS=$(ss -Hltnp); printf '%s\\n' "$SS"`)}
${v('mounts', `
s mountinfo
cat /proc/self/mountinfo`)}
${v('netns', `
s netns
for n in /run/netns/*; do [ -e "$n" ] && printf '%s\\0' "$n"; done`)}
${v('links', `
s links
ip -o link show
s routes
# -N: protocols as numbers (12 BIRD, 17 kube-router, 80 Calico's Felix), whatever rt_protos names them;
# an iproute2 without -N prints names. One family each: "table all" alone would print IPv6 with IPv4.
ip -N -o -4 route show table all || ip -o -4 route show table all
ip -N -o -6 route show table all || ip -o -6 route show table all`)}
${v('firewall', `
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
# Only the cluster's tables, by family and name: \`nft list tables\` reads every table's
# rules first (15 s beside iptables-nft's tables of 20,000 Services), one table by name only its own.
if has nft; then for t in ${NFT_TABLES.map((t) => `${t.family}:${t.name}`).join(' ')}; do nft list table "\${t%%:*}" "\${t#*:}" >/dev/null 2>&1 && printf 'table %s %s\\n' "\${t%%:*}" "\${t#*:}"; done; fi
s ipvs
[ -r /proc/net/ip_vs ] && cat /proc/net/ip_vs
s ipsets
has ipset && ipset list -n`)}
${v('cni-firewall', `
s cni-nat
# The nat chains of the nft backend a CNI DEL changes (the plugins' iptables is the
# nft one): the built-in chains that jump to the CNI's, and every CNI-* chain, named
# by nft (chain names only: no rule is read) and listed one by one.
if has iptables-nft && has nft; then
  for f in 4 6; do
    if [ $f = 4 ]; then TB=ip; I=iptables-nft; else TB=ip6; I=ip6tables-nft; fi
    printf '#family %s\\n' $f
    C=$(nft list chains $TB | awk -v t="table $TB nat {" '/^table /{n=($0==t)} n && $1=="chain" && $2~/^CNI-/{print $2}')
    for c in PREROUTING OUTPUT POSTROUTING $C; do $I -w -t nat -S "$c"; done
  done
fi`)}
${v('units', `
s unit-cgroups
# A unit's cgroup exists only while systemd runs it (v1, hybrid, v2).
KU=
for u in kubelet etcd; do
  for p in /sys/fs/cgroup/systemd/system.slice /sys/fs/cgroup/unified/system.slice /sys/fs/cgroup/system.slice; do
    [ -d "$p/$u.service" ] && printf '%s\\n' "$u.service" && [ "$u" = kubelet ] && KU=1
  done
done
s systemd
# Not while the kubelet's cgroup shows it running (the common dirty node): otherwise
# only systemd knows whether it is enabled (a wants link may dangle, the unit may be
# masked) or auto-restarting, even with its unit file removed without a daemon-reload.
[ "$PID1" = systemd ] && [ -z "$KU" ] && has systemctl && $T systemctl show -p Id,LoadState,ActiveState,UnitFileState kubelet.service`)}
${v('containers', `
# Runtime clients only when their daemon runs (a stale socket makes them hang). Each
# client that answers says so (#answered): a runtime that did not answer proves nothing dead.
CONTAINERD=; running containerd && CONTAINERD=1
IDS=; CRICTL=
s runtimes
has containerd && echo 'containerd installed'
[ -n "$CONTAINERD" ] && echo 'containerd running'
running dockerd && echo 'docker running'
# A cri-dockerd node whose dockerd is stopped still has pods Docker would start again.
{ has cri-dockerd || [ -S /var/run/cri-dockerd.sock ]; } && echo 'cri-dockerd installed'
# CRI-O's pods decom does not read: where it is, no pod trace is proven gone.
{ running crio || [ -S /run/crio/crio.sock ]; } && echo 'crio present'
# Which runtime crictl talks to: /etc/crictl.yaml's endpoint, else the sockets crictl tries by default.
s crictl-endpoint
[ -r /etc/crictl.yaml ] && grep -E '^[[:space:]]*runtime-endpoint:' /etc/crictl.yaml
for k in /var/run/dockershim.sock /run/containerd/containerd.sock /run/crio/crio.sock /var/run/cri-dockerd.sock; do [ -S "$k" ] && printf 'socket %s\\n' "$k"; done
s crictl-pods
[ -n "$CONTAINERD" ] && has crictl && $T crictl pods -o json && CRICTL=1
s crictl-containers
[ -n "$CRICTL" ] && $T crictl ps -a -o json
s ctr-containers
# ctr only where the socket is (ctr waits out its timeout on a missing one): a daemon whose
# config moved it, read in this same trip, is asked in the next trip, where it listens.
CS=; [ -n "$CONTAINERD" ] && [ -S "\${CONTAINERD_ADDRESS:-${CONTAINERD_DEFAULTS.address}}" ] && CS=1
[ -n "$CS" ] && has ctr && IDS=$($T ctr -n k8s.io containers ls -q) && printf '%s\n#answered\n' "$IDS"
# Every task bundle's CRI annotations, cgroup, network namespace and init PID: there even when containerd is down.
s task-bundles
set -- ${bundles.map((b) => `${b}*/config.json ${b}*/init.pid`).join(' ')}
grep -H -o -E '${CRI_IDENTITY}|"type":"network","path":"[^"]*"|^[0-9]+$' "$@"
# A container with no task has no bundle: while containerd answers, its record names its pod
# (the kubelet's labels, the CRI's annotations), in every containerd version, and a stopped
# sandbox's record its network namespace.
s ctr-info
# When crictl answered (its JSON names every pod), only the stopped sandboxes, for their netns.
# A bounded number, each briefly: a container left unread makes the audit's pod traces
# unverified, never orphans.
INFO_IDS=$IDS
[ -n "$CRICTL" ] && INFO_IDS=$($T crictl pods -q --state notready 2>/dev/null)
n=0; ok=1
for id in $INFO_IDS; do
  b=; for d in ${bundles.join(' ')}; do [ -e "$d$id"/config.json ] && b=1; done; [ -n "$b" ] && continue
  printf '@%s\\n' "$id"; n=$((n + 1))
  if [ -z "$ok" ] || [ $n -gt 64 ]; then echo '!unread'; continue; fi
  if o=$(timeout 3 ctr -n k8s.io containers info "$id"); then printf '%s\\n' "$o" | grep -o -E '${CRI_IDENTITY}|${SPEC_NETNS}'; else echo '!unanswered'; ok=; fi
done
# host-local's leases name their sandboxes: a runtime's teardown (CNI DEL) releases its own.
s ipam-leases
${IPAM_LEASES_PROBE}
s docker
running dockerd && has docker && $T docker ps -a --no-trunc --filter name=^k8s_ --format '{{.ID}}\t{{.Names}}\t{{.State}}' && echo '#answered'`)}
${v('kubelet', `
# The kubelet tears static pods down only while it is healthy; which pods are static
# is read from the manifests (name, namespace).
s kubelet-healthz
if running kubelet; then
  if has curl; then $T curl -s -m 2 http://127.0.0.1:10248/healthz; elif has wget; then $T wget -q -T 2 -O - http://127.0.0.1:10248/healthz; fi
fi
s manifests
for f in /etc/kubernetes/manifests/*; do [ -f "$f" ] && printf '%s\\0' "$f" && grep -E '^  (name|namespace):' "$f" | head -n 2 && printf '\\0'; done`)}
${v('etcd', `
# Is this node's etcd a voting member of a healthy cluster? Asked only when an etcd
# process runs.
s etcd
if running etcd && has etcdctl; then
${ETCDCTL_ENV}
  etcd_view
fi`)}
${v('pods', `
# What a pod leaves on a node, to be matched with the pods the API knows (decom audit).
s pod-dirs
for d in /var/lib/kubelet/pods/*; do [ -d "$d" ] && printf '%s\\n' "\${d##*/}"; done
s netns-inodes
# Which network namespace each process is in, and each named one's inode: a netns no process is in is unused.
set --; for n in /run/netns/*; do [ -e "$n" ] && set -- "$@" "$n"; done
[ $# -gt 0 ] && stat -L -c '%i %n' "$@"
s proc-netns
ls -l /proc/[0-9]*/ns/net`)}
${v('cgroups', `
# The kubelet's cgroup tree in every hierarchy: what a reset must leave none of, and
# the pods' cgroups the audit matches with the pods the API knows.
s kube-cgroups
${KUBE_CGROUPS_PROBE}`)}
${v('install', `
s installed
IP=; set --
${install}
s resolved-install
${RESOLVED}
# Which of them a package owns: those are the package manager's to remove.
s installed-owners
# Asked also by the name without /usr: on a merged-/usr system dpkg knows /lib/systemd/… and /bin/….
set --; for p in $IP; do set -- "$@" "$p"; case $p in /usr/lib/*|/usr/bin/*|/usr/sbin/*) set -- "$@" "\${p#/usr}" ;; esac; done
# The package manager's own binary is asked too: its answer proves the query worked.
if [ $# -gt 0 ]; then
  if has dpkg; then $T dpkg -S /usr/bin/dpkg "$@"; elif has rpm; then for p in /usr/bin/rpm "$@"; do o=$($T rpm -qf --qf '%{NAME}' "$p") && printf '%s: %s\\n' "$o" "$p"; done; fi
fi
s images
# The images of containerd's k8s.io namespace: only through the runtime (never its directories).
if running containerd; then [ -S "\${CONTAINERD_ADDRESS:-${CONTAINERD_DEFAULTS.address}}" ] && has ctr && $T ctr -n k8s.io images ls -q; elif has containerd; then echo '#containerd-stopped'; fi
s docker-images
# Docker's image references and which containers use them (cri-dockerd names the image by its ID):
# one only Kubernetes' k8s_* containers use is Kubernetes'.
if running dockerd && has docker; then
  $T docker ps -a --no-trunc --format 'use\t{{.Names}}\t{{.Image}}'
  $T docker images --no-trunc --format 'image\t{{.ID}}\t{{.Repository}}:{{.Tag}}'
fi`)}
${v('facts', `
s facts
# What the node runs, as found: each runtime's version from its own binary (the running
# daemon's, through /proc), the CNI config the runtime picks (the first by name in its conf
# dir: .conf, .conflist, .json) with its plugins' types, and kube-proxy's mode as it answers it.
if [ -n "$CP" ]; then printf 'containerd %s\\n' "$($T /proc/"$CP"/exe --version)"; elif has containerd; then printf 'containerd %s\\n' "$($T containerd --version)"; fi
running dockerd && has dockerd && printf 'docker %s\\n' "$($T dockerd --version)"
{ running crio || [ -S /run/crio/crio.sock ]; } && has crio && printf 'crio %s\\n' "$($T crio --version | grep -i '^version')"
for d in ${rt.cniConfDirs.flatMap((d) => configDir(d) ?? []).join(' ')}; do for f in "$d"/*; do
  case $f in *.conf|*.conflist|*.json) [ -f "$f" ] || continue; printf 'cni-file %s\\n' "$f"; grep -o -E '"type"[[:space:]]*:[[:space:]]*"[^"]*"' "$f" | head -n 8; break 2 ;; esac
done; done
# kube-proxy answers its mode on its metrics address (127.0.0.1:10249 by default), in a pod or not;
# nothing listening there is refused at once.
m=
case \${SS-':10249 '} in *':10249 '*)
  if has curl; then m=$($T curl -s -f -m 2 http://127.0.0.1:10249/proxyMode); elif has wget; then m=$($T wget -q -T 2 -O - http://127.0.0.1:10249/proxyMode); fi ;;
esac
case $m in iptables|ipvs|nftables|kernelspace) ;; *) m= ;; esac
printf 'kube-proxy-mode %s\\n' "$m"
${views.has('firewall') ? '' : KUBE_PROXY_LEFT}`)}
s end
`;
}

/**
 * etcdctl as this node's etcd is reached: connection settings as kubespray's
 * /etc/etcd.env or Debian's /etc/default/etcd give them (read, never sourced), else
 * kubeadm's certificates. Defines `et` (etcdctl with them) and `etcd_view`, which
 * prints the endpoint=, status=, members= and health= lines parseEtcd reads. Used by
 * the probe and, on a member that stays, by the decommission's etcd step.
 */
export const ETCDCTL_ENV = `  for f in /etc/etcd.env /etc/default/etcd; do
    [ -r "$f" ] && while IFS='=' read -r k val; do
      case $k in ETCDCTL_ENDPOINTS|ETCDCTL_CACERT|ETCDCTL_CERT|ETCDCTL_KEY|ETCDCTL_CA_FILE|ETCDCTL_CERT_FILE|ETCDCTL_KEY_FILE|ETCD_ADVERTISE_CLIENT_URLS) eval "E_$k=\\$val" ;; esac
    done < "$f"
  done
  # No settings: kubeadm's etcd serves TLS only, on 127.0.0.1 too.
  D=http://127.0.0.1:2379; [ -r /etc/kubernetes/pki/etcd/ca.crt ] && D=https://127.0.0.1:2379
  EP=\${E_ETCDCTL_ENDPOINTS:-\${E_ETCD_ADVERTISE_CLIENT_URLS:-$D}}; EP=\${EP%%,*}
  CA=\${E_ETCDCTL_CACERT:-$E_ETCDCTL_CA_FILE}; CE=\${E_ETCDCTL_CERT:-$E_ETCDCTL_CERT_FILE}; KE=\${E_ETCDCTL_KEY:-$E_ETCDCTL_KEY_FILE}
  # With TLS on and no settings given: kubeadm's certificates, else kubespray's (the node's admin certificate).
  case $EP in https:*) if [ -z "$CA" ] && [ -r /etc/kubernetes/pki/etcd/ca.crt ]; then
    CA=/etc/kubernetes/pki/etcd/ca.crt CE=/etc/kubernetes/pki/etcd/healthcheck-client.crt KE=/etc/kubernetes/pki/etcd/healthcheck-client.key
  elif [ -z "$CA" ] && [ -r /etc/ssl/etcd/ssl/ca.pem ]; then
    h=$(hostname); CA=/etc/ssl/etcd/ssl/ca.pem CE=/etc/ssl/etcd/ssl/admin-$h.pem KE=/etc/ssl/etcd/ssl/admin-$h-key.pem
  fi ;; esac
  et() { ETCDCTL_API=3 timeout "\${ET_TIMEOUT:-8}" etcdctl --endpoints="$EP" --command-timeout="\${ET_CMD_TIMEOUT:-5s}" \${CA:+--cacert="$CA"} \${CE:+--cert="$CE"} \${KE:+--key="$KE"} "$@"; }
  # A member that does not answer its status is not asked anything else (each question waits for its timeout).
  etcd_view() {
    printf 'endpoint=%s\\n' "$EP"
    st=$(et endpoint status -w json) || st=
    printf 'status=%s\\n' "$(printf '%s' "$st" | tr -d '\\n')"
    [ -n "$st" ] || return 0
    printf 'members='; et member list -w json | tr -d '\\n'; printf '\\n'
    printf 'health='; et endpoint health --cluster -w json | tr -d '\\n'; printf '\\n'
  }`;

/** The whole read-only probe script for one run. `nonce` is the client's. */
export const probeScript = (nonce: string, views: ReadonlySet<View> = ALL_VIEWS, rt: ContainerdPaths = CONTAINERD_DEFAULTS, daemon?: string): string =>
  `${scriptPrelude(nonce, rt)}${probeBody(views, rt, daemon)}exit 0\n`;
