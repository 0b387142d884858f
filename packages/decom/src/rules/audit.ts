/**
 * What the fleet audit calls residue on a live cluster: a node's pod traces matched
 * with the pods the API knows, and the API's own leftovers (pods and namespaces stuck
 * Terminating, Nodes, etcd members, VolumeAttachments and local PersistentVolumes of
 * machines that are gone; rules/deletions.ts judges the deletions that do not finish
 * elsewhere in the API).
 * Pure: node states and the API's lists in, findings out. The same rules are the
 * audit's report, the re-check `--fix` runs before it acts and its proof after.
 */
import type { V1APIService, V1Lease, V1Namespace, V1Node, V1PersistentVolume, V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';
import type { Container, NodeState, RuntimeStatus } from '../probes/state.js';
import { podUidOfProcessCgroup } from '../probes/parse.js';
import { hostOf } from '../inventory/identity.js';
import { clusterEtcd } from './residue.js';
import { ageSec, span } from './span.js';
import { strandedVolumes } from './local-volumes.js';

/** The lists an audit reads of the API (audit/cluster.ts reads them, naming each as RBAC does). */
export type ApiList = 'pods' | 'nodes' | 'namespaces' | 'volumeattachments' | 'persistentvolumes' | 'leases' | 'apiservices' | 'objects';

/** What the audit keeps of an object it lists metadata-only (PartialObjectMetadata), as the API wrote it. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  /** RFC 3339: when its deletion was asked for (plus its grace period, for a pod). */
  deletionTimestamp?: string;
  finalizers?: string[];
}

/** One resource's metadata-only list: how many objects it holds, and those being deleted (the only ones a rule reads). */
export interface ListedResource {
  /** As RBAC and kubectl name it: "configmaps", "widgets.example.com". */
  resource: string;
  kind: string;
  namespaced: boolean;
  count: number;
  deleting: ObjectMeta[];
}

/** The API's lists as the cluster rules below judge them. */
export interface ClusterView {
  server: string;
  pods: V1Pod[];
  nodes: V1Node[];
  namespaces: V1Namespace[];
  volumeAttachments: V1VolumeAttachment[];
  /** Read in full: a PV's node affinity is in its spec, not its metadata. */
  persistentVolumes: V1PersistentVolume[];
  leases: V1Lease[];
  apiServices: V1APIService[];
  /** Every other resource discovery names that can be listed and deleted, metadata only (audit/cluster.ts says which are left out and why). */
  objects: ListedResource[];
  /**
   * What the objects' lists could not cover, each with the API's words: a resource
   * whose list failed ("widgets.example.com"), a group version discovery could not
   * read ("metrics.k8s.io/v1beta1"). Every other resource was judged.
   */
  unlisted?: Record<string, string>;
  /**
   * The lists the API refused, each with why: "list RESOURCE: the API's message".
   * A refused list is empty above, and that emptiness means nothing: the kinds that
   * read it are not judged (refusedKinds).
   */
  refused?: Partial<Record<ApiList, string>>;
}

/** The audit's stable vocabulary of finding kinds (documented in docs/findings.md, beside verify's). */
export const AUDIT_KINDS = [
  'phantom-pod',
  'orphan-pod-dir',
  'orphan-pod-cgroup',
  'orphan-netns',
  'orphan-veth',
  'orphan-ipam-lease',
  'stuck-terminating-pod',
  'stuck-terminating-namespace',
  'stale-node',
  'stale-etcd-member',
  'stale-volume-attachment',
  'stale-local-pv',
  'stuck-deleting-object',
  'unavailable-apiservice',
  'finished-pods',
] as const;
export type AuditKind = (typeof AUDIT_KINDS)[number];

/**
 * Kinds only the API can prove, with the lists each one's rule reads (apiFindings and
 * namespaceFinding below; phantom-pod is nodeFindings' `known`). A kind one of whose
 * lists the API refused is not checked, and the report says so: judged on an empty
 * list it would lie ("its node is gone", "attached to a deleted Node"), or hide what
 * matters (the pods still in a namespace one might --force-finalize). Without a
 * kubeconfig none is checked. stale-etcd-member is not here: the nodes' etcd proves it.
 */
