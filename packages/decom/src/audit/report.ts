/**
 * The audit's outputs, all from one AuditReport: a table for people (a line per
 * host, a column per kind), JSON, a Prometheus textfile for node-exporter's textfile
 * collector, and JUnit XML for CI gates. The HTML heat map is in html.ts.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { inputError } from '../util/errors.js';
import { dirname, basename, join } from 'node:path';
import { printable } from '../verify/report.js';
import { withoutHost } from '../transport/types.js';
import { factsLine } from '../rules/facts.js';
import { ownsClusterRow, type AuditReport } from './audit.js';
import { AUDIT_KINDS, type AuditFinding, type AuditKind } from '../rules/audit.js';

/** The table's row of findings that belong to no audited host. */
const CLUSTER_ROW = '(cluster)';

/**
 * The table's columns after HOST, one per kind in AUDIT_KINDS' order: its short head
 * (fifteen kinds must fit a terminal) and what its cell counts. `--details` prints
 * them as a legend under the table; docs/audit-outputs.md lists them (a test compares).
 */
export const TABLE_COLUMNS: readonly { kind: AuditKind; head: string; meaning: string }[] = columns({
  'phantom-pod': ['phantom', 'pods running on the node that the API does not know'],
  'orphan-pod-dir': ['pod-dir', 'pod dirs of no known pod'],
  'orphan-pod-cgroup': ['cgroup', 'pod cgroups of no known pod'],
  'orphan-netns': ['netns', 'pod network namespaces no process is in'],
  'orphan-veth': ['veth', 'host veths whose pod end is in an orphan netns'],
  'orphan-ipam-lease': ['lease', 'IPAM leases naming a sandbox that is not running'],
  'stuck-terminating-pod': ['term-pod', 'pods Terminating longer than --stuck-after past their deadline'],
  'stuck-terminating-namespace': ['term-ns', 'namespaces Terminating longer than --stuck-after'],
  'stale-node': ['node', 'Nodes NotReady longer than --stale-after'],
  'stale-etcd-member': ['etcd', 'etcd members whose URLs name no inventory host'],
  'stale-volume-attachment': ['vol-att', 'VolumeAttachments of a deleted Node'],
  'stale-local-pv': ['local-pv', 'local PersistentVolumes whose node affinity selects no Node'],
  'stuck-deleting-object': ['stuck-obj', 'other objects in deletion longer than --stuck-after'],
  'unavailable-apiservice': ['apisvc', 'APIServices not Available'],
  'finished-pods': ['finished', '1 when Succeeded and Failed pods exceed --finished-pods'],
});

/** The columns in AUDIT_KINDS' order, from a head and meaning per kind (the type asks for every kind). */
function columns(byKind: Record<AuditKind, [head: string, meaning: string]>) {
  return AUDIT_KINDS.map((kind) => ({ kind, head: byKind[kind][0], meaning: byKind[kind][1] }));
}

/** The legend `--details` prints under the table: each short head, its kind and what it counts. */
export function tableLegend(): string[] {
  const w = Math.max(...TABLE_COLUMNS.map((c) => c.head.length));
  return TABLE_COLUMNS.map((c) => `${c.head.padEnd(w)}  ${c.kind}: ${c.meaning}`);
}

const count = (fs: AuditFinding[], k: AuditKind) => fs.filter((f) => f.kind === k).length;

/** Rows of the report: every host, then the cluster's own findings. */
export function rows(r: AuditReport): { name: string; reachable: boolean; error?: string; findings: AuditFinding[] }[] {
  return [
    ...r.hosts.map((h) => ({ name: h.host, reachable: h.reachable, findings: h.findings, ...(h.error ? { error: h.error } : {}) })),
    ...(r.cluster.length || ownsClusterRow(r.shard) ? [{ name: CLUSTER_ROW, reachable: !r.apiError, findings: r.cluster }] : []),
  ];
}

