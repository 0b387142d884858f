/**
 * `decom audit --fix KIND,...`: the provably safe remedies, and only for findings a
 * fresh audit (the re-check) still makes with the same target. Node remedies run as
 * one script per host (one round trip), each guarded again on the node at the moment
 * it acts; API remedies carry the pod's UID as a precondition. A last audit proves
 * what is gone.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { q, STOP_PROCS } from '../engine/sh.js';
import { codeOf, errorLine } from '../cluster/kubeconfig.js';
import type { Host } from '../inventory/index.js';
import type { Transport } from '../transport/types.js';
import { inputError } from '../util/errors.js';
import { AUDIT_KINDS, type AuditFinding, type AuditKind } from './rules.js';
import type { AuditReport } from './audit.js';
import { auditClients, type ApiSource } from './cluster.js';
import { kubeCgroupLevel } from '../probes/parse.js';
import { RM_CGROUPS } from '../steps/cgroups.js';

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
export interface Action {
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
      return `stop and remove pod ${f.subject}'s ${(t.containers as string[]).length} containers (sandbox last) and the processes in its cgroup`;
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
export function plan(planned: AuditReport, recheck: AuditReport, kinds: ReadonlySet<AuditKind>, forceFinalize: ReadonlySet<string>): Action[] {
  const fresh = rowFindings(recheck);
  const actions: Action[] = [];
  for (const { host, finding } of rowFindings(planned)) {
    if (!kinds.has(finding.kind)) continue;
    // A namespace is acted on only when named: the others are not part of the plan.
    if (finding.kind === 'stuck-terminating-namespace' && !forceFinalize.has(finding.subject)) continue;
    const a: Action = { ...(host ? { host } : {}), finding, what: describe(finding) };
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
    actions.push(a);
  }
  for (const ns of forceFinalize) {
    if (!actions.some((a) => a.finding.kind === 'stuck-terminating-namespace' && a.finding.subject === ns)) {
      throw inputError(`--force-finalize ${ns}: the audit finds no namespace ${ns} stuck Terminating`);
    }
  }
  return actions;
}

/** The guarded shell of one remedy, after STOP_PROCS and RM_CGROUPS. Each ends with `@@R done|gone|failed [why]`. */
export function remedy(f: AuditFinding): string {
  const t = f.target;
  const ok = `echo "@@R done"`;
  switch (f.kind) {
    case 'phantom-pod': {
      const ids = (t.containers as string[]).map(q).join(' ');
      const sandboxes = new Set(t.sandboxes as string[]);
      const order = [...(t.containers as string[]).filter((c) => !sandboxes.has(c)), ...(t.sandboxes as string[])].map(q).join(' ');
      const rm =
        t.runtime === 'docker'
          ? `docker rm -f ${order} >/dev/null`
          : // With containerd down there is nothing to ask: its processes are stopped below, its records go with the next reset.
            `if pgrep -x containerd >/dev/null; then if command -v crictl >/dev/null; then crictl rm -f ${order} >/dev/null 2>&1; crictl rmp -f ${(t.sandboxes as string[]).map(q).join(' ')} >/dev/null 2>&1; fi; ctr -n k8s.io task rm -f ${order} >/dev/null 2>&1; ctr -n k8s.io container rm ${order} >/dev/null 2>&1; fi`;
      return `${rm}; stop_procs 5 ${(t.processes as string[]).join(' ')}; left=; for c in ${ids}; do [ -e /run/containerd/io.containerd.runtime.v2.task/k8s.io/$c/init.pid ] && left=1; done; [ -z "$left" ] && ${ok} || echo "@@R failed a task of the pod is still there"`;
    }
    case 'orphan-pod-cgroup': {
      // A live node: pod-level cgroups only (kubeCgroupLevel, verify's rule), never the running
      // kubelet's QoS tree (/kubepods, besteffort, burstable, their slices) it is in.
      const paths = t.cgroups as string[];
      const notPods = paths.filter((c) => kubeCgroupLevel(c)?.level !== 'pod');
      if (!paths.length || notPods.length) return `echo "@@R failed not a pod's cgroup: ${notPods.join(', ').replace(/[^\w./,-]/g, '?')}"`;
      // systemd driver: the pod's slice is systemd's unit; stopped through it (no rmdir behind its back), then what it leaves.
      const slices = paths.filter((c) => c.endsWith('.slice')).map((c) => q(c.slice(c.lastIndexOf('/') + 1)));
      const stop = slices.length ? `[ -d /run/systemd/system ] && timeout 60 systemctl stop -- ${slices.join(' ')} >/dev/null 2>&1; ` : '';
      const ps = paths.map(q).join(' ');
      return `stop_procs 5 ${(t.processes as string[]).join(' ')}; had=; for h in $CGH; do for p in ${ps}; do [ -d "$h$p" ] && had=1; done; done; [ -n "$had" ] || { echo "@@R gone"; exit 0; }; ${stop}if out=$(rm_cgroups ${ps}); then ${ok}; else echo "@@R failed $out"; fi`;
    }
    case 'orphan-pod-dir': {
      const dir = q(t.dir as string);
      const mounts = [...(t.mounts as string[])].sort((a, b) => b.length - a.length).map(q).join(' ');
      // Unmount deepest first, no lazy unmount (a busy mount stays and the dir with it); then
      // remove only if nothing is mounted below it any more, without crossing into a mount.
      return `[ -e ${dir} ] || { echo "@@R gone"; exit 0; }; [ -L ${dir} ] && { echo "@@R failed it is a symbolic link now"; exit 0; }; for m in ${mounts}; do grep -q " $m " /proc/self/mountinfo && umount "$m"; done; if awk -v d=${dir}/ 'index($5, d) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then echo "@@R failed a mount below it is busy: left in place"; else rm -rf --one-file-system ${dir} && ${ok} || echo "@@R failed rm"; fi`;
    }
    case 'orphan-netns': {
      const n = q(t.netns as string);
      // Still unused? No process may be in it now (one that entered since the audit keeps it).
      return `[ -e /run/netns/${n} ] || { echo "@@R gone"; exit 0; }; ino=$(stat -L -c %i /run/netns/${n}); if ls -l /proc/[0-9]*/ns/net 2>/dev/null | grep -q "net:\\[$ino\\]"; then echo "@@R failed a process is in it now"; else ip netns del ${n} && ${ok} || echo "@@R failed ip netns del"; fi`;
    }
    case 'orphan-veth': {
      const l = q(t.link as string);
      return `ip -o link show ${l} >/dev/null 2>&1 || { echo "@@R gone"; exit 0; }; if ip -o link show ${l} | grep -q -E " link-netns ${(t.netns as string).replace(/[^A-Za-z0-9_-]/g, '.')}( |\$)"; then ip link del ${l} && ${ok} || echo "@@R failed ip link del"; else echo "@@R failed its peer is elsewhere now"; fi`;
    }
    case 'orphan-ipam-lease': {
      const file = q(t.file as string);
      // Only while it still names the dead sandbox (host-local may have handed the address out again).
      // Its first line, without the \r host-local >= 0.8 ends it with ("ID\r\nIFNAME"; before 0.8 the ID alone).
      return `[ -f ${file} ] || { echo "@@R gone"; exit 0; }; v=; read -r v < ${file}; CR=$(printf '\\r'); v=\${v%"$CR"}; if [ "$v" = ${q(t.sandbox as string)} ]; then rm -f ${file} && ${ok}; else echo "@@R failed the address was handed out again"; fi`;
    }
    default:
      return `echo "@@R failed no node remedy"`;
  }
}

