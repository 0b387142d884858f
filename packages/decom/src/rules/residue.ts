/**
 * What counts as Kubernetes residue on a node: NodeState in, findings out. The
 * same rules are the "check" half of every reset step and of the fleet audit, so
 * they must never report what is not Kubernetes' (another app's netns, chains,
 * containers, mounts, files) and never miss what is.
 */
import type { IptablesTable, KubeCgroup, NodeState, Proc } from '../probes/state.js';
import { CA_BUNDLE, NFT_TABLES, criState, k8sBundles, stateDirs, type StatePathKind } from '../probes/script.js';
import { hostOf } from '../inventory/identity.js';
import { UNKNOWN_FLAG, procFlag } from '../probes/proc-flags.js';
import { clusterDnsOf } from '../inventory/cluster-dns.js';
import { dnsEdits } from './dns.js';

/** The stable vocabulary of finding kinds (documented in docs/findings.md). */
export const KINDS = [
  'static-pod-manifest',
  'kubelet-process',
  'kubelet-service',
  'runtime-daemon',
  'etcd-process',
  'pod-sandbox',
  'container',
  'shim-process',
  'orphan-container-process',
  'pod-cgroup',
  'listening-port',
  'mount',
  'netns',
  'cni-link',
  'iptables',
  'nftables',
  'ipvs',
  'cni-config',
  'cni-state',
  'cdi-spec',
  'kubelet-state',
  'kubernetes-config',
  'etcd-data',
  'etcd-config',
  'pod-logs',
  'credential',
  'trust-anchor',
  'route',
  'ipset',
  'bpf-pin',
  // The host's resolver, as kubespray's preinstall edited it (docs/findings.md#dns).
  'dns-config',
  'cluster-resolver',
  // The installation footprint: only with --purge.
  'installed-binary',
  'installed-unit',
  'installed-config',
  'runtime-config',
  'image',
  'node-object',
] as const;
export type Kind = (typeof KINDS)[number];

export interface Finding {
  kind: Kind;
  /** The object itself: a port, a netns or link name, a mount target, a chain, a path, a container id, a PID. */
  subject: string;
  detail: string;
}

/** Control plane, etcd and kubelet ports; kubespray's local API load balancer listens on 6443 too. */
export const KUBERNETES_PORTS = new Set([6443, 2379, 2380, 2381, 10248, 10249, 10250, 10251, 10252, 10255, 10256, 10257, 10259]);

/** Mount targets below these are Kubernetes' (the kubelet's dirs, the CRI's below containerd's state dir, cni-* netns, k3s). */
const mountPrefixes = (s: NodeState): string[] => [
  '/var/lib/kubelet/',
  ...stateDirs(s.containerd.state).flatMap((d) => [k8sBundles(d), criState(d)]),
  '/run/netns/cni-',
  '/var/run/netns/cni-',
  '/run/k3s/',
  '/var/lib/rancher/k3s/',
];

/** CNI and kube-proxy links, by name: a node's own uplink may be a veth, so never by type. */
const CNI_LINK = /^(cni0|flannel\.1|flannel-v6\.1|flannel\.4096|flannel-wg.*|vxlan\.calico|vxlan-v6\.calico|tunl0|cali.+|cilium_.+|lxc[0-9a-f]{5,}|lxc_health|kube-bridge|kube-dummy-if|kube-ipvs0|nodelocaldns|weave|vxlan-v6\.calico)$/;

/**
 * Chains Kubernetes' components make, and the rules they add to other chains. The one
 * definition: the firewall reset (src/firewall) deletes exactly what this reports.
 */
const K8S_CHAIN = /^(KUBE-|CNI-|cali-|CILIUM_|FLANNEL-|flannel)/;
/** The prefixes of the comments those components put on their rules (kube-proxy, Calico, flannel, Cilium): anyone can write one. */
const K8S_COMMENT = /^(kubernetes |cali:|flanneld |cilium)/;

/** A chain Kubernetes or a CNI made, by its name's prefix (a user's ALLOW-KUBE-API is not). */
export const isKubernetesChain = (chain: string): boolean => K8S_CHAIN.test(chain);

/**
 * A rule's words as iptables-save prints them, quoting undone: the nft backend escapes a
 * quote in a comment (`it\'s`) where the legacy one does not, and `-c` puts counters first.
 */
