/**
 * The engine: for each host, over its one connection, probe once, check the
 * interlocks, then for each step plan → apply + re-probe (one round trip) → judge by
 * the residue rules. --check plans every step on the state the steps before it will
 * leave, and changes nothing. Hosts run in parallel (forks), in batches (serial).
 */
import { nodeNameOf, type Host } from '../inventory/index.js';
import { TransportError, type Transport } from '../transport/types.js';
import { ALL_VIEWS, NARROWER, PURGE_VIEWS, reprobedViews, type NodeState, type View } from '../probes/index.js';
import { findings, notes, type Finding } from '../rules/residue.js';
import { wrongHost } from '../rules/machine.js';
import { HOLD_WORK, openNodeLock, releaseScript, type LockHolder } from './lock.js';
import { hostEvents, type Journal } from './journal.js';
import { roundTrip } from './round-trip.js';
import type { Action, ActionResult, NodeIo, Step, StepContext, StepResult } from './step.js';
import type { ClusterContext } from '../cluster/context.js';
import { errorLine } from '../cluster/kubeconfig.js';
import { NODE_BACKUPS, PATH_GUARD } from '../util/confine.js';
import { deletePathScript } from './sh.js';
import { DEFAULT_FORKS, pool } from '../util/pool.js';
import { EXIT, foldExit, type ExitCode } from '../util/exit-codes.js';
import { clusterDnsOf } from '../inventory/cluster-dns.js';

/** One step as a host runs it: the step, its parameters, and why it is skipped here (a `when:` that is false). */
export interface PlannedStep {
  step: Step;
  label: string;
  params: Record<string, unknown>;
  skip?: string;
  /** The playbook's `parallel:` group: run side by side with the adjacent steps of the same group. */
  parallel?: string;
}

export interface HostResult {
  host: string;
  reachable: boolean;
  clean: boolean;
  steps: StepResult[];
  /** The interlock that refused the host (nothing was changed). */
  refused?: string;
  /** Why the host could not be reached, or was lost mid-run. */
  error?: string;
  lost?: boolean;
  /** Its answer to a command passed --max-output: the host was not checked (exit 3, as unreachable). */
  outputCapped?: boolean;
  /** The earlier run this one finishes (its lock was found and taken over). */
  finishes?: string;
  warnings: string[];
  /** What is left on the host at the end, by the residue rules. */
  left: Finding[];
  /** Where the operator's copy of the backup is. */
  backup?: string;
  /** Why the host was not worked on at all (a roll stopped by --max-fail-percent). */
  notRun?: string;
  /** --node-is-down: only the cluster side was worked on; `done` when every cluster step succeeded. */
  down?: 'done' | 'failed';
}

export type EngineEvent =
  | { type: 'host-start'; host: string }
  | { type: 'step-start'; host: string; step: string }
  | { type: 'step-end'; host: string; step: string; result: StepResult }
  /** A line of a long cluster step's progress ("evicted pod default/web-x"). */
  | { type: 'step-log'; host: string; step: string; line: string }
  | { type: 'host-end'; host: string; result: HostResult };

export interface RunOptions {
  runId: string;
  /** Who this run is, as the node's lock names it to a run it refuses. */
  holder: LockHolder;
  /** --wait-lock: how long to wait for another run's lock before refusing (0: refuse at once). */
  waitLockSec?: number;
  check: boolean;
  connect(host: Host): Promise<Transport>;
  journal: Journal;
  emit(e: EngineEvent): void;
  /** Per host: the steps after tags and `when:`. */
  steps(host: Host): PlannedStep[];
  /** Where the operator's copy of a host's backup goes. */
  operatorBackupDir(host: string): string;
  keepBackupOnNode: boolean;
  /** --remove-etcd-archive: remove the etcd data archives on a node proven clean (they hold the cluster's Secrets). */
  removeEtcdArchive?: boolean;
  /** Hosts worked on at once (util/pool's default bound when not given). */
  forks?: number;
  /** Hosts per batch; the next batch starts when one ends. */
  serial?: number;
  /** Stop before the next batch when more than this percentage of a batch failed. */
  maxFailPercent?: number;
  /** --purge: the installation footprint is residue too (probed, removed, judged). */
  purge?: boolean;
  /** What the operator's kubeconfig says the cluster is: recognises its credentials once the node's PKI is gone. */
  operator?: NodeState['operator'];
  /** The inventory's etcd group, for the host: an etcd serving it is the cluster's (NodeState.etcdGroup). */
  etcdGroup?: (host: Host) => NodeState['etcdGroup'];
  /** The cluster side of a host (its Node, the API, its etcd peers), for playbooks with cluster steps. */
  cluster?(host: Host, log: (line: string) => void): ClusterContext;
}

