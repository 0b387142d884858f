/** The types of what a probe sees on a node: NodeState and its views, with no judgement in them. */
import type { InstallKind, StatePathKind } from './script.js';
import type { ContainerdPaths } from '../cri/containerd-config.js';
import type { ClusterDns } from '../inventory/cluster-dns.js';

/** A node as one probe saw it: typed views, no judgement (rules live in src/verify). */
export interface NodeState {
  hostname: string;
  machineId: string;
  /** Name of PID 1: systemd, tini, init… */
  pid1: string;
  uid: number;
  tools: Set<string>;
  paths: { kind: StatePathKind; path: string }[];
  /**
   * Where each path the probe reports for deletion resolved on the node (its dir resolved,
   * its name kept): what the delete compares with when it resolves the path again.
   */
  resolved: Map<string, string>;
  processes: Map<number, Proc>;
  /** pid -> its cgroup path, for processes in a Kubernetes cgroup (kubepods, k8s.io). */
  k8sCgroups: Map<number, string>;
  listeners: Listener[];
  mounts: Mount[];
  /** Names of the network namespaces in /run/netns. */
  netns: string[];
  links: Link[];
  iptables: IptablesTable[];
  nftTables: { family: string; name: string }[];
  /** IPVS virtual services, as "TCP 10.233.0.1:443". */
  ipvs: string[];
  /** systemd units by Id (only on systemd nodes, and only when the unit's cgroup does not already say it runs). */
  units: Map<string, Unit>;
  /** Units whose cgroup exists, i.e. systemd runs them now: "kubelet.service", "etcd.service". */
  runningUnits: Set<string>;
  containers: Container[];
  /** The container runtimes the node has (installed, running or with task bundles left), and whether each answered. */
  runtimes: RuntimeStatus[];
  /** Where crictl goes (/etc/crictl.yaml, else its first default socket there) and whose runtime that is. */
  crictl: { endpoint?: string; runtime?: 'containerd' | 'docker' | 'other' };
  /** The kubelet answered `ok` on 127.0.0.1:10248/healthz: it will tear static pods down. */
  kubeletHealthy: boolean;
  /** The static pods' manifests, with the pod each one makes (the kubelet names it NAME-NODENAME). */
  staticPods: StaticPod[];
  /** What this node's etcd says of its cluster, when an etcd process runs. */
  etcd?: EtcdView;
  /** The cluster's CA certificates found on the node, by path, as PEM bodies (base64, no line breaks). */
  clusterCAs: { path: string; body: string }[];
  /** The system trust store's anchors, by path, as PEM bodies. */
  anchors: { path: string; body: string }[];
  /** Kubeconfigs in /etc/kubernetes and in users' homes: where they point and which CA they trust. */
  kubeconfigs: Kubeconfig[];
  /** Cluster CA paths whose certificate the built bundle (/etc/ssl/certs/ca-certificates.crt) still holds. */
  bundleTrusts: string[];
  /** Lines of sysctl files that set a kernel setting Kubernetes asks for: "FILE:LINE:TEXT". */
  sysctl: string[];
  /** The etcd data archives decom's etcd step left on the node (ETCD_ARCHIVES): not residue, but they hold the cluster's Secrets. */
  etcdArchives: string[];
  /** Routes that a routing daemon (not the kernel, the OS or a user) installed. */
  routes: Route[];
  /** ipset names. */
  ipsets: string[];
  /** The installation footprint found (only probed with --purge), with the package that owns a path. */
  installed: { kind: InstallKind; path: string; owner?: string }[];
  /** Image references in containerd's k8s.io namespace (only probed with --purge, while containerd runs). */
  images: string[];
  /** containerd is installed but stopped: its k8s.io images could not be listed (with --purge). */
  imagesUnlisted: boolean;
  /**
   * Docker's image references (cri-dockerd nodes, only probed with --purge), with
   * whether a Kubernetes container (k8s_*) used it during this run and whether another uses it.
   */
  dockerImages: { ref: string; k8s: boolean; other: boolean }[];
  /**
   * What the operator's kubeconfig says this cluster is (its CA, its API server): set by
   * the client, not probed, so users' kubeconfigs and trust anchors are still recognised
   * once /etc/kubernetes is gone from the node.
   */
  operator?: { caBodies: string[]; servers: string[] };
  /**
   * The inventory's etcd group, set by the client: its hosts' names and addresses, and
   * whether this host is one. An etcd serving them is the cluster's; one that nothing
   * ties to the cluster (Debian's own etcd.service) is left alone.
   */
  etcdGroup?: { addresses: string[]; self: boolean };
  /**
   * The cluster's DNS as kubespray computes it from the inventory (its nameservers, domain,
   * search domains and options), set by the client: what kubespray's resolver edits are
   * recognised by. Unset, kubespray's defaults stand in.
   */
  clusterDns?: ClusterDns;
  /** The host's resolver files kubespray edits, as the `dns` view read them. */
  dns: DnsView;
  /** What pods leave on a live node (the `pods` view, for the audit). */
  pods: PodTraces;
  /** The kubelet's cgroup tree (kubepods, kubepods.slice) in every hierarchy the node mounts. */
  cgroups: KubeCgroups;
  /**
   * The iptables-save dumps the probe read, as printed, per backend and family: the
   * backup writes these instead of running iptables-save again (8 s beside 20,000 Services).
   */
  iptablesDumps: IptablesDump[];
  /** containerd's paths as its config, its imports and its command line set them (its defaults where they say nothing). */
  containerd: ContainerdPaths;
  /** The running containerd as PID:START, when one runs: while it does, its paths are the ones it started with. */
  containerdDaemon?: string;
  /** Why containerd's config could not be read whole (a TOML error, an unknown version): the defaults stand in for what it says. */
  containerdConfigError?: string;
  /** Each running etcd's working dir and its ETCD_DATA_DIR / ETCD_NAME environment, by PID (where its data is when its command line does not say). */
  etcdDirs: Map<number, { cwd: string; env: Record<string, string> }>;
  /** What the node runs, as found (the `facts` view). */
  facts: NodeFacts;
  /** The installation footprint was looked at (--purge): the purge tier's residue is residue, not a warning. */
  purge: boolean;
}

