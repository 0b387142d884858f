/**
 * Draining a Node as `kubectl drain` does (kubectl's pkg/drain), and then better:
 *   - the plan is pure: kubectl's filters, in kubectl's order and words, decide which
 *     pods go, which are skipped (mirror pods; DaemonSet pods, left to the node reset)
 *     and which refuse the drain (emptyDir without --delete-emptydir-data, bare pods
 *     without --force);
 *   - a preflight before anything changes: a server-side dry-run eviction of every pod
 *     to go, so a budget that allows no disruption at any scale stops the drain, naming
 *     the PDB and the pod, before the Node is even cordoned (one spent now is waited for);
 *   - then cordon, evict in parallel (429 retried every 5 s until the deadline), and
 *     wait until every evicted pod is gone; then, bounded, until the volumes the drain
 *     moved are detached (claimsOf, recorded in the journal; a single-node access mode
 *     only), as Karpenter waits only for the attachments of the pods it drained. Every
 *     other attachment on the Node is named, with its state (otherAttachments).
 */
import type { V1LabelSelector, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1PodDisruptionBudget, V1VolumeAttachment } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kube } from './context.js';
import { apiStatus, codeOf, errorLine } from './kubeconfig.js';
import { listAll } from './pages.js';

export type { Kube };

export interface DrainOptions {
  /** Bare pods (no controller) may go: kubectl's --force, nothing more. */
  force: boolean;
  /** Pods with emptyDir data may go (the data is lost). */
  deleteEmptyDirData: boolean;
  /** Delete instead of evict: PodDisruptionBudgets are not asked. */
  disableEviction: boolean;
  /** Until when evictions are retried and pods waited for (ms since the epoch). */
  deadline: number;
  /** How long between 429 retries: 5 s, as kubectl. */
  retryMs?: number;
  /** kubectl's --grace-period: the pods' termination grace period (each pod's own when undefined). */
  gracePeriodSec?: number;
  /** kubectl's --pod-selector: only the pods this label selector selects. */
  podSelector?: string;
  /** kubectl's --skip-wait-for-delete-timeout: a pod deleted longer ago than this is neither evicted nor waited for (0: off). */
  skipWaitForDeleteTimeoutSec?: number;
}

/** What plans a drain: kubectl's filters and which pods it lists. */
export type PlanOptions = Pick<DrainOptions, 'force' | 'deleteEmptyDirData' | 'podSelector' | 'skipWaitForDeleteTimeoutSec'>;

/** kubectl's shouldSkipPod: deleted longer ago than --skip-wait-for-delete-timeout (a dead kubelet will never confirm it). */
export const deletedLongAgo = (p: V1Pod, skipSec: number | undefined, now = Date.now()): boolean =>
  !!skipSec && !!p.metadata?.deletionTimestamp && (now - new Date(p.metadata.deletionTimestamp).getTime()) / 1000 > skipSec;

export interface DrainPlan {
  evict: V1Pod[];
  /** Left alone, with why ("DaemonSet-managed", "mirror pod"). */
  skipped: { pod: string; why: string }[];
  /** What keeps the drain from starting, in kubectl's words (one line per reason, naming the pods). */
  refusals: string[];
  /** What --force lets go that kubectl warns about (bare pods, pods of a deleted DaemonSet), grouped by message in its words. */
  warnings: string[];
}


/** The drain could not finish: nothing on the node has been touched; the Node is cordoned when `cordoned` says so. */
export class DrainError extends Error {
  constructor(message: string, readonly cordoned = true) {
    super(message);
  }
}

/** An API call of the drain: its failure one line, the object it concerns and the API's own message. */
async function api<T>(what: string, call: () => Promise<T>, cordoned = false): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (e instanceof DrainError) throw e;
    throw new DrainError(`${what}: ${errorLine(e)}`, cordoned);
  }
}

