// `decom run INVENTORY NODE`: the whole decommission on sandbox clusters (systemd
// nodes, the sandbox API, real etcd). What is asserted is what kubectl, etcdctl and
// the independent checker see afterwards, and what the user is told.
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { decom, down, ssh, up, addrOf, subnetAddr } from '../helpers/sandbox.js';
import { leftovers } from '../helpers/residue.js';
import { INVENTORY, reportOf, runJson, startRun, until, type RunReport } from '../helpers/run.js';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { quorumVerdict } from '../../src/cluster/etcd.js';
import { cannotTake, homeless, removeNode } from '../../src/cluster/node.js';
import type { ClusterContext } from '../../src/cluster/context.js';
import type { EtcdView } from '../../src/probes/state.js';
import { KUBECONFIG, KUBECTL, kubectl, ok, requireKubectl, sleep, workloadsOn } from '../helpers/kubectl.js';
import { tempDir } from '../helpers/temp.js';

const journalOf = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
const host = (r: RunReport, name: string) => r.hosts.find((h) => h.host === name)!;
const step = (r: RunReport, name: string, s: string) => host(r, name).steps.find((x) => x.name === s)!;
const changed = (r: RunReport, name: string) => host(r, name).steps.filter((s) => s.status === 'changed').map((s) => s.name);
const workloadPods = (lines: string) => lines.split('\n').filter((p) => p && !/(calico-node|kube-proxy)-/.test(p));
/** What the API and the node hold for a node: proves a refusal or --check changed nothing. */
const snapshot = (node: string) =>
  [
    ok('get', 'node', node, '-o', 'jsonpath={.spec}'),
    ok('get', 'pods', '-A', '-o', 'name', '--field-selector', `spec.nodeName=${node}`),
    ok('get', 'volumeattachments,leases', '-A', '-o', 'name'),
    workloadsOn(node).join(' '),
    ssh(node, 'systemctl is-active kubelet; ls /etc/kubernetes /var/backups/decom 2>&1; ctr -n k8s.io c ls -q | wc -l; ip -o link | grep -c veth; true'),
  ].join('\n');
/** An inventory like the sandbox's, with `edit` applied to its document. */
function inventoryWith(dir: string, edit: (doc: any) => void): string {
  const doc = parse(readFileSync(INVENTORY, 'utf8'));
  edit(doc);
  const file = join(dir, `hosts-${Math.random().toString(36).slice(2, 8)}.yaml`);
  writeFileSync(file, stringify(doc));
  return file;
}

describe('etcd quorum, judged on what the whole run leaves', () => {
  const m = (name: string, learner = false) => ({ id: name, name, isLearner: learner, peerURLs: [`http://${name}:2380`], clientURLs: [`http://${name}:2379`] });
  const view = (names: string[], healthy: string[]): EtcdView => ({
    endpoint: 'e', memberId: names[0], members: names.map((n) => m(n)),
    health: names.map((n) => ({ endpoint: `http://${n}:2379`, healthy: healthy.includes(n) })),
  });
  it('allows one of three healthy members to go, and refuses when the rest would not make a quorum', () => {
    expect(quorumVerdict(view(['a', 'b', 'c'], ['a', 'b', 'c']), m('c'))).toBeUndefined();
    expect(quorumVerdict(view(['a', 'b', 'c'], ['a', 'c']), m('c'))).toBe('removing etcd member c leaves 2 members of which 1 healthy, fewer than the 2 a quorum needs');
    expect(quorumVerdict(view(['a', 'b', 'c'], ['a']), m('a'))).toBe('etcd has no quorum (1 of 3 members healthy, 2 needed): a member cannot be removed');
    expect(quorumVerdict(view(['a'], ['a']), m('a'))).toBe("etcd member a is the cluster's last voting member: removing it ends the cluster");
    expect(quorumVerdict(view(['a', 'b', 'c'], ['b']), m('c', true))).toBeUndefined(); // a learner has no vote
  });
  it('counts the other members this run removes as gone', () => {
    const v = view(['a', 'b', 'c', 'd', 'e'], ['a', 'b', 'c', 'd']);
    expect(quorumVerdict(v, m('d'), [m('c')])).toBeUndefined();
    expect(quorumVerdict(v, m('d'), [m('c'), m('b')])).toBe('removing etcd member d (with c, b, also removed by this run) leaves 2 members of which 1 healthy, fewer than the 2 a quorum needs');
    expect(quorumVerdict(view(['a', 'b'], ['a', 'b']), m('a'), [m('b')])).toBe('this run removes every voting etcd member (a, b): that ends the cluster');
  });
});

