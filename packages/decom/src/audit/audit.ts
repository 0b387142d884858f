/**
 * `decom audit`: every target host probed in parallel (one connection, one round trip
 * each, the audit's views) while the API is listed once; then the rules match the
 * two. Read-only: `--fix` (fix.ts) acts on what a second audit confirms.
 */
import { addressesOf, nodeNameOf, type Host } from '../inventory/index.js';
import type { Transport } from '../transport/types.js';
import { TransportError } from '../transport/types.js';
import { AUDIT_VIEWS, probeNode, type NodeState } from '../probes/index.js';
import { inputError } from '../util/errors.js';
import { DEFAULT_FORKS, pool } from '../util/pool.js';
import { EXIT, foldExit, type ExitCode } from '../util/exit-codes.js';
import { kubeconfigOrder, type ApiSource } from '../cluster/kubeconfig.js';
import { readCluster, type ClusterRead } from './cluster.js';
import { hostFacts, type HostFacts } from '../rules/facts.js';
import { finishedPods, stuckObjects, unavailableApiServices } from '../rules/deletions.js';
import { API_KINDS, AUDIT_KINDS, apiFindings, etcdFindings, knownPods, nodeFindings, refusedKinds, type AuditFinding, type AuditKind, type ClusterView } from '../rules/audit.js';

export interface HostAudit {
  host: string;
  /** The Node this host is. */
  node: string;
  reachable: boolean;
  /** Why it could not be checked. */
  error?: string;
  findings: AuditFinding[];
  warnings?: string[];
  /** What the node runs, as found on it. */
  facts?: HostFacts;
}

export interface AuditReport {
  /** When the audit ran (ms since the epoch). */
  time: number;
  hosts: HostAudit[];
  /** Findings of no audited host: namespaces, etcd members, Nodes and attachments of machines the inventory does not name. */
  cluster: AuditFinding[];
  /** The API's server, when one was asked. */
  server?: string;
  /** Kinds this run could not check, and why (no kubeconfig, the API did not answer, lists it refused: then each "; "-joined). */
  notChecked?: {
    kinds: AuditKind[];
    why: string;
    /** The kinds whose lists the API refused, each with its own refusals ("list RESOURCE: the API's message"): exit 3, as apiError. */
    refused?: Partial<Record<AuditKind, string>>;
    /** Resources and group versions whose objects could not be listed, each with why (stuck-deleting-object judged the rest): exit 3. */
    resources?: Record<string, string>;
  };
  /** No list of the API could be read (down, unreachable, credentials): the run could not check everything (exit 3). */
  apiError?: string;
  /** This run's share of the inventory (--shard), as "I/N". */
  shard?: string;
}

export interface AuditOptions {
  connect: (host: Host) => Promise<Transport>;
  /** The probe is done with the host's connection: closed unless the session keeps it for a fix. */
  release?: (host: Host) => Promise<void>;
  /** Hosts probed at once (the host pool's bound). */
  forks?: number;
  /** Every host of the inventory (an etcd member or Node of none of them is stale). */
  inventory: Host[];
  /** The inventory's etcd group, for a host: only the cluster's etcd is judged (NodeState.etcdGroup). */
  etcdGroup?: (host: Host) => NodeState['etcdGroup'];
  /** Where the API is; undefined with --no-api. */
  api?: ApiSource;
  stuckAfterSec: number;
  staleAfterSec: number;
  /** More finished pods than this are a finding. */
  finishedPods: number;
  /** This run's share (--shard), as "I/N": the cluster-wide findings are share 0's. */
  shard?: string;
}

/** What one host's probe came to: its state, or why it could not be probed. */
export type HostProbe = { state?: NodeState; error?: string };

/** One probe of the audit's views over the session's connection, released after it. */
async function probeHost(host: Host, o: AuditOptions): Promise<HostProbe> {
  try {
    const state = await probeNode(await o.connect(host), { sudo: host.become, views: AUDIT_VIEWS });
    if (o.etcdGroup) state.etcdGroup = o.etcdGroup(host);
    return { state };
  } catch (e) {
    if (!(e instanceof TransportError)) throw e;
    return { error: e.message };
  } finally {
    await o.release?.(host);
  }
}

/** Every host probed, at most the pool's bound at once. */
export const probeHosts = (hosts: Host[], o: AuditOptions): Promise<HostProbe[]> => pool(hosts, o.forks ?? DEFAULT_FORKS, (h) => probeHost(h, o));

export async function audit(hosts: Host[], o: AuditOptions): Promise<AuditReport> {
  const time = Date.now();
  const [probes, cluster] = await Promise.all([probeHosts(hosts, o), o.api ? readCluster(o.api) : undefined]);
  return judge(hosts, probes, cluster, o, time);
}

/**
 * The report from what the run read: each host's probe (its state, or why it could not
 * be probed) and the API's lists (undefined: --no-api). Pure, so what each list's
 * refusal leaves unchecked is tested without a node or an API.
 */
