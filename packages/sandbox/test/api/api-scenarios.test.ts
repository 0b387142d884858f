// The API scenarios, each on a 3-node sandbox (cluster, etcd-restore-phantoms, stuck-terminating,
// pdb-blocked): what the API holds against what runs on the nodes, read over SSH with ctr and
// decom's CRI client.
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, down, ssh, up } from '../../../decom/test/helpers/sandbox.js';
import { kubectl, ok, requireKubectl, sleep } from '../../../decom/test/helpers/kubectl.js';

/** Whether a pod's containers run on a node (containerd tasks found by the pod's CRI label). */
const runsOn = (node: string, pod: string) =>
  ssh(node, `for id in $(ctr -n k8s.io c ls -q 'labels."io.kubernetes.pod.name"==${pod}'); do ctr -n k8s.io t ls | awk -v id="$id" '$1 == id {print $3}'; done`).split('\n').filter(Boolean);

/** What containerd's CRI plugin itself knows on a node (over its socket, with decom's CRI client). */
function cri(node: string): { sandboxes: { id: string; pod: string; state: string }[]; containers: string[] } {
  const client = join(ROOT, 'dist', 'cri', 'client.js');
  const out = ssh(node, `node --input-type=module -e "import { CriClient, unixDial } from '${client}'; const c = await CriClient.connect(unixDial('/run/containerd/containerd.sock'));
console.log(JSON.stringify({ sandboxes: (await c.listPodSandbox()).map((p) => ({ id: p.id, pod: p.metadata.namespace + '/' + p.metadata.name, state: p.state })), containers: (await c.listContainers()).map((x) => x.id) })); await c.close();"`);
  return JSON.parse(out);
}