const residue = (s: NodeState, step: Step): Finding[] => findings(s).filter((f) => step.owns(f));

/** A full probe: the membership residue, and with --purge the installation footprint. */
const fullViews = (o: { purge?: boolean }): ReadonlySet<View> => (o.purge ? PURGE_VIEWS : ALL_VIEWS);

/** The views a step's round trip re-probes (within the run's full probe); containers are judged alive by the process list. */
function viewsOf(step: Step, full: ReadonlySet<View>): Set<View> {
  return reprobedViews(step.views.filter((x) => full.has(x) || full.has(NARROWER[x] as View)));
}

/** Where a host stands after its first round trip: the node's state, its lock, and any refusal. */
interface Opened {
  state: NodeState;
  refused?: string;
  finishes?: string;
  /** What taking over the dead run's lock stopped of its (a containerd it had started). */
  stopped?: string;
  /** An interlock could not be asked (the API or an etcd peer failed). */
  failed?: string;
}

/** The first round trip: the node's lock and a full probe; then the interlocks, before anything changes. */
async function openHost(t: Transport, host: Host, o: RunOptions, planned: PlannedStep[], ctxOf: (p: PlannedStep) => StepContext, cluster: ClusterContext | undefined): Promise<Opened> {
  const opened: Opened = await openNodeLock(t, {
    holder: o.holder, check: o.check, sudo: host.become, views: fullViews(o), ...(o.waitLockSec ? { waitSec: o.waitLockSec } : {}),
    journal: (e) => o.journal.write({ host: host.name, ...e }),
  }).then((l) => ({ state: l.trip.state, ...(l.refused ? { refused: l.refused } : {}), ...(l.finishes ? { finishes: l.finishes } : {}), ...(l.stopped ? { stopped: l.stopped } : {}) }));
  if (o.operator) opened.state.operator = o.operator;
  if (o.etcdGroup) opened.state.etcdGroup = o.etcdGroup(host);
  opened.state.clusterDns = clusterDnsOf(host.vars);
  const first = { state: opened.state };
  opened.refused ??= wrongHost(host, first.state);
  for (const p of planned) {
    if (opened.refused) break;
    if (!p.skip) opened.refused = p.step.refuse?.(first.state, ctxOf(p));
  }
  if (cluster && !opened.refused) {
    try {
      opened.refused = await clusterInterlocks(cluster, planned, first.state);
    } catch (e) {
      // The lock is held: the caller releases it, and says the API (or a peer) failed.
      if (!(e instanceof ClusterError)) throw e;
      opened.failed = e.message;
    }
  }
  return opened;
}

/**
 * The cluster side's interlocks, asked once the node is probed (`s` undefined: the
 * host is down): each cluster step's refusal, in the playbook's order (the Node's
 * machine and control-plane checks, budgets, etcd quorum: steps/cluster.ts).
 */
async function clusterInterlocks(c: ClusterContext, planned: PlannedStep[], s: NodeState | undefined): Promise<string | undefined> {
  const steps = planned.filter((p) => !p.skip && p.step.cluster);
  for (const p of steps) {
    const r = p.step.cluster?.refuse && (await clusterCall(c, p, () => p.step.cluster!.refuse!(c, s)));
    if (r) return r;
  }
  return undefined;
}

/**
 * A cluster step's call: an API error, or an etcd peer's (its connection included),
 * is the step's, named with the API's own message; not a bug of decom's, and not the
 * target host's connection.
 */
async function clusterCall<T>(c: ClusterContext, p: PlannedStep, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (e instanceof TransportError && e.host === c.host.name) throw e;
    throw new ClusterError(`${p.label}: ${e instanceof TransportError ? `etcd peer ${e.message}` : errorLine(e)}`);
  }
}

