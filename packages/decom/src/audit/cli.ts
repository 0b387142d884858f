/**
 * `decom audit`: flags checked, hosts resolved (and sharded), the audit run and its
 * outputs written; with --fix, the plan, the confirmation, then per host under its
 * lock the re-check, the remedies and their proof. One connection per host for all of
 * it while the hosts fit in the pool's bound (--forks).
 */
import { writeFileSync } from 'node:fs';
import { askedPassword, etcdGroupOf, connectionOverridesOf, loadInventory, vaultSourcesOf, reachHosts, resolveTargets, type ReachFlags, type Host } from '../inventory/index.js';
import { connector, maxOutputOf } from '../transport/connector.js';
import type { Transport } from '../transport/types.js';
import { apiSource, kubeClients } from '../cluster/kubeconfig.js';
import { inputError } from '../util/errors.js';
import { EXIT, foldExit } from '../util/exit-codes.js';
import { count, duration, wholeNumber } from '../util/flags.js';
import { confirm, confirmable } from '../util/prompt.js';
import { listPageSize } from '../cluster/pages.js';
import { printable } from '../verify/report.js';
import { audit, auditExitCode, judge, probeHosts, shardOf, type AuditOptions, type AuditReport, type HostProbe } from './audit.js';
import { readCluster } from './cluster.js';
import type { ApiSource } from '../cluster/kubeconfig.js';
import type { AuditKind } from '../rules/audit.js';
import { Journal, newRunId, operatorName, stateDir } from '../engine/journal.js';
import { FIX_COMMAND } from '../engine/lock.js';
import { forksOf } from '../util/pool.js';
import { serveMetrics, systemdUnits } from './schedule.js';
import { checkForceFinalize, fixKinds, plan, proveFixes, runFixes, type Remedy } from './fix.js';
import { renderHtml } from './html.js';
import { mergeReports, readReport, renderJson, renderJunit, renderPrometheus, renderTable, writeAtomically } from './report.js';

export interface AuditFlags extends ReachFlags {
  output: 'table' | 'json' | 'prometheus' | 'junit';
  textfile?: string;
  junit?: string;
  html?: string;
  connection: 'ssh' | 'local';
  kubeconfig?: string;
  api: boolean;
  staleAfter: string;
  stuckAfter: string;
  finishedPods: string;
  shard?: string;
  details: boolean;
  fix?: string;
  waitLock?: string;
  stateDir?: string;
  forceFinalize: string[];
  from?: string;
  check: boolean;
  yes: boolean;
  listen?: string;
  every?: string;
  hostRoot?: string;
  printSystemdTimer: boolean;
  onCalendar: string;
}

