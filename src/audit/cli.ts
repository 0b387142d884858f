/**
 * `decom audit`: flags checked, hosts resolved (and sharded), the audit run and its
 * outputs written; with --fix, the re-check, the plan, the confirmation, the remedies
 * and the audit that proves them. One connection per host for all of it.
 */
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { loadInventory, resolveTargets, type Host } from '../inventory/index.js';
import { connector } from '../transport/connector.js';
import type { Transport } from '../transport/types.js';
import { inventoryKubeconfig } from '../cluster/kubeconfig.js';
import { etcdGroupOf } from '../cluster/node.js';
import { inputError, UserError } from '../util/errors.js';
import { duration } from '../util/flags.js';
import { printable } from '../verify/report.js';
import { audit, auditExitCode, shardOf, type AuditOptions, type AuditReport } from './audit.js';
import { serveMetrics, systemdUnits } from './schedule.js';
import { applyFixes, fixKinds, plan, proveFixes, type Action } from './fix.js';
import { renderHtml } from './html.js';
import { mergeReports, readReport, renderJson, renderJunit, renderPrometheus, renderTable, writeAtomically } from './report.js';

export interface AuditFlags {
  limit?: string;
  output: 'table' | 'json' | 'prometheus' | 'junit';
  textfile?: string;
  junit?: string;
  html?: string;
  connection: 'ssh' | 'local';
  knownHosts?: string;
  acceptNewHostKeys: boolean;
  kubeconfig?: string;
  context?: string;
  api: boolean;
  staleAfter: string;
  stuckAfter: string;
  shard?: string;
  details: boolean;
  fix?: string;
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
  if (!flags.api && (flags.kubeconfig || flags.context)) throw inputError('--no-api contradicts --kubeconfig and --context');
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
    await loadInventory(inventoryFile); // a timer for an inventory that does not load would fail every hour
    const args = process.argv.slice(process.argv.indexOf('audit') + 2);
    process.stdout.write(systemdUnits(inventoryFile, args, flags.onCalendar));
    return 0;
  }
  const planned = flags.from ? readReport(flags.from, '--from') : undefined;
  const inventory = await loadInventory(inventoryFile);
  const all = [...inventory.hosts.values()];
  let hosts = resolveTargets(inventory, targets.length ? targets : ['all'], flags.limit);
  const shard = flags.shard ? shardOf(hosts, flags.shard) : undefined;
  if (shard) hosts = shard.hosts;
  const named = flags.api && !flags.kubeconfig ? inventoryKubeconfig(inventoryFile, all) : undefined;
  const api = flags.api ? { ...(flags.kubeconfig ?? named ? { kubeconfig: (flags.kubeconfig ?? named) as string } : {}), ...(flags.context ? { context: flags.context } : {}) } : undefined;
  const options = (connect: AuditOptions['connect']): AuditOptions => ({
    connect,
    inventory: all,
    etcdGroup: etcdGroupOf(inventory),
    ...(api ? { api } : {}),
    staleAfterSec,
    stuckAfterSec,
    ...(shard ? { shard: `${shard.index}/${shard.count}` } : {}),
  });
  if (listen && every) {
    return serveMetrics(listen, every, async () => {
      const round = session(hosts, flags);
      try {
        return await audit(hosts, options(round.connect));
      } finally {
        await round.close();
      }
    });
  }
  const { connect, close } = session(hosts, flags);
  const o = options(connect);
  try {
    const report = await audit(hosts, o);
    if (!kinds) {
      writeOutputs(report, flags);
      return auditExitCode(report);
    }
    // The re-check: the report the operator saw (--from), or this run's own, held against a fresh audit.
    const recheck = planned ? report : await audit(hosts, o);
    const actions = plan(planned ?? report, recheck, kinds, new Set(flags.forceFinalize));
    const todo = actions.filter((a) => !a.outcome);
    process.stderr.write(renderPlan(actions, flags.check));
    if (flags.check || !todo.length) {
      writeOutputs(recheck, flags);
      return actions.some((a) => a.outcome === 'left') ? 4 : auditExitCode(recheck);
    }
    if (!flags.yes) await confirm(todo);
    await applyFixes(todo, { hosts, connect, ...(api ? { api } : {}) });
    const after = await audit(hosts, o);
    proveFixes(todo, after);
    process.stderr.write(renderOutcomes(todo));
    writeOutputs(after, flags);
    if (actions.some((a) => a.outcome === 'left')) return 4;
    return todo.some((a) => a.outcome === 'failed') ? 1 : auditExitCode(after);
  } finally {
    await close();
  }
}

/** One connection per host for a whole run (audit, re-check, remedies, proof), closed together. */
function session(hosts: Host[], flags: AuditFlags) {
  const ready = connector(hosts, flags);
  const open = new Map<string, Promise<Transport>>();
  return {
    connect: (h: Host) => {
      if (!open.has(h.name)) open.set(h.name, ready.then((c) => c.connect(h)));
      return open.get(h.name) as Promise<Transport>;
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
  const want = flags.expect !== undefined ? Number(flags.expect) : undefined;
  if (want !== undefined && !(Number.isInteger(want) && want > 0)) throw inputError(`--expect ${JSON.stringify(flags.expect)}: expected the number of shards, e.g. 3`);
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

const where = (a: Action) => printable(a.host ?? '(cluster)');

function renderPlan(actions: Action[], check: boolean): string {
  if (!actions.length) return 'fix: nothing of the selected kinds to fix\n';
  const lines = actions.map((a) =>
    a.outcome === 'left' ? `${where(a)}: LEFT ALONE ${a.finding.kind} ${printable(a.finding.subject)}: ${printable(a.why ?? '')}` : `${where(a)}: ${check ? 'would ' : ''}${printable(a.what)}`,
  );
  return `${check ? 'fix plan (--check: nothing is changed)' : 'fix plan'}:\n${lines.map((l) => `  ${l}`).join('\n')}\n`;
}

function renderOutcomes(actions: Action[]): string {
  return `${actions.map((a) => `${where(a)}: ${a.outcome === 'done' ? 'fixed' : a.outcome === 'gone' ? 'already gone' : 'FAILED'} ${a.finding.kind} ${printable(a.finding.subject)}${a.outcome === 'failed' && a.why ? `: ${printable(a.why)}` : ''}`).join('\n')}\n`;
}

async function confirm(todo: Action[]): Promise<void> {
  if (!process.stdin.isTTY) throw inputError('refusing to fix without confirmation: no terminal to ask on; pass --yes');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const answer = await rl.question(`This changes ${todo.length} thing${todo.length === 1 ? '' : 's'} on the nodes and in the API, as listed above.\nType "fix" to go on: `);
  rl.close();
  if (answer.trim() !== 'fix') throw new UserError('not confirmed: nothing was changed', 4);
}