/** The cluster side (the API, an etcd peer) failed: the host stops there, as when a step fails. */
class ClusterError extends Error {}

/** A cluster-side step: its work through the API or an etcd peer, judged by what it says it did. */
async function clusterStep(c: ClusterContext, p: PlannedStep, state: NodeState | undefined, journal: (e: Record<string, unknown>) => void, warnings: string[]): Promise<StepResult> {
  const started = Date.now();
  journal({ event: 'step-start', step: p.label });
  let out;
  try {
    out = await clusterCall(c, p, () => p.step.cluster!.run(c, state));
  } catch (e) {
    if (!(e instanceof ClusterError)) throw e;
    out = { actions: [], failed: e.message.slice(p.label.length + 2) };
  }
  // What it reports as done was done (code 0); a failure is the step's, in its reason.
  const actions: ActionResult[] = out.actions.map((a) => ({ ...a, ...(c.check ? {} : { code: 0 }) }));
  for (const a of actions) journal({ event: 'action', step: p.label, action: a.what, command: a.script, code: a.code });
  const r: StepResult = { name: p.label, status: out.failed ? 'failed' : actions.length ? 'changed' : 'ok', actions, left: [], ms: Date.now() - started };
  if (out.failed) r.reason = out.failed;
  warnings.push(...(out.warnings ?? []));
  return r;
}

/** --check: the step planned on the state the steps before it will leave, and the state it will leave. */
function predictStep(state: NodeState, p: PlannedStep, ctx: StepContext): { r: StepResult; state: NodeState } {
  const plan = p.step.plan(state, ctx);
  const left = residue(state, p.step);
  const next = p.step.after(state, ctx);
  const r: StepResult = { name: p.label, status: plan.length ? 'changed' : left.length ? 'failed' : 'ok', actions: plan, left: plan.length ? residue(next, p.step) : left, ms: 0 };
  if (!plan.length && left.length) r.reason = 'this step has nothing it can do about what is left';
  return { r, state: next };
}

/** A step about to run: its plan, when it started, and what its actions did so far. */
interface Running {
  p: PlannedStep;
  ctx: StepContext;
  plan: Action[];
  started: number;
  actions: ActionResult[];
}

/** The step's plan made, and written to the journal before anything runs: a run killed mid-step leaves in its journal what it was doing. */
function begin(p: PlannedStep, state: NodeState, ctx: StepContext, journal: (e: Record<string, unknown>) => void): Running {
  const started = Date.now();
  const plan = p.step.plan(state, ctx);
  journal({ event: 'step-start', step: p.label, planned: plan.map((a) => a.what), ...(p.parallel ? { parallel: p.parallel } : {}) });
  return { p, ctx, plan, started, actions: [] };
}

/** Its client-side actions (the Docker API, the CRI over the connection), one after the other, into `s.actions`. */
async function clientActions(t: Transport, s: Running, sudo: boolean, journal: (e: Record<string, unknown>) => void): Promise<void> {
  for (const a of s.plan.filter((x) => x.client)) {
    const t0 = Date.now();
    const io: NodeIo = {
      openUnixSocket: (path) => t.openUnixSocket(path, { sudo }),
      exec: (script, timeoutSec) => t.exec(`${HOLD_WORK}${script}`, { sudo, timeoutSec }),
      journal: (e) => journal({ step: s.p.label, ...e }),
    };
    // A client-side action's guard is asked on the node first, as a script's is.
    if (a.guard) {
      const g = await t.exec(a.guard, { sudo, timeoutSec: 30 });
      if (g.code !== 0) {
        s.actions.push({ ...a, skipped: true, ...(g.stdout.trim() ? { output: g.stdout.trim() } : {}), ms: Date.now() - t0 });
        continue;
      }
    }
    const r = await a.client!(io).then(
      (output) => ({ code: 0, output }),
      (e: unknown) => {
        if (e instanceof TransportError) throw e;
        return { code: 1, output: (e as Error).message };
      },
    );
    s.actions.push({ ...a, ...r, ms: Date.now() - t0 });
  }
}

