/**
 * Draining a Node as `kubectl drain` does (kubectl's pkg/drain), and then better:
 *   - the plan is pure: kubectl's filters, in kubectl's order and words, decide which
 *     pods go, which are skipped (mirror pods; DaemonSet pods, left to the node reset)
 *     and which refuse the drain (emptyDir without --delete-emptydir-data, bare pods
 *     without --force);
 *   - a preflight before anything changes: a server-side dry-run eviction of every pod
 *     to go, so a budget that allows no disruption stops the drain, naming the PDB and
 *     the pod, before the Node is even cordoned;
 *   - then cordon, evict in parallel (429 retried every 5 s until the deadline), and
 *     wait until every evicted pod is gone; then, bounded, until the Node's volumes are
 *     detached (its VolumeAttachments and status.volumesAttached).
 */
import type { AppsV1Api, CoreV1Api, StorageV1Api, V1Pod } from '@kubernetes/client-node';

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
  /** Plan and preflight only: nothing is changed (--check). */
  dryRun?: boolean;
}

export interface DrainPlan {
  evict: V1Pod[];
  /** Left alone, with why ("DaemonSet-managed", "mirror pod"). */
  skipped: { pod: string; why: string }[];
  /** What keeps the drain from starting, in kubectl's words (one line per reason, naming the pods). */
  refusals: string[];
}

export interface Kube {
  core: CoreV1Api;
  apps: AppsV1Api;
  storage: StorageV1Api;
}

/** The drain cannot start or cannot finish; nothing on the node has been touched. */
export class DrainError extends Error {
  constructor(
    message: string,
    /** True when nothing was changed in the API (refused before the cordon). */
    readonly nothingChanged: boolean,
  ) {
    super(message);
  }
}