export async function auditCommand(inventoryFile: string, targets: string[], flags: AuditFlags): Promise<number> {
  const staleAfterSec = duration('--stale-after', flags.staleAfter, 0);
  const stuckAfterSec = duration('--stuck-after', flags.stuckAfter, 0);
  const finishedPods = wholeNumber('--finished-pods', flags.finishedPods);
  if (!flags.api && (flags.kubeconfig || flags.context)) throw inputError('--no-api contradicts --kubeconfig and --context');
  if (flags.api) listPageSize(); // a bad DECOM_LIST_PAGE_SIZE: bad input, before anything is contacted
  const fixing = flags.fix !== undefined || flags.forceFinalize.length > 0;
  const kinds = fixing ? fixKinds(flags.fix ?? '', flags.forceFinalize) : undefined;
  if (!fixing && (flags.from || flags.check || flags.yes)) throw inputError('--from, --check and --yes go with --fix or --force-finalize');
  const every = flags.every !== undefined ? duration('--every', flags.every, 10) : undefined;
  if ((flags.listen === undefined) !== (every === undefined)) throw inputError('--listen and --every go together (serve the metrics of an audit repeated this often)');
  if (every && fixing) throw inputError('--every audits, it never fixes: drop --fix and --force-finalize');
  if (flags.hostRoot && flags.connection !== 'local') throw inputError('--host-root goes with --connection local');
  const listen = flags.listen !== undefined ? listenAddress(flags.listen) : undefined;
  if (flags.printSystemdTimer) {
    if (fixing || every) throw inputError('--print-systemd-timer schedules the read-only audit: drop --fix, --force-finalize, --listen and --every');
    if (flags.askPass || flags.askBecomePass || flags.askVaultPass) throw inputError('--print-systemd-timer: a timer has no terminal to ask on: drop -k, -K and --ask-vault-pass, give the passwords in files');
    await loadInventory(inventoryFile, { vault: vaultSourcesOf(flags), overrides: await connectionOverridesOf(flags) }); // a timer for an inventory that does not load would fail every hour
    process.stdout.write(systemdUnits(process.argv.slice(process.argv.indexOf('audit') + 1), flags.onCalendar, process.cwd()));
    return EXIT.clean;
  }
  const planned = flags.from ? readReport(flags.from, '--from') : undefined;
  const forks = forksOf(flags.forks);
  const maxOutputMiB = maxOutputOf(flags.maxOutput);
  if (!fixing && (flags.waitLock !== undefined || flags.stateDir !== undefined)) throw inputError('--wait-lock and --state-dir go with --fix or --force-finalize');
  const waitLockSec = flags.waitLock !== undefined ? duration('--wait-lock', flags.waitLock, 0) : undefined;
  // Without a terminal to confirm on, a fix is refused before any host or the API is asked anything.
  if (fixing && !flags.check) confirmable({ yes: flags.yes, action: 'fix' });
  const inventory = await loadInventory(inventoryFile, { vault: vaultSourcesOf(flags), overrides: await connectionOverridesOf(flags) });
  const all = [...inventory.hosts.values()];
  let hosts = resolveTargets(inventory, targets.length ? targets : ['all'], flags.limit);
  const shard = flags.shard ? shardOf(hosts, flags.shard) : undefined;
  if (shard) hosts = shard.hosts;
  // Where each host is, as ssh computes it (ssh -G, with the OpenSSH config).
  if (flags.connection !== 'local') hosts = await reachHosts(hosts, await askedPassword(flags));
  const api = flags.api ? apiSource(inventoryFile, all, flags) : undefined;
  const options = (connect: AuditOptions['connect']): AuditOptions => ({
    connect,
    inventory: all,
    etcdGroup: etcdGroupOf(inventory),
    ...(api ? { api } : {}),
    staleAfterSec,
    stuckAfterSec,
    finishedPods,
    ...(shard ? { shard: `${shard.index}/${shard.count}` } : {}),
  });
  if (listen && every) {
    return serveMetrics(listen, every, async () => {
      const round = session(hosts, { ...flags, maxOutputMiB }, forks);
      try {
        return await audit(hosts, { ...options(round.connect), release: round.release, forks });
      } finally {
        await round.close();
      }
    });
  }
  const { connect, release, close } = session(hosts, { ...flags, maxOutputMiB }, forks);
  const o = { ...options(connect), release, forks };
  try {
    // The report the operator saw (--from), or this run's own audit.
    const report = planned ?? (await audit(hosts, o));
    if (!kinds) {
      writeOutputs(report, flags);
      return auditExitCode(report);
    }
    return await fix(report, hosts, o, { flags, kinds, forks, waitLockSec, api, connect, release });
  } finally {
    await close();
  }
}

/**
 * The fix, after the audit: the candidates confirmed, then each host under its lock
 * (re-check, remedies, proof) through the engine, the cluster row's API remedies, and
 * the audit after it, every action in a journal like a run's.
 */
