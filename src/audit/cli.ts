/**
 * `decom audit`: flags checked, hosts resolved (and sharded), the audit run and its
 * outputs written; with --fix, the re-check, the plan, the confirmation, the remedies
 * and the audit that proves them. One connection per host for all of it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { loadInventory, resolveTargets, type Host } from '../inventory/index.js';
import { connector } from '../transport/connector.js';
import type { Transport } from '../transport/types.js';
import { inventoryKubeconfig } from '../cluster/kubeconfig.js';
import { inputError, UserError } from '../util/errors.js';
import { duration } from '../util/flags.js';
import { printable } from '../verify/report.js';
import { audit, auditExitCode, shardOf, type AuditOptions, type AuditReport } from './audit.js';
import { auditClients } from './cluster.js';
import { API_FIXES, fixApi, fixHost, fixKinds, plan, type Action } from './fix.js';
import { renderHtml } from './html.js';
import { renderJson, renderJunit, renderPrometheus, renderTable, writeAtomically } from './report.js';

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
}

export async function auditCommand(inventoryFile: string, targets: string[], flags: AuditFlags): Promise<number> {
  const staleAfterSec = duration('--stale-after', flags.staleAfter, 0);
  const stuckAfterSec = duration('--stuck-after', flags.stuckAfter, 0);
  if (!flags.api && (flags.kubeconfig || flags.context)) throw inputError('--no-api contradicts --kubeconfig and --context');
  const fixing = flags.fix !== undefined || flags.forceFinalize.length > 0;
  const kinds = fixing ? fixKinds(flags.fix ?? '', flags.forceFinalize) : undefined;
  if (!fixing && (flags.from || flags.check || flags.yes)) throw inputError('--from, --check and --yes go with --fix or --force-finalize');
  const planned = flags.from ? readReport(flags.from) : undefined;
  const inventory = await loadInventory(inventoryFile);
  const all = [...inventory.hosts.values()];
  let hosts = resolveTargets(inventory, targets.length ? targets : ['all'], flags.limit);
  const shard = flags.shard ? shardOf(hosts, flags.shard) : undefined;
  if (shard) hosts = shard.hosts;
  const named = flags.api && !flags.kubeconfig ? inventoryKubeconfig(inventoryFile, all) : undefined;
  // The nodes' connections are dialed while the API's client library loads.
  const [connector_, clients] = await Promise.all([connector(hosts, flags), flags.api ? auditClients(flags.kubeconfig ?? named, flags.context) : undefined]);
  const open = new Map<string, Promise<Transport>>();
  const connect = (h: Host) => {
    if (!open.has(h.name)) open.set(h.name, connector_.connect(h));
    return open.get(h.name) as Promise<Transport>;
  };
  const options: AuditOptions = {
    connect,
    inventory: all,
    ...(clients ? { clients } : {}),
    ...(flags.api ? {} : { noApi: '--no-api' }),
    staleAfterSec,
    stuckAfterSec,
    clusterScope: !shard || shard.index === 0,
    ...(shard ? { shard: `${shard.index}/${shard.count}` } : {}),
  };
  try {
    const report = await audit(hosts, options);
    if (!kinds) {
      writeOutputs(report, flags);
      return auditExitCode(report);
    }
    // The re-check: the report the operator saw (--from), or this run's own, held against a fresh audit.
    const recheck = planned ? report : await audit(hosts, options);
    const actions = plan(planned ?? report, recheck, kinds, new Set(flags.forceFinalize));
    const todo = actions.filter((a) => !a.outcome);
    process.stderr.write(renderPlan(actions, flags.check));
    if (flags.check || !todo.length) {
      writeOutputs(recheck, flags);
      return actions.some((a) => a.outcome === 'left') ? 4 : auditExitCode(recheck);
    }
    if (!flags.yes) await confirm(todo);
    // The API's remedies go through the API whatever host the finding is on; the others to their host, one script each.
    const byHost = new Map<string, Action[]>();
    for (const a of todo) if (a.host && !API_FIXES.has(a.finding.kind)) byHost.set(a.host, [...(byHost.get(a.host) ?? []), a]);
    await Promise.all([
      ...[...byHost].map(async ([name, as]) => {
        const h = hosts.find((x) => x.name === name) as Host;
        await fixHost(await connect(h), h.become, as, recheck.states?.get(name));
      }),
      ...todo.filter((a) => API_FIXES.has(a.finding.kind)).map((a) => (clients ? fixApi(clients.core, a) : Promise.resolve())),
    ]);
    const after = await audit(hosts, options);
    // A remedy that said done is proven by the audit after it: its finding must be gone.
    for (const a of todo) {
      const still = [...after.hosts.filter((h) => h.host === a.host).flatMap((h) => h.findings), ...(a.host ? [] : after.cluster)].some((f) => f.kind === a.finding.kind && f.subject === a.finding.subject);
      if (still && a.outcome !== 'failed') Object.assign(a, { outcome: 'failed', why: `the audit after it still finds it${a.why ? ` (${a.why})` : ''}` });
    }
    process.stderr.write(renderOutcomes(todo));
    writeOutputs(after, flags);
    if (actions.some((a) => a.outcome === 'left')) return 4;
    return todo.some((a) => a.outcome === 'failed') ? 1 : auditExitCode(after);
  } finally {
    connector_.close();
    await Promise.all([...open.values()].map((p) => p.then((t) => t.close()).catch(() => {})));
  }
}

function writeOutputs(report: AuditReport, flags: AuditFlags): void {
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

/** A report an earlier `decom audit --output json` wrote: the findings the operator reviewed. */
function readReport(file: string): AuditReport {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw inputError(`--from ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : `not JSON: ${(e as Error).message}`}`);
  }
  const d = doc as Partial<Record<string, unknown>>;
  if (!Array.isArray(d.hosts) || !Array.isArray(d.cluster) || typeof d.time !== 'string') {
    throw inputError(`--from ${file}: not a report of \`decom audit --output json\` (it needs time, hosts and cluster)`);
  }
  return { ...(d as unknown as AuditReport), time: Date.parse(d.time) };
}