function ruleWords(spec: string): string[] {
  const words: string[] = [];
  const text = spec.trim().replace(/^\[\d+:\d+\]\s+/, '');
  for (const m of text.matchAll(/"((?:[^"\\]|\\.)*)"|((?:[^\s"\\]|\\.)+)/g)) words.push((m[1] ?? m[2] ?? '').replace(/\\(.)/g, '$1'));
  return words;
}

/** The comparable text of a rule: its words, one space apart, each comment quoted as iptables-save quotes it. */
const ruleText = (spec: string): string =>
  ruleWords(spec)
    .map((w, i, all) => (all[i - 1] === '--comment' ? `"${w.replace(/[\\"]/g, '\\$&')}"` : w))
    .join(' ');

/**
 * The rules the components add to chains that are not theirs without jumping to one of
 * theirs, whole, as iptables-save prints them: only these are theirs by their text alone.
 * From the recorded firewalls of test/fixtures/iptables (every other rule of kube-proxy,
 * the kubelet, flannel, Calico and Cilium there, and in the sandbox's, jumps to their chains).
 */
const COMPONENT_RULES = new Set(
  [
    // Calico's Felix (iptables mode, from 3.16): what its policy accepted, at the end of FORWARD.
    '-A FORWARD -m comment --comment "cali:S93hcgKJrXEqnTfs" -m comment --comment "Policy explicitly accepted packet." -m mark --mark 0x10000/0x10000 -j ACCEPT',
  ].map(ruleText),
);

/** Where a rule is, for people: "iptables-nft (IPv6) table filter". */
const firewallTable = (t: IptablesTable): string => `${t.backend === 'nft' ? 'iptables-nft' : 'iptables-legacy'}${t.family === 6 ? ' (IPv6)' : ''} table ${t.table}`;

/** The last target a rule jumps or goes to. */
const targetOf = (spec: string): string | undefined => [...spec.matchAll(/ -[jg] (\S+)/g)].at(-1)?.[1];

/**
 * A rule outside the components' chains that is theirs: it jumps or goes to one of their
 * chains (which go), or its whole text is one of their own rules. A comment alone proves
 * nothing (an administrator may write "kubernetes …"): see lookalikeRule.
 */
export function isClusterRule(spec: string): boolean {
  const target = targetOf(spec);
  return (target !== undefined && K8S_CHAIN.test(target)) || COMPONENT_RULES.has(ruleText(spec));
}

/** A rule that carries a component's comment but is not theirs (isClusterRule): someone else's, left, and named in the notes. */
export const lookalikeRule = (spec: string): boolean =>
  !isClusterRule(spec) && ruleWords(spec).some((w, i, all) => all[i - 1] === '--comment' && K8S_COMMENT.test(w));

/** ipsets of kube-proxy's IPVS mode, kube-router, Calico (cali40…, cali60…), Cilium and Weave, by name. */
const K8S_IPSET = /^(KUBE-|kube-router-|cali[46]0|cilium_|weave-)/;
export const isKubernetesIpset = (name: string): boolean => K8S_IPSET.test(name);

/** Daemons that exist only for Kubernetes; containerd and dockerd also serve other users. */
const K8S_ONLY_DAEMONS = new Set(['cri-dockerd', 'crio']);

const SHIM = /^containerd-shim/;

function shimOf(p: Proc, procs: Map<number, Proc>): Proc | undefined {
  for (let cur = procs.get(p.ppid), hops = 0; cur && hops < 64; cur = procs.get(cur.ppid), hops++) {
    if (SHIM.test(cur.name)) return cur;
    if (cur.pid <= 1) return undefined;
  }
  return undefined;
}

/** The IDs of Kubernetes' containers in Docker (cri-dockerd's): a moby shim of one of them is Kubernetes'. */
const dockerK8sIds = (s: NodeState): Set<string> => new Set(s.containers.filter((c) => c.runtime === 'docker').map((c) => c.id));

/**
 * Whether a containerd shim is Kubernetes': its -namespace is k8s.io, or moby with an -id
 * among Kubernetes' Docker containers. UNKNOWN_FLAG when its command line was cut before
 * they showed: not called Kubernetes' then, and a note says why.
 */
