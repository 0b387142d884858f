/**
 * `decom verify`: probe every target host in parallel (one connection, one round
 * trip each), apply the residue rules, and say per host what is left.
 */
import type { Host } from '../inventory/types.js';
import type { Transport } from '../transport/types.js';
import { TransportError } from '../transport/types.js';
import { probeNode } from '../probes/index.js';
import { findings, type Finding } from './rules.js';
import type { NodeCheck } from '../cluster/nodes.js';

export interface HostReport {
  host: string;
  reachable: boolean;
  clean: boolean;
  findings: Finding[];
  /** Why the host could not be checked (unreachable, host key, sudo…). */
  error?: string;
  /** Things the user should know that are not residue (e.g. a partial view without root). */
  warnings?: string[];
}

export interface VerifyOptions {
  connect: (host: Host) => Promise<Transport>;
  /** The cluster side (a Node object still registered), by host name. */
  cluster?: (hosts: Host[]) => Promise<NodeCheck>;
}

async function verifyHost(host: Host, opts: VerifyOptions): Promise<HostReport> {
  let t: Transport | undefined;
  try {
    t = await opts.connect(host);
    const state = await probeNode(t, { sudo: host.become });
    const report: HostReport = { host: host.name, reachable: true, clean: true, findings: findings(state) };
    if (state.uid !== 0) {
      report.warnings = [`the probe ran as uid ${state.uid}, not root: port holders, iptables and some mounts may be hidden (set ansible_become)`];
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
    Promise.all(hosts.map((h) => verifyHost(h, opts))),
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
export const exitCode = (reports: HostReport[]): number =>
  reports.some((r) => !r.reachable) ? 3 : reports.some((r) => !r.clean) ? 1 : 0;

/**
 * Control characters as escapes (\n, \t, \x1b): a mount target, a file name or a
 * process title on the node is anyone's text, and must not move the cursor or forge a
 * line of this report. JSON output escapes them itself and keeps them exact.
 */
const printable = (s: string): string =>
  s.replace(/[\x00-\x1f\x7f]/g, (c) =>
    c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );

export function renderText(reports: HostReport[]): string {
  const out: string[] = [];
  for (const r of reports) {
    const findings = r.findings.map((f) => ({ kind: f.kind, subject: printable(f.subject), detail: printable(f.detail) }));
    const kindW = Math.max(0, ...findings.map((f) => f.kind.length));
    const subjW = Math.min(60, Math.max(0, ...findings.map((f) => f.subject.length)));
    for (const f of findings) out.push(`${printable(r.host)}  ${f.kind.padEnd(kindW)}  ${f.subject.padEnd(subjW)}  ${f.detail}`);
    for (const w of r.warnings ?? []) out.push(`${printable(r.host)}: warning: ${printable(w)}`);
  }
  for (const r of reports) {
    if (!r.reachable) out.push(`${printable(r.host)}: NOT CHECKED: ${printable(r.error ?? '')}`);
    else if (r.clean) out.push(`${printable(r.host)}: clean`);
    else {
      const byKind = new Map<string, number>();
      for (const f of r.findings) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
      const summary = [...byKind].map(([k, n]) => `${n} ${k}`).join(', ');
      out.push(`${printable(r.host)}: NOT CLEAN: ${r.findings.length} finding${r.findings.length === 1 ? '' : 's'} (${summary})`);
    }
  }
  return `${out.join('\n')}\n`;
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
        findings: r.findings,
      })),
    },
    null,
    2,
  )}\n`;