export const API_INPUTS = {
  'phantom-pod': ['pods'],
  'stuck-terminating-pod': ['pods', 'nodes'],
  'stuck-terminating-namespace': ['namespaces', 'pods', 'apiservices'],
  'stale-node': ['nodes', 'leases'],
  'stale-volume-attachment': ['volumeattachments', 'nodes'],
  'stale-local-pv': ['persistentvolumes', 'nodes'],
  'stuck-deleting-object': ['objects'],
  'unavailable-apiservice': ['apiservices'],
  'finished-pods': ['pods'],
} as const satisfies Partial<Record<AuditKind, readonly ApiList[]>>;
export const API_KINDS: ReadonlySet<AuditKind> = new Set(Object.keys(API_INPUTS) as AuditKind[]);

/** The API kinds this view cannot judge, in the report's order, each with the refusals of the lists it reads. */
export function refusedKinds(v: ClusterView): Map<AuditKind, string> {
  const out = new Map<AuditKind, string>();
  for (const kind of AUDIT_KINDS) {
    const lists: readonly ApiList[] = API_INPUTS[kind as keyof typeof API_INPUTS] ?? [];
    const why = lists.flatMap((l) => v.refused?.[l] ?? []);
    if (why.length) out.set(kind, why.join('; '));
  }
  return out;
}

export interface AuditFinding {
  kind: AuditKind;
  /** The object: "namespace/pod", a pod dir, a cgroup, a netns or link name, a lease file, a Node, a member. */
  subject: string;
  /** One line: why it is residue. */
  detail: string;
  /** What proves it, a line each: containers and PIDs, ports, mounts, processes, finalizers, conditions. */
  evidence: string[];
  /** What a remedy acts on (pod UID, sandbox IDs, paths, names), re-derived by the re-check before it acts. */
  target: Record<string, string | string[]>;
}

/** The pods the API knows, by UID; a static pod by its mirror pod's config.mirror hash (its UID on the node). */
export function knownPods(pods: readonly V1Pod[]): Map<string, V1Pod> {
  const known = new Map<string, V1Pod>();
  for (const p of pods) {
    if (p.metadata?.uid) known.set(p.metadata.uid, p);
    const mirror = p.metadata?.annotations?.['kubernetes.io/config.mirror'];
    if (mirror) known.set(mirror, p);
  }
  return known;
}

/** An APIService is unavailable unless its Available condition says True (none reported is not Available). */
export const apiServiceUnavailable = (a: V1APIService): boolean => a.status?.conditions?.find((c) => c.type === 'Available')?.status !== 'True';

const POD_DIRS = '/var/lib/kubelet/pods';
const podKey = (p: V1Pod) => `${p.metadata?.namespace}/${p.metadata?.name}`;
const live = (c: Container) => c.state === 'running' || c.state === 'SANDBOX_READY' || c.state === 'CONTAINER_RUNNING';

/**
 * Why this node's runtimes cannot prove a pod gone, if they cannot: one did not
 * answer (a stopped containerd still has pods it would recover), or a container's pod
 * could not be read (it may be any pod's). Undefined: every runtime answered for
 * every container it has.
 */
export function runtimeUnproven(s: NodeState): string | undefined {
  const silent = s.runtimes.filter((r) => !r.answered);
  const why = (r: RuntimeStatus) => (r.name === 'cri-o' ? 'CRI-O runs here and decom does not read its pods' : r.running ? `${r.name} did not answer` : `${r.name} is not running`);
  if (silent.length) return silent.map(why).join(' and ');
  if (!s.runtimes.length) return 'the node has no container runtime decom can ask (containerd, Docker)';
  // CRI-O and others: their pods are not listed here, so none is proven gone.
  if (s.crictl.runtime === 'other') return `the kubelet's runtime at ${s.crictl.endpoint} is not one decom reads`;
  const unread = s.containers.filter((c) => c.unread || (c.kind !== 'unknown' && !c.podUid));
  if (unread.length) return `the pod of ${unread.length} container${unread.length === 1 ? '' : 's'} could not be read (${unread.slice(0, 3).map((c) => c.id.slice(0, 13)).join(', ')}${unread.length > 3 ? ', …' : ''}: ${unread[0]?.unread ?? 'no pod UID in its labels, annotations, log directory or cgroup'})`;
  return undefined;
}

