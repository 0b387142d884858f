/**
 * `decom verify`: probe every target host in parallel (one connection, one round
 * trip each), apply the residue rules, and say per host what is left.
 */
import type { Host } from '../inventory/index.js';
import type { Transport } from '../transport/types.js';
import { TransportError } from '../transport/types.js';
import { DEFAULT_FORKS, pool } from '../util/pool.js';
import { EXIT, foldExit, type ExitCode } from '../util/exit-codes.js';
import { ALL_VIEWS, PURGE_VIEWS, probeNode, withFacts, type NodeState } from '../probes/index.js';
import { findings, notes, type Finding } from '../rules/residue.js';
import { printable, renderSummary, summarizeFindings } from './report.js';
import { withoutHost } from '../transport/types.js';
import { factsLine, hostFacts, type HostFacts } from '../rules/facts.js';
import type { NodeCheck } from '../cluster/node.js';
import { clusterDnsOf } from '../inventory/cluster-dns.js';

export interface HostReport {
  host: string;
  reachable: boolean;
  clean: boolean;
  findings: Finding[];
  /** Why the host could not be checked (unreachable, host key, sudo…). */
  error?: string;
  /** Things the user should know that are not residue (e.g. a partial view without root). */
  warnings?: string[];
  /** What the node runs, as found on it. */
  facts?: HostFacts;
}

export interface VerifyOptions {
  connect: (host: Host) => Promise<Transport>;
  /** Hosts probed at once (the host pool's bound). */
  forks?: number;
  /** The cluster side (a Node object still registered), by host name. */
  cluster?: (hosts: Host[]) => Promise<NodeCheck>;
  /** The installation footprint is residue too (`verify --purge`). */
  purge?: boolean;
  /** What the operator's kubeconfig says the cluster is. */
  operator?: NodeState['operator'];
  /** The inventory's etcd group, for a host (NodeState.etcdGroup). */
  etcdGroup?: (host: Host) => NodeState['etcdGroup'];
}

async function verifyHost(host: Host, opts: VerifyOptions): Promise<HostReport> {
  let t: Transport | undefined;
  try {
    t = await opts.connect(host);
    const state = await probeNode(t, { sudo: host.become, views: withFacts(opts.purge ? PURGE_VIEWS : ALL_VIEWS) });
    if (opts.operator) state.operator = opts.operator;
    if (opts.etcdGroup) state.etcdGroup = opts.etcdGroup(host);
    state.clusterDns = clusterDnsOf(host.vars);
    const report: HostReport = { host: host.name, reachable: true, clean: true, findings: findings(state), facts: hostFacts(state) };
    const said = notes(state);
    if (said.length) report.warnings = said;
    if (state.uid !== 0) {
      report.warnings = [...(report.warnings ?? []), `the probe ran as uid ${state.uid}, not root: port holders, iptables and some mounts may be hidden (set ansible_become)`];
    }
    return report;
  } catch (e) {
    if (!(e instanceof TransportError)) throw e;
    return { host: host.name, reachable: false, clean: false, findings: [], error: e.message };
  } finally {
    await t?.close().catch(() => {});
  }
}

export async function verify(hosts: Host[], opts: VerifyOptions): Promise<HostReport[]> {
  const [reports, cluster] = await Promise.all([
    pool(hosts, opts.forks ?? DEFAULT_FORKS, (h) => verifyHost(h, opts)),
    opts.cluster ? opts.cluster(hosts) : Promise.resolve<NodeCheck>({ findings: new Map(), warnings: new Map() }),
  ]);
  for (const r of reports) {
    r.findings.push(...(cluster.findings.get(r.host) ?? []));
    const w = cluster.warnings.get(r.host);
    if (w) r.warnings = [...(r.warnings ?? []), ...w];
    r.clean = r.reachable && r.findings.length === 0;
  }
  return reports;
}

/** 0 every host clean, 1 residue found, 3 a host could not be checked (wins over 1). */
export const exitCode = (reports: HostReport[]): ExitCode =>
  foldExit(reports.map((r) => (!r.reachable ? EXIT.unreachable : !r.clean ? EXIT.residue : EXIT.clean)));

/**
 * The report for people: per host, one line per finding kind (how many, the first
 * subjects), or with `details` one line per finding; then one verdict line per host.
 */
export function renderText(reports: HostReport[], opts: { details?: boolean } = {}): string {
  const out: string[] = [];
  for (const r of reports) {
    const host = printable(r.host);
    if (opts.details) out.push(...findingLines(host, r.findings));
    else out.push(...renderSummary(summarizeFindings(r.findings), `${host}  `));
    if (r.facts) out.push(`${host}: ${printable(factsLine(r.facts))}`);
    for (const w of r.warnings ?? []) out.push(`${host}: warning: ${printable(w)}`);
  }
  for (const r of reports) {
    const host = printable(r.host);
    if (!r.reachable) out.push(`${host}: NOT CHECKED: ${printable(withoutHost(r.host, r.error ?? ''))}`);
    else if (r.clean) out.push(`${host}: clean`);
    else {
      const byKind = summarizeFindings(r.findings).map((s) => `${s.count} ${s.kind}`).join(', ');
      out.push(`${host}: NOT CLEAN: ${r.findings.length} finding${r.findings.length === 1 ? '' : 's'} (${byKind})`);
    }
  }
  return `${out.join('\n')}\n`;
}

/** `host  kind  subject  detail`, one line per finding. */
function findingLines(host: string, findings: Finding[]): string[] {
  const shown = findings.map((f) => ({ kind: f.kind, subject: printable(f.subject), detail: printable(f.detail) }));
  const kindW = Math.max(0, ...shown.map((f) => f.kind.length));
  const subjW = Math.min(60, Math.max(0, ...shown.map((f) => f.subject.length)));
  return shown.map((f) => `${host}  ${f.kind.padEnd(kindW)}  ${f.subject.padEnd(subjW)}  ${f.detail}`);
}

export const renderJson = (reports: HostReport[]): string =>
  `${JSON.stringify(
    {
      hosts: reports.map((r) => ({
        host: r.host,
        reachable: r.reachable,
        clean: r.clean,
        ...(r.error ? { error: r.error } : {}),
        ...(r.warnings ? { warnings: r.warnings } : {}),
        ...(r.facts ? { facts: r.facts } : {}),
        findings: r.findings,
      })),
    },
    null,
    2,
  )}\n`;
