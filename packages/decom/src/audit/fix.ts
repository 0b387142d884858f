/**
 * `decom audit --fix KIND,...`: the provably safe remedies, only for findings a fresh
 * audit (the re-check) still makes with the same target, through the engine every run
 * uses. Per host, in the one host pool: the node's lock and the re-check's probe in one
 * round trip (the lock is held from before the re-check until the proof), the
 * interlocks, then the remedies as one step — the reset's own actions plus each one's
 * live-node guard (steps/remedies.ts) — applied and re-probed in one round trip, every
 * action in the journal. API remedies go through the same clients as the drain, with
 * the pod's UID as a precondition. The audit after it proves what is gone.
 */
import { z } from 'zod';
import type { V1Node } from '@kubernetes/client-node';
import type { Kube } from '../cluster/context.js';
import { codeOf, errorLine } from '../cluster/kubeconfig.js';
import { applyStep } from '../engine/engine.js';
import type { Journal } from '../engine/journal.js';
import { openNodeLock, releaseScript, type LockHolder } from '../engine/lock.js';
import type { Action as NodeAction, ActionResult, Step, StepContext } from '../engine/step.js';
import { nodeNameOf, type Host } from '../inventory/index.js';
import { AUDIT_VIEWS, type NodeState, type Proc } from '../probes/index.js';
import { PROCESS_GRACE_SEC } from '../steps/pods.js';
import { GONE, leaseRemedy, netnsRemedy, notPodCgroups, phantomRemedy, podCgroupRemedy, podDirRemedy, vethRemedy } from '../steps/remedies.js';
import { TransportError, type Transport } from '../transport/types.js';
import { inputError } from '../util/errors.js';
import { pool } from '../util/pool.js';
import { judge, type AuditOptions, type AuditReport } from './audit.js';
import type { ClusterRead } from './cluster.js';
import { AUDIT_KINDS, type AuditFinding, type AuditKind } from '../rules/audit.js';
import { otherMachine, wrongHost } from '../rules/machine.js';

/** The kinds with a remedy; the others are reported only (decom run, etcdctl or the storage driver's owner act on them). */
const FIXABLE: readonly AuditKind[] = ['phantom-pod', 'orphan-pod-cgroup', 'orphan-pod-dir', 'orphan-netns', 'orphan-veth', 'orphan-ipam-lease', 'stuck-terminating-pod', 'stuck-terminating-namespace'];
/** The remedies that act through the API (the others run on the finding's host). */
const API_FIXES: ReadonlySet<AuditKind> = new Set(['stuck-terminating-pod', 'stuck-terminating-namespace']);
/** The order remedies run in on a node: a phantom's processes first (they hold its cgroup and netns), the veth before its netns. */
const NODE_ORDER: readonly AuditKind[] = ['phantom-pod', 'orphan-pod-cgroup', 'orphan-pod-dir', 'orphan-veth', 'orphan-netns', 'orphan-ipam-lease'];

/** --fix KIND,...: known kinds, each with a remedy; the namespace's only through --force-finalize. */
export function fixKinds(text: string, forceFinalize: string[]): Set<AuditKind> {
  const kinds = text.split(',').map((k) => k.trim()).filter(Boolean);
  for (const k of kinds) {
    if (!(AUDIT_KINDS as readonly string[]).includes(k)) throw inputError(`--fix ${k}: no such kind; kinds with a remedy: ${FIXABLE.filter((x) => x !== 'stuck-terminating-namespace').join(', ')}`);
    if (k === 'stuck-terminating-namespace') throw inputError('--fix stuck-terminating-namespace: a namespace is finalized only when named: --force-finalize NAMESPACE');
    if (!FIXABLE.includes(k as AuditKind)) throw inputError(`--fix ${k}: decom has no safe remedy for it (the report says what holds it); kinds with a remedy: ${FIXABLE.filter((x) => x !== 'stuck-terminating-namespace').join(', ')}`);
  }
  const out = new Set(kinds as AuditKind[]);
  if (forceFinalize.length) out.add('stuck-terminating-namespace');
  return out;
}