function kubernetesShim(p: Proc, dockerK8s: ReadonlySet<string>): boolean | typeof UNKNOWN_FLAG {
  const ns = procFlag(p, 'namespace');
  if (ns === 'k8s.io') return true;
  if (ns !== 'moby') return ns === UNKNOWN_FLAG ? UNKNOWN_FLAG : false;
  const id = procFlag(p, 'id');
  return id === UNKNOWN_FLAG ? UNKNOWN_FLAG : id !== undefined && dockerK8s.has(id);
}

/**
 * Whether systemd runs or will start the kubelet, in words; undefined when neither.
 * Running: its cgroup says so without asking systemd. Otherwise systemd's word
 * (enabled, or auto-restarting), which the probe asks for only then.
 */
export function kubeletUnitState(s: NodeState): string | undefined {
  const kubelet = s.units.get('kubelet.service');
  if (s.pid1 === 'systemd' && s.runningUnits.has('kubelet.service')) return 'running (its cgroup exists)';
  if (kubelet && (kubelet.active === 'active' || kubelet.active === 'activating' || kubelet.fileState === 'enabled')) {
    return `${kubelet.active}, ${kubelet.fileState || 'no unit file state'}`;
  }
  return undefined;
}

/** Kubeconfigs in users' homes for THIS cluster: its CA (by content or path), or its API server. Another cluster's are not ours. */
export function clusterKubeconfigs(s: NodeState): { path: string; why: string }[] {
  const cas = new Set(clusterCABodies(s));
  const own = s.kubeconfigs.filter((k) => k.path.startsWith('/etc/kubernetes/'));
  const servers = new Set([...own.flatMap((k) => k.servers), ...(operatorOf(s)?.servers ?? [])]);
  const out: { path: string; why: string }[] = [];
  for (const k of s.kubeconfigs) {
    if (k.path.startsWith('/etc/kubernetes/')) continue; // reported as kubernetes-config
    const why = k.caBodies.some((b) => cas.has(b))
      ? 'its CA is the cluster CA'
      : k.caFiles.some((f) => s.clusterCAs.some((c) => c.path === f) || f.startsWith('/etc/kubernetes/'))
        ? "its CA file is the cluster's"
        : k.servers.find((x) => servers.has(x))
          ? `its server ${k.servers.find((x) => servers.has(x))} is the cluster's`
          : undefined;
    if (why) out.push({ path: k.path, why });
  }
  return out;
}

/** Users' kubeconfigs for another cluster: worth a word, never removed. */
export const foreignKubeconfigs = (s: NodeState): string[] => {
  const ours = new Set(clusterKubeconfigs(s).map((k) => k.path));
  return s.kubeconfigs.filter((k) => !k.path.startsWith('/etc/kubernetes/') && !ours.has(k.path)).map((k) => k.path);
};

/** The node's own Kubernetes CA, as kubeadm and kubespray lay it out (not etcd's). */
const KUBE_CA = /^\/etc\/kubernetes\/(pki|ssl)\/ca\.crt$/;
const LOOPBACK = /^https?:\/\/(127\.|localhost[:/]|localhost$|\[::1\])/;

/**
 * The operator's kubeconfig, when it is this node's cluster: the node has no CA of its
 * own left, or its CA is the kubeconfig's. A kubeconfig for another cluster (the wrong
 * context) must not make that cluster's credentials on the node look like this one's.
 * A loopback server says nothing about which cluster it is.
 */
function operatorOf(s: NodeState): NodeState['operator'] {
  if (!s.operator) return undefined;
  const own = s.clusterCAs.filter((c) => KUBE_CA.test(c.path)).map((c) => c.body);
  if (own.length && !s.operator.caBodies.some((b) => own.includes(b))) return undefined;
  return { caBodies: s.operator.caBodies, servers: s.operator.servers.filter((x) => !LOOPBACK.test(x)) };
}

/** The cluster's CA certificates (PEM bodies): those on the node, and the one the operator's kubeconfig trusts. */
const clusterCABodies = (s: NodeState): string[] => [...s.clusterCAs.map((c) => c.body), ...(operatorOf(s)?.caBodies ?? [])];

/** Trust anchors whose certificate is one of the cluster's CAs (by content: a user's CA stays). */
export function clusterAnchors(s: NodeState): { path: string; ca: string }[] {
  return s.anchors.flatMap((a) => {
    const ca = s.clusterCAs.find((c) => c.body === a.body)?.path ?? (operatorOf(s)?.caBodies.includes(a.body) ? "the operator kubeconfig's CA" : undefined);
    return ca ? [{ path: a.path, ca }] : [];
  });
}