/**
 * What was not checked, a line each: the kinds that share a reason, with it (a list the
 * API refused names only the kinds that read it, so two refusals are two lines).
 */
export function notCheckedLines(r: AuditReport): { kinds: AuditKind[]; why: string }[] {
  const n = r.notChecked;
  if (!n) return [];
  const byWhy = new Map<string, AuditKind[]>();
  for (const k of n.kinds) {
    const why = n.refused?.[k] ?? n.why;
    byWhy.set(why, [...(byWhy.get(why) ?? []), k]);
  }
  // Resources the objects' lists could not cover: stuck-deleting-object was judged on the others.
  const partial = Object.entries(n.resources ?? {}).map(([what, why]) => ({ kinds: ['stuck-deleting-object' as AuditKind], why: `${what}: ${why}` }));
  return [...[...byWhy].map(([why, kinds]) => ({ kinds, why })), ...partial];
}

/**
 * The table (`details`: then its legend), then a line per finding (`details`: every
 * one; else up to 5 per host and kind), then what was not checked. A cell is the count; "-" a kind not checked
 * on that row; "?" a host that could not be probed.
 */
export function renderTable(r: AuditReport, opts: { details?: boolean } = {}): string {
  const skipped = new Set(r.notChecked?.kinds ?? []);
  const all = rows(r);
  const nameW = Math.max(4, ...all.map((x) => printable(x.name).length));
  const cell = (x: (typeof all)[number], k: AuditKind) => (!x.reachable && x.name !== CLUSTER_ROW ? '?' : skipped.has(k) ? '-' : String(count(x.findings, k)));
  const line = (name: string, cells: string[]) => [name.padEnd(nameW), ...cells.map((c, i) => c.padStart(TABLE_COLUMNS[i]!.head.length))].join('  ').trimEnd();
  const out = [line('HOST', TABLE_COLUMNS.map((c) => c.head)), ...all.map((x) => line(printable(x.name), TABLE_COLUMNS.map((c) => cell(x, c.kind))))];
  out.push('');
  if (opts.details) out.push(...tableLegend(), '');
  for (const x of all) {
    if (x.error) out.push(`${printable(x.name)}: NOT CHECKED: ${printable(withoutHost(x.name, x.error))}`);
    const facts = r.hosts.find((h) => h.host === x.name)?.facts;
    if (facts) out.push(`${printable(x.name)}: ${printable(factsLine(facts))}`);
    for (const w of r.hosts.find((h) => h.host === x.name)?.warnings ?? []) out.push(`${printable(x.name)}: warning: ${printable(w)}`);
    for (const k of AUDIT_KINDS) {
      const fs = x.findings.filter((f) => f.kind === k);
      const shown = opts.details ? fs : fs.slice(0, 5);
      for (const f of shown) out.push(`${printable(x.name)}  ${k}  ${printable(f.subject)}  ${printable(f.detail)}`);
      if (shown.length < fs.length) out.push(`${printable(x.name)}  ${k}  … and ${fs.length - shown.length} more (--details)`);
    }
  }
  for (const n of notCheckedLines(r)) out.push(`not checked: ${n.kinds.join(', ')}: ${printable(n.why)}`);
  const found = all.reduce((n, x) => n + x.findings.length, 0);
  const unreachable = r.hosts.filter((h) => !h.reachable).length;
  out.push(
    `${r.hosts.length} host${r.hosts.length === 1 ? '' : 's'} audited${r.shard ? ` (shard ${r.shard})` : ''}: ${found} finding${found === 1 ? '' : 's'}` +
      `${unreachable ? `, ${unreachable} host${unreachable === 1 ? '' : 's'} not checked` : ''}${r.server ? `; API ${r.server}` : ''}`,
  );
  return `${out.filter((l, i, a) => !(l === '' && a[i - 1] === '')).join('\n')}\n`;
}

