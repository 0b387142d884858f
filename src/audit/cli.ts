/** `decom audit`: flags checked, hosts resolved (and sharded), the audit run, its outputs written. */
import { writeFileSync } from 'node:fs';
import { loadInventory, resolveTargets } from '../inventory/index.js';
import { connector } from '../transport/connector.js';
import { inventoryKubeconfig } from '../cluster/kubeconfig.js';
import { inputError } from '../util/errors.js';
import { duration } from '../util/flags.js';
import { audit, auditExitCode, shardOf } from './audit.js';
import { auditClients } from './cluster.js';
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
}

export async function auditCommand(inventoryFile: string, targets: string[], flags: AuditFlags): Promise<number> {
  const staleAfterSec = duration('--stale-after', flags.staleAfter, 0);
  const stuckAfterSec = duration('--stuck-after', flags.stuckAfter, 0);
  if (!flags.api && (flags.kubeconfig || flags.context)) throw inputError('--no-api contradicts --kubeconfig and --context');
  const inventory = await loadInventory(inventoryFile);
  const all = [...inventory.hosts.values()];
  let hosts = resolveTargets(inventory, targets.length ? targets : ['all'], flags.limit);
  const shard = flags.shard ? shardOf(hosts, flags.shard) : undefined;
  if (shard) hosts = shard.hosts;
  const named = flags.api && !flags.kubeconfig ? inventoryKubeconfig(inventoryFile, all) : undefined;
  // The nodes' connections are dialed while the API's client library loads.
  const [{ connect, close }, clients] = await Promise.all([connector(hosts, flags), flags.api ? auditClients(flags.kubeconfig ?? named, flags.context) : undefined]);
  const report = await audit(hosts, {
    connect,
    inventory: all,
    ...(clients ? { clients } : {}),
    ...(flags.api ? {} : { noApi: '--no-api' }),
    staleAfterSec,
    stuckAfterSec,
    clusterScope: !shard || shard.index === 0,
    ...(shard ? { shard: `${shard.index}/${shard.count}` } : {}),
  }).finally(close);
  if (flags.textfile) writeAtomically(flags.textfile, renderPrometheus(report));
  if (flags.junit) writeFileSync(flags.junit, renderJunit(report));
  if (flags.html) {
    const { renderHtml } = await import('./html.js');
    writeFileSync(flags.html, renderHtml(report));
  }
  const render = { table: renderTable, json: renderJson, prometheus: renderPrometheus, junit: renderJunit }[flags.output];
  process.stdout.write(render(report, { details: flags.details }));
  return auditExitCode(report);
}