export interface NodeJudgement {
  findings: AuditFinding[];
  /** Pod traces whose owner could not be established, one line per kind: why, and what would settle it. Never findings, never fixed. */
  unverified: string[];
}

/**
 * A node's pod traces judged against the pods the API knows (`known`; undefined:
 * no API, so only what the node itself proves: a trace of no pod the runtime has).
 * A trace is an orphan only when every runtime on the node answered and none has a
 * sandbox or container of its pod, running or not; otherwise it is unverified.
 */
export function nodeFindings(s: NodeState, known: ReadonlyMap<string, V1Pod> | undefined): NodeJudgement {
  const out: AuditFinding[] = [];
  const unproven = runtimeUnproven(s);
  const held = new Map<string, string[]>();
  const hold = (what: string, subject: string) => held.set(what, [...(held.get(what) ?? []), subject]);
  /** A kubelet runs here: it stops (and so tears down the network of) the sandboxes it no longer wants. */
  const kubeletRuns = [...s.processes.values()].some((p) => p.name === 'kubelet');
  const byUid = new Map<string, Container[]>();
  for (const c of s.containers) if (c.podUid) byUid.set(c.podUid, [...(byUid.get(c.podUid) ?? []), c]);
  /** pid -> pod UID of its cgroup. */
  const pidUid = new Map<number, string>();
  for (const [pid, path] of s.k8sCgroups) {
    const uid = podUidOfProcessCgroup(path);
    if (uid) pidUid.set(pid, uid);
  }
  const pidsOf = (uid: string) => [...pidUid].filter(([, u]) => u === uid).map(([pid]) => pid).sort((a, b) => a - b);
  /** "PID:START": with its start time a PID names one process for good (a remedy never hits a PID reused since). */
  const procRefs = (pids: number[]) => pids.map((pid) => `${pid}:${s.processes.get(pid)?.start ?? 0}`);
  const proc = (pid: number) => `${pid} ${s.processes.get(pid)?.args || s.processes.get(pid)?.name || '?'}`.slice(0, 160);
  const mountsUnder = (dir: string) => s.mounts.filter((m) => m.target.startsWith(`${dir}/`)).map((m) => m.target);
  const podDirs = new Map(s.pods.dirs.map((uid) => [uid, `${POD_DIRS}/${uid}`] as const));
  // Pod-level cgroups only (verify's rule, kubeCgroupLevel): the QoS tree is the running kubelet's, never an orphan.
  const podCgroups = s.cgroups.kube.filter((c) => c.level === 'pod');
  const cgroupsOf = (uid: string) => podCgroups.filter((c) => c.uid === uid).map((c) => c.path);

  // Phantom pods: the runtime runs (or holds) a pod the API does not know.
  const phantoms = new Set<string>();
  if (known) {
    for (const [uid, cs] of byUid) {
      if (known.has(uid)) continue;
      phantoms.add(uid);
      const pids = pidsOf(uid);
      const ports = s.listeners.filter((l) => l.holders.some((h) => pids.includes(h.pid))).map((l) => `${l.addr}:${l.port}`);
      const name = cs.find((c) => c.pod)?.pod ?? uid;
      const inodes = new Set(pids.map((pid) => s.pods.procNetns.get(pid)));
      // Its netns: those its processes are in, and those its sandboxes name (a stopped one's is empty).
      const netns = [...new Set([...[...s.pods.netnsInodes].filter(([, ino]) => inodes.has(ino)).map(([n]) => n), ...cs.flatMap((c) => (c.kind === 'sandbox' && c.netns && s.netns.includes(c.netns) ? [c.netns] : []))])];
      const sandboxes = cs.filter((c) => c.kind === 'sandbox');
      out.push({
        kind: 'phantom-pod',
        subject: name,
        detail: `pod ${uid} runs on the node (${cs.filter(live).length} of ${cs.length} containers running${ports.length ? `, listening on ${[...new Set(ports)].join(', ')}` : ''}) but the API has no such pod`,
        evidence: [
          ...cs.map((c) => `${c.kind} ${c.name ?? ''} ${c.id.slice(0, 13)} ${c.runtime} ${c.state ?? ''}${c.pid ? ` pid ${c.pid}` : ''}`.replace(/ +/g, ' ')),
          ...pids.map((p) => `process ${proc(p)}`),
          ...[...new Set(ports)].map((p) => `port ${p}`),
          ...netns.map((n) => `netns ${n}`),
          ...(podDirs.has(uid) ? [`dir ${podDirs.get(uid)}`] : []),
          ...cgroupsOf(uid).map((c) => `cgroup ${c}`),
        ],
        target: { uid, containers: cs.map((c) => c.id), sandboxes: sandboxes.map((c) => c.id), runtime: cs[0]?.runtime ?? 'containerd', processes: procRefs(pids) },
      });
    }
  }
  /** A pod trace belongs to no pod: the API does not know it (or, without an API, the runtime has no container of it). */
  const orphan = (uid: string) => !phantoms.has(uid) && !byUid.has(uid) && (known ? !known.has(uid) : true);

  for (const [uid, dir] of podDirs) {
    if (!orphan(uid)) continue;
    if (unproven) {
      hold('pod dir', dir);
      continue;
    }
    const mounts = mountsUnder(dir);
    out.push({
      kind: 'orphan-pod-dir',
      subject: dir,
      detail: `pod dir of no ${known ? 'known pod' : 'pod the runtime has'}${mounts.length ? `, ${mounts.length} mount${mounts.length === 1 ? '' : 's'} still in it` : ''}`,
      evidence: mounts.map((m) => `mount ${m}`),
      target: { uid, dir, mounts },
    });
  }
  for (const uid of new Set(podCgroups.map((c) => c.uid as string))) {
    if (!orphan(uid)) continue;
    const pids = pidsOf(uid);
    const paths = cgroupsOf(uid);
    if (unproven) {
      hold('pod cgroup', paths[0] as string);
      continue;
    }
    out.push({
      kind: 'orphan-pod-cgroup',
      subject: paths[0] as string,
      detail: `pod cgroup of no ${known ? 'known pod' : 'pod the runtime has'}${pids.length ? `, ${pids.length} process${pids.length === 1 ? '' : 'es'} still in it` : ', empty'}`,
      evidence: pids.map((p) => `process ${proc(p)}`),
      target: { uid, cgroups: paths, processes: procRefs(pids) },
    });
  }

  // The pod network: a cni-* netns no process is in (a live sandbox's pause process is in its own). While a
  // kubelet runs, one that a sandbox the runtime still holds names is that sandbox's teardown, not an orphan:
  // StopPodSandbox kills the pause process first, then runs the CNI DEL and removes the netns, so an audit in
  // between sees it empty, and the kubelet retries a teardown that failed. With no kubelet, no one will.
  const usedInodes = new Set(s.pods.procNetns.values());
  const heldNetns = new Set(kubeletRuns ? s.containers.filter((c) => c.kind === 'sandbox' && c.netns).map((c) => c.netns as string) : []);
  const orphanNetns = new Set(
    s.netns.filter((n) => n.startsWith('cni-') && !heldNetns.has(n) && s.pods.netnsInodes.has(n) && !usedInodes.has(s.pods.netnsInodes.get(n) as string)),
  );
  for (const n of orphanNetns) {
    const veths = s.links.filter((l) => l.peerNetns === n).map((l) => l.name);
    out.push({
      kind: 'orphan-netns',
      subject: n,
      detail: `pod network namespace no process is in${veths.length ? ` (its veth ${veths.join(', ')} still on the host)` : ''}`,
      evidence: veths.map((v) => `veth ${v}`),
      target: { netns: n },
    });
  }
  for (const l of s.links) {
    if (!l.peerNetns || !orphanNetns.has(l.peerNetns)) continue;
    out.push({
      kind: 'orphan-veth',
      subject: l.name,
      detail: `host veth${l.master ? ` on ${l.master}` : ''} whose pod end is in the unused netns ${l.peerNetns}`,
      evidence: [`peer netns ${l.peerNetns}`],
      target: { link: l.name, netns: l.peerNetns },
    });
  }
  // host-local leases naming a sandbox that is not running (its address cannot be handed out again). While a
  // kubelet runs, a stopped sandbox's lease is released by its own teardown (StopPodSandbox's CNI DEL), running
  // or still to run; with none, or once the runtime has no such sandbox, nothing will release it.
  const liveSandboxes = new Set(s.containers.filter((c) => c.kind === 'sandbox' && live(c)).map((c) => c.id));
  const anySandboxes = new Set(s.containers.filter((c) => c.kind === 'sandbox').map((c) => c.id));
  for (const l of s.pods.leases) {
    if (liveSandboxes.has(l.sandbox) || (kubeletRuns && anySandboxes.has(l.sandbox))) continue;
    if (unproven) {
      hold('IPAM lease', l.file);
      continue;
    }
    out.push({
      kind: 'orphan-ipam-lease',
      subject: l.file,
      detail: `${l.network} lease of ${l.ip} names sandbox ${l.sandbox.slice(0, 13) || '(none)'}, which ${anySandboxes.has(l.sandbox) ? 'is stopped, with no kubelet to tear it down' : 'does not exist'}`,
      evidence: [`sandbox ${l.sandbox}`],
      target: { file: l.file, sandbox: l.sandbox },
    });
  }
  const unverified = [...held].map(
    ([what, subjects]) =>
      `${subjects.length} ${what}${subjects.length === 1 ? '' : 's'} unverified (${subjects.slice(0, 3).join(', ')}${subjects.length > 3 ? ', …' : ''}): ${unproven}, so no runtime proves ${subjects.length === 1 ? 'its pod' : 'their pods'} gone; audit again once it answers`,
  );
  return { findings: out, unverified };
}