describe('where evicted pods could go', () => {
  const node = (name: string, o: { taint?: string; unschedulable?: boolean; ready?: boolean } = {}): V1Node => ({
    metadata: { name },
    spec: { unschedulable: o.unschedulable ?? false, taints: o.taint ? [{ key: o.taint, effect: 'NoSchedule' }] : [] },
    status: { conditions: [{ type: 'Ready', status: o.ready === false ? 'Unknown' : 'True' }] },
  });
  const pod = (name: string, o: { bare?: boolean; tolerate?: string; selector?: Record<string, string> } = {}): V1Pod => ({
    metadata: { name, namespace: 'ns', ...(o.bare ? {} : { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u', controller: true }] }) },
    spec: { containers: [], ...(o.tolerate ? { tolerations: [{ key: o.tolerate, operator: 'Exists', effect: 'NoSchedule' }] } : {}), ...(o.selector ? { nodeSelector: o.selector } : {}) },
  });
  const names = (ps: V1Pod[]) => ps.map((p) => p.metadata!.name);
  const cp = node('cp', { taint: 'node-role.kubernetes.io/control-plane' });
  it('needs a Ready, schedulable node outside the run whose taints the pod tolerates (its controller makes the replacement: a bare pod needs none)', () => {
    // A nodeSelector pinning the pod here is its own, not necessarily its template's: not asked.
    const pods = [pod('web'), pod('tolerant', { tolerate: 'node-role.kubernetes.io/control-plane' }), pod('bare', { bare: true }), pod('pinned', { selector: { 'kubernetes.io/hostname': 'w1' } })];
    expect(names(homeless(pods, [cp, node('w1'), node('w2')], new Set(['w1', 'w2'])))).toEqual(['web', 'pinned']);
    expect(names(homeless(pods, [cp, node('w1'), node('w2', { unschedulable: true })], new Set(['w1'])))).toEqual(['web', 'pinned']);
    expect(names(homeless(pods, [cp, node('w1'), node('w2', { ready: false })], new Set(['w1'])))).toEqual(['web', 'pinned']);
    expect(names(homeless(pods, [cp, node('w1'), node('w2')], new Set(['w1'])))).toEqual([]);
  });
  it("says, per Node, what rules it out: this run, not Ready, cordoned, a taint the pod does not tolerate", () => {
    const p = pod('web');
    expect([cp, node('w1'), node('w2', { unschedulable: true }), node('w3', { ready: false }), node('w4')].map((n) => cannotTake(n, p, new Set(['w1'])))).toEqual([
      'its taint node-role.kubernetes.io/control-plane:NoSchedule is not tolerated', 'this run removes it', 'cordoned', 'not Ready', undefined,
    ]);
  });
});

describe("the Node's deletion: an API error in one line, with the API's own message", () => {
  it('a refused delete names the Node and says what the API said (not the client library\'s HTTP dump)', async () => {
    const forbidden = { code: 403, body: JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'nodes "node3" is forbidden: User "system:serviceaccount:kube-system:drainer" cannot delete resource "nodes" in API group "" at the cluster scope', reason: 'Forbidden', code: 403 }) };
    const node3 = { metadata: { name: 'node3', uid: 'uid-checked' } };
    const c = { nodeName: 'node3', node: node3, kube: { server: 'https://api', core: { readNode: async () => node3, deleteNode: async () => Promise.reject(forbidden) } } } as unknown as ClusterContext;
    await expect(removeNode(c, true)).rejects.toThrow(
      'delete Node node3: nodes "node3" is forbidden: User "system:serviceaccount:kube-system:drainer" cannot delete resource "nodes" in API group "" at the cluster scope (HTTP 403)',
    );
  });

  it("sends the checked Node's UID as the delete's precondition, and names a Node replaced between the read and the delete", async () => {
    // kube-apiserver's answer (rest.BeforeDelete) when the Node under the name has another UID.
    const message = 'Operation cannot be fulfilled on Node "node3": the UID in the precondition (uid-checked) does not match the UID in record (uid-new). The object might have been deleted and then recreated';
    const conflict = { code: 409, body: JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason: 'Conflict', code: 409 }) };
    const sent: unknown[] = [];
    const node3 = { metadata: { name: 'node3', uid: 'uid-checked' } };
    const c = { nodeName: 'node3', node: node3, kube: { server: 'https://api', core: { readNode: async () => node3, deleteNode: async (p: unknown) => (sent.push(p), Promise.reject(conflict)) } } } as unknown as ClusterContext;
    await expect(removeNode(c, true)).rejects.toThrow(
      `Node node3 is not the Node this run checked (UID uid-checked): the API refused its delete: ${message} (HTTP 409); left in place, with what the API holds for it (run again to check it)`,
    );
    expect(sent).toEqual([{ name: 'node3', body: { preconditions: { uid: 'uid-checked' } } }]);
  });
});