async function fix(
  report: AuditReport,
  hosts: Host[],
  o: AuditOptions,
  x: { flags: AuditFlags; kinds: Set<AuditKind>; forks: number; waitLockSec: number | undefined; api: ApiSource | undefined; connect: (h: Host) => Promise<Transport>; release: (h: Host) => Promise<void> },
): Promise<number> {
  const { flags, kinds } = x;
  const forceFinalize = new Set(flags.forceFinalize);
  const candidates = plan(report, report, kinds, forceFinalize);
  checkForceFinalize(candidates, forceFinalize);
  const todo = candidates.filter((a) => !a.outcome);
  if (!flags.check) process.stderr.write(renderPlan(candidates, false));
  if (!todo.length) {
    if (flags.check) process.stderr.write(renderPlan(candidates, true));
    writeOutputs(report, flags);
    return foldExit([auditExitCode(report), candidates.some((a) => a.outcome === 'left') ? EXIT.refused : EXIT.clean]);
  }
  if (!flags.check) {
    await confirm({
      yes: flags.yes,
      action: 'fix',
      question: `This changes ${todo.length} thing${todo.length === 1 ? '' : 's'} on the nodes and in the API, as listed above.\nType "fix" to go on: `,
      expect: 'fix',
    });
  }

  // The clients and the re-check's lists before the journal starts: a kubeconfig error is bad input, with no journal left unfinished.
  const kube = x.api && !flags.check && todo.some((a) => a.finding.kind.startsWith('stuck-')) ? await kubeClients(x.api) : undefined;
  const recheckApi = x.api ? await readCluster(x.api) : undefined;
  const runId = newRunId();
  const journal = new Journal(stateDir(flags.stateDir), runId);
  journal.write({ event: 'run-start', command: FIX_COMMAND, kinds: [...kinds], forceFinalize: [...forceFinalize], check: flags.check, hosts: hosts.map((h) => h.name), argv: process.argv.slice(2) });
  process.stderr.write(`decom: fix ${runId}${flags.check ? ' (check: nothing will be changed)' : ''}, journal ${journal.file}\n`);
  const done = await runFixes(hosts, {
    runId, holder: { runId, command: FIX_COMMAND, operator: operatorName(), since: new Date().toISOString() }, check: flags.check, ...(x.waitLockSec ? { waitLockSec: x.waitLockSec } : {}),
    forks: x.forks, journal, kinds, forceFinalize, planned: report, recheckApi, ...(kube ? { kube } : {}), connect: x.connect, release: x.release, audit: o,
  });
  const remedies = done.remedies;
  for (const w of done.warnings) process.stderr.write(`${printable(w)}\n`);
  // The report after it: the fixed hosts' states as their remedies' round trip re-probed them (in --check, the
  // re-check's), the other hosts probed now, the API listed again. In a real run it is the proof.
  const fresh = hosts.filter((_, i) => !done.probes[i]?.state && !done.probes[i]?.error);
  const [probes, cluster] = await Promise.all([probeHosts(fresh, o), x.api && !flags.check ? readCluster(x.api) : recheckApi]);
  const after = judge(hosts, hosts.map((h, i) => (done.probes[i]?.state || done.probes[i]?.error ? (done.probes[i] as HostProbe) : (probes[fresh.indexOf(h)] as HostProbe))), cluster, o, Date.now());
  if (flags.check) process.stderr.write(renderPlan(remedies, true));
  else {
    proveFixes(remedies, after);
    process.stderr.write(renderOutcomes(remedies));
  }
  writeOutputs(after, flags);
  // As the README's exit codes: 3 (a host or the API not checked) wins over 4 (left alone), 4 over 1.
  const checked = auditExitCode(after);
  const code = foldExit([
    checked,
    done.refused.length || remedies.some((a) => a.outcome === 'left') ? EXIT.refused : EXIT.clean,
    remedies.some((a) => a.outcome === 'failed') ? EXIT.residue : EXIT.clean,
  ]);
  journal.write({ event: 'run-end', exit: code, outcomes: remedies.map((r) => ({ host: r.host ?? '(cluster)', kind: r.finding.kind, subject: r.finding.subject, outcome: r.outcome ?? (flags.check ? 'would' : 'none'), ...(r.why ? { why: r.why } : {}) })) });
  return code;
}