function journalActions(s: Running, journal: (e: Record<string, unknown>) => void): void {
  for (const a of s.actions) {
    journal({ event: 'action', step: s.p.label, action: a.what, command: a.script.length > 4000 ? `${a.script.slice(0, 4000)}…` : a.script, code: a.code, skipped: a.skipped, output: a.output, ms: a.ms });
  }
}

/** The step's client-side follow-up (the backup's copy), once its actions ran: a note, or why it failed. */
async function follow(t: Transport, s: Running, sudo: boolean): Promise<{ note?: string; afterError?: string }> {
  if (!s.p.step.afterApply || !s.actions.some((a) => a.code === 0)) return {};
  const exec = async (script: string) => {
    const x = await t.exec(`${HOLD_WORK}${script}`, { sudo, timeoutSec: 300 });
    if (x.code !== 0) throw new Error(`exit ${x.code}: ${x.stderr.trim().split('\n').pop() ?? ''}`);
    return x.stdout;
  };
  try {
    const note = await s.p.step.afterApply(exec, s.ctx);
    return note === undefined ? {} : { note };
  } catch (e) {
    if (e instanceof TransportError) throw e;
    return { afterError: (e as Error).message };
  }
}

/** The step judged on the node's state after it: by the residue it owns, and by its actions' exits where it must succeed. */
function judge(s: Running, state: NodeState, after: { note?: string; afterError?: string }): StepResult {
  const { p, plan, actions } = s;
  const left = residue(state, p.step);
  const ran = actions.some((a) => !a.skipped);
  // A non-zero exit fails a step that must succeed; otherwise only what is left does, and the exit says why.
  const badExit = actions.find((a) => !a.skipped && a.code !== 0);
  const failed = left.length > 0 || (p.step.mustSucceed && badExit !== undefined) || after.afterError !== undefined;
  const r: StepResult = { name: p.label, status: failed ? 'failed' : ran ? 'changed' : 'ok', actions, left, ms: Date.now() - s.started, ...(p.parallel ? { parallel: p.parallel } : {}) };
  if (after.afterError) r.reason = after.afterError;
  else if (failed && badExit) r.reason = `${badExit.what}: ${badExit.code === undefined ? 'no exit status' : `exit ${badExit.code}`}${badExit.output?.trim() ? `: ${badExit.output.trim().split('\n').slice(-3).join(' | ')}` : ''}`;
  else if (left.length) r.reason = plan.length ? `${left.length} left after its actions` : 'this step has nothing it can do about what is left';
  else if (after.note) r.reason = after.note;
  return r;
}

/** Lost mid-trip: what the node said before it went still goes to the journal, then the host fails. */
const keepResults = (into: ActionResult[]) => (e: unknown): never => {
  into.push(...((e as { results?: ActionResult[] }).results ?? []));
  throw e;
};

/**
 * A real run of one step: client-side actions (the Docker API), then the node's
 * scripts and the re-probe of the views they touch in ONE round trip, then the
 * step's client-side follow-up (the backup's copy). Judged by the residue it owns.
 */
export async function applyStep(t: Transport, state: NodeState, p: PlannedStep, ctx: StepContext, sudo: boolean, full: ReadonlySet<View>, journal: (e: Record<string, unknown>) => void): Promise<{ r: StepResult; state: NodeState }> {
  const s = begin(p, state, ctx, journal);
  let after = {};
  if (s.plan.length || p.step.reprobe) {
    try {
      await clientActions(t, s, sudo, journal);
      // Every process the step starts holds the node's lock (lock.ts): a run killed now leaves its work locked.
      const trip = await roundTrip(t, { actions: s.plan.filter((x) => !x.client), views: viewsOf(p.step, full), prev: state, sudo, timeoutSec: p.step.timeoutSec?.(ctx) ?? 120, preamble: HOLD_WORK }).catch(keepResults(s.actions));
      state = trip.state;
      s.actions.push(...trip.results);
    } finally {
      journalActions(s, journal);
    }
    after = await follow(t, s, sudo);
  }
  return { r: judge(s, state, after), state };
}