describe('decommission on the cluster scenario (3 nodes, etcd on node1)', () => {
  const state = tempDir('decom-decommission-');
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--etcd', '--scenario', 'cluster']);
  });
  afterAll(() => down());

  it('--check lists the cluster actions (evictions as server-side dry runs) and the reset, and changes nothing in the API or on the node', () => {
    const before = snapshot('node3');
    const r = runJson(['node3', '--check'], state);
    expect(r.code, r.stderr).toBe(0);
    const drain = step(r.report, 'node3', 'drain').actions.map((a) => a.what);
    expect(drain[0]).toBe('cordon Node node3');
    expect(drain.slice(1).sort()).toEqual(workloadPods(ok('get', 'pods', '-A', '-o', 'name', '--field-selector', 'spec.nodeName=node3')).map((p) => expect.stringMatching(new RegExp(`^evict pod default/${p.slice(4)} \\(dry run: allowed\\)$`))).sort());
    expect(step(r.report, 'node3', 'delete-node').actions[0]!.what).toBe('delete Node node3');
    expect(changed(r.report, 'node3')).toEqual(expect.arrayContaining(['drain', 'volumes', 'backup', 'kubelet', 'containers', 'files', 'installed', 'delete-node']));
    expect(snapshot('node3')).toBe(before);
  });

  it("one API for every command: the inventory's decom_kubeconfig, and --context over the current context, for verify's Node check and the decommission's clients", () => {
    const dir = tempDir('decom-context-');
    const none = { env: { KUBECONFIG: '', HOME: dir } };
    const sandbox = parse(readFileSync(KUBECONFIG, 'utf8'));
    const server = sandbox.clusters[0].cluster.server as string;
    // The sandbox API as context "sandbox" of a kubeconfig whose current context is a cluster that is not there.
    const two = join(dir, 'two-contexts');
    writeFileSync(two, stringify({
      ...sandbox,
      clusters: [{ name: 'gone', cluster: { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true } }, ...sandbox.clusters],
      contexts: [{ name: 'elsewhere', context: { cluster: 'gone', user: 'admin' } }, { name: 'sandbox', context: sandbox.contexts[0].context }],
      'current-context': 'elsewhere',
    }));
    const verified = (args: string[]) => {
      const r = decom(['verify', INVENTORY, 'node3', ...args, '--output', 'json'], none);
      return (JSON.parse(r.stdout) as { hosts: { findings: { kind: string; detail: string }[]; warnings?: string[] }[] }).hosts[0]!;
    };
    const registered = [`Node still registered at ${server} (Ready=True)`];
    const nodeObject = (h: ReturnType<typeof verified>) => h.findings.filter((f) => f.kind === 'node-object').map((f) => f.detail);
    // The sandbox's inventory names its kubeconfig: no --kubeconfig, no $KUBECONFIG, no ~/.kube/config needed.
    expect(nodeObject(verified([]))).toEqual(registered);
    expect(nodeObject(verified(['--kubeconfig', two, '--context', 'sandbox']))).toEqual(registered);
    const elsewhere = verified(['--kubeconfig', two]);
    expect(nodeObject(elsewhere)).toEqual([]);
    expect(elsewhere.warnings).toContainEqual(expect.stringMatching(/^could not ask https:\/\/127\.0\.0\.1:1 for its Node object: /));
    // The decommission plans through the context's API.
    const check = decom(['run', INVENTORY, 'node3', '--check', '--kubeconfig', two, '--context', 'sandbox', '--output', 'json', '--state-dir', state], none);
    expect(check.code, check.stderr).toBe(0);
    const report = JSON.parse(check.stdout) as RunReport;
    expect(step(report, 'node3', 'delete-node').actions[0]!.what).toBe('delete Node node3');
    expect(journalOf(report.journal)[0]).toMatchObject({ event: 'run-start', api: server });
  });

  it('refuses, exit 4 with nothing changed: the last control plane, and a host that is not the Node\'s machine', () => {
    const before = [snapshot('node1'), snapshot('node2')].join('\n');
    const last = runJson(['node1', '--yes'], state);
    expect(last.code).toBe(4);
    expect(host(last.report, 'node1').refused).toBe("Node node1 is the cluster's last control-plane node: removing it ends the cluster; pass --allow-last-control-plane if that is the intent");
    // node2's address, but the inventory says it is the Node node3: its machine-id says otherwise.
    const dir = tempDir('decom-inv-');
    const wrong = inventoryWith(dir, (d) => (d.all.hosts.node2.decom_node_name = 'node3'));
    const r = runJson(['node2', '--yes'], state, wrong);
    expect(r.code).toBe(4);
    const machineId = ssh('node2', 'cat /etc/machine-id').trim();
    const nodeId = ok('get', 'node', 'node3', '-o', 'jsonpath={.status.nodeInfo.machineID}');
    expect(host(r.report, 'node2').refused).toBe(
      `node2 (${addrOf('node2')}) has machine-id ${machineId}, but Node node3 reports ${nodeId}: the inventory address is another machine than the Node; refusing to drain and delete it`,
    );
    expect([snapshot('node1'), snapshot('node2')].join('\n')).toBe(before);
  });

  it("refuses the first worker without --force as kubectl does, naming the bare pod, before anything changes", () => {
    const before = snapshot('node2');
    const theirs = kubectl('drain', 'node2', '--ignore-daemonsets', '--delete-emptydir-data', '--dry-run=server');
    const r = runJson(['node2', '--yes', '--delete-emptydir-data'], state);
    expect(r.code).toBe(4);
    const refusal = 'cannot delete Pods that declare no controller (use --force to override): default/debug-shell';
    expect(theirs.err).toContain(refusal);
    expect(host(r.report, 'node2').refused).toBe(`cannot drain node "node2": ${refusal}`);
    expect(snapshot('node2')).toBe(before);
  });

  it('bad targets are refused before any host is touched: all without --allow-many, a --limit that leaves none, an empty name', () => {
    const all = decom(['run', INVENTORY, 'all', '--yes', '--state-dir', state]);
    expect([all.code, all.stderr.trim()]).toEqual([2, 'decom: "all" names several hosts: name the hosts one by one, or pass --allow-many']);
    const none = decom(['run', INVENTORY, 'node3', '--limit', 'node2', '--yes', '--state-dir', state]);
    expect(none.code).toBe(2);
    expect(none.stderr.trim()).toBe('decom: --limit "node2" leaves no hosts: the targets match node3');
    const empty = decom(['run', INVENTORY, '', '--yes', '--state-dir', state]);
    expect([empty.code, empty.stderr.trim()]).toEqual([2, 'decom: empty host or group name']);
  });

  it('decommissions node3 end to end: a spent budget waits until a scale-up frees it, a second run on the node meanwhile is refused, the CSI volume detaches before the reset; the node is clean, its Node gone, its pods elsewhere', async () => {
    // What kubectl drain would evict and ignore, for parity.
    const plan = kubectl('drain', 'node3', '--ignore-daemonsets', '--delete-emptydir-data', '--dry-run=server');
    expect(plan.code, plan.err).toBe(0);
    const evicts = [...new Set([...plan.out.matchAll(/^evicting pod (\S+) \(server dry run\)$/gm)].map((m) => m[1]))].sort();
    const ignored = /ignoring DaemonSet-managed Pods: ([^;\n]+)/.exec(plan.err)![1]!.split(', ').sort();
    // Every web pod is needed: the budget allows no eviction until the Deployment is scaled to a fourth.
    ok('patch', 'pdb', 'web', '--type=merge', '-p', '{"spec":{"minAvailable":3}}');
    // When the VolumeAttachment is gone (the sandbox's CSI driver takes 3 s to detach), as a watch sees it.
    // Stamped by the shell as each line arrives: the test's own event loop blocks on its synchronous kubectl calls.
    let seen = '';
    const watch = spawn('sh', ['-c', `'${KUBECTL}' get volumeattachments --watch-only --output-watch-events -o 'jsonpath={.type} {.object.spec.nodeName}{"\\n"}' | while read -r l; do echo "$(date +%s%3N) $l"; done`], { env: { ...process.env, KUBECONFIG }, detached: true });
    watch.stdout.on('data', (b: Buffer) => (seen += String(b)));
    const run = startRun([INVENTORY, 'node3', '--yes', '--drain-timeout', '120s', '--output', 'json', '--state-dir', state]);
    await until(() => ok('get', 'node', 'node3', '-o', 'jsonpath={.spec.unschedulable}') === 'true', 30_000, 'the run to cordon node3');
    const second = runJson(['node3', '--yes'], state);
    expect(second.code).toBe(4);
    expect(host(second.report, 'node3').refused).toMatch(/^another decom run \(\S+: run, by \S+@\S+, since \S+\) is working on this node now/);
    sleep(3);
    expect(ok('get', 'pods', '-l', 'app=web', '-o', 'jsonpath={.items[*].spec.nodeName}')).toMatch(/node3/); // still waiting
    ok('patch', 'deployment', 'web', '--type=merge', '-p', '{"spec":{"replicas":4}}');
    const done = await run.done;
    const r = reportOf(done.out);
    expect(done.code, done.out).toBe(0);
    expect(host(r, 'node3').clean).toBe(true);
    // decom evicted what kubectl drain would have, and nothing else.
    expect(step(r, 'node3', 'drain').actions.filter((a) => a.what.startsWith('evict')).map((a) => a.what.replace('evict pod ', '')).sort()).toEqual(evicts);
    expect(host(r, 'node3').warnings).toContain(`ignoring DaemonSet-managed Pods: ${ignored.join(', ')}`);
    // The volume was detached before anything on the node was touched: the watch saw the VolumeAttachment go before the backup began.
    process.kill(-watch.pid!);
    const detached = Number(/^(\d+) DELETED node3$/m.exec(seen)?.[1] ?? 0);
    const backupAt = journalOf(r.journal).find((e) => e.host === 'node3' && e.event === 'step-start' && e.step === 'backup')!.ts as string;
    expect(detached).toBeGreaterThan(0);
    expect(detached).toBeLessThanOrEqual(Date.parse(backupAt));
    // Waited for when still attached once the drain ended (it may have detached while the budget held the drain).
    for (const a of step(r, 'node3', 'volumes').actions) expect(a.what).toMatch(/^waited \d+\.\d s for PV pv-db-data \(claim default\/db-data of pod default\/db-\w+, ReadWriteOnce, driver csi\.sandbox\.decom\.io\) to detach from Node node3$/);
    expect(step(r, 'node3', 'delete-node').actions.map((a) => a.what)).toEqual(['delete Node node3', 'delete CSINode node3', 'delete Lease kube-node-lease/node3']);

    expect(leftovers('node3')).toEqual([]);
    const gone = kubectl('get', 'node', 'node3');
    expect([gone.code, gone.err.trim()]).toEqual([1, 'Error from server (NotFound): nodes "node3" not found']);
    expect(kubectl('get', 'lease', '-n', 'kube-node-lease', 'node3').code).toBe(1);
    expect(ok('get', 'volumeattachments', '-o', 'jsonpath={range .items[*]}{.spec.nodeName}{"\\n"}{end}').trim()).toBe('node2');
    // The evicted pods' ReplicaSets run them on node2, Ready.
    ok('wait', '--for=condition=Ready', 'pod', '-l', 'app in (web,db)', '--timeout=30s');
    expect(ok('get', 'pods', '-l', 'app in (web,db)', '-o', 'jsonpath={.items[*].spec.nodeName}').split(' ').sort()).toEqual(['node2', 'node2', 'node2', 'node2', 'node2']);

    const again = runJson(['node3', '--yes'], state);
    expect(again.code, again.stderr).toBe(0);
    expect(changed(again.report, 'node3')).toEqual([]);
    expect(host(again.report, 'node3').warnings).toContain('Node node3 is not registered: nothing to drain');
  });

  it('deletes only the Node it checked: one deleted and registered again just before delete-node stays, and the run says why', () => {
    const checked = ok('get', 'node', 'node2', '-o', 'jsonpath={.metadata.uid}');
    // The step just before delete-node replaces the Node through the API, with the tests' kubectl, from the node.
    const kubeconfig = readFileSync(KUBECONFIG).toString('base64');
    const replace = [
      `echo '${kubeconfig}' | base64 -d > /tmp/replace-node.kubeconfig`,
      `k() { '${KUBECTL}' --kubeconfig /tmp/replace-node.kubeconfig "$@"; }`,
      'k delete node node2',
      `echo '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node2","labels":{"replaced":"yes"}}}' | k create -f -`,
    ].join('\n');
    const book = join(tempDir('decom-replaced-node-'), 'replace-node.yaml');
    writeFileSync(book, stringify({ apiVersion: 'decom/v1', kind: 'Playbook', steps: [{ name: 'replace the Node', shell: replace }, 'delete-node'] }));
    const r = runJson(['node2', '--playbook', book, '--yes'], state);
    const now = ok('get', 'node', 'node2', '-o', 'jsonpath={.metadata.uid} {.metadata.labels.replaced}').split(' ');
    expect(now[0]).not.toBe(checked);
    expect(now[1]).toBe('yes');
    expect(r.code).toBe(1);
    expect(step(r.report, 'node2', 'replace the Node').status).toBe('changed');
    expect(step(r.report, 'node2', 'delete-node')).toMatchObject({
      status: 'failed',
      reason: `Node node2 is not the Node this run checked (UID ${checked}): it was registered again since, as UID ${now[0]}; left in place, with what the API holds for it (run again to check it)`,
    });
  });
});