/** One remedy: a finding of a selected kind, where it is, and what happened to it. */
export interface Remedy {
  host?: string;
  finding: AuditFinding;
  /** What the remedy does, in words. */
  what: string;
  outcome?: 'done' | 'gone' | 'left' | 'failed';
  /** Why it was left alone or failed. */
  why?: string;
}

const sameTarget = (a: AuditFinding, b: AuditFinding) => a.kind === b.kind && a.subject === b.subject && JSON.stringify(a.target) === JSON.stringify(b.target);
const rowFindings = (r: AuditReport): { host?: string; finding: AuditFinding }[] => [
  ...r.hosts.flatMap((h) => h.findings.map((finding) => ({ host: h.host, finding }))),
  ...r.cluster.map((finding) => ({ finding })),
];

/** What a remedy does to a finding, in words (the plan `--check` prints and the confirmation shows). */
function describe(f: AuditFinding): string {
  const t = f.target;
  switch (f.kind) {
    case 'phantom-pod':
      return `stop and remove pod ${f.subject}'s ${(t.containers as string[]).length} containers through its runtime (the CNI DEL frees its network) and the processes in its cgroup`;
    case 'orphan-pod-cgroup':
      return `${(t.processes as string[]).length ? `stop the ${(t.processes as string[]).length} processes in it, then ` : ''}remove the pod cgroup ${f.subject} and its containers' in every hierarchy${f.subject.endsWith('.slice') ? ' (its slice stopped through systemd first)' : ''}; never the QoS cgroups`;
    case 'orphan-pod-dir':
      return `${(t.mounts as string[]).length ? `unmount the ${(t.mounts as string[]).length} mounts in it, then ` : ''}remove ${f.subject} (never below a mount, never through a link)`;
    case 'orphan-netns':
      return `delete netns ${f.subject}`;
    case 'orphan-veth':
      return `delete link ${f.subject}`;
    case 'orphan-ipam-lease':
      return `release the lease ${f.subject}`;
    case 'stuck-terminating-pod':
      return `force-delete pod ${f.subject} (grace period 0, its UID as precondition)`;
    case 'stuck-terminating-namespace':
      return `finalize namespace ${f.subject}: empty spec.finalizers through the finalize subresource (what is left in it is no longer waited for)`;
    default:
      return 'none';
  }
}

/**
 * Why a finding of a selected kind is not acted on even though it holds: a Terminating
 * pod is force-deleted only when its node is gone or its containers are proven dead,
 * and never while finalizers hold it (decom does not remove a pod's finalizers).
 */
function unsafe(f: AuditFinding, report: AuditReport): string | undefined {
  if (f.kind !== 'stuck-terminating-pod') return undefined;
  const t = f.target;
  const finalizers = f.evidence.filter((e) => e.startsWith('finalizer ')).map((e) => e.slice(10));
  if (finalizers.length) return `held by finalizers (${finalizers.join(', ')}): their controller must finish, decom does not remove them`;
  if (t.nodeGone === 'true') return undefined;
  const host = report.hosts.find((h) => h.node === t.node);
  if (!host) return `its node ${t.node} is not audited in this run: its containers are not proven dead`;
  if (!host.reachable) return `its node's host ${host.host} could not be probed: its containers are not proven dead`;
  if (t.containersRunning !== '0') return `${t.containersRunning} of its containers still run on ${host.host}`;
  return undefined;
}

/**
 * The plan: every finding of a selected kind in `planned` (the report the operator
 * saw) held against `recheck` (a fresh audit): one the re-check no longer makes, or
 * makes with another target (a phantom's pod is back in the API), is left alone.
 */
