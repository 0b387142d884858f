import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { down, up } from './helpers/sandbox.js';
import { runJson } from './helpers/run.js';
import { kubectl, ok, requireKubectl } from './helpers/kubectl.js';
import { planDrain, selects } from '../src/cluster/drain.js';
import type { V1Pod } from '@kubernetes/client-node';

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

describe('parity with kubectl drain: decom on one fresh cluster sandbox, kubectl on another, compared', () => {
  beforeAll(requireKubectl);
  afterAll(() => down());
  // Pod names differ between sandboxes by their random suffix; their owners (ReplicaSet, DaemonSet) do not.
  const owners = (pods: Iterable<string>) => [...pods].map((p) => p.replace(/-[a-z0-9]{5}$/, '')).sort();

  it('both refuse the first worker without --force naming the bare pod; on the last worker both evict and ignore the same pods', () => {
    const state = mkdtempSync(join(tmpdir(), 'decom-parity-'));
    up(['--nodes', '3', '--scenario', 'cluster']);
    const refused = runJson(['node2', '--yes', '--delete-emptydir-data'], state);
    const r = runJson(['node3', '--yes'], state);
    expect(r.code, r.stderr).toBe(0);
    const node3 = r.report.hosts.find((h) => h.host === 'node3')!;
    const ours = {
      evicted: owners(node3.steps.find((s) => s.name === 'drain')!.actions.filter((a) => a.what.startsWith('evict pod ')).map((a) => a.what.slice('evict pod '.length))),
      ignored: owners(/^ignoring DaemonSet-managed Pods \(the node reset stops them\): (.+)$/m.exec((node3.warnings ?? []).join('\n'))![1]!.split(', ')),
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