/**
 * One connection per host for the whole run (audit, re-check, remedies, proof) while
 * the hosts fit in the pool's bound; past it, each host's connection is closed when
 * its part is done, so no more than the bound are ever open.
 */
function session(hosts: Host[], flags: AuditFlags & { maxOutputMiB: number }, forks: number) {
  const keep = hosts.length <= forks;
  const ready = connector(hosts.slice(0, forks), flags);
  const open = new Map<string, Promise<Transport>>();
  return {
    connect: (h: Host) => {
      if (!open.has(h.name)) open.set(h.name, ready.then((c) => c.connect(h)));
      return open.get(h.name) as Promise<Transport>;
    },
    release: async (h: Host) => {
      if (keep) return;
      const t = open.get(h.name);
      open.delete(h.name);
      await t?.then((x) => x.close()).catch(() => {});
    },
    close: async () => {
      (await ready).close();
      await Promise.all([...open.values()].map((p) => p.then((t) => t.close()).catch(() => {})));
    },
  };
}

/** "[HOST]:PORT" of --listen. */
function listenAddress(v: string): { host: string; port: number } {
  const m = /^(?:\[?([^\]]*)\]?:)?(\d+)$/.exec(v.trim());
  const port = Number(m?.[2]);
  if (!m || port < 1 || port > 65535) throw inputError(`--listen ${JSON.stringify(v)}: expected PORT or HOST:PORT, e.g. :9847 or 0.0.0.0:9847`);
  return { host: m[1] || '0.0.0.0', port };
}

/**
 * `decom audit-report SHARD.json...`: the shards' reports of one run (an Indexed
 * Job's), merged and written in any of the audit's formats.
 */
export function reportCommand(files: string[], flags: Pick<AuditFlags, 'output' | 'textfile' | 'junit' | 'html' | 'details'> & { expect?: string }): number {
  const want = count('--expect', flags.expect, 1);
  if (want !== undefined && files.length !== want) throw inputError(`--expect ${want}: ${files.length} report${files.length === 1 ? '' : 's'} given (${files.join(', ')})`);
  const report = mergeReports(files.map((file) => ({ file, report: readReport(file) })));
  writeOutputs(report, flags);
  return auditExitCode(report);
}

function writeOutputs(report: AuditReport, flags: Pick<AuditFlags, 'output' | 'textfile' | 'junit' | 'html' | 'details'>): void {
  if (flags.textfile) writeAtomically(flags.textfile, renderPrometheus(report));
  if (flags.junit) writeFileSync(flags.junit, renderJunit(report));
  if (flags.html) writeFileSync(flags.html, renderHtml(report));
  const render = { table: renderTable, json: renderJson, prometheus: renderPrometheus, junit: renderJunit }[flags.output];
  process.stdout.write(render(report, { details: flags.details }));
}

const where = (a: Remedy) => printable(a.host ?? '(cluster)');

function renderPlan(actions: Remedy[], check: boolean): string {
  if (!actions.length) return 'fix: nothing of the selected kinds to fix\n';
  const lines = actions.map((a) =>
    a.outcome === 'left' ? `${where(a)}: LEFT ALONE ${a.finding.kind} ${printable(a.finding.subject)}: ${printable(a.why ?? '')}` : `${where(a)}: ${check ? 'would ' : ''}${printable(a.what)}`,
  );
  return `${check ? 'fix plan (--check: nothing is changed)' : 'fix plan'}:\n${lines.map((l) => `  ${l}`).join('\n')}\n`;
}

function renderOutcomes(actions: Remedy[]): string {
  return `${actions.map((a) =>
    a.outcome === 'left' ? `${where(a)}: LEFT ALONE ${a.finding.kind} ${printable(a.finding.subject)}: ${printable(a.why ?? '')}` : `${where(a)}: ${a.outcome === 'done' ? 'fixed' : a.outcome === 'gone' ? 'already gone' : 'FAILED'} ${a.finding.kind} ${printable(a.finding.subject)}${a.outcome === 'failed' && a.why ? `: ${printable(a.why)}` : ''}`).join('\n')}\n`;
}