/** Registries and repositories of Kubernetes' and the CNIs' own images. */
const K8S_IMAGE = /^(registry\.k8s\.io|k8s\.gcr\.io|ghcr\.io\/flannel-io|quay\.io\/(calico|cilium|tigera|coreos\/flannel)|calico|flannel|rancher\/mirrored-flannelcni-|kubernetesui)\//;

/**
 * Docker images that are Kubernetes': no other container uses them, and a Kubernetes
 * container used them during this run (cri-dockerd keeps no other record) or they come
 * from a Kubernetes registry.
 */
export const kubernetesDockerImages = (s: NodeState) => s.dockerImages.filter((d) => !d.other && (d.k8s || K8S_IMAGE.test(d.ref)));

/** Installed files a package owns: the package manager's to remove, so only worth a word. */
export const packageOwned = (s: NodeState) => s.installed.filter((i) => i.owner);

/**
 * What the user should know that is not residue and that decom leaves alone: another
 * cluster's kubeconfigs, the kernel settings Kubernetes asked for, package-owned files,
 * the etcd data archives decom keeps (docs/design.md#a3-backups).
 */
export function notes(s: NodeState): string[] {
  const out: string[] = [];
  const foreign = foreignKubeconfigs(s);
  if (foreign.length) out.push(`kubeconfig${foreign.length === 1 ? '' : 's'} for another cluster (left alone): ${foreign.join(', ')}`);
  if (s.sysctl.length) out.push(`kernel settings Kubernetes asks for, left as they are (other workloads may rely on them): ${s.sysctl.join('; ')}`);
  if (s.operator && !operatorOf(s)) out.push("the kubeconfig given names another cluster (its CA is not this node's): not used to recognise this cluster's credentials");
  const unowned = unclaimedRoutes(s);
  if (unowned.length) out.push(`routes of a routing daemon left alone, since nothing shows a CNI ran here: ${unowned.map((r) => r.spec).join(', ')}`);
  const lookalikes = s.iptables.flatMap((t) => t.rules.filter((r) => !isKubernetesChain(r.chain) && lookalikeRule(r.spec)).map((r) => `${firewallTable(t)}: ${r.spec}`));
  if (lookalikes.length) {
    out.push(`${lookalikes.length === 1 ? 'a firewall rule' : `${lookalikes.length} firewall rules`} carrying a Kubernetes component's comment without being one of its rules, left in place (an administrator's own?): ${lookalikes.join('; ')}`);
  }
  const unread = s.dns.files.filter((f) => f.unread).map((f) => f.path);
  if (unread.length) out.push(`resolver files not judged, left as they are: decom cannot carry their text whole (over 64 KiB, not UTF-8, or holding a NUL): ${unread.join(', ')}`);
  if (s.imagesUnlisted) out.push("containerd is stopped: the images of its k8s.io namespace were not looked at (start it and run again with --purge)");
  const other = foreignEtcd(s);
  if (other.length) {
    const ports = [...new Set(s.listeners.filter((l) => l.holders.some((h) => other.some((p) => p.pid === h.pid))).map((l) => l.port))].sort((a, b) => a - b);
    const data = foreignEtcdData(s);
    out.push(
      `etcd runs here (pid ${other.map((p) => p.pid).join(', ')}) and nothing ties it to this cluster (no kubeadm manifest, no kubespray etcd.env or member certificate, not on the inventory's etcd hosts): left running` +
        `${ports.length ? `; its port${ports.length === 1 ? '' : 's'} ${ports.join(', ')} would collide with a control-plane rejoin` : ''}${data.length ? `; ${data.join(', ')} left (it may be its data)` : ''}`,
    );
  }
  const claims = new Set(s.paths.filter((p) => p.kind === 'cdi-spec').map((p) => p.path));
  const admin = s.purge ? [] : s.paths.filter((p) => p.kind === 'runtime-config' && !claims.has(p.path)).map((p) => p.path);
  if (admin.length) out.push(`runtime configuration an administrator may have written, left in place (decom run --purge removes it): ${admin.join(', ')}`);
  if (s.containerdConfigError) out.push(`containerd's config could not be read (${s.containerdConfigError}): its defaults and command line were used for its paths`);
  if (s.containerd.missing.length) out.push(`containerd's config imports ${s.containerd.missing.join(', ')}, which could not be read: paths set there were not looked at`);
  const dockerK8s = dockerK8sIds(s);
  const cutShims = [...s.processes.values()].filter((p) => SHIM.test(p.name) && kubernetesShim(p, dockerK8s) === UNKNOWN_FLAG);
  if (cutShims.length) {
    out.push(`containerd shim${cutShims.length === 1 ? '' : 's'} whose command line was cut on the node before its -namespace or -id showed, not counted as Kubernetes': pid ${cutShims.map((p) => p.pid).join(', ')}`);
  }
  if (s.etcdArchives.length) {
    out.push(`etcd data archived by decom and kept on the node: ${s.etcdArchives.join(', ')}; it holds every Secret of the cluster (remove it once it is not needed: decom run --remove-etcd-archive)`);
  }
  const owned = packageOwned(s);
  if (owned.length) out.push(`installed by packages, left to the package manager (apt-get purge / dnf remove): ${owned.map((i) => `${i.path} (${i.owner})`).join(', ')}`);
  return out;
}