/**
 * A `parallel:` group (playbook/parallel.ts proved its steps independent). The node
 * scripts of its steps without client-side work run in ONE round trip, each step's in a
 * branch of its own, beside the others' client-side work (the CRI over the connection);
 * those steps' own node scripts follow their client-side work, in the trip that then
 * probes every view the group watches (the first trip does, when no step has
 * client-side work). Each step keeps its actions, journal events and verdict, judged on
 * its own residue: one that fails hides nothing of another's.
 */
export async function applyGroup(t: Transport, state: NodeState, members: { p: PlannedStep; ctx: StepContext }[], sudo: boolean, full: ReadonlySet<View>, journal: (e: Record<string, unknown>) => void): Promise<{ results: StepResult[]; state: NodeState }> {
  const steps = members.map((m) => begin(m.p, state, m.ctx, journal));
  const working = steps.filter((s) => s.plan.length || s.p.step.reprobe);
  const views = new Set(working.flatMap((s) => [...viewsOf(s.p.step, full)]));
  const timeoutSec = Math.max(...working.map((s) => s.p.step.timeoutSec?.(s.ctx) ?? 120));
  const scriptsOf = (s: Running) => s.plan.filter((x) => !x.client);
  const withClient = working.filter((s) => s.plan.some((a) => a.client));
  const nodeOnly = working.filter((s) => !withClient.includes(s));
  /** A trip of these steps' scripts, side by side; its results handed back to each step, also from a trip cut off. */
  const trip = async (of: Running[], probe: ReadonlySet<View> | null) => {
    const results: ActionResult[] = [];
    try {
      const r = await roundTrip(t, { actions: { branches: of.map(scriptsOf) }, views: probe, prev: state, sudo, timeoutSec, preamble: HOLD_WORK }).catch(keepResults(results));
      results.push(...r.results);
      return r.state;
    } finally {
      let i = 0;
      for (const s of of) {
        const n = scriptsOf(s).length;
        s.actions.push(...results.slice(i, i + n));
        i += n;
      }
    }
  };
  try {
    if (working.length) {
      // Settled both: a failure on one side still waits for, and journals, what the other did.
      const first = await Promise.allSettled([
        nodeOnly.length && (withClient.length === 0 || nodeOnly.some((s) => scriptsOf(s).length)) ? trip(nodeOnly, withClient.length ? null : views) : Promise.resolve(undefined),
        ...withClient.map((s) => clientActions(t, s, sudo, journal)),
      ]);
      const failed = first.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      const probed = (first[0] as PromiseFulfilledResult<NodeState | undefined>).value;
      state = withClient.length || !probed ? await trip(withClient, views) : probed;
    }
  } finally {
    for (const s of working) journalActions(s, journal);
  }
  const results: StepResult[] = [];
  for (const s of steps) results.push(judge(s, state, working.includes(s) ? await follow(t, s, sudo) : {}));
  return { results, state };
}

/**
 * What a clean node keeps of the run, removed in one exec through the on-node guard: the
 * node's copy of the backup (unless --keep-backup-on-node; its failure is silent, as the
 * operator holds the checked copy), then the etcd archives with --remove-etcd-archive
 * (each with its dir, the etcd step's `RUN-etcd-data`), whose exit the exec answers: a
 * failure is a warning and the note stays. The same exec then releases the node's lock
 * (`release`): one session less per node.
 */
async function removeKept(t: Transport, state: NodeState, o: { backupDir?: string | undefined; archives: boolean; release: string }, sudo: boolean, warnings: string[], journal: (e: Record<string, unknown>) => void): Promise<NodeState> {
  const dirs = o.archives ? state.etcdArchives.map((a) => a.slice(0, a.lastIndexOf('/'))) : [];
  // In a subshell: its refusal (an exit) must not end the script before the archives.
  const backup = o.backupDir ? `( ${deletePathScript(o.backupDir, { root: NODE_BACKUPS })}\n) >/dev/null 2>&1 || true\n` : '';
  const remove = `${backup}${dirs.map((d) => `${deletePathScript(d, { root: NODE_BACKUPS })} || exit 1`).join('\n')}`;
  const r = await t.exec(`${PATH_GUARD}( ${remove}\n); RC=$?\n${o.release}\nexit $RC`, { sudo, timeoutSec: 60 });
  if (!dirs.length) return state;
  const why = `${r.stdout}${r.stderr}`.trim().split('\n').pop() ?? '';
  journal({ event: 'remove-etcd-archive', line: `${dirs.join(', ')}: exit ${r.code}`, code: r.code });
  if (r.code === 0) return { ...state, etcdArchives: [] };
  warnings.push(`--remove-etcd-archive: not removed (exit ${r.code}${why ? `: ${why}` : ''})`);
  return state;
}