describe('decommission refused by a budget that never allows, and the API lost mid-drain (pdb-blocked)', () => {
  const state = tempDir('decom-decommission-pdb-');
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--scenario', 'pdb-blocked']);
  });
  afterAll(() => down());

  it('fails at the preflight (exit 4) naming the PDB and the pod: not cordoned, nothing evicted, the node untouched, its containers running', () => {
    const before = snapshot('node2');
    const ledger = ok('get', 'pods', '-l', 'app=ledger', '-o', 'jsonpath={.items[0].metadata.name}');
    const r = runJson(['node2', '--yes', '--force', '--delete-emptydir-data'], state);
    expect(r.code).toBe(4);
    expect(host(r.report, 'node2').refused).toBe(
      `cannot drain node "node2": a PodDisruptionBudget allows no disruption, at any scale: default/${ledger} (PodDisruptionBudget default/ledger: The disruption budget ledger needs 1 healthy pods and has 1 currently)`,
    );
    expect(snapshot('node2')).toBe(before);
    expect(workloadsOn('node2')).toContain(ledger);
  });

  it('stops with a clear error when the API goes away mid-drain; run again once it is back, it finishes', async () => {
    ok('patch', 'pdb', 'web', '--type=merge', '-p', '{"spec":{"minAvailable":3}}');
    const run = startRun([INVENTORY, 'node3', '--yes', '--drain-timeout', '60s', '--output', 'json', '--state-dir', state]);
    await until(() => ok('get', 'node', 'node3', '-o', 'jsonpath={.spec.unschedulable}') === 'true', 30_000, 'the run to cordon node3');
    expect(decom(['sandbox', 'api', 'stop']).code).toBe(0);
    const done = await run.done;
    const r = reportOf(done.out);
    expect(done.code).toBe(1);
    expect(step(r, 'node3', 'drain').reason).toMatch(/^node "node3" is cordoned but not drained: default\/[\w-]+: .*connect ECONNREFUSED [\d.]+:6443.*; the node is left as it is \(cordoned\)/);
    expect(step(r, 'node3', 'drain').reason).toContain(`connect ECONNREFUSED ${subnetAddr(1)}:6443`); // the API, on the host side of the instance's subnet
    expect(step(r, 'node3', 'backup').status).toBe('skipped');
    expect(ssh('node3', 'systemctl is-active kubelet').trim()).toBe('active');
    expect(decom(['sandbox', 'api', 'start']).code).toBe(0);
    ok('patch', 'pdb', 'web', '--type=merge', '-p', '{"spec":{"minAvailable":2}}');
    const again = runJson(['node3', '--yes'], state);
    expect(again.code, JSON.stringify(again.report.hosts[0]?.steps.filter((s) => s.status === 'failed'))).toBe(0);
    expect(leftovers('node3')).toEqual([]);
    expect(kubectl('get', 'node', 'node3').code).toBe(1);
  });
});