export function judge(
  hosts: Host[],
  probes: HostProbe[],
  cluster: ClusterRead | undefined,
  o: Pick<AuditOptions, 'inventory' | 'stuckAfterSec' | 'staleAfterSec' | 'finishedPods' | 'shard'>,
  time: number,
): AuditReport {
  const view: ClusterView | undefined = cluster && 'view' in cluster ? cluster.view : undefined;
  const refused = view ? refusedKinds(view) : new Map<AuditKind, string>();
  // The pods refused: the node-side kinds are judged as without an API (the runtimes alone prove a pod gone), phantom-pod not at all.
  const known = view && !refused.has('phantom-pod') ? knownPods(view.pods) : undefined;
  const states = new Map(hosts.flatMap((h, i) => (probes[i]?.state ? [[h.name, probes[i].state] as const] : [])));
  const reports: HostAudit[] = hosts.map((h, i) => {
    const p = probes[i] as { state?: NodeState; error?: string };
    const judged = p.state ? nodeFindings(p.state, known) : { findings: [], unverified: [] };
    const r: HostAudit = { host: h.name, node: nodeNameOf(h), reachable: !!p.state, findings: judged.findings };
    if (p.error) r.error = p.error;
    if (p.state) r.facts = hostFacts(p.state);
    const warnings = [...(p.state && p.state.uid !== 0 ? [`the probe ran as uid ${p.state.uid}, not root: some pod traces may be hidden (set ansible_become)`] : []), ...judged.unverified];
    if (warnings.length) r.warnings = warnings;
    return r;
  });

  const byHost = new Map(reports.map((r) => [r.host, r]));
  const clusterFindings: AuditFinding[] = [];
  const place = (f: AuditFinding & { host?: string }) => {
    const { host, ...finding } = f;
    const r = host ? byHost.get(host) : undefined;
    if (r) r.findings.push(finding);
    else if (ownsClusterRow(o.shard)) clusterFindings.push(finding);
  };
  const inventoryAddresses = new Set(o.inventory.flatMap((h) => [h.name, nodeNameOf(h), ...addressesOf(h)]));
  for (const f of etcdFindings(states, { inventoryAddresses })) place(f);
  if (view) {
    const fleet = {
      hostOfNode: new Map(o.inventory.map((h) => [nodeNameOf(h), h.name])),
      unreachable: new Set(reports.filter((r) => !r.reachable).map((r) => r.host)),
      inventoryAddresses,
      states,
      now: time,
      stuckAfterSec: o.stuckAfterSec,
      staleAfterSec: o.staleAfterSec,
    };
    // A finding of a host this run does not audit belongs to that host's own audit (or shard), not to the cluster row.
    const audited = new Set(hosts.map((h) => h.name));
    const deletions = { now: time, stuckAfterSec: o.stuckAfterSec, finishedPods: o.finishedPods, hostOfNode: fleet.hostOfNode };
    const judged = (k: AuditKind) => !refused.has(k);
    const found = [
      ...apiFindings(view, fleet),
      ...(judged('stuck-deleting-object') ? stuckObjects(view, deletions) : []),
      ...(judged('unavailable-apiservice') ? unavailableApiServices(view, deletions) : []),
      ...(judged('finished-pods') ? finishedPods(view, deletions) : []),
    ];
    for (const f of found) if (!f.host || audited.has(f.host)) place(f);
  }
  const report: AuditReport = { time, hosts: reports, cluster: clusterFindings };
  const apiKinds = AUDIT_KINDS.filter((k) => API_KINDS.has(k));
  if (!cluster) report.notChecked = { kinds: apiKinds, why: '--no-api' };
  else if ('none' in cluster) report.notChecked = { kinds: apiKinds, why: `no kubeconfig (${kubeconfigOrder()})` };
  else if ('error' in cluster) {
    report.apiError = `the API at ${cluster.server} could not be listed: ${cluster.error}`;
    report.notChecked = { kinds: apiKinds, why: report.apiError };
  } else if (refused.size || view?.unlisted) {
    // Some lists refused: exactly the kinds that read them, each with the API's words; the rest were judged.
    report.notChecked = { kinds: [...refused.keys()], why: Object.values(view?.refused ?? {}).join('; ') || 'some resources could not be listed' };
    if (refused.size) report.notChecked.refused = Object.fromEntries(refused);
    if (view?.unlisted) report.notChecked.resources = view.unlisted;
  }
  if (view) report.server = view.server;
  if (o.shard) report.shard = o.shard;
  return report;
}

/** The cluster-wide findings are reported once: by an unsharded run, or by share 0 of a sharded one. */
export const ownsClusterRow = (shard: string | undefined): boolean => !shard || shard.startsWith('0/');

/** 0 nothing found, 1 findings, 3 a host, the API or one of its lists could not be checked (wins over 1). */
export const auditExitCode = (r: AuditReport): ExitCode =>
  foldExit([
    ...r.hosts.map((h) => (!h.reachable ? EXIT.unreachable : h.findings.length ? EXIT.residue : EXIT.clean)),
    r.apiError || Object.keys(r.notChecked?.refused ?? {}).length || Object.keys(r.notChecked?.resources ?? {}).length ? EXIT.unreachable : r.cluster.length ? EXIT.residue : EXIT.clean,
  ]);

/**
 * `--shard I/N`: this run's share of the hosts, for an Indexed Job's index I of N
 * (JOB_COMPLETION_INDEX, from 0). Hosts are dealt round-robin by name, so every
 * host is in exactly one shard whatever order the inventory lists them in.
 */
export function shardOf<T extends { name: string }>(hosts: T[], spec: string): { hosts: T[]; index: number; count: number } {
  const m = /^(\d+)\/(\d+)$/.exec(spec.trim());
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || count < 1 || index >= count) throw inputError(`--shard ${JSON.stringify(spec)}: expected I/N with 0 <= I < N, e.g. 0/3 (an Indexed Job's JOB_COMPLETION_INDEX and its completions)`);
  const sorted = [...hosts].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { hosts: sorted.filter((_, i) => i % count === index), index, count };
}