/**
 * Every remedy of the plan at once: each host's in one script over its connection,
 * the API's through the API (whatever host their finding is on).
 */
export async function applyFixes(
  todo: Action[],
  o: { hosts: Host[]; connect: (h: Host) => Promise<Transport>; api?: ApiSource },
): Promise<void> {
  const byHost = new Map<string, Action[]>();
  for (const a of todo) if (a.host && !API_FIXES.has(a.finding.kind)) byHost.set(a.host, [...(byHost.get(a.host) ?? []), a]);
  const viaApi = todo.filter((a) => API_FIXES.has(a.finding.kind));
  await Promise.all([
    ...[...byHost].map(async ([name, as]) => {
      const h = o.hosts.find((x) => x.name === name) as Host;
      await fixHost(await o.connect(h), h.become, as);
    }),
    (async () => {
      const clients = viaApi.length && o.api ? await auditClients(o.api) : undefined;
      await Promise.all(viaApi.map((a) => (clients ? fixApi(clients.core, a) : Promise.resolve())));
    })(),
  ]);
}

/** A remedy that said done is proven by the audit after it: its finding must be gone. */
export function proveFixes(todo: Action[], after: AuditReport): void {
  for (const a of todo) {
    const row = a.host ? (after.hosts.find((h) => h.host === a.host)?.findings ?? []) : after.cluster;
    const still = row.some((f) => f.kind === a.finding.kind && f.subject === a.finding.subject);
    if (still && a.outcome !== 'failed') Object.assign(a, { outcome: 'failed', why: `the audit after it still finds it${a.why ? ` (${a.why})` : ''}` });
  }
}

/** Runs one host's node remedies in one round trip and records each outcome. */
async function fixHost(t: Transport, become: boolean, actions: Action[]): Promise<void> {
  const ordered = [...actions].sort((a, b) => NODE_ORDER.indexOf(a.finding.kind) - NODE_ORDER.indexOf(b.finding.kind));
  const script = ordered.map((a, i) => `# ${a.what.replace(/\n/g, ' ')}\n( ${remedy(a.finding)} ) 2>&1 | sed -n 's/^@@R /@@${i} /p'`).join('\n');
  const r = await t.exec(`PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n${STOP_PROCS}\n${RM_CGROUPS}\n${script}\n`, { sudo: become, timeoutSec: 120 });
  for (const [i, a] of ordered.entries()) {
    const m = new RegExp(`^@@${i} (done|gone|failed)(?: (.*))?$`, 'm').exec(r.stdout);
    if (!m) Object.assign(a, { outcome: 'failed', why: `no answer from the node (exit ${r.code}${r.stderr.trim() ? `: ${r.stderr.trim().split('\n').slice(-1)[0]}` : ''})` });
    else {
      a.outcome = m[1] as Action['outcome'];
      if (m[2]) a.why = m[2];
    }
  }
}

/** The API remedies: a force delete with the pod's UID as precondition, a namespace finalized. */
async function fixApi(core: CoreV1Api, a: Action): Promise<void> {
  const t = a.finding.target;
  try {
    if (a.finding.kind === 'stuck-terminating-pod') {
      await core.deleteNamespacedPod({ name: t.name as string, namespace: t.namespace as string, gracePeriodSeconds: 0, body: { preconditions: { uid: t.uid as string } } });
    } else if (a.finding.kind === 'stuck-terminating-namespace') {
      const ns = await core.readNamespace({ name: t.namespace as string });
      await core.replaceNamespaceFinalize({ name: t.namespace as string, body: { ...ns, spec: { ...ns.spec, finalizers: [] } } });
    }
    a.outcome = 'done';
  } catch (e) {
    if (codeOf(e) === 404) a.outcome = 'gone';
    else Object.assign(a, { outcome: 'failed', why: errorLine(e) });
  }
}