export function plan(planned: AuditReport, recheck: AuditReport, kinds: ReadonlySet<AuditKind>, forceFinalize: ReadonlySet<string>): Remedy[] {
  const fresh = rowFindings(recheck);
  const remedies: Remedy[] = [];
  for (const { host, finding } of rowFindings(planned)) {
    if (!kinds.has(finding.kind)) continue;
    // A namespace is acted on only when named: the others are not part of the plan.
    if (finding.kind === 'stuck-terminating-namespace' && !forceFinalize.has(finding.subject)) continue;
    const a: Remedy = { ...(host ? { host } : {}), finding, what: describe(finding) };
    const now = fresh.find((x) => x.host === host && sameTarget(x.finding, finding));
    if (!now) {
      a.outcome = 'left';
      const moved = fresh.find((x) => x.host === host && x.finding.kind === finding.kind && x.finding.subject === finding.subject);
      a.why = moved ? `the re-check finds it changed: ${moved.finding.detail}` : `the re-check no longer finds it${finding.kind === 'phantom-pod' ? ' (its pod is known to the API again, or its containers are gone)' : ''}`;
    } else {
      a.finding = now.finding;
      const why = unsafe(now.finding, recheck);
      if (why) Object.assign(a, { outcome: 'left', why });
    }
    remedies.push(a);
  }
  return remedies;
}

/** --force-finalize NAME must name a namespace the audit finds stuck. */
export function checkForceFinalize(candidates: readonly Remedy[], forceFinalize: Iterable<string>): void {
  for (const ns of forceFinalize) {
    if (!candidates.some((a) => a.finding.kind === 'stuck-terminating-namespace' && a.finding.subject === ns)) {
      throw inputError(`--force-finalize ${ns}: the audit finds no namespace ${ns} stuck Terminating`);
    }
  }
}

/** The processes a finding names as PID:START, as the node's state has them now (a PID reused since is not one of them). */
const procsOf = (s: NodeState, refs: readonly string[]): Proc[] =>
  refs.flatMap((r) => {
    const [pid, start] = r.split(':');
    const p = s.processes.get(Number(pid));
    return p && String(p.start) === start ? [p] : [];
  });

/** A node remedy's actions on the re-check's state, or why it refuses to act. */
export function nodeActions(f: AuditFinding, s: NodeState): { actions: NodeAction[] } | { refuse: string } {
  const t = f.target;
  switch (f.kind) {
    case 'phantom-pod': {
      const ids = new Set([...(t.containers as string[]), ...(t.sandboxes as string[])]);
      const containers = s.containers.filter((c) => ids.has(c.id));
      // A static pod whose mirror the API lacks is no phantom to remove: its kubelet runs it from a manifest, and would start it again.
      if (containers.some((c) => c.configSource === 'file')) return { refuse: "a static pod (kubernetes.io/config.source: file): the kubelet runs it from its manifest; remove the manifest (decom run's static-pods step) instead" };
      return { actions: phantomRemedy(s, containers, procsOf(s, t.processes as string[])) };
    }
    case 'orphan-pod-cgroup': {
      // A live node: pod-level cgroups only, never the running kubelet's QoS tree it is in.
      const paths = t.cgroups as string[];
      const why = notPodCgroups(paths);
      return why ? { refuse: why } : { actions: podCgroupRemedy(s, paths, procsOf(s, t.processes as string[])) };
    }
    case 'orphan-pod-dir':
      return { actions: podDirRemedy(t.dir as string, t.mounts as string[]) };
    case 'orphan-netns':
      return { actions: netnsRemedy(t.netns as string) };
    case 'orphan-veth':
      return { actions: vethRemedy(t.link as string, t.netns as string) };
    case 'orphan-ipam-lease':
      return { actions: leaseRemedy(t.file as string, t.sandbox as string) };
    default:
      return { refuse: 'no node remedy' };
  }
}

/** How a remedy went, from its actions' results: a guard's `gone`, its other refusals, an exit status. */
export function outcomeOf(results: readonly ActionResult[]): Pick<Remedy, 'outcome' | 'why'> {
  if (!results.length || results.every((r) => r.skipped && r.output?.trim() === GONE)) return { outcome: 'gone' };
  // Changed since the re-check (a process entered the netns, the address was handed out again): left alone, as the re-check would.
  const refused = results.find((r) => r.skipped && r.output?.trim() !== GONE);
  if (refused) return { outcome: 'left', why: refused.output?.trim() || 'its guard refused' };
  const bad = results.find((r) => !r.skipped && r.code !== 0);
  if (bad) return { outcome: 'failed', why: `${bad.what}: exit ${bad.code}${bad.output?.trim() ? `: ${bad.output.trim().split('\n').slice(-1)[0]}` : ''}` };
  return { outcome: 'done' };
}