async function runHost(host: Host, o: RunOptions): Promise<HostResult> {
  const result: HostResult = { host: host.name, reachable: false, clean: false, steps: [], warnings: [], left: [] };
  const journal = (e: Record<string, unknown>) => o.journal.write({ host: host.name, ...e });
  o.emit({ type: 'host-start', host: host.name });
  const backupDir = `${NODE_BACKUPS}/${o.runId}`;
  const sudo = host.become;
  const planned = o.steps(host);
  const ctxOf = (p: PlannedStep): StepContext => ({
    runId: o.runId, backupDir, host: host.name, node: nodeNameOf(host), vars: host.vars, params: p.params, operatorBackupDir: o.operatorBackupDir(host.name),
    before: new Set(planned.slice(0, planned.indexOf(p)).filter((x) => !x.skip).map((x) => x.step.name)),
  });
  let current: string | undefined;
  const cluster = planned.some((p) => p.step.cluster) ? o.cluster?.(host, (line) => {
    journal({ event: 'log', step: current, line });
    if (current) o.emit({ type: 'step-log', host: host.name, step: current, line });
  }) : undefined;
  if (cluster) {
    cluster.record = (e) => journal({ step: current, ...e });
    cluster.recorded = (event) => hostEvents(o.journal.dir, o.runId, host.name, event);
  }
  if (cluster?.options.nodeIsDown) return runDownHost(host, o, planned, cluster, result, journal, (s) => (current = s));
  let t: Transport | undefined;
  let released = false; // the node's lock, released with what a clean node keeps of the run
  try {
    t = await o.connect(host);
    const opened = await openHost(t, host, o, planned, ctxOf, cluster);
    result.reachable = true; // connected, logged in, root (sudo), and probed
    if (opened.finishes) {
      result.finishes = opened.finishes;
      result.warnings.push(`took over the lock of run ${opened.finishes}, which did not finish (killed, or its connection was lost): this run finishes its work`);
      if (opened.stopped) result.warnings.push(`${opened.stopped} (run ${opened.finishes}, before it was cut off)`);
      journal({ event: 'resume', finishes: opened.finishes, ...(opened.stopped ? { stopped: opened.stopped } : {}) });
    }
    if (opened.failed) {
      result.error = `${host.name}: ${opened.failed}`;
      journal({ event: 'error', error: result.error });
      return result;
    }
    if (opened.refused) {
      result.refused = opened.refused;
      journal({ event: 'refused', reason: opened.refused });
      return result;
    }

    let state = opened.state;
    let stopped: string | undefined;
    let fresh = false; // whether the last step probed every view
    for (let i = 0; i < planned.length; i++) {
      const p = planned[i]!;
      // A `parallel:` group runs as one (those of it that run here): each step still reported on its own.
      let end = i;
      while (p.parallel && end + 1 < planned.length && planned[end + 1]!.parallel === p.parallel) end++;
      const group = !o.check && !stopped ? planned.slice(i, end + 1) : [];
      const together = group.filter((x) => !x.skip);
      if (together.length > 1) {
        for (const x of together) o.emit({ type: 'step-start', host: host.name, step: x.label });
        current = together.map((x) => x.label).join(', ');
        const done = await applyGroup(t, state, together.map((x) => ({ p: x, ctx: ctxOf(x) })), sudo, fullViews(o), journal);
        state = done.state;
        fresh = false;
        // In the playbook's order, a member its `when:` skips here among them.
        for (const x of group) {
          const r: StepResult = x.skip ? { name: x.label, status: 'skipped', actions: [], left: [], reason: x.skip, ms: 0 } : done.results[together.indexOf(x)]!;
          if (x.step.afterApply && r.status === 'changed') result.backup = ctxOf(x).operatorBackupDir;
          journal({ event: 'step', step: r.name, status: r.status, actions: r.actions.length, left: r.left.map((f) => `${f.kind} ${f.subject}`), reason: r.reason, ms: r.ms, parallel: r.parallel });
          result.steps.push(r);
          o.emit({ type: 'step-end', host: host.name, step: r.name, result: r });
          if (r.status === 'failed') stopped ??= r.name;
        }
        i += group.length - 1;
        continue;
      }
      if (stopped || p.skip) {
        const r: StepResult = { name: p.label, status: 'skipped', actions: [], left: [], reason: p.skip ?? `not run: ${stopped} failed`, ms: 0 };
        journal({ event: 'step', step: p.label, status: r.status, reason: r.reason });
        result.steps.push(r);
        o.emit({ type: 'step-end', host: host.name, step: p.label, result: r });
        continue;
      }
      o.emit({ type: 'step-start', host: host.name, step: p.label });
      current = p.label;
      const done = p.step.cluster && cluster
        ? { r: await clusterStep(cluster, p, state, journal, result.warnings), state }
        : o.check ? predictStep(state, p, ctxOf(p)) : await applyStep(t, state, p, ctxOf(p), sudo, fullViews(o), journal);
      state = done.state;
      fresh = p.step.reprobe === true;
      const r = done.r;
      // --check plans one step after another, and says which of them a real run runs together.
      if (p.parallel && o.check) r.parallel = p.parallel;
      if (p.step.afterApply && r.status === 'changed' && !o.check) result.backup = ctxOf(p).operatorBackupDir;
      journal({ event: 'step', step: p.label, status: r.status, actions: r.actions.length, left: r.left.map((f) => `${f.kind} ${f.subject}`), reason: r.reason, ms: r.ms, parallel: r.parallel });
      result.steps.push(r);
      o.emit({ type: 'step-end', host: host.name, step: p.label, result: r });
      if (r.status === 'failed' && !o.check) stopped = p.label;
    }
    if (stopped) {
      result.left = result.steps.find((s) => s.status === 'failed')?.left ?? [];
      return result;
    }
    // Clean is judged on a full probe: the playbook's last step took one, or one is taken now.
    if (!o.check && !fresh) state = (await roundTrip(t, { actions: [], views: fullViews(o), prev: state, sudo, timeoutSec: 60 })).state;
    result.left = findings(state).filter((f) => f.kind !== 'node-object');
    result.clean = result.left.length === 0;
    const dropBackup = !o.keepBackupOnNode && result.backup !== undefined;
    const dropArchives = o.removeEtcdArchive === true && state.etcdArchives.length > 0;
    if (!o.check && result.clean && (dropBackup || dropArchives)) {
      state = await removeKept(t, state, { backupDir: dropBackup ? backupDir : undefined, archives: dropArchives, release: releaseScript(o.runId) }, sudo, result.warnings, journal);
      released = true;
    }
    result.warnings.push(...notes(state));
    return result;
  } catch (e) {
    // One host's trouble is that host's: the others carry on, and the run says what happened here.
    if (e instanceof ClusterError) {
      // The node was reached; the API or the etcd peer failed (an interlock's question, or a step's).
      result.reachable = true;
      result.error = `${host.name}: ${e.message}`;
      journal({ event: 'error', error: result.error, step: current });
      return result;
    }
    const bug = !(e instanceof TransportError);
    result.error = bug ? `${host.name}: decom failed${current ? ` in step ${current}` : ''} (a bug; the journal has the stack): ${(e as Error).message}` : e.message;
    result.lost = !bug && e.step === 'dropped' && result.reachable;
    if (!bug && e.step === 'output') result.outputCapped = true;
    journal({ event: 'error', error: result.error, step: current, ...(bug ? { stack: (e as Error).stack } : {}) });
    return result;
  } finally {
    // Released on every path, also when the first round trip took the lock and then failed: the script removes only this run's lock.
    if (t && !o.check && !result.lost && !released) await t.exec(releaseScript(o.runId), { sudo, timeoutSec: 30 }).catch(() => {});
    await t?.close().catch(() => {});
    journal({ event: 'host-end', reachable: result.reachable, clean: result.clean, refused: result.refused, error: result.error });
    o.emit({ type: 'host-end', host: host.name, result });
  }
}