function pathDetail(kind: StatePathKind, path: string): string {
  if (kind === 'static-pod-manifest') return 'the kubelet runs this pod while the file exists';
  if (kind === 'bpf-pin') return "Cilium's, pinned on the BPF filesystem (it outlives the agent)";
  if (kind === 'cdi-spec') return "a CDI spec a device driver wrote for the cluster's pods, in containerd's transient spec dir";
  if (kind === 'runtime-config') return 'runtime configuration an administrator may have written (a static CDI spec, an NRI plugin or its config, a containerd drop-in): removed with --purge';
  if (kind === 'etcd-data') return "the cluster's etcd data (backed up first)";
  if (kind === 'cni-config' && path.endsWith('.cilium_bak')) return 'a CNI config Cilium renamed aside';
  if (kind === 'cni-config' && path.startsWith('/etc/sysctl.d/')) return "Cilium's override of kernel settings";
  if (kind === 'kubernetes-config' && !path.startsWith('/etc/kubernetes/')) return "kubespray's local load balancer to the API servers (judged by its upstream)";
  return 'left on disk';
}

const ROUTE_OWNER: Record<number, string> = { 12: "Calico's BIRD", 17: "kube-router's BGP", 80: "Calico's Felix" };

/**
 * Which CNI's routing daemon ran here, by what else it left: BIRD and GoBGP also serve
 * others, so their routes are a CNI's only beside its state, links, sets or chains.
 */
function routingCNIs(s: NodeState): Set<number> {
  const out = new Set<number>();
  const path = (re: RegExp) => s.paths.some((p) => re.test(p.path));
  const calico =
    path(/^\/(var\/lib|etc|run)\/calico(\/|$)|^\/etc\/cni\/net\.d\/.*calico/) ||
    s.links.some((l) => /^(cali|vxlan\.calico|vxlan-v6\.calico|tunl0$)/.test(l.name)) ||
    s.ipsets.some((n) => /^cali[46]0/.test(n)) ||
    s.iptables.some((t) => t.chains.some((c) => c.startsWith('cali-')));
  const kubeRouter =
    path(/^\/var\/lib\/kube-router(\/|$)/) || s.links.some((l) => /^kube-(bridge|dummy-if)$/.test(l.name)) || s.ipsets.some((n) => n.startsWith('kube-router-'));
  if (calico) (out.add(12), out.add(80));
  if (kubeRouter) out.add(17);
  return out;
}
export const cniRoutes = (s: NodeState) => {
  const cnis = routingCNIs(s);
  return s.routes.filter((r) => cnis.has(r.proto));
};
const unclaimedRoutes = (s: NodeState) => {
  const cnis = routingCNIs(s);
  return s.routes.filter((r) => !cnis.has(r.proto));
};
const INSTALLED_WHAT: Record<'installed-binary' | 'installed-unit' | 'installed-config', string> = {
  'installed-binary': 'installed by kubespray or kubeadm (no package owns it)',
  'installed-unit': 'a systemd unit or drop-in of Kubernetes (no package owns it)',
  'installed-config': 'configuration of a Kubernetes tool (no package owns it)',
};

/**
 * A cgroup of the kubelet's tree in words: its level, the hierarchies it is in (all, or
 * which: one can linger in a single hierarchy) and the processes in it (rmdir needs it empty).
 */