const ref = (p: V1Pod) => `${p.metadata?.namespace}/${p.metadata?.name}`;
const finished = (p: V1Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
const controllerOf = (p: V1Pod) => p.metadata?.ownerReferences?.find((o) => o.controller);

/**
 * kubectl's filters, in its order: pods already being deleted for long are skipped;
 * DaemonSet pods skipped (their DaemonSet must exist unless --force); mirror pods
 * skipped; emptyDir and bare pods refused unless allowed. `daemonSets` holds
 * "namespace/name" of the DaemonSets that exist.
 */
export function planDrain(pods: V1Pod[], daemonSets: Set<string>, o: Pick<DrainOptions, 'force' | 'deleteEmptyDirData'>): DrainPlan {
  const plan: DrainPlan = { evict: [], skipped: [], refusals: [] };
  const refused = new Map<string, string[]>();
  const refuse = (why: string, p: V1Pod) => refused.set(why, [...(refused.get(why) ?? []), ref(p)]);
  for (const p of pods) {
    const owner = controllerOf(p);
    if (owner?.kind === 'DaemonSet') {
      if (!daemonSets.has(`${p.metadata?.namespace}/${owner.name}`) && !o.force) {
        refuse(`cannot delete Pods referencing DaemonSet ${owner.name} that no longer exists (use --force to override)`, p);
      } else plan.skipped.push({ pod: ref(p), why: 'DaemonSet-managed' });
      continue;
    }
    if (p.metadata?.annotations?.['kubernetes.io/config.mirror']) {
      plan.skipped.push({ pod: ref(p), why: 'mirror pod' });
      continue;
    }
    if (!finished(p) && (p.spec?.volumes ?? []).some((v) => v.emptyDir) && !o.deleteEmptyDirData) {
      refuse('cannot delete Pods with local storage (use --delete-emptydir-data to override)', p);
      continue;
    }
    if (!finished(p) && !owner && !o.force) {
      refuse('cannot delete Pods that declare no controller (use --force to override)', p);
      continue;
    }
    plan.evict.push(p);
  }
  plan.refusals = [...refused].map(([why, names]) => `${why}: ${names.join(', ')}`);
  return plan;
}

type ApiErr = { code?: number; body?: unknown };
const codeOf = (e: unknown) => (e as ApiErr)?.code;

/** What a 429 says: the budget's cause ("The disruption budget web needs 2 healthy pods and has 1 currently"). */
function budgetOf(e: unknown): string {
  const body = (e as ApiErr)?.body;
  let status: { message?: string; details?: { causes?: { message?: string }[] } } = {};
  try {
    status = typeof body === 'string' ? JSON.parse(body) : ((body ?? {}) as typeof status);
  } catch {
    /* a body that is not a Status: the message below says what we have */
  }
  return status.details?.causes?.[0]?.message ?? status.message ?? String((e as Error)?.message ?? e).split('\n')[0] ?? '';
}

async function podsOn(k: Kube, node: string): Promise<V1Pod[]> {
  const out: V1Pod[] = [];
  let cont: string | undefined;
  do {
    const page = await k.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}`, limit: 500, ...(cont ? { _continue: cont } : {}) });
    out.push(...page.items);
    cont = page.metadata?._continue || undefined;
  } while (cont);
  return out;
}

/** The plan for a node, from the API: its pods and the DaemonSets that own some. */
export async function planFor(k: Kube, node: string, o: Pick<DrainOptions, 'force' | 'deleteEmptyDirData'>): Promise<DrainPlan> {
  const pods = await podsOn(k, node);
  const daemonSets = new Set<string>();
  for (const p of pods) {
    const owner = controllerOf(p);
    if (owner?.kind !== 'DaemonSet') continue;
    const key = `${p.metadata?.namespace}/${owner.name}`;
    if (daemonSets.has(key)) continue;
    try {
      await k.apps.readNamespacedDaemonSet({ name: owner.name, namespace: p.metadata?.namespace as string });
      daemonSets.add(key);
    } catch (e) {
      if (codeOf(e) !== 404) throw e;
    }
  }
  return planDrain(pods, daemonSets, o);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const eviction = (p: V1Pod) => ({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: p.metadata?.name, namespace: p.metadata?.namespace } });

/**
 * The preflight: a server-side dry-run eviction of every pod to go. Returns what a
 * budget blocks now ("default/ledger-x: The disruption budget ledger needs 1 healthy
 * pods and has 1 currently"); nothing is changed.
 */
export async function preflight(k: Kube, plan: DrainPlan): Promise<string[]> {
  const blocked: string[] = [];
  await Promise.all(
    plan.evict.map(async (p) => {
      try {
        await k.core.createNamespacedPodEviction({ name: p.metadata?.name as string, namespace: p.metadata?.namespace as string, body: eviction(p), dryRun: 'All' });
      } catch (e) {
        if (codeOf(e) === 429) blocked.push(`${ref(p)}: ${budgetOf(e)}`);
        else if (codeOf(e) !== 404) throw e;
      }
    }),
  );
  return blocked.sort();
}

export interface DrainResult {
  plan: DrainPlan;
  cordoned: boolean;
  evicted: string[];
}

/** Drains `node`: plan, preflight, cordon, evict, wait. Throws DrainError when it cannot. */
export async function drainNode(k: Kube, node: string, o: DrainOptions, log: (line: string) => void = () => {}): Promise<DrainResult> {
  const plan = await planFor(k, node, o);
  if (plan.refusals.length) throw new DrainError(`cannot drain node "${node}": ${plan.refusals.join('; ')}`, true);
  if (!o.disableEviction) {
    const blocked = await preflight(k, plan);
    if (blocked.length) throw new DrainError(`cannot drain node "${node}": a PodDisruptionBudget allows no disruption now: ${blocked.join('; ')}`, true);
  }
  if (o.dryRun) return { plan, cordoned: false, evicted: plan.evict.map(ref) };
  const current = await k.core.readNode({ name: node });
  if (!current.spec?.unschedulable) {
    const { setHeaderOptions, PatchStrategy } = await import('@kubernetes/client-node');
    await k.core.patchNode({ name: node, body: { spec: { unschedulable: true } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    log(`node/${node} cordoned`);
  }
  const retry = o.retryMs ?? 5000;
  await Promise.all(
    plan.evict.map(async (p) => {
      const name = p.metadata?.name as string;
      const namespace = p.metadata?.namespace as string;
      for (;;) {
        try {
          if (o.disableEviction) await k.core.deleteNamespacedPod({ name, namespace });
          else await k.core.createNamespacedPodEviction({ name, namespace, body: eviction(p) });
          log(`pod/${name} evicted`);
          break;
        } catch (e) {
          if (codeOf(e) === 404) break;
          if (codeOf(e) !== 429) throw e;
          if (Date.now() + retry > o.deadline) throw new DrainError(`node "${node}" is cordoned but not drained: ${ref(p)} could not be evicted before the drain timeout: ${budgetOf(e)}`, false);
          log(`${ref(p)}: ${budgetOf(e)} (will retry after ${retry / 1000}s)`);
          await sleep(retry);
        }
      }
      // Gone once NotFound, or replaced by a pod of the same name with another uid.
      for (;;) {
        try {
          const now = await k.core.readNamespacedPod({ name, namespace });
          if (now.metadata?.uid !== p.metadata?.uid) return;
        } catch (e) {
          if (codeOf(e) === 404) return;
          throw e;
        }
        if (Date.now() > o.deadline) throw new DrainError(`node "${node}" is cordoned but not drained: ${ref(p)} was evicted but is still there at the drain timeout`, false);
        await sleep(1000);
      }
    }),
  );
  return { plan, cordoned: true, evicted: plan.evict.map(ref) };
}

/** Waits, until the deadline, for the Node's VolumeAttachments and status.volumesAttached to go; returns what is left. */
export async function waitDetached(k: Kube, node: string, deadline: number): Promise<string[]> {
  for (;;) {
    const attachments = (await k.storage.listVolumeAttachment()).items.filter((v) => v.spec?.nodeName === node).map((v) => `VolumeAttachment ${v.metadata?.name}`);
    let attached: string[] = [];
    try {
      attached = ((await k.core.readNode({ name: node })).status?.volumesAttached ?? []).map((v) => `attached volume ${v.name}`);
    } catch (e) {
      if (codeOf(e) !== 404) throw e;
    }
    const left = [...attachments, ...attached];
    if (!left.length || Date.now() > deadline) return left;
    await sleep(1000);
  }
}