/**
 * --node-is-down: the host is off, so there is no connection, no lock and no probe.
 * Only the cluster steps run (their interlocks first); the node's own steps are
 * skipped, and the host is not called clean: it must be reset before it rejoins.
 */
async function runDownHost(host: Host, o: RunOptions, planned: PlannedStep[], c: ClusterContext, result: HostResult, journal: (e: Record<string, unknown>) => void, at: (step: string) => void): Promise<HostResult> {
  try {
    result.refused = await clusterInterlocks(c, planned, undefined);
    if (result.refused) {
      journal({ event: 'refused', reason: result.refused });
      return result;
    }
    let stopped: string | undefined;
    for (const p of planned) {
      let r: StepResult;
      if (stopped || p.skip || !p.step.cluster) {
        r = { name: p.label, status: 'skipped', actions: [], left: [], reason: p.skip ?? (stopped ? `not run: ${stopped} failed` : 'the host is down (--node-is-down)'), ms: 0 };
      } else {
        at(p.label);
        o.emit({ type: 'step-start', host: host.name, step: p.label });
        r = await clusterStep(c, p, undefined, journal, result.warnings);
        if (r.status === 'failed' && !o.check) stopped = p.label;
      }
      journal({ event: 'step', step: p.label, status: r.status, actions: r.actions.length, reason: r.reason, ms: r.ms });
      result.steps.push(r);
      o.emit({ type: 'step-end', host: host.name, step: p.label, result: r });
    }
    result.down = stopped ? 'failed' : 'done';
    if (!stopped) result.warnings.push(`the host was down (--node-is-down): its node side was not reset; run \`decom run --playbook reset\` on it before it joins any cluster again`);
    return result;
  } catch (e) {
    result.error = e instanceof ClusterError ? `${host.name}: ${e.message}` : `${host.name}: decom failed (a bug; the journal has the stack): ${(e as Error).message}`;
    result.down = 'failed';
    journal({ event: 'error', error: result.error, stack: (e as Error).stack });
    return result;
  } finally {
    journal({ event: 'host-end', reachable: false, clean: false, refused: result.refused, error: result.error });
    o.emit({ type: 'host-end', host: host.name, result });
  }
}