/** How the cluster-wide rules see the fleet: which Node each audited host is, which hosts answered, the inventory's etcd addresses. */
export interface Fleet {
  /** Node name -> inventory host name, every host of the inventory. */
  hostOfNode: ReadonlyMap<string, string>;
  /** Inventory hosts that could not be probed in this run. */
  unreachable: ReadonlySet<string>;
  /** Addresses and names of every inventory host: an etcd member matching none has no host. */
  inventoryAddresses: ReadonlySet<string>;
  /** Every audited host's node state (containers still running of a Terminating pod). */
  states: ReadonlyMap<string, NodeState>;
  now: number;
  /** A pod or namespace Terminating longer than this past its deadline is stuck. */
  stuckAfterSec: number;
  /** A Node NotReady longer than this is stale. */
  staleAfterSec: number;
}

export interface Placed extends AuditFinding {
  /** The inventory host it belongs to; undefined: the cluster's (a namespace, a member, a Node of no host). */
  host?: string;
}

const readyOf = (n: V1Node | undefined) => n?.status?.conditions?.find((c) => c.type === 'Ready');

/**
 * The API's leftovers: Terminating pods and namespaces past their time, stale Nodes,
 * VolumeAttachments and local PersistentVolumes. A kind whose lists the API refused
 * (refusedKinds) is not judged at all.
 */