/** What the node runs, as the probe found it: the raw evidence the rules name the runtime, CNI and kube-proxy mode from. */
export interface NodeFacts {
  /** Each runtime's version, from its own binary. */
  runtimes: { name: 'containerd' | 'docker' | 'crio'; version?: string }[];
  /** The CNI config file the runtime picks (the first by name in its conf dir). */
  cniFile?: string;
  /** Its plugins' types, in order. */
  cniTypes: string[];
  /** What a running kube-proxy answered on 127.0.0.1:10249/proxyMode ('' when it did not). */
  kubeProxyMode?: string;
  /** With no answer: the mode kube-proxy's leftovers show (its nftables table, IPVS, its KUBE-SERVICES chain). */
  kubeProxyLeft?: string;
}

export interface IptablesDump {
  backend: 'nft' | 'legacy';
  family: 4 | 6;
  text: string;
}

/** The cgroup hierarchies a node mounts, and the kubelet's cgroups in them. */
export interface KubeCgroups {
  /** Mount dirs: every v1 hierarchy below /sys/fs/cgroup (controllers, name=systemd, unified), or /sys/fs/cgroup alone on pure v2. */
  hierarchies: string[];
  kube: KubeCgroup[];
}

/**
 * One cgroup of the kubelet's tree: `/kubepods` (cgroupfs driver) or `/kubepods.slice`
 * (systemd driver), its QoS children (besteffort, burstable), the pods' and their
 * containers'. Guaranteed pods sit right below the root.
 */
export interface KubeCgroup {
  /** Relative to the hierarchy's root, as /proc/PID/cgroup shows it: "/kubepods/besteffort/pod0d5c…". */
  path: string;
  /** The hierarchies it exists in (a directory can linger in one only). */
  hierarchies: string[];
  level: 'root' | 'qos' | 'pod' | 'container';
  /** The pod's UID (API form, with dashes), for pod and container cgroups. */
  uid?: string;
}

/** A node's pod traces, to be matched with the pods the API knows. */
export interface PodTraces {
  /** The kubelet's pod dirs (/var/lib/kubelet/pods/UID), by UID. */
  dirs: string[];
  /** Named netns -> its inode; pid -> the inode of the netns it is in. */
  netnsInodes: Map<string, string>;
  procNetns: Map<number, string>;
  /** host-local IPAM leases: the lease file, its network and address, the sandbox (container ID) named in it. */
  leases: { file: string; network: string; ip: string; sandbox: string }[];
}

export interface Route {
  /** What `ip route del` needs to match exactly this route: "blackhole 10.233.64.0/24 proto 12". */
  spec: string;
  family: 4 | 6;
  /** The route's protocol number. */
  proto: number;
  via?: string;
  dev?: string;
}

