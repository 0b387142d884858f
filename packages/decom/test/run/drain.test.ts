// The drain (src/cluster/drain.ts): its plan as a table of kubectl's filters, then decom's drain
// beside kubectl drain on 3-node sandboxes of the cluster scenario (budgets, a Terminating
// namespace, priority and fairness' 429s, a least-privilege drainer) and of stuck-terminating.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { down, STATE_DIR, up } from '../helpers/sandbox.js';
import { INVENTORY, reportOf, runJson, startRun, until } from '../helpers/run.js';
import { KUBECONFIG, KUBECTL, applyIn, kubectl, ok, requireKubectl, sleep } from '../helpers/kubectl.js';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { drainNode, planDrain, preflight, selects, type Kube } from '../../src/cluster/drain.js';
import type { V1Pod } from '@kubernetes/client-node';
import { tempDir } from '../helpers/temp.js';

describe("the drain's plan: kubectl's filters, as a table", () => {
  const pod = (name: string, o: { owner?: string; phase?: string; mirror?: boolean; emptyDir?: boolean } = {}): V1Pod => ({
    metadata: {
      name, namespace: 'ns',
      ...(o.owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: o.owner.split('/')[0]!, name: o.owner.split('/')[1]!, uid: 'u', controller: true }] } : {}),
      ...(o.mirror ? { annotations: { 'kubernetes.io/config.mirror': '' } } : {}),
    },
    spec: { containers: [], ...(o.emptyDir ? { volumes: [{ name: 'scratch', emptyDir: {} }] } : {}) },
    status: { phase: o.phase ?? 'Running' },
  });
  const names = (ps: V1Pod[]) => ps.map((p) => p.metadata!.name);
  const cases: [string, V1Pod, { force?: boolean; emptyDir?: boolean }, 'evict' | 'skip' | string][] = [
    ['a DaemonSet pod whose DaemonSet exists is skipped', pod('ds', { owner: 'DaemonSet/agent' }), {}, 'skip'],
    ['a finished DaemonSet pod goes', pod('ds', { owner: 'DaemonSet/agent', phase: 'Succeeded' }), {}, 'evict'],
    ['a pod of a deleted DaemonSet refuses, in kubectl\'s words', pod('ds', { owner: 'DaemonSet/gone' }), {}, 'cannot delete daemonsets.apps "gone" not found: ns/ds'],
    ['…and goes with --force', pod('ds', { owner: 'DaemonSet/gone' }), { force: true }, 'evict'],
    ['…unless it has emptyDir data: the filters after it still apply', pod('ds', { owner: 'DaemonSet/gone', emptyDir: true }), { force: true }, 'cannot delete Pods with local storage (use --delete-emptydir-data to override): ns/ds'],
    ['a mirror pod is skipped (the annotation\'s key, whatever its value)', pod('m', { mirror: true }), { force: true }, 'skip'],
    ['emptyDir refuses without --delete-emptydir-data', pod('e', { owner: 'ReplicaSet/r', emptyDir: true }), { force: true }, 'cannot delete Pods with local storage (use --delete-emptydir-data to override): ns/e'],
    ['…and goes with it', pod('e', { owner: 'ReplicaSet/r', emptyDir: true }), { emptyDir: true }, 'evict'],
    ['a finished emptyDir pod goes', pod('e', { owner: 'ReplicaSet/r', emptyDir: true, phase: 'Failed' }), {}, 'evict'],
    ['a bare pod refuses without --force', pod('b'), {}, 'cannot delete Pods that declare no controller (use --force to override): ns/b'],
    ['…and goes with it', pod('b'), { force: true }, 'evict'],
    ['a finished bare pod goes', pod('b', { phase: 'Succeeded' }), {}, 'evict'],
    ['a ReplicaSet pod goes', pod('r', { owner: 'ReplicaSet/r' }), {}, 'evict'],
  ];
  it.each(cases)('%s', (_, p, o, want) => {
    const plan = planDrain([p], new Set(['ns/agent']), { force: o.force ?? false, deleteEmptyDirData: o.emptyDir ?? false });
    if (want === 'evict') expect(names(plan.evict)).toEqual([p.metadata!.name]);
    else if (want === 'skip') expect([names(plan.evict), plan.skipped.length]).toEqual([[], 1]);
    else expect([names(plan.evict), plan.refusals]).toEqual([[], [want]]);
  });
  it('--skip-wait-for-delete-timeout: a pod deleted longer ago is skipped first (kubectl skipDeletedFilter), one deleted since is not', () => {
    const now = Date.parse('2026-01-01T00:10:00Z');
    const deleted = (name: string, at: string) => ({ ...pod(name, { owner: 'ReplicaSet/r' }), metadata: { ...pod(name, { owner: 'ReplicaSet/r' }).metadata, deletionTimestamp: new Date(at) } });
    const plan = planDrain([deleted('old', '2026-01-01T00:08:20Z'), deleted('new', '2026-01-01T00:09:50Z'), pod('bare')], new Set(), { force: false, deleteEmptyDirData: false, skipWaitForDeleteTimeoutSec: 20 }, now);
    expect(names(plan.evict)).toEqual(['new']);
    expect(plan.skipped).toEqual([{ pod: 'ns/old', why: 'deleted more than 20s ago (--skip-wait-for-delete-timeout)' }]);
    // Off (0): kubectl's default.
    expect(names(planDrain([deleted('old', '2026-01-01T00:08:20Z')], new Set(), { force: false, deleteEmptyDirData: false, skipWaitForDeleteTimeoutSec: 0 }, now).evict)).toEqual(['old']);
  });

  it('a pod whose grace period outlasts --drain-timeout is waited for up to its grace period (kubectl would wait on)', async () => {
    // A Kube of the calls drainNode makes: the pod stays 2 s after its eviction, its grace period is 3 s, the drain timeout 1 s.
    const evicted = { ...pod('slow', { owner: 'ReplicaSet/r' }), spec: { containers: [], terminationGracePeriodSeconds: 3 } };
    let goneAt = 0;
    const k = {
      core: {
        readNode: async () => ({ metadata: { name: 'n' }, spec: {} }),
        patchNode: async () => ({}),
        listPodForAllNamespaces: async () => ({ items: [evicted], metadata: {} }),
        createNamespacedPodEviction: async () => ((goneAt = Date.now() + 2000), {}),
        readNamespacedPod: async () => (Date.now() < goneAt ? evicted : Promise.reject({ code: 404, body: '{"kind":"Status","code":404}' })),
      },
    } as unknown as Kube;
    const done = await drainNode(k, 'n', { force: false, deleteEmptyDirData: false, disableEviction: false, deadline: Date.now() + 1000 });
    expect(done.evicted).toEqual(['ns/slow']);
  });

  it("the preflight: a cause-less 429 (priority and fairness' plain text) is no budget, a Terminating namespace is the eviction loop's, a 500 refuses in the API's words", async () => {
    const p = pod('web', { owner: 'ReplicaSet/r' });
    const answering = (e: unknown): Kube => ({ core: { createNamespacedPodEviction: async () => Promise.reject(e) }, policy: { readNamespacedPodDisruptionBudget: async () => { throw new Error('not read'); } } }) as unknown as Kube;
    const plan = { evict: [p], skipped: [], refusals: [], warnings: [] };
    expect(await preflight(answering({ code: 429, body: 'Too many requests, please try again later.\n' }), plan)).toEqual({ blocked: [], refused: [] });
    const terminating = { code: 403, body: JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'pods "web" is forbidden: unable to create new content in namespace ns because it is being terminated', details: { causes: [{ reason: 'NamespaceTerminating', message: 'namespace ns is being terminated' }] } }) };
    expect(await preflight(answering(terminating), plan)).toEqual({ blocked: [], refused: [] });
    const two = { code: 500, body: JSON.stringify({ kind: 'Status', status: 'Failure', code: 500, message: 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.' }) };
    expect(await preflight(answering(two), plan)).toEqual({ blocked: [], refused: ['ns/web: This pod has more than one PodDisruptionBudget, which the eviction subresource does not support. (HTTP 500)'] });
    const budget = { code: 429, body: JSON.stringify({ kind: 'Status', code: 429, reason: 'TooManyRequests', message: "Cannot evict pod as it would violate the pod's disruption budget.", details: { causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget web needs 2 healthy pods and has 2 currently' }] } }) };
    const [blocked] = (await preflight(answering(budget), plan)).blocked;
    expect(blocked).toMatchObject({ pod: 'ns/web', pdb: 'ns/web', never: false });
    expect(blocked!.message).toMatch(/^The disruption budget web needs 2 healthy pods and has 2 currently \(PodDisruptionBudget ns\/web could not be read, so whether it ever allows is not known: not read\)$/);
  });

  it('warns for what --force lets go', () => {
    const plan = planDrain([pod('b'), pod('ds', { owner: 'DaemonSet/gone' }), pod('c')], new Set(), { force: true, deleteEmptyDirData: false });
    // Grouped by message, in kubectl's words (pkg/drain PodDeleteList.Warnings).
    expect(plan.warnings).toEqual(['deleting Pods that declare no controller: ns/b, ns/c', 'daemonsets.apps "gone" not found: ns/ds']);
  });
  it('matches budgets by label selector as the API does', () => {
    expect(selects({ matchLabels: { app: 'web' } }, { app: 'web', tier: 'x' })).toBe(true);
    expect(selects({ matchLabels: { app: 'web' } }, { app: 'db' })).toBe(false);
    expect(selects({ matchExpressions: [{ key: 'app', operator: 'In', values: ['web', 'db'] }, { key: 'canary', operator: 'DoesNotExist' }] }, { app: 'db' })).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['web'] }] }, { app: 'web' })).toBe(false);
    expect(selects({}, { any: 'thing' })).toBe(true);
    expect(selects(undefined, { any: 'thing' })).toBe(false);
  });
});