/** A remedy that said done is proven by the audit after it: its finding must be gone. */
export function proveFixes(todo: Remedy[], after: AuditReport): void {
  for (const a of todo) {
    if (a.outcome === 'left') continue;
    const row = a.host ? (after.hosts.find((h) => h.host === a.host)?.findings ?? []) : after.cluster;
    const still = row.some((f) => f.kind === a.finding.kind && f.subject === a.finding.subject);
    if (still && a.outcome !== 'failed') Object.assign(a, { outcome: 'failed', why: `the audit after it still finds it${a.why ? ` (${a.why})` : ''}` });
  }
}

/** The API remedies: a force delete with the pod's UID as precondition, a namespace finalized; each in the journal with its request and status. */
async function fixApi(kube: Kube, a: Remedy, journal: (e: Record<string, unknown>) => void): Promise<void> {
  const t = a.finding.target;
  const pod = a.finding.kind === 'stuck-terminating-pod';
  const request = pod
    ? `DELETE /api/v1/namespaces/${t.namespace}/pods/${t.name} (gracePeriodSeconds=0, preconditions.uid=${t.uid})`
    : `PUT /api/v1/namespaces/${t.namespace}/finalize (spec.finalizers emptied)`;
  let status = 200;
  try {
    if (pod) {
      await kube.core.deleteNamespacedPod({ name: t.name as string, namespace: t.namespace as string, gracePeriodSeconds: 0, body: { preconditions: { uid: t.uid as string } } });
    } else {
      const ns = await kube.core.readNamespace({ name: t.namespace as string });
      await kube.core.replaceNamespaceFinalize({ name: t.namespace as string, body: { ...ns, spec: { ...ns.spec, finalizers: [] } } });
    }
    a.outcome = 'done';
  } catch (e) {
    status = codeOf(e) ?? 0;
    if (status === 404) a.outcome = 'gone';
    else Object.assign(a, { outcome: 'failed', why: errorLine(e) });
  }
  journal({ event: 'action', step: 'fix', action: a.what, api: request, status, ...(a.why && a.outcome === 'failed' ? { error: a.why } : {}) });
}

/** What the fix works with: the run, the re-check's API lists, the clients for API remedies. */
export interface FixRun {
  runId: string;
  holder: LockHolder;
  check: boolean;
  waitLockSec?: number;
  forks: number;
  journal: Journal;
  kinds: ReadonlySet<AuditKind>;
  forceFinalize: ReadonlySet<string>;
  /** The report whose findings are fixed (the operator saw it, or the audit just before). */
  planned: AuditReport;
  /** The API's lists for the re-check, read once after the confirmation (undefined: --no-api). */
  recheckApi: ClusterRead | undefined;
  /** The clients API remedies use; undefined when there is no API. */
  kube?: Kube;
  connect(h: Host): Promise<Transport>;
  /** The connection is done with (closed unless the session keeps it). */
  release(h: Host): Promise<void>;
  audit: Pick<AuditOptions, 'inventory' | 'stuckAfterSec' | 'staleAfterSec' | 'finishedPods' | 'etcdGroup'>;
}

/** Each host's part of a fix: its remedies, its state after them (the proof's node side), why it was refused or lost. */
interface HostFix {
  remedies: Remedy[];
  probe: { state?: NodeState; error?: string };
  refused?: string;
  error?: string;
  warnings: string[];
}

/** Why the fix refuses this host before acting (the interlocks a run asks too): the hostname, and the machine-id the Node reports. */
function interlock(host: Host, s: NodeState, recheck: ClusterRead | undefined): string | undefined {
  const nodes: V1Node[] = recheck && 'view' in recheck ? recheck.view.nodes : [];
  const node = nodes.find((n) => n.metadata?.name === nodeNameOf(host));
  return wrongHost(host, s) ?? otherMachine(host, nodeNameOf(host), node, s);
}