export function apiFindings(v: ClusterView, f: Fleet): Placed[] {
  const out: Placed[] = [];
  const refused = refusedKinds(v);
  const judged = (k: AuditKind) => !refused.has(k);
  const nodes = new Map(v.nodes.map((n) => [n.metadata?.name as string, n]));
  const heartbeat = new Map(v.leases.filter((l) => l.metadata?.namespace === 'kube-node-lease').map((l) => [l.metadata?.name as string, l.spec?.renewTime]));

  for (const p of judged('stuck-terminating-pod') ? v.pods : []) {
    const deleted = p.metadata?.deletionTimestamp;
    if (!deleted) continue;
    // deletionTimestamp is the deadline (the delete's time plus the grace period): past it plus a margin, the pod is stuck.
    const over = ageSec(deleted, f.now);
    if (over < f.stuckAfterSec) continue;
    const nodeName = p.spec?.nodeName;
    const node = nodeName ? nodes.get(nodeName) : undefined;
    const why: string[] = [];
    const finalizers = p.metadata?.finalizers ?? [];
    if (finalizers.length) why.push(`finalizers left: ${finalizers.join(', ')}`);
    if (nodeName && !node) why.push(`its node ${nodeName} is gone`);
    else if (node && readyOf(node)?.status !== 'True') why.push(`its node ${nodeName} is NotReady`);
    const host = nodeName ? f.hostOfNode.get(nodeName) : undefined;
    const running = host ? (f.states.get(host)?.containers ?? []).filter((c) => c.podUid === p.metadata?.uid && live(c)) : [];
    if (running.length) why.push(`${running.length} of its containers still running on ${host}`);
    if (!why.length) why.push('no finalizer and its node is Ready: the kubelet has not confirmed the containers stopped');
    out.push({
      kind: 'stuck-terminating-pod',
      subject: podKey(p),
      detail: `Terminating for ${span(over)} past its grace period${nodeName ? ` on ${nodeName}` : ''}: ${why.join('; ')}`,
      evidence: [...finalizers.map((x) => `finalizer ${x}`), ...running.map((c) => `container ${c.name ?? c.id.slice(0, 13)} ${c.state}`), `deletionTimestamp ${new Date(deleted).toISOString()}`],
      target: { namespace: p.metadata?.namespace ?? '', name: p.metadata?.name ?? '', uid: p.metadata?.uid ?? '', node: nodeName ?? '', nodeGone: String(Boolean(nodeName && !node)), containersRunning: String(running.length) },
      ...(host ? { host } : {}),
    });
  }

  for (const ns of judged('stuck-terminating-namespace') ? v.namespaces : []) {
    const deleted = ns.metadata?.deletionTimestamp;
    if (!deleted || ns.status?.phase !== 'Terminating') continue;
    const over = ageSec(deleted, f.now);
    if (over < f.stuckAfterSec) continue;
    out.push(namespaceFinding(ns, over, v));
  }

  for (const n of judged('stale-node') ? v.nodes : []) {
    const name = n.metadata?.name as string;
    const ready = readyOf(n);
    if (!ready || ready.status === 'True') continue;
    const since = ageSec(ready.lastTransitionTime, f.now);
    if (since < f.staleAfterSec) continue;
    const host = f.hostOfNode.get(name);
    const where = !host ? 'its host is not in the inventory' : f.unreachable.has(host) ? `its host ${host} is unreachable` : `its host ${host} answers, its kubelet does not report`;
    const beat = heartbeat.get(name);
    out.push({
      kind: 'stale-node',
      subject: name,
      detail: `NotReady for ${span(since)}: ${where}`,
      evidence: [`Ready=${ready.status} ${ready.reason ?? ''} since ${ready.lastTransitionTime ? new Date(ready.lastTransitionTime).toISOString() : '?'}`.trim(), ...(beat ? [`last heartbeat (Lease) ${span(ageSec(beat, f.now))} ago`] : [])],
      target: { node: name },
      ...(host ? { host } : {}),
    });
  }

  for (const va of judged('stale-volume-attachment') ? v.volumeAttachments : []) {
    const node = va.spec?.nodeName;
    if (!node || nodes.has(node)) continue;
    const pv = va.spec?.source?.persistentVolumeName ?? '(inline)';
    out.push({
      kind: 'stale-volume-attachment',
      subject: va.metadata?.name as string,
      detail: `attaches ${pv} to Node ${node}, which is deleted${va.status?.attached ? ' (still marked attached)' : ''}`,
      evidence: [`attacher ${va.spec?.attacher}`, `node ${node}`, `pv ${pv}`, ...(va.metadata?.finalizers ?? []).map((x) => `finalizer ${x}`)],
      target: { name: va.metadata?.name as string, node },
    });
  }

  // Local PVs whose node is gone: no remedy, their data left with the node; deleting them is the user's call.
  for (const pv of judged('stale-local-pv') ? strandedVolumes(v.persistentVolumes, v.nodes) : []) {
    const [namespace, claim] = pv.claim ? (pv.claim.split('/') as [string, string]) : [];
    const retainFirst = pv.reclaimPolicy === 'Delete' ? `kubectl patch pv ${pv.name} -p '{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}' (a provisioner cannot clean a node that is gone), then ` : '';
    const remove = `${retainFirst}${claim ? `kubectl delete pvc --namespace ${namespace} ${claim}, then ` : ''}kubectl delete pv ${pv.name}`;
    out.push({
      kind: 'stale-local-pv',
      subject: pv.name,
      detail: `local PersistentVolume (${pv.source}) whose node affinity selects no Node: its data left with its node; ${pv.claim ? `claim ${pv.claim}` : 'no claim'}, ${pv.phase}, reclaim policy ${pv.reclaimPolicy}`,
      evidence: [`affinity ${pv.affinity}`, ...(pv.claim ? [`claim ${pv.claim}`] : []), `phase ${pv.phase}`, `reclaim policy ${pv.reclaimPolicy}`, `if its data is not wanted: ${remove}`],
      target: { name: pv.name, ...(pv.claim ? { claim: pv.claim } : {}) },
    });
  }
  return out;
}