function cgroupDetail(s: NodeState, c: KubeCgroup): string {
  const what =
    c.level === 'root' ? "the kubelet's cgroup root"
    : c.level === 'qos' ? `the kubelet's QoS cgroup ${c.path.slice(c.path.lastIndexOf('/') + 1)}`
    : c.level === 'pod' ? `cgroup of pod ${c.uid}`
    : `container cgroup of pod ${c.uid}`;
  const all = s.cgroups.hierarchies.length;
  const name = (h: string) => (h === '/sys/fs/cgroup' ? h : h.slice(h.lastIndexOf('/') + 1));
  const where = c.hierarchies.length >= all ? `in all ${all} hierarchies` : `in ${c.hierarchies.map(name).join(', ')} only (of ${all} hierarchies)`;
  const pids = [...s.k8sCgroups].filter(([, path]) => path === c.path).map(([pid]) => `${pid} ${s.processes.get(pid)?.name ?? '?'}`);
  return `${what}, ${where}${pids.length ? `; processes in it: ${pids.slice(0, 3).join(', ')}${pids.length > 3 ? ` (+${pids.length - 3})` : ''}` : ''}`;
}

/**
 * Why the etcd running here is the cluster's, if anything shows it: it runs in a pod,
 * kubeadm's manifest or kubespray's etcd.env or member certificates are here, this host
 * is in the inventory's etcd group, or its member's peer URL is on a host of that
 * group. Undefined: no evidence (a package's etcd serving no cluster), so it is left alone.
 */
export function clusterEtcd(s: NodeState): string | undefined {
  if ([...s.processes.values()].some((p) => p.name === 'etcd' && s.k8sCgroups.has(p.pid))) return 'it runs in a pod';
  if (s.paths.some((p) => p.kind === 'static-pod-manifest' && /\/etcd[^/]*$/.test(p.path))) return "kubeadm's static pod manifest is here";
  // kubespray's member environment, or a member certificate (workers hold node-* client certificates only).
  const kubespray = s.paths.find((p) => p.path === '/etc/etcd.env' || /^\/etc\/ssl\/etcd\/ssl\/member-[^/]*\.pem$/.test(p.path));
  if (kubespray) return `kubespray's ${kubespray.path} is here`;
  if (s.etcdGroup?.self) return "this host is in the inventory's etcd group";
  const me = s.etcd?.members.find((m) => m.id === s.etcd?.memberId);
  const peer = me?.peerURLs.find((u) => s.etcdGroup?.addresses.includes(hostOf(u)));
  if (peer) return `its member's peer URL ${peer} is on a host of the inventory's etcd group`;
  return undefined;
}

/** etcd run outside a pod (by systemd or by hand); one in a pod is judged with its container. */
export const hostEtcd = (s: NodeState): Proc[] => [...s.processes.values()].filter((p) => p.name === 'etcd' && !s.k8sCgroups.has(p.pid));

/** An etcd that runs outside a pod with nothing tying it to the cluster (Debian's etcd.service): its processes. */
export const foreignEtcd = (s: NodeState): Proc[] => (clusterEtcd(s) ? [] : hostEtcd(s));

/**
 * The data dir an etcd process uses, where the node says: --data-dir, else its
 * ETCD_DATA_DIR (Debian's etcd.service sets /var/lib/etcd/default), else etcd's default
 * NAME.etcd in its working dir. Undefined when it cannot be told: its environment or
 * working dir not read, or a config file (--config-file, ETCD_CONFIG_FILE: etcd then
 * ignores its flags and environment) that the probe does not read, or a flag it needs
 * unknown (its command line cut on the node).
 */
export function etcdDataDir(s: NodeState, p: Proc): string | undefined {
  const dirs = s.etcdDirs.get(p.pid);
  if (procFlag(p, 'config-file') !== undefined || dirs?.env.ETCD_CONFIG_FILE) return undefined;
  const abs = (d: string) => (d.startsWith('/') ? d : dirs?.cwd.startsWith('/') ? `${dirs.cwd.replace(/\/$/, '')}/${d}` : undefined);
  const flag = procFlag(p, 'data-dir');
  if (flag === UNKNOWN_FLAG) return undefined;
  if (flag) return abs(flag);
  if (!dirs) return undefined;
  if (dirs.env.ETCD_DATA_DIR) return abs(dirs.env.ETCD_DATA_DIR);
  const name = procFlag(p, 'name');
  if (name === UNKNOWN_FLAG) return undefined;
  return abs(`${name ?? dirs.env.ETCD_NAME ?? 'default'}.etcd`);
}