describe('decommission of a control-plane + etcd host in a 3-member real etcd cluster, and of a worker that is down', () => {
  const state = tempDir('decom-decommission-etcd-');
  const etcdctl = (node: string, args: string) => ssh(node, `ETCDCTL_API=3 etcdctl ${args} 2>&1`);
  const members = () => (JSON.parse(etcdctl('node1', 'member list -w json')) as { members: { name: string }[] }).members.map((m) => m.name).sort();
  beforeAll(() => {
    requireKubectl();
    // A short grace period: the node-is-down test waits for node5 to go NotReady.
    up(['--nodes', '5', '--control-planes', '3', '--etcd', '--scenario', 'cluster', '--node-monitor-grace-period', '8']);
  });
  afterAll(() => down());

  it('refuses a removal that breaks quorum, and one whose remaining members cannot be asked (exit 4, nothing changed)', () => {
    const before = snapshot('node3');
    ssh('node2', 'systemctl stop etcd');
    const quorum = runJson(['node3', '--yes'], state);
    expect(quorum.code).toBe(4);
    expect(host(quorum.report, 'node3').refused).toBe(
      'removing etcd member node3 leaves 2 members of which 1 healthy, fewer than the 2 a quorum needs (asked through node1); pass --allow-quorum-loss if that is the intent',
    );
    ssh('node1', 'systemctl stop etcd');
    const away = runJson(['node3', '--yes'], state);
    expect(away.code).toBe(4);
    expect(host(away.report, 'node3').refused).toMatch(/^node3 is an etcd host, and no etcd member that stays could be asked \(node1: .*; node2: .*\): its member cannot be removed safely$/);
    ssh('node1', 'systemctl start etcd');
    ssh('node2', 'systemctl start etcd');
    expect(snapshot('node3')).toBe(before);
    for (let i = 0; i < 100 && (etcdctl('node3', 'endpoint health --cluster').match(/ is healthy: /g) ?? []).length < 3; i++) sleep(0.2);
    expect(members()).toEqual(['node1', 'node2', 'node3']);
  });

  // A member's name is the member's own word: node3's becomes a path that climbs out of any folder it is put in.
  const PATH_NAME = 'x/../../../../../../etc/y';
  let removal: ReturnType<typeof runJson> | undefined;
  it(`a member named ${PATH_NAME}: its snapshot is named by its ID, and nothing decom writes or removes on the peer is outside /var/backups/decom`, () => {
    // etcd takes any name, and a member publishes its name each time it starts: node3's etcd restarted under the new one.
    ssh('node3', `sed -i 's|^ETCD_NAME=.*|ETCD_NAME=${PATH_NAME}|' /etc/default/etcd && systemctl restart etcd`);
    for (let i = 0; i < 100 && !members().includes(PATH_NAME); i++) sleep(0.2);
    expect(members()).toEqual(['node1', 'node2', PATH_NAME]);
    for (let i = 0; i < 100 && (etcdctl('node1', 'endpoint health --cluster').match(/ is healthy: /g) ?? []).length < 3; i++) sleep(0.2);
    // `member list` prints IDs in hex, as decom names them: ID, status, name, peer URLs, client URLs, learner.
    const id = etcdctl('node1', 'member list').split('\n').map((l) => l.split(', ')).find((f) => f[2] === PATH_NAME)![0]!;
    expect(id).toMatch(/^[0-9a-f]+$/);
    // About 10 MB of data: the snapshot crosses in more than one chunk.
    ssh('node1', 'for i in 1 2 3 4 5 6 7 8; do head -c 900000 /dev/urandom | base64 -w 0 | ETCDCTL_API=3 etcdctl put /decom-test/big$i >/dev/null; done');
    const etc = () => ssh('node1', 'stat -c "%a %u:%g %F" /etc; ls -A /etc | wc -l; ls -d /etc/y.db /etc/y 2>&1; true');
    const before = etc();
    expect(before).toMatch(/^755 0:0 directory\n\d+\nls: cannot access '\/etc\/y\.db': No such file or directory\n/);
    removal = runJson(['node3', '--yes'], state);
    expect(removal.code, JSON.stringify(host(removal.report, 'node3'))).toBe(0);
    expect(etc()).toBe(before);
    const dir = join(state, 'backups', removal.report.run, 'node3');
    expect(step(removal.report, 'node3', 'etcd-member').actions.map((a) => a.what)).toEqual([
      `saved an etcd snapshot on node1, copied to ${dir}/etcd-snapshot-${id}.db`,
      `remove etcd member ${PATH_NAME} (http://${addrOf('node3')}:2380) through node1`,
    ]);
    expect(readdirSync(dir).filter((f) => f.includes('etcd') || f.endsWith('.db'))).toEqual([`etcd-snapshot-${id}.db`]);
    // No copy of the cluster's data stays on the member it was taken through.
    expect(ssh('node1', 'ls -A /var/backups/decom 2>/dev/null; true').trim()).toBe('');
  });

  it('removes the member through one that stays: 2 members left, healthy; the snapshot is on the operator and etcdctl reads it; node3 clean and gone', () => {
    expect(removal, 'the removal run of the test before').toBeDefined();
    const r = removal!;
    expect(members()).toEqual(['node1', 'node2']);
    const health = etcdctl('node1', 'endpoint health --cluster');
    expect(health.split('\n').filter((l) => / is healthy: /.test(l)).map((l) => l.split(' ')[0]).sort()).toEqual([`http://${addrOf('node1')}:2379`, `http://${addrOf('node2')}:2379`]);
    const file = /copied to (\S+)$/.exec(step(r.report, 'node3', 'etcd-member').actions[0]!.what)![1]!;
    const status = spawnSync('etcdctl', ['snapshot', 'status', file, '-w', 'json'], { encoding: 'utf8', env: { ...process.env, ETCDCTL_API: '3' } });
    expect(status.status, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as { totalKey: number }).totalKey).toBeGreaterThan(8);
    expect(statSync(file).size).toBeGreaterThan(8 * 1024 * 1024);
    expect(leftovers('node3')).toEqual([]);
    expect(ssh('node3', 'systemctl is-active etcd; ls -A /var/lib/etcd; true').trim()).toBe('inactive');
    expect(kubectl('get', 'node', 'node3').code).toBe(1);
  });

  it('--node-is-down: refused while the Node is Ready; once it is not, the out-of-service taint instead of a drain, the pods and the volume move, the Node goes, the host is not touched', () => {
    const ready = runJson(['node4', '--yes', '--node-is-down'], state);
    expect(ready.code).toBe(4);
    expect(host(ready.report, 'node4').refused).toBe('--node-is-down, but Node node4 is Ready with its kubelet posting status: the host is not down');
    ssh('node5', 'systemctl stop kubelet');
    for (let i = 0; i < 60 && ok('get', 'node', 'node5', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') === 'True'; i++) sleep(0.5);
    const r = runJson(['node5', '--yes', '--node-is-down'], state);
    expect(r.code, JSON.stringify(host(r.report, 'node5'))).toBe(0);
    expect(host(r.report, 'node5').down).toBe('done');
    expect(step(r.report, 'node5', 'drain').actions.map((a) => a.what)).toEqual(['taint Node node5 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute (its pods are deleted, its volumes detached)']);
    // The volumes step waits for nothing (the host is off), and names the attachment.
    expect(step(r.report, 'node5', 'volumes').status).toBe('ok');
    expect(host(r.report, 'node5').warnings).toContainEqual(expect.stringMatching(/^VolumeAttachment csi-\w+: PV pv-db-data \(Bound\), claim default\/db-data \(Bound, ReadWriteOnce\), driver csi\.sandbox\.decom\.io, .*; --node-is-down: not waited for, it goes with the Node$/));
    expect(step(r.report, 'node5', 'backup')).toMatchObject({ status: 'skipped', reason: 'the host is down (--node-is-down)' });
    expect(host(r.report, 'node5').warnings).toContainEqual(expect.stringMatching(/^the host was down \(--node-is-down\): its node side was not reset/));
    expect(kubectl('get', 'node', 'node5').code).toBe(1);
    // delete-node deleted node5's attachment: the sandbox's driver detaches it within 3 s.
    const attachedTo = () => ok('get', 'volumeattachments', '-o', 'jsonpath={range .items[*]}{.spec.nodeName}{"\\n"}{end}').trim();
    for (let i = 0; i < 20 && attachedTo().includes('node5'); i++) sleep(0.5);
    expect(attachedTo()).toBe('node4');
    ok('wait', '--for=condition=Ready', 'pod', '-l', 'app in (web,db)', '--timeout=30s');
    expect(new Set(ok('get', 'pods', '-l', 'app in (web,db)', '-o', 'jsonpath={.items[*].spec.nodeName}').split(' '))).toEqual(new Set(['node4']));
    // decom never connected: the node keeps everything, to be reset before it rejoins.
    expect(ssh('node5', 'ls /etc/kubernetes/kubelet.conf')).toContain('kubelet.conf');
  });
});