/** Why a namespace hangs: its conditions that are true, its finalizers, the APIServices that are unavailable, what is left in it. */
function namespaceFinding(ns: V1Namespace, over: number, v: ClusterView): Placed {
  const name = ns.metadata?.name as string;
  const conditions = (ns.status?.conditions ?? []).filter((c) => c.status === 'True');
  const finalizers = [...(ns.spec?.finalizers ?? []), ...(ns.metadata?.finalizers ?? [])];
  const unavailable = v.apiServices.filter(apiServiceUnavailable);
  const left = v.pods.filter((p) => p.metadata?.namespace === name).map(podKey);
  const why = [
    ...conditions.map((c) => `${c.type}: ${c.message ?? c.reason ?? ''}`),
    ...(finalizers.length ? [`finalizers left: ${finalizers.join(', ')}`] : []),
    ...(unavailable.length ? [`unavailable APIServices: ${unavailable.map((a) => a.metadata?.name).join(', ')}`] : []),
  ];
  return {
    kind: 'stuck-terminating-namespace',
    subject: name,
    detail: `Terminating for ${span(over)}: ${why.join('; ') || 'no condition says why'}`,
    evidence: [
      ...conditions.map((c) => `condition ${c.type}=True ${c.reason ?? ''}: ${c.message ?? ''}`),
      ...finalizers.map((x) => `finalizer ${x}`),
      ...unavailable.map((a) => `apiservice ${a.metadata?.name} unavailable: ${a.status?.conditions?.find((c) => c.type === 'Available')?.message ?? ''}`),
      ...left.map((p) => `pod ${p}`),
    ],
    target: { namespace: name },
  };
}