export async function runFleet(hosts: Host[], o: RunOptions): Promise<HostResult[]> {
  const size = o.serial && o.serial > 0 ? o.serial : hosts.length;
  const results: HostResult[] = [];
  for (let i = 0; i < hosts.length; i += size) {
    const batch = hosts.slice(i, i + size);
    const done = await pool(batch, o.forks ?? DEFAULT_FORKS, (h) => runHost(h, o));
    results.push(...done);
    const failed = done.filter((r) => !(r.clean || r.down === 'done')).length;
    if (o.maxFailPercent !== undefined && (failed * 100) / batch.length > o.maxFailPercent && i + size < hosts.length) {
      const why = `not run: ${failed} of ${batch.length} hosts in the previous batch failed (more than --max-fail-percent ${o.maxFailPercent})`;
      for (const h of hosts.slice(i + size)) {
        results.push({ host: h.name, reachable: false, clean: false, steps: [], warnings: [], left: [], notRun: why });
        o.journal.write({ host: h.name, event: 'not-run', reason: why });
      }
      break;
    }
  }
  return results;
}

/**
 * 0 every host clean (with --node-is-down: its cluster side done); 3 a host unreachable (or refused our login or sudo), lost
 * mid-run or past --max-output; 4 refused by an interlock; 1 otherwise (a step failed, residue left).
 */
export function runExitCode(results: HostResult[], check = false): ExitCode {
  const code = foldExit(
    results.map((r) =>
      r.lost || r.outputCapped || (!r.reachable && r.error && !r.notRun) ? EXIT.unreachable : r.refused ? EXIT.refused : r.clean || r.down === 'done' ? EXIT.clean : EXIT.residue,
    ),
  );
  // 4 promises nothing changed: a refusal beside a host that was worked on is a failure of the run.
  return code === EXIT.refused && !check && results.some((r) => r.steps.some((s) => s.status === 'changed')) ? EXIT.residue : code;
}