/** The remedies, as one step the engine runs: the plan is the remedies' actions in NODE_ORDER, owned residue none (the proof is the audit's). */
function remedyStep(actions: NodeAction[], stops: number): Step {
  return {
    name: 'fix',
    description: "the audit's remedies",
    params: z.object({}),
    owns: () => false,
    views: [...AUDIT_VIEWS],
    plan: () => actions,
    after: (s) => s,
    // Each process stop may wait out its grace period; the rest is quick.
    timeoutSec: () => 60 + stops * (PROCESS_GRACE_SEC + 5),
  };
}

async function fixHost(host: Host, f: FixRun): Promise<HostFix> {
  const journal = (e: Record<string, unknown>) => f.journal.write({ host: host.name, ...e });
  const planned: AuditReport = { ...f.planned, hosts: f.planned.hosts.filter((h) => h.host === host.name), cluster: [] };
  const out: HostFix = { remedies: plan(planned, planned, f.kinds, f.forceFinalize).filter((r) => !r.outcome), probe: {}, warnings: [] };
  let t: Transport | undefined;
  try {
    t = await f.connect(host);
    // A dead run's lock is left for a run to finish (keepRuns): a fix does not take over a half-done reset.
    const opened = await openNodeLock(t, { holder: f.holder, check: f.check, sudo: host.become, views: AUDIT_VIEWS, keepRuns: true, journal, ...(f.waitLockSec ? { waitSec: f.waitLockSec } : {}) });
    let state = opened.trip.state;
    if (f.audit.etcdGroup) state.etcdGroup = f.audit.etcdGroup(host);
    out.probe = { state };
    if (opened.finishes) {
      out.warnings.push(`${host.name}: took over the lock of fix ${opened.finishes}, which did not finish (killed, or its connection was lost)`);
      if (opened.stopped) out.warnings.push(`${host.name}: ${opened.stopped} (fix ${opened.finishes}, before it was cut off)`);
      journal({ event: 'resume', finishes: opened.finishes, ...(opened.stopped ? { stopped: opened.stopped } : {}) });
    }
    const refused = opened.refused ?? interlock(host, state, f.recheckApi);
    if (refused) {
      journal({ event: 'refused', reason: refused });
      out.refused = refused;
      out.remedies = out.remedies.map((r) => ({ ...r, outcome: 'left' as const, why: refused }));
      return out;
    }
    // The re-check, under the lock: this host's probe just taken, judged with the API's lists.
    const recheck = judge([host], [{ state }], f.recheckApi, f.audit, Date.now());
    out.remedies = plan(planned, recheck, f.kinds, f.forceFinalize);
    const todo = out.remedies.filter((r) => !r.outcome);
    if (f.check || !todo.length) return out;

    const onNode = todo.filter((r) => !API_FIXES.has(r.finding.kind)).sort((a, b) => NODE_ORDER.indexOf(a.finding.kind) - NODE_ORDER.indexOf(b.finding.kind));
    // Each action tagged with its remedy: the results come back in the engine's order (client-side actions first).
    const owners = new Map<string, number>();
    const actions: NodeAction[] = [];
    for (const [i, r] of onNode.entries()) {
      const made = nodeActions(r.finding, state);
      if ('refuse' in made) Object.assign(r, { outcome: 'left', why: made.refuse });
      else for (const a of made.actions) {
        const tagged = { ...a, what: `${a.what} [${r.finding.kind} ${r.finding.subject}]` };
        owners.set(tagged.what, i);
        actions.push(tagged);
      }
    }
    if (actions.length) {
      const ctx: StepContext = { runId: f.runId, backupDir: '', host: host.name, node: nodeNameOf(host), vars: host.vars, params: {}, operatorBackupDir: '', before: new Set() };
      const stops = onNode.filter((r) => (r.finding.target.processes as string[] | undefined)?.length).length;
      const done = await applyStep(t, state, { step: remedyStep(actions, stops), label: 'fix', params: {} }, ctx, host.become, AUDIT_VIEWS, journal);
      state = done.state;
      out.probe = { state };
      const results = new Map<number, ActionResult[]>();
      for (const r of done.r.actions) {
        const i = owners.get(r.what) as number;
        results.set(i, [...(results.get(i) ?? []), r]);
      }
      for (const [i, r] of onNode.entries()) if (!r.outcome) Object.assign(r, outcomeOf(results.get(i) ?? []));
      journal({ event: 'step', step: 'fix', status: onNode.some((r) => r.outcome === 'failed') ? 'failed' : 'changed', actions: done.r.actions.length, ms: done.r.ms });
    }
    for (const r of onNode) if (!r.outcome) r.outcome = 'gone';
    // API remedies of pods on this node: their containers were proven dead under this node's lock.
    for (const r of todo.filter((x) => API_FIXES.has(x.finding.kind))) {
      if (f.kube) await fixApi(f.kube, r, journal);
      else Object.assign(r, { outcome: 'failed', why: 'no API to act through' });
    }
    return out;
  } catch (e) {
    if (!(e instanceof TransportError)) throw e;
    out.error = e.message;
    out.probe = { error: e.message };
    journal({ event: 'error', error: e.message });
    for (const r of out.remedies) if (!r.outcome) Object.assign(r, { outcome: 'failed', why: e.message });
    return out;
  } finally {
    // Released on every path (the script removes only this fix's lock), then the host's end.
    if (t && !f.check) await t.exec(releaseScript(f.runId), { sudo: host.become, timeoutSec: 30 }).catch(() => {});
    journal({ event: 'host-end', ...(out.refused ? { refused: out.refused } : {}), ...(out.error ? { error: out.error } : {}) });
    await f.release(host);
  }
}

