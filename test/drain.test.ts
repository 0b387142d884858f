import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { down, up } from './helpers/sandbox.js';
import { KUBECONFIG, kubectl, ok, requireKubectl, workloadsOn } from './helpers/kubectl.js';
import { checkDrain, drainNode, planDrain, planFor, selects, waitDetached, type Kube } from '../src/cluster/drain.js';
import type { V1Pod } from '@kubernetes/client-node';
import { kubeClients } from '../src/cluster/kubeconfig.js';

/** What the API and the node hold for a node: to prove a refusal changed nothing. */
const snapshot = (node: string) => `${ok('get', 'node', node, '-o', 'jsonpath={.spec}')}\n${ok('get', 'pods', '-A', '-o', 'name', '--field-selector', `spec.nodeName=${node}`)}\n${workloadsOn(node).join(' ')}`;
/** kubectl's drain --dry-run=server: the pods it would evict and the DaemonSet pods it ignores. */
function kubectlPlan(node: string, ...flags: string[]) {
  const r = kubectl('drain', node, '--ignore-daemonsets', '--dry-run=server', ...flags);
  const evict = [...r.out.matchAll(/^evicting pod (\S+) \(server dry run\)$/gm)].map((m) => m[1] as string);
  const ignored = /ignoring DaemonSet-managed Pods: ([^;\n]+)/.exec(r.err)?.[1]?.split(', ') ?? [];
  return { code: r.code, err: r.err, evict: [...new Set(evict)].sort(), ignored: ignored.sort() };
}

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
  it('warns for what --force lets go', () => {
    const plan = planDrain([pod('b'), pod('ds', { owner: 'DaemonSet/gone' })], new Set(), { force: true, deleteEmptyDirData: false });
    expect(plan.warnings).toEqual(['deleting Pods that declare no controller: ns/b', 'ns/ds: daemonsets.apps "gone" not found']);
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

describe("decom's drain against kubectl's, on the cluster scenario with a blocking budget (pdb-blocked)", () => {
  let k: Kube;
  const soon = (s: number) => Date.now() + s * 1000;

  beforeAll(async () => {
    requireKubectl();
    up(['--nodes', '3', '--scenario', 'pdb-blocked']);
    k = (await kubeClients(KUBECONFIG))!;
  });
  afterAll(() => down());

  it('plans for the last worker exactly what kubectl drain evicts and ignores (and --dry-run=server changes nothing)', async () => {
    const before = snapshot('node3');
    const theirs = kubectlPlan('node3', '--delete-emptydir-data');
    expect(theirs.code, theirs.err).toBe(0);
    const ours = await planFor(k, 'node3', { force: false, deleteEmptyDirData: true });
    expect(ours.refusals).toEqual([]);
    expect(ours.evict.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).sort()).toEqual(theirs.evict);
    expect(ours.skipped.filter((s) => s.why === 'DaemonSet-managed').map((s) => s.pod).sort()).toEqual(theirs.ignored);
    expect(theirs.evict.some((p) => p.startsWith('default/db-'))).toBe(true);
    expect(snapshot('node3')).toBe(before);
  });

  it('refuses the first worker without --force, naming the bare pod as kubectl does, with nothing changed', async () => {
    const before = snapshot('node2');
    const theirs = kubectlPlan('node2', '--delete-emptydir-data');
    expect(theirs.code).toBe(1);
    const refusal = 'cannot delete Pods that declare no controller (use --force to override): default/debug-shell';
    expect(theirs.err).toContain(refusal);
    const check = await checkDrain(k, 'node2', { force: false, deleteEmptyDirData: true, disableEviction: false });
    expect(check.refusal).toBe(`cannot drain node "node2": ${refusal}`);
    expect(snapshot('node2')).toBe(before);
  });

  it('with --force, the preflight stops at the budget that never allows a disruption (maxUnavailable 0), naming it and the pod, before the cordon', async () => {
    const before = snapshot('node2');
    const ledger = ok('get', 'pods', '-l', 'app=ledger', '-o', 'jsonpath={.items[0].metadata.name}');
    const check = await checkDrain(k, 'node2', { force: true, deleteEmptyDirData: true, disableEviction: false });
    expect(check.refusal).toBe(
      `cannot drain node "node2": a PodDisruptionBudget allows no disruption, at any scale: default/${ledger} (PodDisruptionBudget default/ledger: The disruption budget ledger needs 1 healthy pods and has 1 currently)`,
    );
    expect(check.plan.warnings).toEqual(['deleting Pods that declare no controller: default/debug-shell']);
    expect(snapshot('node2')).toBe(before);
    expect(workloadsOn('node2')).toContain(ledger);
  });

  it('drains the last worker: cordons, evicts (retrying what the web budget blocks), waits until the pods are gone, and the CSI volume detaches', async () => {
    const plan = await planFor(k, 'node3', { force: false, deleteEmptyDirData: true });
    const lines: string[] = [];
    const r = await drainNode(k, 'node3', { force: false, deleteEmptyDirData: true, disableEviction: false, deadline: soon(90), retryMs: 2000 }, (l) => lines.push(l));
    expect(r.evicted.sort()).toEqual(plan.evict.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).sort());
    expect(lines[0]).toBe('node/node3 cordoned');
    expect(r.cordoned).toBe(true);
    expect(ok('get', 'node', 'node3', '-o', 'jsonpath={.spec.unschedulable}')).toBe('true');
    // Every evicted pod is gone from the API and from the node; their ReplicaSets run them elsewhere.
    expect(ok('get', 'pods', '-A', '-o', 'name', '--field-selector', 'spec.nodeName=node3').split('\n').filter((p) => p && !/(calico-node|kube-proxy)-/.test(p))).toEqual([]);
    expect(workloadsOn('node3')).toEqual([]);
    expect(await waitDetached(k, 'node3', soon(20))).toEqual([]);
    expect(ok('get', 'volumeattachments', '-o', 'jsonpath={range .items[*]}{.spec.nodeName}{"\\n"}{end}').trim()).toBe('node2');
  });
});
