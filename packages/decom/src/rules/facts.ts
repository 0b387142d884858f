/**
 * What a node runs, in words, from what the probe found on it: the container runtime
 * and its version, the CNI, kube-proxy's mode. Each says "unknown" when the node does
 * not tell; nothing is assumed from the inventory or from what is usual.
 */
import type { NodeState } from '../probes/state.js';
import { UNKNOWN_FLAG, procFlag } from '../probes/proc-flags.js';

export interface HostFacts {
  /** "containerd 2.1.9", "docker 20.10.24 (cri-dockerd)", "cri-o 1.30.4", or "unknown". */
  runtime: string;
  /** "calico", "flannel", "cilium", "bridge"…, or "unknown". */
  cni: string;
  /** "iptables", "ipvs", "nftables" (as kube-proxy answers), "ipvs (kube-proxy not running)" from what it left, or "unknown". */
  kubeProxy: string;
}

export const UNKNOWN = 'unknown';

/** CNI plugin types (the first plugin of the config the runtime picks) and the CNI they are. */
const CNI_BY_TYPE: Record<string, string> = {
  calico: 'calico',
  flannel: 'flannel',
  'cilium-cni': 'cilium',
  'weave-net': 'weave',
  antrea: 'antrea',
  'kube-ovn': 'kube-ovn',
  'ovn-k8s-cni-overlay': 'ovn-kubernetes',
  multus: 'multus',
  'multus-shim': 'multus',
  // The reference plugins, as a conflist of their own (kubeadm's guide, kube-router's bridge config).
  bridge: 'bridge',
  ptp: 'ptp',
  macvlan: 'macvlan',
  ipvlan: 'ipvlan',
};

function runtimeOf(s: NodeState): string {
  const v = (name: 'containerd' | 'docker' | 'crio') => s.facts.runtimes.find((r) => r.name === name);
  const said = (label: string, r: { version?: string }, extra = '') => `${label} ${r.version ?? '(version unknown)'}${extra}`;
  const crio = v('crio');
  if (crio) return said('cri-o', crio);
  // Docker is the kubelet's runtime only through cri-dockerd (or the dockershim of old): its
  // socket, its process, or Kubernetes' own k8s_* containers in Docker show it.
  const docker = v('docker');
  const criDockerd = s.crictl.runtime === 'docker' || [...s.processes.values()].some((p) => p.name === 'cri-dockerd') || s.containers.some((c) => c.runtime === 'docker');
  if (docker && criDockerd) return said('docker', docker, ' (cri-dockerd)');
  const containerd = v('containerd');
  if (containerd) return said('containerd', containerd);
  return UNKNOWN;
}

const cniOf = (s: NodeState): string => CNI_BY_TYPE[s.facts.cniTypes[0] ?? ''] ?? UNKNOWN;

/** The mode kube-proxy's leftovers in the firewall view show: its nftables table, IPVS, its KUBE-SERVICES chain. */
function leftMode(s: NodeState): string | undefined {
  if (s.nftTables.some((t) => t.name === 'kube-proxy')) return 'nftables';
  if (s.ipvs.length || s.links.some((l) => l.name === 'kube-ipvs0')) return 'ipvs';
  if (s.iptables.some((t) => t.table === 'nat' && t.chains.includes('KUBE-SERVICES'))) return 'iptables';
  return undefined;
}

/** The modes kube-proxy answers on /proxyMode (its effective mode, defaulted: iptables on Linux). */
const KUBE_PROXY_MODES = new Set(['iptables', 'ipvs', 'nftables', 'kernelspace']);

function kubeProxyOf(s: NodeState): string {
  // Its own answer, when it is one of its modes (anything else on that port is not kube-proxy's word).
  if (s.facts.kubeProxyMode && KUBE_PROXY_MODES.has(s.facts.kubeProxyMode)) return s.facts.kubeProxyMode;
  const proc = [...s.processes.values()].find((p) => p.name === 'kube-proxy');
  const flag = proc && procFlag(proc, 'proxy-mode');
  // Cut off on the node (its command line too long), the flag is not known: neither is the mode.
  if (flag && flag !== UNKNOWN_FLAG) return flag;
  if (proc) return UNKNOWN;
  // Not running: the mode its leftovers show, if they show one (the probe's look, or the firewall view where it was taken).
  const left = s.facts.kubeProxyLeft ?? leftMode(s);
  if (left) return `${left} (kube-proxy not running)`;
  return UNKNOWN;
}

export const hostFacts = (s: NodeState): HostFacts => ({ runtime: runtimeOf(s), cni: cniOf(s), kubeProxy: kubeProxyOf(s) });

/** One line for people: "runtime containerd 2.1.9, CNI bridge, kube-proxy iptables". */
export const factsLine = (f: HostFacts): string => `runtime ${f.runtime}, CNI ${f.cni}, kube-proxy ${f.kubeProxy}`;
