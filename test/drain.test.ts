import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { down, ssh, up } from './helpers/sandbox.js';
import { KUBECONFIG, kubectl, ok, requireKubectl } from './helpers/kubectl.js';
import { DrainError, drainNode, planFor, waitDetached, type Kube } from '../src/cluster/drain.js';
import { kubeClients } from '../src/cluster/kubeconfig.js';

/** The pods whose containers exist on a node (read over SSH with ctr), DaemonSet pods left out. */
const workloadsOn = (node: string): string[] =>
  ssh(node, `for id in $(ctr -n k8s.io c ls -q 'labels."io.cri-containerd.kind"==container'); do ctr -n k8s.io c info "$id" | sed -n 's/.*"io.kubernetes.pod.name": "\\([^"]*\\)".*/\\1/p' | head -1; done`)
    .split('\n')
    .filter((n) => n && !/^(calico-node|kube-proxy)-/.test(n))
    .sort();
/** What the API and the node hold for a node: to prove a refusal changed nothing. */
const snapshot = (node: string) => `${ok('get', 'node', node, '-o', 'jsonpath={.spec}')}\n${ok('get', 'pods', '-A', '-o', 'name', '--field-selector', `spec.nodeName=${node}`)}\n${workloadsOn(node).join(' ')}`;
/** kubectl's drain --dry-run=server: the pods it would evict and the DaemonSet pods it ignores. */
function kubectlPlan(node: string, ...flags: string[]) {
  const r = kubectl('drain', node, '--ignore-daemonsets', '--dry-run=server', ...flags);
  const evict = [...r.out.matchAll(/^evicting pod (\S+) \(server dry run\)$/gm)].map((m) => m[1] as string);
  const ignored = /ignoring DaemonSet-managed Pods: ([^;\n]+)/.exec(r.err)?.[1]?.split(', ') ?? [];
  return { code: r.code, err: r.err, evict: [...new Set(evict)].sort(), ignored: ignored.sort() };
}

describe("decom's drain against kubectl's, on the cluster scenario with a blocking budget (pdb-blocked)", () => {
  let k: Kube;
  const soon = (s: number) => Date.now() + s * 1000;

  beforeAll(async () => {
    requireKubectl();
    up(['--nodes', '3', '--scenario', 'pdb-blocked']);
    k = await kubeClients(KUBECONFIG);
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
    const err = await drainNode(k, 'node2', { force: false, deleteEmptyDirData: true, disableEviction: false, deadline: soon(30) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DrainError);
    expect((err as DrainError).message).toBe(`cannot drain node "node2": ${refusal}`);
    expect((err as DrainError).nothingChanged).toBe(true);
    expect(snapshot('node2')).toBe(before);
  });

  it('with --force, the preflight stops at the budget that allows no disruption, naming it and the pod, before the cordon', async () => {
    const before = snapshot('node2');
    const ledger = ok('get', 'pods', '-l', 'app=ledger', '-o', 'jsonpath={.items[0].metadata.name}');
    const err = await drainNode(k, 'node2', { force: true, deleteEmptyDirData: true, disableEviction: false, deadline: soon(30) }).catch((e: unknown) => e);
    expect((err as DrainError).message).toBe(
      `cannot drain node "node2": a PodDisruptionBudget allows no disruption now: default/${ledger}: The disruption budget ledger needs 1 healthy pods and has 1 currently`,
    );
    expect((err as DrainError).nothingChanged).toBe(true);
    expect(snapshot('node2')).toBe(before);
    expect(workloadsOn('node2')).toContain(ledger);
  });

  it('drains the last worker: cordons, evicts (retrying what the web budget blocks), waits until the pods are gone, and the CSI volume detaches', async () => {
    const plan = await planFor(k, 'node3', { force: false, deleteEmptyDirData: true });
    const lines: string[] = [];
    const r = await drainNode(k, 'node3', { force: false, deleteEmptyDirData: true, disableEviction: false, deadline: soon(90), retryMs: 2000 }, (l) => lines.push(l));
    expect(r.evicted.sort()).toEqual(plan.evict.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).sort());
    expect(lines[0]).toBe('node/node3 cordoned');
    expect(ok('get', 'node', 'node3', '-o', 'jsonpath={.spec.unschedulable}')).toBe('true');
    // Every evicted pod is gone from the API and from the node; their ReplicaSets run them elsewhere.
    expect(ok('get', 'pods', '-A', '-o', 'name', '--field-selector', 'spec.nodeName=node3').split('\n').filter((p) => p && !/(calico-node|kube-proxy)-/.test(p))).toEqual([]);
    expect(workloadsOn('node3')).toEqual([]);
    expect(await waitDetached(k, 'node3', soon(20))).toEqual([]);
    expect(ok('get', 'volumeattachments', '-o', 'jsonpath={range .items[*]}{.spec.nodeName}{"\\n"}{end}').trim()).toBe('node2');
  });
});