export interface Kubeconfig {
  path: string;
  servers: string[];
  /** PEM bodies of certificate-authority-data. */
  caBodies: string[];
  /** certificate-authority file paths. */
  caFiles: string[];
}

export interface StaticPod {
  file: string;
  name?: string;
  namespace: string;
}

export interface EtcdView {
  endpoint: string;
  /** This member's ID (hex), from `endpoint status`; undefined when etcdctl could not ask. */
  memberId?: string;
  members: { id: string; name: string; isLearner: boolean; peerURLs: string[]; clientURLs: string[] }[];
  /** Endpoints of the cluster and whether each answered healthy. */
  health: { endpoint: string; healthy: boolean }[];
  /** Why the view is incomplete (etcdctl failed). */
  error?: string;
}

export interface Proc {
  pid: number;
  ppid: number;
  /** basename of argv[0]: "kubelet", "containerd-shim-runc-v2", "[kthreadd]" */
  name: string;
  /** argv joined by spaces, each credential flag's value replaced by "(redacted)" (probes/redact.ts). */
  args: string;
  /** The command line was cut on the node (CMDLINE_BYTES, probes/script.ts): read its flags with procFlag (probes/proc-flags.ts). */
  cut?: boolean;
  /** Start time in clock ticks since boot (/proc/PID/stat field 22): with the PID, names one process for good. */
  start: number;
}

export interface Listener {
  addr: string;
  port: number;
  holders: { name: string; pid: number }[];
}

export interface Mount {
  target: string;
  source: string;
  fstype: string;
}

export interface Link {
  name: string;
  master?: string;
  /** Where the link's peer is (a veth's other end): the netns name `ip` prints, or "id:N" when it has none. */
  peerNetns?: string;
}

export interface IptablesTable {
  backend: 'nft' | 'legacy';
  family: 4 | 6;
  table: string;
  chains: string[];
  /** "-A CHAIN …" lines, as iptables-save prints them. */
  rules: { chain: string; spec: string }[];
}

export interface Unit {
  id: string;
  load: string;
  active: string;
  fileState: string;
}

export interface Container {
  id: string;
  runtime: 'containerd' | 'docker';
  kind: 'sandbox' | 'container' | 'unknown';
  /** "namespace/pod" when the runtime knows it. */
  pod?: string;
  /** The pod's UID, when the runtime knows it (a static pod's is its manifest hash). */
  podUid?: string;
  /** A container's pod sandbox, when the runtime says: removing the sandbox removes the container. */
  sandboxId?: string;
  /** A sandbox's network namespace on the pod network (cni-…), from its task bundle: its CNI DEL removes it. */
  netns?: string;
  name?: string;
  state?: string;
  /** PID of the task, when it has one. */
  pid?: number;
  /** Why its pod could not be read (the runtime did not answer for it): it may be any pod's. */
  unread?: string;
  /** Where the kubelet got the pod (a sandbox's `kubernetes.io/config.source`, where crictl gives it): `file` is a static pod. */
  configSource?: string;
}

/** A container runtime the node has, and whether it answered this probe. */
export interface RuntimeStatus {
  /** CRI-O is never asked: decom does not read its pods. */
  name: 'containerd' | 'docker' | 'cri-o';
  running: boolean;
  /** Its client listed its containers: only then can it prove a pod gone. */
  answered: boolean;
}

/** One of the resolver files kubespray writes or edits (KUBESPRAY_DNS_FILES), as the node has it. */
export interface DnsFile {
  path: string;
  /** A symlink is read at its target: `target` is where it resolves (readlink -f), `content` the target's. */
  type: 'absent' | 'file' | 'link' | 'other';
  target?: string;
  /** Its text, exactly its bytes; undefined when absent, unreadable, not a regular file at the end of its links, or not read verbatim. */
  content?: string;
  /** A regular file whose text could not be carried whole (past DNS_FILE_BYTES, not UTF-8, or holding a NUL): not judged, and a note says so. */
  unread?: true;
}

/** The `dns` view: kubespray's resolver files, the backups of resolv.conf its edits left, and the services that read them. */
export interface DnsView {
  files: DnsFile[];
  /** kubespray's backups of /etc/resolv.conf (Ansible's `resolv.conf.NNNN.DATE@TIME~`), full paths. */
  backups: string[];
  /** Running now (systemd's ActiveState active), and whether systemd-resolved can reload (`CanReload`, systemd 256 and later). */
  services: { networkManager: boolean; resolved: boolean; resolvedCanReload: boolean };
}