/** Whether `path` is `top` or below it. */
export const within = (path: string, top: string): boolean => path === top || path.startsWith(`${top.replace(/\/$/, '')}/`);

/**
 * The etcd data paths that may be a foreign etcd's own (it runs with nothing tying it to
 * the cluster): those at, above or below the data dir it uses, or all of them when a data
 * dir cannot be told. The rest is the cluster's leftover data.
 */
export function foreignEtcdData(s: NodeState): string[] {
  const others = foreignEtcd(s);
  const data = s.paths.filter((p) => p.kind === 'etcd-data').map((p) => p.path);
  if (!others.length) return [];
  const dirs = others.map((p) => etcdDataDir(s, p));
  if (dirs.some((d) => d === undefined)) return data;
  return data.filter((path) => dirs.some((d) => within(path, d as string) || within(d as string, path)));
}

/**
 * What findings(s) found, by state: a run judges each step and plans several on the same
 * state (a node's run asked ~30 times). A state is not changed once probed, but for the
 * operator's, the etcd group's and the DNS facts the caller sets on it right after: a
 * change of one of those is looked at again.
 */
const FOUND = new WeakMap<NodeState, { said: readonly unknown[]; found: Finding[] }>();

export function findings(s: NodeState): Finding[] {
  const said = [s.operator, s.etcdGroup, s.clusterDns];
  const hit = FOUND.get(s);
  if (hit && hit.said.every((v, i) => v === said[i])) return [...hit.found];
  const found = judgeState(s);
  FOUND.set(s, { said, found });
  return [...found];
}