describe('the API scenarios: what the cluster holds matches what runs on the nodes, or deliberately not', () => {
  beforeAll(requireKubectl);
  afterEach(() => down());

  it("cluster: the CRI runs every pod the API puts on a node, and nothing else; a pod deleted through the API is stopped by its runtime, whose CNI DEL releases its network", () => {
    up(['--nodes', '3', '--scenario', 'cluster']);
    for (const node of ['node1', 'node2', 'node3']) {
      const api = JSON.parse(ok('get', 'pods', '-A', '--field-selector', `spec.nodeName=${node}`, '-o', 'json')).items.map((p: { metadata: { namespace: string; name: string } }) => `${p.metadata.namespace}/${p.metadata.name}`).sort();
      const known = cri(node);
      expect(known.sandboxes.filter((x) => x.state === 'SANDBOX_READY').map((x) => x.pod).sort(), node).toEqual(api);
      // Every k8s.io container is one the CRI knows (a sandbox or a container).
      const k8s = ssh(node, 'ctr -n k8s.io containers ls -q').split('\n').filter(Boolean).sort();
      expect(k8s, node).toEqual([...known.sandboxes.map((x) => x.id), ...known.containers].sort());
    }
    // debug-shell runs on node2's pod network: its lease, netns, veth and masquerade chain are the CNI plugins'.
    const sandbox = cri('node2').sandboxes.find((x) => x.pod === 'default/debug-shell')!.id;
    const traces = () =>
      ssh('node2', `grep -l '^${sandbox}' /var/lib/cni/networks/*/* 2>/dev/null | sed 's/^/lease /'; iptables-save -t nat | grep -c -F '${sandbox}' | sed 's/^/rules /'; ls /var/lib/cni/results | grep -c '${sandbox}' | sed 's/^/results /'; ip netns list | grep -c '^cni-' | sed 's/^/netns /'; true`);
    const before = traces();
    expect(before).toMatch(/^lease \/var\/lib\/cni\/networks\/cbr0\/10\.244\.\d+\.\d+$/m);
    expect(before).toMatch(/^rules [1-9]\d*$/m);
    expect(before).toMatch(/^results 2$/m);
    const netns = Number(/^netns (\d+)$/m.exec(before)![1]);
    ok('delete', 'pod', 'debug-shell', '--wait=true', '--timeout=30s');
    expect(traces()).toBe(`rules 0\nresults 0\nnetns ${netns - 1}\n`);
    expect(cri('node2').sandboxes.map((x) => x.pod)).not.toContain('default/debug-shell');
  });

  it('etcd-restore-phantoms: the API lists none of the phantom pods, whose containers and netns still run on the first worker', () => {
    up(['--nodes', '3', '--scenario', 'etcd-restore-phantoms']);
    const listed = ok('get', 'pods', '-A', '-o', 'name');
    expect(listed).toContain('pod/debug-shell'); // the cluster made before the snapshot is there
    for (const phantom of ['orders-5f7b8c9d4-kq2xz', 'metrics-agent-x8w2p']) {
      expect(listed).not.toContain(phantom);
      expect(runsOn('node2', phantom), phantom).toEqual(['RUNNING', 'RUNNING']);
    }
    // The network phantom keeps its cni-* netns: one more than the pods the API puts on node2's pod network.
    const apiNetPods = JSON.parse(ok('get', 'pods', '-A', '--field-selector', 'spec.nodeName=node2', '-o', 'json')).items.filter((p: { spec: { hostNetwork?: boolean } }) => !p.spec.hostNetwork).length;
    expect(ssh('node2', 'ip netns list | grep -c "^cni-"').trim()).toBe(String(apiNetPods + 1));
    // The kubelet saw no delete, so it keeps them running well after the restore.
    sleep(3);
    expect(runsOn('node2', 'orders-5f7b8c9d4-kq2xz')).toEqual(['RUNNING', 'RUNNING']);
  });

  it('stuck-terminating: pods Terminating on a finalizer and on a NotReady node, a namespace Terminating with the real conditions', () => {
    up(['--nodes', '3', '--scenario', 'stuck-terminating', '--node-monitor-grace-period', '5']);
    let nodes = '';
    for (let i = 0; i < 30 && !/^node3\s+NotReady\s/m.test(nodes); i++, sleep(0.5)) nodes = ok('get', 'nodes');
    expect(nodes).toMatch(/^node3\s+NotReady\s+<none>\s/m);
    expect(nodes).toMatch(/^node2\s+Ready\s+<none>\s/m);
    expect(JSON.parse(ok('get', 'node', 'node3', '-o', 'json')).spec.taints.map((t: { key: string; effect: string }) => `${t.key}:${t.effect}`)).toEqual([
      'node.kubernetes.io/unreachable:NoSchedule',
      'node.kubernetes.io/unreachable:NoExecute',
    ]);
    sleep(2); // past their 2 s grace period
    const pods = ok('get', 'pods', '-A');
    // Its kubelet is gone: Terminating for good.
    expect(pods).toMatch(/^default\s+sensor-agent-4kq9t\s+1\/1\s+Terminating\s/m);
    // Stopped by its kubelet, which posted the terminal phase (as kubelets do since 1.27), held by a
    // finalizer: kubectl prints how its container ended, not Terminating (printPod skips Terminating
    // for a terminal phase); its deletionTimestamp is what says it is stuck.
    expect(pods).toMatch(/^default\s+report-gen-28734\s+0\/1\s+Error\s/m);
    expect(pods).toMatch(/^retired\s+exporter-7xk2m\s+0\/1\s+Error\s/m);
    const stuck = JSON.parse(ok('get', 'pod', 'report-gen-28734', '-o', 'json'));
    expect(stuck.metadata.finalizers).toEqual(['example.com/archive']);
    expect(Date.parse(stuck.metadata.deletionTimestamp)).toBeLessThan(Date.now());
    expect(runsOn('node2', 'report-gen-28734')).toEqual([]);
    expect(runsOn('node3', 'sensor-agent-4kq9t')).toEqual(['RUNNING', 'RUNNING']);

    expect(ok('get', 'ns', 'retired')).toMatch(/^retired\s+Terminating\s+(\d+[smhd])+$/m);
    const ns = JSON.parse(ok('get', 'ns', 'retired', '-o', 'json'));
    expect(ns.spec.finalizers).toEqual(['kubernetes']);
    const conditions = Object.fromEntries(ns.status.conditions.map((c: { type: string; status: string; reason: string }) => [c.type, `${c.status} ${c.reason}`]));
    expect(conditions).toEqual({
      NamespaceDeletionDiscoveryFailure: 'True DiscoveryFailed',
      NamespaceDeletionGroupVersionParsingFailure: 'False ParsedGroupVersions',
      NamespaceDeletionContentFailure: 'False ContentDeleted',
      NamespaceContentRemaining: 'True SomeResourcesRemain',
      NamespaceFinalizersRemaining: 'True SomeFinalizersRemain',
    });
    const message = (type: string) => ns.status.conditions.find((c: { type: string }) => c.type === type).message;
    expect(message('NamespaceContentRemaining')).toBe('Some resources are remaining: pods. has 1 resource instances');
    expect(message('NamespaceFinalizersRemaining')).toBe('Some content in the namespace has finalizers remaining: example.com/drain-queue in 1 resource instances');
    expect(ok('get', 'apiservices')).toMatch(/^v1beta1\.metrics\.k8s\.io\s+kube-system\/metrics-server\s+False \(FailedDiscoveryCheck\)\s+(\d+[smhd])+$/m);
    // Removing what holds it lets the namespace go, as on a real cluster.
    ok('patch', 'pod', '-n', 'retired', 'exporter-7xk2m', '--type=merge', '-p', '{"metadata":{"finalizers":null}}');
    ok('delete', 'apiservice', 'v1beta1.metrics.k8s.io');
    kubectl('wait', '--for=delete', 'namespace/retired', '--timeout=15s'); // prints nothing when it is gone already
    expect(kubectl('get', 'ns', 'retired').err.trim()).toBe('Error from server (NotFound): namespaces "retired" not found');
  });

  it('pdb-blocked: kubectl drain of the first worker retries the eviction the budget forbids, with the real message, until its timeout', () => {
    up(['--nodes', '3', '--scenario', 'pdb-blocked']);
    const ledger = ok('get', 'pods', '-l', 'app=ledger', '-o', 'jsonpath={.items[0].metadata.name}');
    expect(JSON.parse(ok('get', 'pdb', 'ledger', '-o', 'json')).status).toMatchObject({ disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1 });
    expect(ok('get', 'pod', ledger, '-o', 'jsonpath={.spec.nodeName}')).toBe('node2');
    const r = kubectl('drain', 'node2', '--ignore-daemonsets', '--delete-emptydir-data', '--force', '--timeout=8s');
    expect(r.code).toBe(1);
    expect(r.err).toContain(`error when evicting pods/"${ledger}" -n "default" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`);
    expect(r.err).toContain(`error: unable to drain node "node2" due to error: error when evicting pods/"${ledger}" -n "default": global timeout reached: 8s, continuing command...`);
    // Everything else went; the protected pod still runs there.
    expect(r.out).toContain('pod/debug-shell evicted');
    expect(ok('get', 'pod', ledger, '-o', 'jsonpath={.status.phase}')).toBe('Running');
    expect(runsOn('node2', ledger)).toEqual(['RUNNING', 'RUNNING']);
  });
});