/**
 * The whole fix: every host that has something to fix, in the host pool, each under its
 * lock; then the cluster row's API remedies (pods of Nodes that are gone, namespaces),
 * re-checked against the same lists. Returns every remedy with its outcome, each
 * host's state after it (for the proof's report), and the hosts refused.
 */
export async function runFixes(hosts: Host[], f: FixRun): Promise<{ remedies: Remedy[]; probes: HostFix['probe'][]; refused: string[]; warnings: string[] }> {
  const candidates = plan(f.planned, f.planned, f.kinds, f.forceFinalize);
  const touched = new Set(candidates.flatMap((r) => (r.host && !r.outcome ? [r.host] : [])));
  const fixes = await pool(hosts, f.forks, (h) => (touched.has(h.name) ? fixHost(h, f) : Promise.resolve<HostFix | undefined>(undefined)));
  // A host with nothing to do keeps its candidates, each left alone already (not safe in the report fixed).
  const remedies = hosts.flatMap((h, i) => fixes[i]?.remedies ?? candidates.filter((r) => r.host === h.name));
  // The cluster row: what has no audited host (a Terminating pod whose Node is gone, a namespace).
  const clusterPlanned: AuditReport = { ...f.planned, hosts: [], cluster: f.planned.cluster };
  const clusterNow = judge([], [], f.recheckApi, f.audit, Date.now());
  const cluster = plan(clusterPlanned, { ...clusterNow, hosts: f.planned.hosts }, f.kinds, f.forceFinalize);
  const journal = (e: Record<string, unknown>) => f.journal.write({ host: '(cluster)', ...e });
  for (const r of cluster.filter((x) => !x.outcome)) {
    if (f.check) continue;
    if (f.kube) await fixApi(f.kube, r, journal);
    else Object.assign(r, { outcome: 'failed', why: 'no API to act through' });
  }
  return {
    remedies: [...remedies, ...cluster],
    probes: fixes.map((x) => x?.probe ?? {}),
    refused: fixes.flatMap((x) => (x?.refused ? [x.refused] : [])),
    warnings: fixes.flatMap((x) => x?.warnings ?? []),
  };
}