describe('parity with kubectl drain: decom on one fresh cluster sandbox, kubectl on another, compared', () => {
  beforeAll(requireKubectl);
  afterAll(() => down());
  // Pod names differ between sandboxes by their random suffix; their owners (ReplicaSet, DaemonSet) do not.
  const owners = (pods: Iterable<string>) => [...pods].map((p) => p.replace(/-[a-z0-9]{5}$/, '')).sort();

  it('both refuse the first worker without --force naming the bare pod; on the last worker both evict and ignore the same pods', () => {
    const state = tempDir('decom-parity-');
    up(['--nodes', '3', '--scenario', 'cluster']);
    const refused = runJson(['node2', '--yes', '--delete-emptydir-data'], state);
    const r = runJson(['node3', '--yes'], state);
    expect(r.code, r.stderr).toBe(0);
    const node3 = r.report.hosts.find((h) => h.host === 'node3')!;
    const ours = {
      evicted: owners(node3.steps.find((s) => s.name === 'drain')!.actions.filter((a) => a.what.startsWith('evict pod ')).map((a) => a.what.slice('evict pod '.length))),
      ignored: owners(/^ignoring DaemonSet-managed Pods: (.+)$/m.exec((node3.warnings ?? []).join('\n'))![1]!.split(', ')),
    };
    down();

    up(['--nodes', '3', '--scenario', 'cluster']);
    const theirRefusal = kubectl('drain', 'node2', '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=60s');
    // kubectl cordons before it refuses (decom refuses first, changing nothing): node2 must take node3's pods.
    expect(ok('get', 'node', 'node2', '-o', 'jsonpath={.spec.unschedulable}')).toBe('true');
    ok('uncordon', 'node2');
    const theirs = kubectl('drain', 'node3', '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=90s');
    expect(theirs.code, theirs.err).toBe(0);
    const said = `${theirs.out}${theirs.err}`;
    expect({
      evicted: owners(new Set([...said.matchAll(/^evicting pod (\S+)$/gm)].map((m) => m[1]!))),
      ignored: owners(/ignoring DaemonSet-managed Pods: ([^;\n]+)/.exec(said)![1]!.split(', ')),
    }).toEqual(ours);
    expect(ours.evicted).toEqual(['default/db-6b9f7d5c8', 'default/web-7c5ddbdf54', 'default/web-7c5ddbdf54']);

    const refusal = 'cannot delete Pods that declare no controller (use --force to override): default/debug-shell';
    expect(theirRefusal.code).toBe(1);
    expect(theirRefusal.err).toContain(refusal);
    expect(refused.code).toBe(4);
    expect(refused.report.hosts[0]!.refused).toBe(`cannot drain node "node2": ${refusal}`);
  });
});