export const renderJson = (r: AuditReport): string =>
  `${JSON.stringify(
    {
      time: new Date(r.time).toISOString(),
      ...(r.shard ? { shard: r.shard } : {}),
      ...(r.server ? { server: r.server } : {}),
      hosts: r.hosts,
      cluster: r.cluster,
      ...(r.notChecked ? { notChecked: r.notChecked } : {}),
      ...(r.apiError ? { apiError: r.apiError } : {}),
    },
    null,
    2,
  )}\n`;

/** A label value as the exposition format escapes it. */
const label = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

/**
 * node-exporter's textfile format: decom_residue{host,kind} per checked kind of every
 * probed host (and of the cluster row), decom_audit_host_reachable{host}, and the
 * run's time. A host that could not be probed has no residue series: unknown is not 0.
 */
export function renderPrometheus(r: AuditReport): string {
  const skipped = new Set(r.notChecked?.kinds ?? []);
  const out = [
    '# HELP decom_residue Kubernetes residue decom audit found, by host and kind (host "(cluster)": the cluster\'s own).',
    '# TYPE decom_residue gauge',
  ];
  for (const x of rows(r)) {
    if (!x.reachable) continue;
    for (const k of AUDIT_KINDS) if (!skipped.has(k)) out.push(`decom_residue{host="${label(x.name)}",kind="${k}"} ${count(x.findings, k)}`);
  }
  // Only when the API was read: without one, 0 would say every resource was checked.
  if (r.server && !r.apiError) {
    out.push(
      '# HELP decom_audit_resources_not_checked Resources and group versions of the API the audit could not list (a refusal, an API server that is down).',
      '# TYPE decom_audit_resources_not_checked gauge',
      `decom_audit_resources_not_checked ${Object.keys(r.notChecked?.resources ?? {}).length}`,
    );
  }
  out.push('# HELP decom_audit_host_reachable Whether decom audit could probe the host (1) or not (0).', '# TYPE decom_audit_host_reachable gauge');
  for (const h of r.hosts) out.push(`decom_audit_host_reachable{host="${label(h.host)}"} ${h.reachable ? 1 : 0}`);
  out.push(
    '# HELP decom_audit_last_run_timestamp_seconds When decom audit last ran, in seconds since the epoch.',
    '# TYPE decom_audit_last_run_timestamp_seconds gauge',
    `decom_audit_last_run_timestamp_seconds ${(r.time / 1000).toFixed(3)}`,
  );
  return `${out.join('\n')}\n`;
}

/**
 * Writes the file as node-exporter must see it: whole or not at all. The temporary
 * file is beside it (same filesystem, so the rename is atomic) and does not end in
 * .prom, so the collector never reads it half-written.
 */
export function writeAtomically(path: string, text: string): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

/** Text for XML and HTML: markup escaped, the control characters XML 1.0 cannot hold dropped. */
export const xml = (s: string) =>
  s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** JUnit XML: a test suite per row, a test case per kind; findings fail it, an unprobed host errors it, a kind not checked is skipped. */