/** etcd members whose peer and client URLs name no inventory host (as the members' own nodes saw them). */
export function etcdFindings(states: ReadonlyMap<string, NodeState>, f: Pick<Fleet, 'inventoryAddresses'>): Placed[] {
  const seen = new Map<string, Placed>();
  for (const s of states.values()) {
    // A package's etcd serving no cluster is not this cluster's to judge.
    if (!clusterEtcd(s)) continue;
    for (const m of s.etcd?.members ?? []) {
      if (seen.has(m.id)) continue;
      const urls = [...m.peerURLs, ...m.clientURLs];
      const hosts = urls.map(hostOf);
      const named = (m.name && f.inventoryAddresses.has(m.name)) || hosts.some((h) => f.inventoryAddresses.has(h));
      if (named || (!urls.length && !m.name)) continue;
      seen.set(m.id, {
        kind: 'stale-etcd-member',
        subject: m.name || m.id,
        detail: `etcd member ${m.id}${m.isLearner ? ' (learner)' : ''} at ${m.peerURLs.join(', ') || '(no peer URL)'} has no host in the inventory`,
        evidence: [...m.peerURLs.map((u) => `peer ${u}`), ...m.clientURLs.map((u) => `client ${u}`)],
        target: { id: m.id, name: m.name },
      });
    }
  }
  return [...seen.values()];
}
