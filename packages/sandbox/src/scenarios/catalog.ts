/**
 * The scenarios `up --scenario` can plant, and what they need on the host. No
 * imports of the sandbox's own: its types and every module that plants things sit above it.
 * Each scenario is a shell file run inside every node after lib.sh; the catalogue
 * of what it plants is in its header comment and in
 * docs/design.md#the-residue-catalogue. Scenarios marked `api` need the sandbox's
 * Kubernetes API: their nodes join it (cluster.sh) and cluster.ts plants their
 * objects, once for the whole cluster.
 */
import { choiceList } from 'decom/flags';

export const SCENARIOS = {
  'kubespray-leftovers': {
    description: "what kubespray's remove-node.yml leaves: kubelet + static pods, DaemonSet and CNI pods, netns, links, mounts, rules, ipsets, BIRD routes, BPF pins, files, and what kubespray installed",
    programs: ['bpftool'],
  },
  'orphaned-shims': {
    description: 'containerd stopped with shims and containers still holding ports; one container has lost its shim too',
    programs: [] as string[],
  },
  'docker-runtime': {
    description: 'a cri-dockerd node: k8s_* containers in Docker, next to a user container',
    programs: ['dockerd'],
  },
  'force-deleted-pods': {
    description: 'pod dirs with mounts, cni-* netns, veths and IPAM leases whose sandboxes no longer exist',
    programs: [] as string[],
  },
  'field-2026': {
    description: "what today's clusters leave: kube-proxy's, Calico's and flannel's nftables tables, a DRA driver's transient CDI spec, Cilium's sysctl override and the CNI config it renamed aside, old etcd data, a pod through CRI; beside an admin's static CDI spec, Debian's own etcd holding a key (systemd nodes) and a user's nftables table",
    programs: ['etcd', 'etcdctl'],
  },
  cluster: {
    description: 'a healthy cluster in the sandbox API: control plane + workers, DaemonSet, Deployment and bare pods, a PDB, emptyDir and CSI volumes',
    programs: [] as string[],
    api: true,
  },
  'etcd-restore-phantoms': {
    description: 'cluster, then an etcd restore: pods gone from the API whose containers still run on the first worker',
    programs: [] as string[],
    api: true,
  },
  'stuck-terminating': {
    description: 'cluster, plus pods Terminating on a finalizer and on a NotReady node, a namespace Terminating on a finalizer and an unavailable APIService',
    programs: [] as string[],
    api: true,
  },
  'pdb-blocked': {
    description: 'cluster, plus a PodDisruptionBudget that allows no disruption covering a pod on the first worker',
    programs: [] as string[],
    api: true,
  },
  'runtime-lost': {
    description: "cluster, then the first worker's runtime lost its state (the first worker of each containerd version, with --containerd mixing them): its pods force-deleted from the API while its kubelet was stopped, containerd killed with its shims and pods (no CNI DEL) and wiped; the kubelet then runs what the API still binds to it beside the residue",
    programs: [] as string[],
    api: true,
  },
  clean: {
    description: 'a node reset properly: only what is not Kubernetes\' is left (for false-positive tests)',
    programs: [] as string[],
  },
} as const;

export type ScenarioName = keyof typeof SCENARIOS;

/** Whether a scenario needs the sandbox's Kubernetes API (its nodes join it). */
export const needsApi = (name: ScenarioName): boolean => 'api' in SCENARIOS[name];

/** Every scenario also plants the non-Kubernetes objects, and PKI; these need: */
const COMMON = ['iptables', 'iptables-legacy', 'nft', 'openssl', 'ipset'];
export const scenarioPrograms = (name: ScenarioName): string[] => [...COMMON, ...SCENARIOS[name].programs];

/**
 * `--scenario a,b,c`: one scenario per node, in turn (node1 a, node2 b, node3 c,
 * node4 a…), so one sandbox can hold them all. Unknown names are refused.
 */
export const scenarioList = (text: string): ScenarioName[] => choiceList('--scenario', 'scenario', text, Object.keys(SCENARIOS) as ScenarioName[]);