const ref = (p: V1Pod) => `${p.metadata?.namespace}/${p.metadata?.name}`;
const finished = (p: V1Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
const controllerOf = (p: V1Pod) => p.metadata?.ownerReferences?.find((o) => o.controller);

/**
 * kubectl's filters (pkg/drain/filters.go), in its order and words, as
 * `kubectl drain --ignore-daemonsets` runs them: DaemonSet pods are skipped (a
 * finished one goes; one whose DaemonSet is gone goes only with --force, else
 * refuses); mirror pods skipped; emptyDir pods refused unless allowed, bare pods
 * unless --force (finished pods go either way). `daemonSets` holds the
 * "namespace/name" of the DaemonSets that exist.
 */
export function planDrain(pods: V1Pod[], daemonSets: Set<string>, o: PlanOptions, now = Date.now()): DrainPlan {
  const plan: DrainPlan = { evict: [], skipped: [], refusals: [], warnings: [] };
  const refused = new Map<string, string[]>();
  const refuse = (why: string, p: V1Pod) => refused.set(why, [...(refused.get(why) ?? []), ref(p)]);
  const warned: [string, string][] = [];
  for (const p of pods) {
    // kubectl's first filter (skipDeletedFilter): skipped, without a word.
    if (deletedLongAgo(p, o.skipWaitForDeleteTimeoutSec, now)) {
      plan.skipped.push({ pod: ref(p), why: `deleted more than ${o.skipWaitForDeleteTimeoutSec}s ago (--skip-wait-for-delete-timeout)` });
      continue;
    }
    const owner = controllerOf(p);
    if (owner?.kind === 'DaemonSet' && !finished(p)) {
      if (daemonSets.has(`${p.metadata?.namespace}/${owner.name}`)) {
        plan.skipped.push({ pod: ref(p), why: 'DaemonSet-managed' });
        continue;
      }
      if (!o.force) {
        refuse(`cannot delete daemonsets.apps "${owner.name}" not found`, p);
        continue;
      }
      // Orphaned, and --force: it goes with a warning, if the filters below let it.
      warned.push([`daemonsets.apps "${owner.name}" not found`, ref(p)]);
    }
    if (p.metadata?.annotations && 'kubernetes.io/config.mirror' in p.metadata.annotations) {
      plan.skipped.push({ pod: ref(p), why: 'mirror pod' });
      continue;
    }
    if (!finished(p) && (p.spec?.volumes ?? []).some((v) => v.emptyDir) && !o.deleteEmptyDirData) {
      refuse('cannot delete Pods with local storage (use --delete-emptydir-data to override)', p);
      continue;
    }
    if (!finished(p) && !owner) {
      if (!o.force) {
        refuse('cannot delete Pods that declare no controller (use --force to override)', p);
        continue;
      }
      warned.push(['deleting Pods that declare no controller', ref(p)]);
    }
    plan.evict.push(p);
  }
  plan.refusals = [...refused].map(([why, names]) => `${why}: ${names.join(', ')}`);
  // Grouped by message, as kubectl prints them: "deleting Pods that declare no controller: a, b".
  plan.warnings = [...groupBy(warned)].map(([why, names]) => `${why}: ${names.join(', ')}`);
  return plan;
}

/** A Status cause's reason, as the API serialises a StatusCause's type. */
const hasCause = (e: unknown, reason: string) => (apiStatus(e)?.details?.causes ?? []).some((c) => c.reason === reason);
/** A 429 is a budget's only when its cause says so; priority and fairness sends one with no cause (and no Status). */
const budgetRefusal = (e: unknown) => codeOf(e) === 429 && hasCause(e, 'DisruptionBudget');
/** An eviction in a Terminating namespace: 403 with the NamespaceTerminating cause (the NamespaceLifecycle admission). */
const namespaceTerminating = (e: unknown) => codeOf(e) === 403 && hasCause(e, 'NamespaceTerminating');

/** What a refusal says: the budget's cause ("The disruption budget web needs 2 healthy pods and has 1 currently"), else the API's message. */
function budgetOf(e: unknown): string {
  const status = apiStatus(e);
  return status?.details?.causes?.[0]?.message ?? status?.message ?? String((e as Error)?.message ?? e).split('\n')[0] ?? '';
}

/** The Node's pods (those --pod-selector selects), every page: the drain's list, and the local volumes' users (cluster/local-data.ts). */
export const podsOn = (k: Kube, node: string, podSelector?: string): Promise<V1Pod[]> =>
  listAll((p) => k.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}`, ...(podSelector ? { labelSelector: podSelector } : {}), ...p }));

/**
 * The plan for a node, from the API: its pods and the DaemonSets that own the running
 * ones (kubectl never reads a finished pod's: it goes either way). A read that fails
 * for another reason than NotFound refuses that pod in the API's words, as kubectl does.
 */
export async function planFor(k: Kube, node: string, o: PlanOptions): Promise<DrainPlan> {
  const pods = await podsOn(k, node, o.podSelector);
  const daemonSets = new Set<string>();
  const unreadable = new Map<string, string>();
  for (const p of pods) {
    const owner = controllerOf(p);
    if (owner?.kind !== 'DaemonSet' || finished(p) || deletedLongAgo(p, o.skipWaitForDeleteTimeoutSec)) continue;
    const key = `${p.metadata?.namespace}/${owner.name}`;
    if (daemonSets.has(key) || unreadable.has(key)) continue;
    try {
      await k.apps.readNamespacedDaemonSet({ name: owner.name, namespace: p.metadata?.namespace as string });
      daemonSets.add(key);
    } catch (e) {
      if (codeOf(e) !== 404) unreadable.set(key, errorLine(e));
    }
  }
  const dsKey = (p: V1Pod) => (controllerOf(p)?.kind === 'DaemonSet' && !finished(p) ? `${p.metadata?.namespace}/${controllerOf(p)?.name}` : '');
  const plan = planDrain(pods.filter((p) => !unreadable.has(dsKey(p))), daemonSets, o);
  const refused = pods.filter((p) => unreadable.has(dsKey(p)));
  for (const [why, names] of groupBy(refused.map((p) => [unreadable.get(dsKey(p)) as string, ref(p)]))) plan.refusals.push(`${why}: ${names.join(', ')}`);
  return plan;
}

/** [message, pod] pairs grouped by message, in first-seen order: kubectl's way of printing warnings and errors. */
export const groupBy = (pairs: [string, string][]): Map<string, string[]> => {
  const out = new Map<string, string[]>();
  for (const [k, v] of pairs) out.set(k, [...(out.get(k) ?? []), v]);
  return out;
};

const eviction = (p: V1Pod, gracePeriodSec?: number) => ({
  apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: p.metadata?.name, namespace: p.metadata?.namespace },
  ...(gracePeriodSec !== undefined ? { deleteOptions: { gracePeriodSeconds: gracePeriodSec } } : {}),
});

/** How long a pod may take to stop once evicted: --grace-period, else its own terminationGracePeriodSeconds (30 s by default). */
export const graceOf = (p: V1Pod, gracePeriodSec?: number): number => gracePeriodSec ?? p.spec?.terminationGracePeriodSeconds ?? 30;

/** Does a label selector (matchLabels and matchExpressions) select these labels? An empty selector selects everything. */
export function selects(sel: V1LabelSelector | undefined, labels: Record<string, string> = {}): boolean {
  if (!sel) return false; // a PDB without a selector selects no pod (policy/v1)
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = e.key in labels;
    const inValues = has && (e.values ?? []).includes(labels[e.key] as string);
    const ok = e.operator === 'In' ? inValues : e.operator === 'NotIn' ? !inValues : e.operator === 'Exists' ? has : e.operator === 'DoesNotExist' ? !has : false;
    if (!ok) return false;
  }
  return true;
}

/** A budget no waiting can satisfy: it allows no disruption whatever the number of pods (maxUnavailable 0, minAvailable 100%). */
const neverAllows = (b: V1PodDisruptionBudget) => {
  const max = b.spec?.maxUnavailable;
  const min = b.spec?.minAvailable;
  return max === 0 || max === '0%' || min === '100%';
};

export interface Blocked {
  pod: string;
  /** The budget's own words: "The disruption budget ledger needs 1 healthy pods and has 1 currently". */
  message: string;
  /** The budget, when the pod's namespace has one that selects it. */
  pdb?: string;
  /** No wait can help: the budget allows no disruption at any scale. */
  never: boolean;
}

/**
 * The preflight: a server-side dry-run eviction of every pod to go; nothing is
 * changed. Returns the pods a budget blocks now (a 429 whose cause is the budget's),
 * each with the budget its message names and whether waiting can help (a spent budget
 * frees up as pods become healthy elsewhere, or someone scales up; maxUnavailable 0
 * never does: read by name, and a refused read only weakens that to "may"), and the
 * pods the API refuses for good (two budgets over one pod, a forbidden eviction), in
 * its words. A cause-less 429 (priority and fairness) and a Terminating namespace
 * are the eviction loop's to retry or wait out.
 */
export async function preflight(k: Kube, plan: DrainPlan, gracePeriodSec?: number): Promise<{ blocked: Blocked[]; refused: string[] }> {
  const blocked: Blocked[] = [];
  const refused: string[] = [];
  await Promise.all(
    plan.evict.map(async (p) => {
      const namespace = p.metadata?.namespace as string;
      try {
        await k.core.createNamespacedPodEviction({ name: p.metadata?.name as string, namespace, body: eviction(p, gracePeriodSec), dryRun: 'All' });
      } catch (e) {
        if (codeOf(e) === 404 || namespaceTerminating(e) || (codeOf(e) === 429 && !budgetRefusal(e))) return;
        if (!budgetRefusal(e)) {
          refused.push(`${ref(p)}: ${errorLine(e)}`);
          return;
        }
        const message = budgetOf(e);
        const name = / budget (\S+) needs /.exec(message)?.[1];
        let never = false;
        let unread = '';
        if (name) {
          try {
            never = neverAllows(await k.policy.readNamespacedPodDisruptionBudget({ name, namespace }));
          } catch (e2) {
            // Not readable (a drainer's role need not read budgets): it may free up, so it is waited for.
            unread = ` (PodDisruptionBudget ${namespace}/${name} could not be read, so whether it ever allows is not known: ${errorLine(e2)})`;
          }
        }
        blocked.push({ pod: ref(p), message: `${message}${unread}`, ...(name ? { pdb: `${namespace}/${name}` } : {}), never });
      }
    }),
  );
  return { blocked: blocked.sort((a, b) => a.pod.localeCompare(b.pod)), refused: refused.sort() };
}

export interface DrainCheck {
  plan: DrainPlan;
  /** Why the drain must not start (nothing has changed): kubectl's refusals, or a budget that never allows. */
  refusal?: string;
  /** Budgets spent now that may free up within the drain timeout. */
  spent: Blocked[];
}

/** Plan and preflight: what a drain of `node` would do, and whether it may start. Changes nothing. */
export async function checkDrain(k: Kube, node: string, o: PlanOptions & Pick<DrainOptions, 'disableEviction' | 'gracePeriodSec'>): Promise<DrainCheck> {
  const plan = await api(`list the pods of Node ${node}`, () => planFor(k, node, o), false);
  if (plan.refusals.length) return { plan, refusal: `cannot drain node "${node}": ${plan.refusals.join('; ')}`, spent: [] };
  const { blocked, refused } = o.disableEviction ? { blocked: [], refused: [] } : await preflight(k, plan, o.gracePeriodSec);
  if (refused.length) {
    return { plan, refusal: `cannot drain node "${node}": ${refused.join('; ')}; the pods it would evict: ${plan.evict.map(ref).join(', ')}`, spent: [] };
  }
  const never = blocked.filter((b) => b.never);
  if (never.length) {
    const list = never.map((b) => `${b.pod} (PodDisruptionBudget ${b.pdb}: ${b.message})`).join('; ');
    return { plan, refusal: `cannot drain node "${node}": a PodDisruptionBudget allows no disruption, at any scale: ${list}`, spent: [] };
  }
  return { plan, spent: blocked };
}

export interface DrainResult {
  plan: DrainPlan;
  cordoned: boolean;
  evicted: string[];
}

/**
 * Drains `node`: cordon, list again (a pod bound before the cordon took effect goes
 * too), evict in parallel, wait until gone. The first failure stops every other
 * eviction's retries; the error names each pod that did not go. Call checkDrain first.
 */
export async function drainNode(k: Kube, node: string, o: DrainOptions, log: (line: string) => void = () => {}): Promise<DrainResult> {
  const current = await api(`read Node ${node}`, () => k.core.readNode({ name: node }));
  let cordoned = false;
  if (!current.spec?.unschedulable) {
    const { setHeaderOptions, PatchStrategy } = await import('@kubernetes/client-node');
    await api(`cordon Node ${node}`, () => k.core.patchNode({ name: node, body: { spec: { unschedulable: true } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)));
    cordoned = true;
    log(`node/${node} cordoned`);
  }
  const plan = await api(`list the pods of Node ${node}`, () => planFor(k, node, o), true);
  if (plan.refusals.length) throw new DrainError(`node "${node}" is cordoned but not drained: ${plan.refusals.join('; ')}`);
  for (const w of plan.warnings) log(`Warning: ${w}`);
  const retry = o.retryMs ?? 5000;
  let stop = false;
  const gone = new Set<string>();
  const settled = await Promise.allSettled(
    plan.evict.map(async (first) => {
      let p = first;
      const name = p.metadata?.name as string;
      const namespace = p.metadata?.namespace as string;
      const retryOrFail = async (said: string, why: string) => {
        if (Date.now() + retry > o.deadline) throw new Error(`${ref(p)} could not be evicted before the drain timeout: ${why}`);
        log(`${said} (will retry after ${retry / 1000}s): ${why}`);
        await sleep(retry);
      };
      for (;;) {
        if (stop) return;
        try {
          if (o.disableEviction) await k.core.deleteNamespacedPod({ name, namespace, ...(o.gracePeriodSec !== undefined ? { gracePeriodSeconds: o.gracePeriodSec } : {}) });
          else await k.core.createNamespacedPodEviction({ name, namespace, body: eviction(p, o.gracePeriodSec) });
          log(`${o.disableEviction ? 'deleted' : 'evicted'} pod ${ref(p)}`);
          break;
        } catch (e) {
          if (codeOf(e) === 404) break;
          // Any 429 is retried, as kubectl does: a budget's, or priority and fairness'.
          if (codeOf(e) === 429) {
            await retryOrFail(`error when evicting pods/"${name}" -n "${namespace}"`, budgetOf(e));
            continue;
          }
          // A Terminating namespace refuses evictions: a pod already deleted is waited for; else retried until it is.
          if (namespaceTerminating(e)) {
            if (p.metadata?.deletionTimestamp) break;
            await retryOrFail(`error when evicting pod "${name}" from terminating namespace "${namespace}"`, apiStatus(e)?.message ?? errorLine(e));
            try {
              p = await k.core.readNamespacedPod({ name, namespace });
            } catch (e2) {
              if (codeOf(e2) === 404) break;
              // Not fatal: the next eviction says again where the pod stands.
              log(`${ref(p)}: could not read it again: ${errorLine(e2)}`);
            }
            continue;
          }
          throw new Error(`${ref(p)}: ${o.disableEviction ? 'the delete' : 'the eviction'} failed: ${errorLine(e)}`);
        }
      }
      // Gone once NotFound, or replaced by a pod of the same name with another uid; a pod
      // deleted long ago on a dead kubelet is not waited for (--skip-wait-for-delete-timeout).
      // A pod whose grace period outlasts the drain timeout is given its grace period.
      const until = Math.max(o.deadline, Date.now() + graceOf(p, o.gracePeriodSec) * 1000);
      for (;;) {
        if (stop) return;
        try {
          const now = await k.core.readNamespacedPod({ name, namespace });
          if (now.metadata?.uid !== first.metadata?.uid || deletedLongAgo(now, o.skipWaitForDeleteTimeoutSec)) break;
        } catch (e) {
          if (codeOf(e) === 404) break;
          throw new Error(`${ref(p)}: could not see whether it is gone: ${errorLine(e)}`);
        }
        if (Date.now() > until) {
          throw new Error(`${ref(p)} was evicted but is still there at the drain timeout (its grace period: ${graceOf(p, o.gracePeriodSec)}s): its containers have not stopped (is its kubelet working?)`);
        }
        await sleep(1000);
      }
      gone.add(ref(first));
    }).map((x) => x.catch((e: unknown) => ((stop = true), Promise.reject(e)))),
  );
  const failed = settled.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message] : []));
  if (failed.length) {
    // What the SRE must act on: every pod this drain was to move that is still on the node.
    const left = plan.evict.map(ref).filter((x) => !gone.has(x));
    throw new DrainError(`node "${node}" is cordoned but not drained: ${failed.join('; ')}; still on the node (or not yet seen gone): ${left.join(', ')}`);
  }
  return { plan, cordoned, evicted: plan.evict.map(ref) };
}

/**
 * A claim of a pod the drain moves, as the journal records it (event `drain-volumes`) so a
 * rerun of a killed run waits for the same volumes: the claim's access modes, the
 * PersistentVolume bound to it, and that volume's CSI driver and handle.
 */
export interface MovedClaim {
  /** The pod, namespace/name. */
  pod: string;
  /** The claim, namespace/name (a generic ephemeral volume's is POD-VOLUME). */
  claim: string;
  accessModes?: string[];
  pv?: string;
  driver?: string;
  handle?: string;
  /** Why the claim or its volume could not be read. */
  unread?: string;
}

/** The access modes that let one node alone use a volume: its attachment is waited for. */
const SINGLE_NODE = ['ReadWriteOnce', 'ReadWriteOncePod'];
/** Whether the volumes step waits for this claim's volume: its claim allows ReadWriteOnce or ReadWriteOncePod. */
export const singleNode = (m: Pick<MovedClaim, 'accessModes'>): boolean => (m.accessModes ?? []).some((x) => SINGLE_NODE.includes(x));

/** The claims a pod mounts, namespace/name: its persistentVolumeClaim volumes, and its generic ephemeral volumes' (named POD-VOLUME). */
export const claimNames = (p: V1Pod): string[] =>
  (p.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [`${p.metadata?.namespace}/${v.persistentVolumeClaim.claimName}`] : v.ephemeral ? [`${p.metadata?.namespace}/${p.metadata?.name}-${v.name}`] : []));

/** A read that answers undefined on 404 (the object is gone). */
async function unless404<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (e) {
    if (codeOf(e) === 404) return undefined;
    throw e;
  }
}

/** The "namespace/name" of a claim or pod, split. */
const split = (ref: string) => ({ namespace: ref.slice(0, ref.indexOf('/')), name: ref.slice(ref.indexOf('/') + 1) });

/** The claims of these pods, each with its bound volume read from the API (get on persistentvolumeclaims and persistentvolumes); a read refused is named, not fatal. */
export async function claimsOf(k: Kube, pods: V1Pod[]): Promise<MovedClaim[]> {
  const out: MovedClaim[] = [];
  for (const p of pods) {
    for (const claim of claimNames(p)) {
      const m: MovedClaim = { pod: ref(p), claim };
      try {
        const pvc = await unless404(() => k.core.readNamespacedPersistentVolumeClaim(split(claim)));
        if (!pvc) m.unread = 'the claim is gone';
        else {
          m.accessModes = pvc.spec?.accessModes ?? [];
          // The PV's name is the claim's: its VolumeAttachment is found by it even when the PV cannot be read.
          const name = pvc.spec?.volumeName;
          if (name) m.pv = name;
          const pv = name ? await unless404(() => k.core.readPersistentVolume({ name })) : undefined;
          if (name && !pv) m.unread = `its PersistentVolume ${name} is gone`;
          if (pv?.spec?.csi) (m.driver = pv.spec.csi.driver), (m.handle = pv.spec.csi.volumeHandle);
        }
      } catch (e) {
        m.unread = errorLine(e);
      }
      out.push(m);
    }
  }
  return out;
}

/** The unique name the attach/detach controller and the kubelet give a CSI volume in status.volumesAttached (kubernetes' csi_plugin.go GetVolumeName, under the plugin's name). */
export const csiVolumeName = (driver: string, handle: string): string => `kubernetes.io/csi/${driver}^${handle}`;

/** What is attached to a Node now: its VolumeAttachments and its status.volumesAttached names (none when the Node is gone). */
export async function attachmentsOf(k: Kube, node: string): Promise<{ attachments: V1VolumeAttachment[]; attached: string[] }> {
  const attachments = (await listAll((p) => k.storage.listVolumeAttachment(p))).filter((v) => v.spec?.nodeName === node);
  const read = await unless404(() => k.core.readNode({ name: node }));
  return { attachments, attached: (read?.status?.volumesAttached ?? []).map((v) => v.name) };
}

/** A moved volume's attachments to the Node: its VolumeAttachment (by spec.source.persistentVolumeName) and its status.volumesAttached entry. */
export const attachmentsOfVolume = (now: { attachments: V1VolumeAttachment[]; attached: string[] }, m: MovedClaim): string[] => [
  ...now.attachments.filter((v) => m.pv && v.spec?.source?.persistentVolumeName === m.pv).map((v) => `VolumeAttachment ${v.metadata?.name}`),
  ...(m.driver && m.handle && now.attached.includes(csiVolumeName(m.driver, m.handle)) ? [`attached volume ${csiVolumeName(m.driver, m.handle)}`] : []),
];

/**
 * Waits, until the deadline, for these volumes' attachments to the Node to go, saying
 * (log) when each is detached; returns those still attached, each with what is left.
 */
export async function waitDetached(k: Kube, node: string, volumes: MovedClaim[], deadline: number, log: (line: string) => void = () => {}): Promise<{ volume: MovedClaim; left: string[] }[]> {
  let waiting = volumes;
  for (;;) {
    const now = await attachmentsOf(k, node);
    const left = waiting.map((volume) => ({ volume, left: attachmentsOfVolume(now, volume) }));
    for (const l of left) if (!l.left.length) log(`PV ${l.volume.pv} detached from Node ${node}`);
    waiting = left.filter((l) => l.left.length).map((l) => l.volume);
    if (!waiting.length || Date.now() > deadline) return left.filter((l) => l.left.length);
    await sleep(1000);
  }
}

const since = (ts: Date | string | undefined) => (ts instanceof Date ? ts.toISOString() : String(ts));

/**
 * One line for each attachment on the Node the volumes step does not wait for: its
 * VolumeAttachment (or the Node's status.volumesAttached entry it lacks), its PV, claim
 * and driver, the state of each, and why it is not waited for: a DaemonSet's volume,
 * a PV or claim gone, a volume of a pod already gone, a detach that does not end, a
 * claim several nodes may use, or --node-is-down. `waited` are the volumes waited for;
 * `moved` every claim the drain moved.
 */
export async function otherAttachments(k: Kube, node: string, o: { waited: MovedClaim[]; moved: MovedClaim[]; nodeIsDown: boolean }): Promise<string[]> {
  const now = await attachmentsOf(k, node);
  const waitedNames = new Set(o.waited.flatMap((m) => attachmentsOfVolume(now, m)));
  const pods = await podsOn(k, node);
  const pvs = new Map<string, V1PersistentVolume | undefined>();
  const claims = new Map<string, V1PersistentVolumeClaim | undefined>();
  // A read the API refuses is said in the line: these are warnings, and never fail the step.
  const unreadable = new Map<string, string>();
  const pvOf = async (name: string) => {
    if (!pvs.has(name)) pvs.set(name, await unless404(() => k.core.readPersistentVolume({ name })).catch((e: unknown) => void unreadable.set(`pv ${name}`, errorLine(e))));
    return pvs.get(name);
  };
  const claimOf = async (c: string) => {
    if (!claims.has(c)) claims.set(c, await unless404(() => k.core.readNamespacedPersistentVolumeClaim(split(c))).catch((e: unknown) => void unreadable.set(`claim ${c}`, errorLine(e))));
    return claims.get(c);
  };
  const lines: string[] = [];
  const described = new Set<string>();
  for (const va of now.attachments.sort((a, b) => String(a.metadata?.name).localeCompare(String(b.metadata?.name)))) {
    if (waitedNames.has(`VolumeAttachment ${va.metadata?.name}`)) continue;
    const pvName = va.spec?.source?.persistentVolumeName;
    const driver = va.spec?.attacher ?? '?';
    const state = va.metadata?.deletionTimestamp
      ? `detaching since ${since(va.metadata.deletionTimestamp)}${va.metadata.finalizers?.length ? ` (held by its finalizer ${va.metadata.finalizers.join(', ')})` : ''}`
      : va.status?.attached ? 'attached' : 'not attached yet';
    if (!pvName) {
      const inline = va.spec?.source?.inlineVolumeSpec?.csi?.volumeHandle;
      lines.push(`VolumeAttachment ${va.metadata?.name}: an inline volume${inline ? ` (handle ${inline})` : ''}, no PV or claim, driver ${driver}, ${state}; ${o.nodeIsDown ? '--node-is-down: ' : ''}not waited for, it goes with the Node`);
      continue;
    }
    const pv = await pvOf(pvName);
    if (pv?.spec?.csi) described.add(csiVolumeName(pv.spec.csi.driver, pv.spec.csi.volumeHandle));
    const claimRef = pv?.spec?.claimRef?.name ? `${pv.spec.claimRef.namespace ?? ''}/${pv.spec.claimRef.name}` : undefined;
    const claim = claimRef ? await claimOf(claimRef) : undefined;
    const pvUnread = unreadable.get(`pv ${pvName}`);
    const claimUnread = claimRef ? unreadable.get(`claim ${claimRef}`) : undefined;
    const pvSaid = pv ? `PV ${pvName} (${pv.status?.phase ?? '?'})` : pvUnread ? `PV ${pvName} (unread: ${pvUnread})` : `PV ${pvName} (gone)`;
    const claimSaid = !pv ? 'claim unknown' : !claimRef ? 'no claim' : claim ? `claim ${claimRef} (${claim.status?.phase ?? '?'}, ${(claim.spec?.accessModes ?? []).join(', ') || 'no access mode'})` : claimUnread ? `claim ${claimRef} (unread: ${claimUnread})` : `claim ${claimRef} (gone)`;
    const users = claimRef ? pods.filter((p) => claimNames(p).includes(claimRef)) : [];
    const moved = o.moved.find((m) => m.pv === pvName);
    const why = o.nodeIsDown
      ? '--node-is-down'
      : !pv ? (pvUnread ? 'its PV could not be read' : 'its PV is gone')
      : claimRef && !claim ? (claimUnread ? 'its claim could not be read' : 'its claim is gone')
      : moved?.unread ? `the drain moved pod ${moved.pod}, but its claim could not be read (${moved.unread})`
      : moved && !singleNode(moved) ? `the drain moved pod ${moved.pod}, and its claim allows ${(moved.accessModes ?? []).join(', ') || 'no access mode'}, not ReadWriteOnce or ReadWriteOncePod`
      : users.some((p) => controllerOf(p)?.kind === 'DaemonSet') ? `DaemonSet pod ${users.filter((p) => controllerOf(p)?.kind === 'DaemonSet').map(ref).join(', ')} uses it (DaemonSets are not drained)`
      : users.length ? `pod ${users.map(ref).join(', ')} uses it, which this drain did not move`
      : 'no pod on the Node uses it: its pod was gone before this drain';
    lines.push(`VolumeAttachment ${va.metadata?.name}: ${pvSaid}, ${claimSaid}, driver ${driver}, ${state}; ${why}: not waited for, it goes with the Node`);
  }
  for (const name of [...now.attached].sort()) {
    if (waitedNames.has(`attached volume ${name}`) || described.has(name)) continue;
    lines.push(`attached volume ${name} in Node ${node}'s status.volumesAttached, with no VolumeAttachment: not waited for, it goes with the Node`);
  }
  return lines;
}