/** Whether a log line of the newest run journal in a state folder holds this text. */
const journalSays = (state: string, text: string): boolean => {
  try {
    const runs = readdirSync(join(state, 'runs')).filter((f) => f.endsWith('.jsonl')).sort();
    const lines = readFileSync(join(state, 'runs', runs[runs.length - 1]!), 'utf8').split('\n').filter(Boolean);
    return lines.some((l) => String((JSON.parse(l) as { line?: string }).line ?? '').includes(text));
  } catch {
    return false;
  }
};

describe("the drain against kube-apiserver's answers: two budgets over a pod, a Terminating namespace, priority and fairness' 429s", () => {
  const state = tempDir('decom-drain-api-');
  const work = tempDir('decom-drain-api-yaml-');
  const apply = applyIn(work);
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--scenario', 'cluster']);
  });
  afterAll(() => down());

  /** A kubeconfig for a ServiceAccount kube-system/NAME bound to a ClusterRole of these rules (YAML flow lists). */
  const kubeconfigFor = (name: string, rules: string[]): string => {
    apply(`rbac-${name}`, `apiVersion: v1
kind: ServiceAccount
metadata: {name: ${name}, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ${name}}
rules:
${rules.map((r) => `- ${r}`).join('\n')}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ${name}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${name}}
subjects: [{kind: ServiceAccount, name: ${name}, namespace: kube-system}]
`);
    const config = parseYaml(readFileSync(KUBECONFIG, 'utf8')) as { users: { user: Record<string, unknown> }[] };
    config.users[0]!.user = { token: ok('-n', 'kube-system', 'create', 'token', name).trim() };
    const file = join(work, `${name}.kubeconfig`);
    writeFileSync(file, stringifyYaml(config), { mode: 0o600 });
    return file;
  };
  /** What `kubectl drain` needs, and nodes list for decom's nowhere-to-go interlock. */
  const DRAINER = [
    '{apiGroups: [""], resources: [nodes], verbs: [get, patch, list]}',
    '{apiGroups: [""], resources: [pods], verbs: [get, list]}',
    '{apiGroups: [""], resources: [pods/eviction], verbs: [create]}',
    '{apiGroups: [apps], resources: [daemonsets], verbs: [get]}',
    // The local-data interlock reads the PersistentVolumes (and the drain the moved pods' claims), as the README's ClusterRole grants.
    '{apiGroups: [""], resources: [persistentvolumes, persistentvolumeclaims], verbs: [get, list]}',
  ];

  it("a Running pod under two budgets: refused before anything changes, the API's message after the pod's name, every pod it would evict listed", () => {
    apply('web-too', 'apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web-too, namespace: default}\nspec: {minAvailable: 1, selector: {matchLabels: {app: web}}}\n');
    const web = ok('get', 'pods', '-l', 'app=web', '--field-selector', 'spec.nodeName=node3', '-o', 'jsonpath={.items[*].metadata.name}').split(' ').sort();
    expect(web.length).toBeGreaterThan(0);
    const r = runJson(['node3', '--yes'], state);
    expect(r.code, r.stderr).toBe(4);
    const refused = r.report.hosts[0]!.refused!;
    for (const p of web) expect(refused).toContain(`default/${p}: This pod has more than one PodDisruptionBudget, which the eviction subresource does not support. (HTTP 500)`);
    expect(refused).toMatch(/^cannot drain node "node3": .*; the pods it would evict: (default\/(db|web)-[\w-]+(, )?)+$/);
    expect(ok('get', 'node', 'node3', '-o', 'jsonpath={.spec.unschedulable}')).toBe('');
    ok('delete', 'pdb', 'web-too');
  });

  /** The drain step of a `--check` run of node3: its actions and warnings, or its refusal. */
  const checkDrainOf = (...flags: string[]) => {
    const r = runJson(['node3', '--yes', '--check', ...flags], state);
    const h = r.report.hosts[0]!;
    return { code: r.code, refused: h.refused, actions: h.steps.find((s) => s.name === 'drain')?.actions.map((a) => a.what) ?? [], warnings: h.warnings ?? [] };
  };

  it('nowhere to go: refused naming each pod and each Node\'s reason; --allow-pending lets it go, the Pending pods named', () => {
    ok('cordon', 'node2');
    try {
      const refused = checkDrainOf();
      expect(refused.code).toBe(4);
      expect(refused.refused).toMatch(/^no Node this run leaves could take the pods of node3: default\//);
      expect(refused.refused).toMatch(/default\/web-[\w-]+ \(node1: its taint node-role\.kubernetes\.io\/control-plane:NoSchedule is not tolerated; node2: cordoned\)/);
      expect(refused.refused).toMatch(/default\/db-[\w-]+ \(node1: .*; node2: cordoned\).*; add a node, or uncordon one, first, or pass --allow-pending to let them go Pending$/);
      const allowed = checkDrainOf('--allow-pending');
      expect(allowed.refused).toBeUndefined();
      expect(allowed.warnings).toContainEqual(expect.stringMatching(/^--allow-pending: these pods will be Pending, no other Node can take them: default\/(web|db)-/));
    } finally {
      ok('uncordon', 'node2');
    }
  });

  it('--pod-selector plans what kubectl drain --pod-selector evicts; a pod whose grace period outlasts --drain-timeout is waited for, and the plan says so', () => {
    const ours = checkDrainOf('--pod-selector', 'app=web').actions.filter((a) => a.startsWith('evict pod ')).map((a) => a.split(' ')[2]).sort();
    const theirs = kubectl('drain', 'node3', '--ignore-daemonsets', '--pod-selector', 'app=web', '--dry-run=server');
    expect(theirs.code, theirs.err).toBe(0);
    expect([...`${theirs.out}${theirs.err}`.matchAll(/^evicting pod (\S+) \(server dry run\)$/gm)].map((m) => m[1]).sort()).toEqual(ours);
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.every((p) => p!.startsWith('default/web-'))).toBe(true);
    ok('uncordon', 'node3'); // kubectl's dry run cordons for real
    // --grace-period: the Eviction both send carries it (the API's audit log holds each eviction's request object).
    const auditLog = join(STATE_DIR, 'api', 'audit.log');
    const from = readFileSync(auditLog, 'utf8').length;
    checkDrainOf('--pod-selector', 'app=web', '--grace-period', '7');
    expect(kubectl('drain', 'node3', '--ignore-daemonsets', '--pod-selector', 'app=web', '--grace-period=7', '--dry-run=server').code).toBe(0);
    ok('uncordon', 'node3');
    const evictions = readFileSync(auditLog, 'utf8').slice(from).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { userAgent: string; requestURI: string; requestObject?: { deleteOptions?: { gracePeriodSeconds?: number; dryRun?: string[] } } })
      .filter((e) => e.requestURI.includes('/eviction'));
    const graces = (agent: RegExp) => evictions.filter((e) => agent.test(e.userAgent)).map((e) => e.requestObject?.deleteOptions?.gracePeriodSeconds);
    // (decom's --check asks twice: the interlock before anything, then the step's plan.)
    expect(graces(/^decom\//).length).toBeGreaterThanOrEqual(ours.length);
    expect(graces(/^kubectl\//).length).toBe(ours.length);
    expect([...new Set([...graces(/^decom\//), ...graces(/^kubectl\//)])]).toEqual([7]);
    apply('slow-stop', `apiVersion: v1
kind: Pod
metadata:
  name: slow-stop
  namespace: default
  labels: {app: slow-stop}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: slow-stop, uid: 00000000-0000-4000-8000-000000000002, controller: true}]
spec:
  nodeName: node3
  terminationGracePeriodSeconds: 40
  containers: [{name: main, image: registry.k8s.io/busybox:sandbox, command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 1; done']}]
`);
    expect(checkDrainOf('--drain-timeout', '10s').actions).toContain('evict pod default/slow-stop (its grace period 40s is longer than --drain-timeout 10s: waited for up to 40s) (dry run: allowed)');
  });

  it("a least-privilege drainer (kubectl drain's verbs, and nodes list): kubectl drain completes, so does decom's drain step, which reads no finished pod's DaemonSet and lists no budget", async () => {
    const least = kubeconfigFor('drainer', DRAINER);
    // What the role does not grant is refused with kube-apiserver's message.
    const denied = kubectl('--kubeconfig', least, 'get', 'pdb', '-A');
    expect(denied.err).toContain('poddisruptionbudgets.policy is forbidden: User "system:serviceaccount:kube-system:drainer" cannot list resource "poddisruptionbudgets" in API group "policy" at the cluster scope');

    // On node2: a finished pod of a DaemonSet (that no longer exists), and a budget spent until the test frees it.
    apply('done', `apiVersion: v1
kind: Pod
metadata:
  name: agent-done
  namespace: default
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent-gone, uid: 00000000-0000-4000-8000-000000000003, controller: true}]
spec:
  nodeName: node2
  restartPolicy: Never
  containers: [{name: main, image: registry.k8s.io/busybox:sandbox, command: ["true"]}]
status: {phase: Succeeded}
`);
    expect(ok('get', 'pod', 'agent-done', '-o', 'jsonpath={.status.phase}')).toBe('Succeeded');
    ok('patch', 'pdb', 'web', '--type=merge', '-p', '{"spec":{"minAvailable":3}}');
    const auditLog = join(STATE_DIR, 'api', 'audit.log');
    const logged = readFileSync(auditLog, 'utf8').length;
    const run = startRun([INVENTORY, 'node2', '--tags', 'drain', '--yes', '--force', '--delete-emptydir-data', '--kubeconfig', least, '--output', 'json', '--state-dir', state]);
    await until(() => journalSays(state, 'The disruption budget web needs 3'), 60_000, 'a budget 429');
    ok('patch', 'pdb', 'web', '--type=merge', '-p', '{"spec":{"minAvailable":2}}');
    const done = await run.done;
    const r = reportOf(done.out);
    const drained = r.hosts[0]!.steps.find((x) => x.name === 'drain')!;
    expect(drained.status, drained.reason).toBe('changed');
    expect(ok('get', 'node', 'node2', '-o', 'jsonpath={.spec.unschedulable}')).toBe('true');
    expect(ok('get', 'pods', '-A', '--field-selector', 'spec.nodeName=node2', '-o', 'jsonpath={.items[*].metadata.name}').split(' ').filter((p) => p && !/^(calico-node|kube-proxy)-/.test(p))).toEqual([]);
    const requests = readFileSync(auditLog, 'utf8').slice(logged).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { user: string; verb: string; requestURI: string });
    const ours = requests.filter((x) => x.user === 'system:serviceaccount:kube-system:drainer');
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.filter((x) => x.requestURI.includes('/daemonsets/agent-gone'))).toEqual([]);
    expect(ours.filter((x) => x.verb === 'list' && x.requestURI.includes('poddisruptionbudgets'))).toEqual([]);

    // kubectl drain with the same kubeconfig, on node3 (node2's pods went there).
    ok('uncordon', 'node2');
    const theirs = kubectl('--kubeconfig', least, 'drain', 'node3', '--ignore-daemonsets', '--force', '--delete-emptydir-data', '--timeout=120s');
    expect(theirs.code, theirs.err).toBe(0);
    ok('uncordon', 'node3');
  });

  it("every API error is one line, with the API's own message and what it concerns: cordon, DaemonSet, eviction, budget", () => {
    const drainOnly = (kc: string, ...flags: string[]) => runJson(['node2', '--tags', 'drain', '--yes', '--force', '--delete-emptydir-data', '--kubeconfig', kc, ...flags], state);
    const user = (n: string) => `User "system:serviceaccount:kube-system:${n}"`;
    const noCordon = drainOnly(kubeconfigFor('no-cordon', DRAINER.map((r) => r.replace('[get, patch, list]', '[get, list]'))));
    const failed = noCordon.report.hosts[0]!.steps.find((x) => x.name === 'drain')!;
    expect(failed.reason).toBe(`cordon Node node2: nodes "node2" is forbidden: ${user('no-cordon')} cannot patch resource "nodes" in API group "" at the cluster scope (HTTP 403); nothing was changed`);
    const noDs = drainOnly(kubeconfigFor('no-ds', [...DRAINER.slice(0, 3), DRAINER[4]!]));
    expect(noDs.code).toBe(4);
    expect(noDs.report.hosts[0]!.refused).toMatch(new RegExp(`daemonsets\\.apps "calico-node" is forbidden: ${user('no-ds')} cannot get resource "daemonsets" in API group "apps" in the namespace "kube-system" \\(HTTP 403\\): kube-system/calico-node-`));
    const noEvict = drainOnly(kubeconfigFor('no-evict', [DRAINER[0]!, DRAINER[1]!, DRAINER[3]!, DRAINER[4]!]));
    expect(noEvict.code).toBe(4);
    expect(noEvict.report.hosts[0]!.refused).toMatch(new RegExp(`default/([\\w-]+): pods "\\1" is forbidden: ${user('no-evict')} cannot create resource "pods/eviction" in API group "" in the namespace "default" \\(HTTP 403\\)`));
    // A budget the role cannot read: the budget's 429 said, and why it is only waited for.
    ok('patch', 'pdb', 'web', '--type=merge', '-p', '{"spec":{"minAvailable":99}}');
    try {
      const planned = drainOnly(kubeconfigFor('drainer', DRAINER), '--check').report.hosts[0]!.steps.find((x) => x.name === 'drain')!.actions.map((a) => a.what);
      expect(planned).toContainEqual(expect.stringMatching(new RegExp(`^evict pod default/web-[\\w-]+ \\(dry run: The disruption budget web needs 99 healthy pods and has \\d+ currently \\(PodDisruptionBudget default/web could not be read, so whether it ever allows is not known: poddisruptionbudgets\\.policy "web" is forbidden: ${user('drainer')} cannot get resource "poddisruptionbudgets" in API group "policy" in the namespace "default" \\(HTTP 403\\)\\); retried until --drain-timeout\\)$`)));
    } finally {
      ok('patch', 'pdb', 'web', '--type=merge', '-p', '{"spec":{"minAvailable":2}}');
    }
    // Without nodes list, the nowhere-to-go interlock cannot be asked: refused, naming the permission (the local-data
    // interlock, which lists Nodes too and is asked first, let go with --allow-local-data).
    const noList = drainOnly(kubeconfigFor('no-list', DRAINER.map((r) => r.replace('[get, patch, list]', '[get, patch]'))), '--allow-local-data');
    expect(noList.code).toBe(4);
    expect(noList.report.hosts[0]!.refused).toBe(`cannot tell whether the pods of node2 have a Node to go to: listing Nodes failed: nodes is forbidden: ${user('no-list')} cannot list resource "nodes" in API group "" at the cluster scope (HTTP 403) (the drainer needs nodes list; or pass --allow-pending)`);
    for (const r of [noCordon, noDs, noEvict, noList]) expect(JSON.stringify(r.report)).not.toMatch(/HTTP-Code|Unknown API Status Code/);
    expect(ok('get', 'node', 'node2', '-o', 'jsonpath={.spec.unschedulable}')).toBe('');
  });

  it('a pod of a namespace held Terminating, not yet deleted: kubectl drain and decom both retry, and both complete once the namespace controller deletes it', async () => {
    const faults = (paused: boolean) => apply('faults', `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: decom-sandbox-faults, namespace: kube-system}\ndata: {namespaceContentDeletionPaused: "${paused}"}\n`);
    const pod = (name: string, node: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: held2
  labels: {app: held}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: held, uid: 00000000-0000-4000-8000-000000000004, controller: true}]
spec:
  nodeName: ${node}
  terminationGracePeriodSeconds: 2
  tolerations: [{operator: Exists}]
  containers: [{name: main, image: registry.k8s.io/busybox:sandbox, command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 1; done']}]
`;
    faults(true);
    apply('held2', `apiVersion: v1\nkind: Namespace\nmetadata: {name: held2}\n---\n${pod('on-node2', 'node2')}---\n${pod('on-node3', 'node3')}`);
    ok('delete', 'namespace', 'held2', '--wait=false');
    for (let i = 0; i < 50 && ok('get', 'namespace', 'held2', '-o', 'jsonpath={.status.phase}') !== 'Terminating'; i++) sleep(0.2);
    expect(ok('get', 'pods', '-n', 'held2', '-o', 'jsonpath={.items[*].metadata.deletionTimestamp}')).toBe('');
    let theirs = '';
    const kubectlDrain = spawn(KUBECTL, ['drain', 'node2', '--ignore-daemonsets', '--pod-selector', 'app=held', '--timeout=90s'], { env: { ...process.env, KUBECONFIG } });
    kubectlDrain.stdout.on('data', (b: Buffer) => (theirs += b));
    kubectlDrain.stderr.on('data', (b: Buffer) => (theirs += b));
    const kubectlDone = new Promise<number>((resolve) => kubectlDrain.on('close', (code) => resolve(code ?? -1)));
    const ours = startRun([INVENTORY, 'node3', '--tags', 'drain', '--yes', '--pod-selector', 'app=held', '--output', 'json', '--state-dir', state]);
    try {
      const said = (name: string) => `error when evicting pod "${name}" from terminating namespace "held2" (will retry after 5s): pods "${name}" is forbidden: unable to create new content in namespace held2 because it is being terminated`;
      await until(() => theirs.includes(said('on-node2')) && journalSays(state, said('on-node3')), 60_000, 'both drains to retry');
      faults(false);
      expect(await kubectlDone, theirs).toBe(0);
      const done = await ours.done;
      const r = reportOf(done.out);
      expect(r.hosts[0]!.steps.find((x) => x.name === 'drain')!.status).toBe('changed');
      expect(ok('get', 'pods', '-n', 'held2', '-o', 'name')).toBe('');
    } finally {
      faults(false);
      kubectlDrain.kill();
      ours.kill();
      ok('uncordon', 'node2');
      ok('uncordon', 'node3');
    }
  });

  it("a pod of a Terminating namespace is retried until it is deleted, priority and fairness' 429s are retried: the decommission completes (exit 0) and names no budget", async () => {
    // The budget's own 429 is the parity test's; here every 429 is priority and fairness'.
    ok('delete', 'pdb', 'web');
    // Pods on node3 to evict (the least-privilege test drained it): web scaled up over the workers.
    ok('patch', 'deployment', 'web', '--type=merge', '-p', '{"spec":{"replicas":6}}');
    const webOn3 = () => ok('get', 'pods', '-l', 'app=web', '--field-selector', 'spec.nodeName=node3,status.phase=Running', '-o', 'name').split('\n').filter(Boolean).length;
    for (let i = 0; i < 100 && webOn3() < 2; i++) sleep(0.3);
    expect(webOn3()).toBeGreaterThanOrEqual(2);
    // The sandbox's fault switches: every third eviction request refused as priority and fairness refuses one,
    // and the namespace controller not yet at the content of a Terminating namespace.
    const faults = (paused: boolean) =>
      apply('faults', `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: decom-sandbox-faults, namespace: kube-system}\ndata: {evictionTooManyRequestsEvery: "3", namespaceContentDeletionPaused: "${paused}"}\n`);
    faults(true);
    apply('held', `apiVersion: v1
kind: Namespace
metadata: {name: held}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: hold, namespace: held, finalizers: [example.com/hold]}
---
apiVersion: v1
kind: Pod
metadata:
  name: slow
  namespace: held
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: slow, uid: 00000000-0000-4000-8000-000000000001, controller: true}]
spec:
  nodeName: node3
  terminationGracePeriodSeconds: 8
  containers: [{name: main, image: registry.k8s.io/busybox:sandbox, command: [sleep, "3600"]}]
`);
    ok('delete', 'namespace', 'held', '--wait=false');
    for (let i = 0; i < 50 && ok('get', 'namespace', 'held', '-o', 'jsonpath={.status.phase}') !== 'Terminating'; i++) sleep(0.2);
    expect(ok('get', 'namespace', 'held', '-o', 'jsonpath={.status.phase}')).toBe('Terminating');
    // node3 is the pool's last schedulable node: --allow-pending lets it go, its pods going Pending.
    ok('cordon', 'node2');
    const run = startRun([INVENTORY, 'node3', '--yes', '--delete-emptydir-data', '--allow-pending', '--output', 'json', '--state-dir', state]);
    try {
      await until(() => journalSays(state, 'error when evicting pod "slow" from terminating namespace "held" (will retry after 5s)'), 90_000, 'the retry in a Terminating namespace');
      faults(false);
      const done = await run.done;
      const r = reportOf(done.out);
      expect(done.code, JSON.stringify(r.hosts[0]?.steps.find((x) => x.name === 'drain'))).toBe(0);
      const journal = readFileSync(r.journal, 'utf8');
      expect(journal).toMatch(/error when evicting pods\/\\"[\w-]+\\" -n \\"default\\" \(will retry after 5s\): Too many requests, please try again later\./);
      expect(`${JSON.stringify(r)}${journal}`).not.toMatch(/disruption budget|PodDisruptionBudget/i);
      expect(kubectl('get', 'pod', 'slow', '-n', 'held').code).not.toBe(0);
      expect(r.hosts[0]!.warnings).toContainEqual(expect.stringMatching(/^--allow-pending: these pods will be Pending, no other Node can take them: .*default\/web-[\w-]+ \(node1: its taint node-role\.kubernetes\.io\/control-plane:NoSchedule is not tolerated; node2: cordoned\)/));
      expect(ok('get', 'pods', '-l', 'app=web', '--field-selector', 'status.phase=Pending', '-o', 'name')).not.toBe('');
    } finally {
      run.kill();
      ok('uncordon', 'node2');
      ok('-n', 'kube-system', 'delete', 'configmap', 'decom-sandbox-faults');
      ok('-n', 'held', 'patch', 'configmap', 'hold', '--type=merge', '-p', '{"metadata":{"finalizers":null}}');
    }
  });
});

describe('pods deleted long ago on a dead kubelet or held by finalizers (stuck-terminating): --skip-wait-for-delete-timeout, as kubectl', () => {
  const state = tempDir('decom-drain-stuck-');
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--scenario', 'stuck-terminating']);
  });
  afterAll(() => down());

  it('both time out waiting for them without it (kubectl given a --timeout), and both complete with it once their deletion is older', () => {
    sleep(3); // the scenario deleted them moments ago: older than 2 s now
    const flags = ['--ignore-daemonsets', '--force', '--delete-emptydir-data'];
    const theirsWait = kubectl('drain', 'node2', ...flags, '--timeout=10s');
    expect(theirsWait.code).not.toBe(0);
    expect(theirsWait.err).toMatch(/error when waiting for pod "report-gen-28734" in namespace "default" to terminate: context deadline exceeded/);
    const theirs = kubectl('drain', 'node2', ...flags, '--skip-wait-for-delete-timeout=2', '--timeout=60s');
    expect(theirs.code, theirs.err).toBe(0);
    ok('uncordon', 'node2');

    const drainStep = (...extra: string[]) => runJson(['node2', '--tags', 'drain', '--yes', '--force', '--delete-emptydir-data', ...extra], state).report.hosts[0]!.steps.find((x) => x.name === 'drain')!;
    const waited = drainStep('--drain-timeout', '10s');
    expect(waited.status).toBe('failed');
    expect(waited.reason).toMatch(/default\/report-gen-28734 was evicted but is still there at the drain timeout \(its grace period: 2s\)/);
    expect(waited.reason).toMatch(/still on the node \(or not yet seen gone\): .*default\/report-gen-28734/);
    ok('uncordon', 'node2');
    const skipped = drainStep('--drain-timeout', '10s', '--skip-wait-for-delete-timeout', '2');
    expect(skipped.status, skipped.reason).toBe('changed');
    // Neither evicted nor waited for: no action names them.
    expect(skipped.actions.map((a) => a.what).join('\n')).not.toMatch(/report-gen-28734|exporter-7xk2m/);
  });
});