function judgeState(s: NodeState): Finding[] {
  const out: Finding[] = [];
  const add = (kind: Kind, subject: string, detail: string) => out.push({ kind, subject, detail });
  const procs = s.processes;
  const otherEtcd = new Set(foreignEtcd(s).map((p) => p.pid));

  const othersData = foreignEtcdData(s);
  const transientSpecs = new Set(s.paths.filter((p) => p.kind === 'cdi-spec').map((p) => p.path));
  for (const { kind, path } of s.paths) {
    // Beside an etcd nothing ties to the cluster: the cluster's only where that one's data dir is elsewhere (a note says so otherwise).
    if (kind === 'etcd-data' && othersData.includes(path)) continue;
    // What an administrator may have written: only the purge tier removes it, otherwise a note names it.
    if (kind === 'runtime-config' && (!s.purge || transientSpecs.has(path))) continue;
    if (kind === 'kubernetes-config' && path === '/etc/kubernetes/manifests') continue; // its entries are reported one by one
    // etcd's private keys are credentials: whoever holds them can read and write the cluster's state.
    if (kind === 'etcd-config' && path.endsWith('-key.pem')) add('credential', path, "a private key of the cluster's etcd PKI");
    else add(kind, path, pathDetail(kind, path));
  }
  for (const k of clusterKubeconfigs(s)) add('credential', k.path, `a kubeconfig for this cluster (${k.why}) outside /etc/kubernetes`);
  for (const a of clusterAnchors(s)) add('trust-anchor', a.path, `the cluster CA ${a.ca} in the system trust store`);
  for (const ca of s.bundleTrusts) add('trust-anchor', CA_BUNDLE, `the built bundle still trusts the cluster CA ${ca} (rebuild it: update-ca-certificates)`);
  for (const e of dnsEdits(s.dns, s.clusterDns ?? clusterDnsOf({}))) add(e.kind, e.path, e.detail);

  for (const p of procs.values()) {
    if (p.name === 'kubelet') add('kubelet-process', String(p.pid), p.args);
    if (K8S_ONLY_DAEMONS.has(p.name)) add('runtime-daemon', p.name, `pid ${p.pid}: ${p.args}`);
  }
  if (!otherEtcd.size) for (const p of hostEtcd(s)) add('etcd-process', String(p.pid), `${p.args} (${clusterEtcd(s)})`);
  const state = kubeletUnitState(s);
  if (state) add('kubelet-service', 'kubelet.service', `${state}; a running or enabled kubelet re-registers the Node`);

  for (const c of s.containers) {
    const where = [c.pod && `pod ${c.pod}`, c.name && `name ${c.name}`, c.state, c.pid && `pid ${c.pid}`].filter(Boolean).join(', ');
    add(c.kind === 'sandbox' ? 'pod-sandbox' : 'container', c.id, `${c.runtime}${where ? `: ${where}` : ''}`);
  }

  const dockerK8s = dockerK8sIds(s);
  for (const p of procs.values()) {
    if (!SHIM.test(p.name) || kubernetesShim(p, dockerK8s) !== true) continue;
    const id = procFlag(p, 'id');
    add('shim-process', String(p.pid), `${p.name} -namespace ${procFlag(p, 'namespace') as string} -id ${id === UNKNOWN_FLAG ? '(cut off)' : (id ?? '')}`);
  }

  // A container process whose shim is gone keeps running (re-parented to PID 1) and
  // keeps its ports: found by its cgroup, since no runtime knows it any more.
  for (const [pid, cgroup] of s.k8sCgroups) {
    const p = procs.get(pid);
    if (!p || SHIM.test(p.name) || shimOf(p, procs)) continue;
    add('orphan-container-process', String(pid), `${p.name} in ${cgroup}, no shim above it (parent ${p.ppid})`);
  }

  // The kubelet's cgroup tree, every level: a rejoining kubelet (and cAdvisor) finds the old pods' cgroups.
  for (const c of s.cgroups.kube) add('pod-cgroup', c.path, cgroupDetail(s, c));

  for (const l of s.listeners) {
    if (!KUBERNETES_PORTS.has(l.port)) continue;
    if (l.holders.length && l.holders.every((h) => otherEtcd.has(h.pid))) continue;
    const who = l.holders.length ? l.holders.map((h) => `${h.name} (pid ${h.pid})`).join(', ') : 'an unknown process (probe not run as root?)';
    add('listening-port', String(l.port), `${l.addr}:${l.port} held by ${who}`);
  }

  const prefixes = mountPrefixes(s);
  for (const m of s.mounts) {
    if (prefixes.some((pre) => m.target.startsWith(pre))) add('mount', m.target, `${m.fstype} from ${m.source}`);
  }
  for (const n of s.netns) if (n.startsWith('cni-')) add('netns', n, `/run/netns/${n}`);
  for (const l of s.links) {
    if (CNI_LINK.test(l.name) || l.master === 'cni0') add('cni-link', l.name, l.master ? `master ${l.master}` : 'CNI device');
  }

  for (const t of s.iptables) {
    const where = firewallTable(t);
    // Counted in one pass: kube-proxy's iptables mode makes ~100,000 rules in ~40,000 chains.
    const perChain = new Map<string, number>();
    for (const r of t.rules) perChain.set(r.chain, (perChain.get(r.chain) ?? 0) + 1);
    for (const chain of t.chains) {
      if (!isKubernetesChain(chain)) continue;
      const n = perChain.get(chain) ?? 0;
      add('iptables', chain, `${where}: chain with ${n} rule${n === 1 ? '' : 's'}`);
    }
    for (const r of t.rules) {
      if (!isKubernetesChain(r.chain) && isClusterRule(r.spec)) add('iptables', r.chain, `${where}: ${r.spec}`);
    }
  }
  for (const t of s.nftTables) {
    const owner = NFT_TABLES.find((x) => x.family === t.family && x.name === t.name)?.owner;
    if (owner) add('nftables', `${t.family} ${t.name}`, owner);
  }
  for (const v of s.ipvs) add('ipvs', v, 'IPVS virtual service (kube-proxy IPVS mode)');
  for (const n of s.ipsets) if (isKubernetesIpset(n)) add('ipset', n, 'ipset of kube-proxy or a CNI');
  for (const r of cniRoutes(s)) {
    add('route', r.spec, `${ROUTE_OWNER[r.proto] ?? `protocol ${r.proto}`}${r.via ? ` via ${r.via}` : ''}${r.dev ? ` dev ${r.dev}` : ''}`);
  }

  // The purge tier: present only when the probe was asked for it.
  for (const i of s.installed) if (!i.owner) add(i.kind, i.path, INSTALLED_WHAT[i.kind]);
  for (const ref of s.images) add('image', ref, "in containerd's k8s.io namespace");
  for (const d of kubernetesDockerImages(s)) add('image', `docker ${d.ref}`, d.k8s ? "a Docker image only Kubernetes' containers used" : "a Docker image from a Kubernetes registry that no container uses");

  return out;
}