export function renderJunit(r: AuditReport): string {
  const skipped = new Set(r.notChecked?.kinds ?? []);
  const suites = rows(r).map((x) => {
    const cases = AUDIT_KINDS.map((k) => {
      const fs = x.findings.filter((f) => f.kind === k);
      const open = `    <testcase classname="decom.audit.${xml(x.name)}" name="${k}">`;
      if (!x.reachable) return `${open}<error message="${xml(x.error ?? r.apiError ?? 'not checked')}"/></testcase>`;
      if (skipped.has(k)) return `${open}<skipped message="${xml(r.notChecked?.refused?.[k] ?? r.notChecked?.why ?? '')}"/></testcase>`;
      const partial = k === 'stuck-deleting-object' && x.name === CLUSTER_ROW ? Object.entries(r.notChecked?.resources ?? {}).map(([what, why]) => `not checked: ${what}: ${why}`) : [];
      const err = partial.length ? `<system-err>${xml(partial.join('\n'))}</system-err>` : '';
      if (!fs.length) return `${open}${err}</testcase>`;
      const body = fs.map((f) => `${f.subject}: ${f.detail}${f.evidence.length ? `\n  ${f.evidence.join('\n  ')}` : ''}`).join('\n');
      return `${open}<failure message="${fs.length} ${k} on ${xml(x.name)}" type="${k}">${xml(body)}</failure>${err}</testcase>`;
    });
    const failures = x.reachable ? AUDIT_KINDS.filter((k) => !skipped.has(k) && count(x.findings, k)).length : 0;
    const errors = x.reachable ? 0 : AUDIT_KINDS.length;
    const skips = x.reachable ? AUDIT_KINDS.filter((k) => skipped.has(k)).length : 0;
    return `  <testsuite name="${xml(x.name)}" tests="${AUDIT_KINDS.length}" failures="${failures}" errors="${errors}" skipped="${skips}" timestamp="${new Date(r.time).toISOString().slice(0, 19)}">\n${cases.join('\n')}\n  </testsuite>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="decom audit">\n${suites.join('\n')}\n</testsuites>\n`;
}

/**
 * One report from the shards of an Indexed Job (each a `--output json` report): every
 * host once, the cluster's row from the shard that owns it, the latest time, what any
 * shard could not check. A host in two shards is refused: the shards were not one run's.
 */
export function mergeReports(parts: { file: string; report: AuditReport }[]): AuditReport {
  const hosts = new Map<string, string>();
  for (const { file, report } of parts) {
    for (const h of report.hosts) {
      if (hosts.has(h.host)) throw inputError(`${file}: host ${h.host} is in ${hosts.get(h.host)} too: these reports are not the shards of one run`);
      hosts.set(h.host, file);
    }
  }
  const reports = parts.map((p) => p.report);
  const merged: AuditReport = {
    time: Math.max(...reports.map((r) => r.time)),
    hosts: reports.flatMap((r) => r.hosts).sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0)),
    cluster: reports.flatMap((r) => r.cluster),
  };
  const server = reports.find((r) => r.server)?.server;
  if (server) merged.server = server;
  // What any shard could not check is not checked in the whole (each shard read the API itself).
  const unchecked = reports.flatMap((r) => (r.notChecked ? [r.notChecked] : []));
  if (unchecked.length) {
    const distinct = (whys: (string | undefined)[]) => [...new Set(whys.filter((w): w is string => !!w))].join('; ');
    const kinds = AUDIT_KINDS.filter((k) => unchecked.some((n) => n.kinds.includes(k)));
    merged.notChecked = { kinds, why: distinct(unchecked.map((n) => n.why)) };
    const refused = kinds.map((k) => [k, distinct(unchecked.map((n) => n.refused?.[k]))] as const).filter(([, why]) => why);
    if (refused.length) merged.notChecked.refused = Object.fromEntries(refused);
    const resources = Object.assign({}, ...unchecked.map((n) => n.resources ?? {})) as Record<string, string>;
    if (Object.keys(resources).length) merged.notChecked.resources = resources;
  }
  const apiError = reports.find((r) => r.apiError)?.apiError;
  if (apiError) merged.apiError = apiError;
  return merged;
}

/** A report an earlier `decom audit --output json` wrote. */
export function readReport(file: string, flag = ''): AuditReport {
  const name = `${flag ? `${flag} ` : ''}${file}`;
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw inputError(`${name}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : `not JSON: ${(e as Error).message}`}`);
  }
  const d = doc as Partial<Record<string, unknown>>;
  if (!Array.isArray(d.hosts) || !Array.isArray(d.cluster) || typeof d.time !== 'string') {
    throw inputError(`${name}: not a report of \`decom audit --output json\` (it needs time, hosts and cluster)`);
  }
  return { ...(d as unknown as AuditReport), time: Date.parse(d.time) };
}
