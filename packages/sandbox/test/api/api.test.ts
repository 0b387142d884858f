// The sandbox's Kubernetes API on a 3-node sandbox of the cluster scenario, judged by real
// kubectl and @kubernetes/client-node: output columns, discovery, watch-list, drain, errors,
// objects kept across `sandbox api stop` and `start`, TLS and the token.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, down, nodes, ssh, up } from '../../../decom/test/helpers/sandbox.js';
import { KUBECONFIG, KUBECTL, containersOn, kubectl, notDaemonSet, ok, requireKubectl, sleep } from '../../../decom/test/helpers/kubectl.js';
import { tempDir } from '../../../decom/test/helpers/temp.js';

const work = tempDir('decom-api-');

/** A manifest applied with `kubectl create -f`. */
const create = (name: string, yaml: string) => {
  const f = join(work, `${name}.yaml`);
  writeFileSync(f, yaml);
  return ok('create', '-f', f);
};
const header = (out: string) => (out.split('\n')[0] ?? '').trim().split(/\s{2,}/);

/** A bare pod bound to a node (its kubelet runs it). */
const pod = (name: string, node: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: default, labels: {app: ${name}}}
spec:
  nodeName: ${node}
  containers: [{name: main, image: registry.k8s.io/busybox:sandbox, command: [sleep, '3600']}]
`;

/** The pod names whose containers (not sandboxes) exist on a node, read over SSH with ctr. */
describe("the sandbox's Kubernetes API on the cluster scenario, judged by real kubectl", () => {
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--scenario', 'cluster']);
  });
  afterAll(() => down());

  // Golden outputs: what kubectl 1.36 prints against a kubeadm cluster (headers, row shapes, messages).
  it('kubectl get nodes and -o wide print the columns a real cluster prints, from the server-side Table', () => {
    const plain = ok('get', 'nodes');
    expect(header(plain)).toEqual(['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION']);
    expect(plain).toMatch(/^node1\s+Ready\s+control-plane\s+(\d+[smhd])+\s+v1\.32\.4$/m);
    expect(plain).toMatch(/^node2\s+Ready\s+<none>\s+(\d+[smhd])+\s+v1\.32\.4$/m);
    const wide = ok('get', 'nodes', '-o', 'wide');
    expect(header(wide)).toEqual(['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION', 'INTERNAL-IP', 'EXTERNAL-IP', 'OS-IMAGE', 'KERNEL-VERSION', 'CONTAINER-RUNTIME']);
    for (const n of nodes()) expect(wide).toMatch(new RegExp(`^${n.name}\\s.*\\s${n.addr.replace(/\./g, '\\.')}\\s+<none>\\s+Debian GNU/Linux 12 \\(bookworm\\)\\s+\\S+\\s+containerd://\\d+\\.\\d+\\.\\d+$`, 'm'));
    // Each kubelet registered its Node with its node's machine-id.
    for (const n of ['node1', 'node2']) {
      expect(JSON.parse(ok('get', 'node', n, '-o', 'json')).status.nodeInfo.machineID).toBe(ssh(n, 'cat /etc/machine-id').trim());
    }
  });

  it('answers discovery as a real server does: kubectl -v=6 shows every request succeed, aggregated discovery, no fallback', () => {
    const r = kubectl('get', 'pods', '-A', '-v=6');
    expect(r.code).toBe(0);
    // kubectl 1.36 logs each response as structured fields: verb="GET" url="…" status="200 OK".
    const requests = r.err.split('\n').filter((l) => l.includes('round_trippers') && l.includes('"Response"'));
    expect(requests.some((l) => /verb="GET" url="https:\/\/\S+\/api\/v1\/pods\?limit=500" status="200 OK"/.test(l))).toBe(true);
    expect(requests.filter((l) => !/ status="200 OK" /.test(l))).toEqual([]);
    expect(r.err).not.toMatch(/fallback|falling back|couldn't get|unable to|error/i);
  });

  it('kubectl get pods -A prints the real columns: DaemonSet, Deployment and mirror pods run, and their containers run on the nodes', () => {
    const pods = ok('get', 'pods', '-A');
    expect(header(pods)).toEqual(['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
    expect(pods).toMatch(/^kube-system\s+kube-apiserver-node1\s+1\/1\s+Running\s+0\s+(\d+[smhd])+$/m);
    expect(pods.match(/^kube-system\s+kube-proxy-[a-z0-9]{5}\s+1\/1\s+Running/gm)).toHaveLength(3);
    for (const n of nodes()) expect(containersOn(n.name).filter((p) => p.startsWith('kube-proxy-')), n.name).toHaveLength(1);
    expect(pods.match(/^default\s+web-7c5ddbdf54-[a-z0-9]{5}\s+1\/1\s+Running\s+0\s+(\d+[smhd])+$/gm)).toHaveLength(3);
    expect(ok('get', 'pods', '-o', 'wide')).toMatch(/^debug-shell\s+1\/1\s+Running\s+0\s+(\d+[smhd])+\s+10\.244\.\d+\.\d+\s+node2\s+<none>\s+<none>$/m);
    expect(containersOn('node2')).toContain('debug-shell');
    const mirror = JSON.parse(ok('get', 'pod', '-n', 'kube-system', 'kube-apiserver-node1', '-o', 'json'));
    expect(mirror.metadata.annotations['kubernetes.io/config.mirror']).toMatch(/^[0-9a-f]{32}$/);
    expect(mirror.metadata.ownerReferences[0]).toMatchObject({ kind: 'Node', name: 'node1', controller: true });
    expect(JSON.parse(ok('get', 'pdb', 'web', '-o', 'json')).status).toMatchObject({ disruptionsAllowed: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3 });
  });

  it('kubectl cordon, uncordon and wait print and do what they do', () => {
    expect(ok('cordon', 'node3').trim()).toBe('node/node3 cordoned');
    expect(ok('get', 'nodes')).toMatch(/^node3\s+Ready,SchedulingDisabled\s/m);
    expect(ok('cordon', 'node3').trim()).toBe('node/node3 already cordoned');
    expect(ok('uncordon', 'node3').trim()).toBe('node/node3 uncordoned');
    expect(JSON.parse(ok('get', 'node', 'node3', '-o', 'json')).spec.unschedulable).toBeUndefined();
    expect(ok('wait', '--for=condition=Ready', 'pod/debug-shell', '--timeout=10s').trim()).toBe('pod/debug-shell condition met');
  });

  it("serves client-go's watch-list as kube-apiserver does: the objects as ADDED, then a BOOKMARK ending the initial events; its required options enforced", () => {
    const events = ok('get', '--raw', '/api/v1/namespaces/default/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1')
      .trim().split('\n').map((l) => JSON.parse(l) as { type: string; object: { kind: string; apiVersion: string; metadata: { name?: string; resourceVersion: string; annotations?: Record<string, string> } } });
    const pods = ok('get', 'pods', '-o', 'jsonpath={.items[*].metadata.name}').trim().split(' ').sort();
    expect(events.slice(0, -1).map((e) => `${e.type} ${e.object.metadata.name}`).sort()).toEqual(pods.map((p) => `ADDED ${p}`));
    const bookmark = events.at(-1)!;
    expect(bookmark).toMatchObject({ type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { annotations: { 'k8s.io/initial-events-end': 'true' } } } });
    expect(Number(bookmark.object.metadata.resourceVersion)).toBeGreaterThanOrEqual(Math.max(...events.slice(0, -1).map((e) => Number(e.object.metadata.resourceVersion))));
    const refused = kubectl('get', '--raw', '/api/v1/pods?watch=true&sendInitialEvents=true&timeoutSeconds=1');
    expect(refused.code).toBe(1);
    // kubectl prints the Status's causes, one per field.
    expect(refused.err).toContain('The ListOptions "" is invalid: \n* resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan\n* allowWatchBookmarks: Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true');
    const list = kubectl('get', '--raw', '/api/v1/pods?sendInitialEvents=true');
    expect(list.code).toBe(1);
    expect(list.err).toContain('sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list');
  });

  it('kubectl drain of the first worker: refuses its bare pod without --force; with it, skips DaemonSet pods, evicts the rest, waits, and their containers are gone from the node', () => {
    const refused = kubectl('drain', 'node2', '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=20s');
    expect(refused.code).toBe(1);
    expect(refused.out.trim()).toBe('node/node2 cordoned');
    expect(refused.err).toContain('error: unable to drain node "node2" due to error: cannot delete Pods that declare no controller (use --force to override): default/debug-shell, continuing command...');

    const r = kubectl('drain', 'node2', '--ignore-daemonsets', '--delete-emptydir-data', '--force', '--timeout=60s');
    expect(r.code, r.err).toBe(0);
    const warning = r.err.split('\n').find((l) => l.startsWith('Warning: '))!;
    // kubectl joins its warnings in Go map order: each part is checked on its own.
    expect(warning.slice('Warning: '.length).split('; ').sort()).toEqual([
      'deleting Pods that declare no controller: default/debug-shell',
      expect.stringMatching(/^ignoring DaemonSet-managed Pods: kube-system\/(calico-node|kube-proxy)-[a-z0-9]{5}, kube-system\/(calico-node|kube-proxy)-[a-z0-9]{5}$/),
    ]);
    const lines = r.out.trim().split('\n');
    expect(lines[0]).toBe('node/node2 already cordoned');
    expect(lines).toContain('evicting pod default/debug-shell');
    expect(lines).toContain('pod/debug-shell evicted');
    expect(lines.filter((l) => /^pod\/cache-6b9f7d5c8-[a-z0-9]{5} evicted$/.test(l))).toHaveLength(1);
    expect(lines.pop()).toBe('node/node2 drained');
    // Only DaemonSet pods are left, in the API and on the node.
    expect(ok('get', 'pods', '-A', '--field-selector', 'spec.nodeName=node2', '-o', 'name').trim().split('\n').every((p) => /^pod\/(calico-node|kube-proxy)-/.test(p))).toBe(true);
    expect(notDaemonSet(containersOn('node2'))).toEqual([]);
    // Their ReplicaSets' replacements run on the other worker.
    ok('wait', '--for=condition=Ready', 'pod', '-l', 'app=cache', '--timeout=30s');
    expect(ok('get', 'pods', '-l', 'app in (cache,web)', '-o', 'jsonpath={range .items[*]}{.spec.nodeName}{"\\n"}{end}').trim().split('\n')).toEqual(['node3', 'node3', 'node3', 'node3']);
    expect(ok('uncordon', 'node2').trim()).toBe('node/node2 uncordoned');
  });

  it('kubectl drain of the last worker needs no --force: it retries what the PDB blocks, and the CSI volume is detached from it', () => {
    const attachedTo = () => ok('get', 'volumeattachments', '-o', 'jsonpath={range .items[*]}{.spec.nodeName}{"\\n"}{end}').trim();
    expect(attachedTo()).toBe('node3');
    expect(ok('get', 'node', 'node3', '-o', 'jsonpath={.status.volumesAttached[*].name}')).toBe('kubernetes.io/csi/csi.sandbox.decom.io^vol-db-data');
    const r = kubectl('drain', 'node3', '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=90s');
    expect(r.code, r.err).toBe(0);
    // All three web pods were there: the budget lets one go at a time, kubectl retries the others.
    expect(r.err).toMatch(/error when evicting pods\/"web-7c5ddbdf54-[a-z0-9]{5}" -n "default" \(will retry after 5s\): Cannot evict pod as it would violate the pod's disruption budget\./);
    expect(r.out.trim().split('\n').pop()).toBe('node/node3 drained');
    expect(notDaemonSet(containersOn('node3'))).toEqual([]);
    for (let i = 0; i < 20 && attachedTo() !== 'node2'; i++) sleep(0.5);
    expect(attachedTo()).toBe('node2');
    expect(ok('get', 'node', 'node3', '-o', 'jsonpath={.status.volumesAttached}')).toBe('');
    ok('wait', '--for=condition=Ready', 'pod', '-l', 'app=db', '--timeout=30s');
    expect(containersOn('node2')).toContain(JSON.parse(ok('get', 'pods', '-l', 'app=db', '-o', 'json')).items[0].metadata.name);
  });

  it('kubectl drain of the control-plane node skips its mirror pods (the kubelet runs them from manifests) without --force', () => {
    const r = kubectl('drain', 'node1', '--ignore-daemonsets');
    expect(r.code, r.err).toBe(0);
    expect(r.out.trim().split('\n')).toEqual(['node/node1 cordoned', 'node/node1 drained']);
    expect(r.err).toMatch(/^Warning: ignoring DaemonSet-managed Pods: kube-system\/(calico-node|kube-proxy)-[a-z0-9]{5}, kube-system\/(calico-node|kube-proxy)-[a-z0-9]{5}\n$/);
    const left = ok('get', 'pods', '-n', 'kube-system', '--field-selector', 'spec.nodeName=node1', '-o', 'name');
    for (const m of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler']) expect(left).toContain(`pod/${m}-node1`);
    ok('uncordon', 'node1');
  });

  it('kubectl apply --dry-run=server accepts Jobs, CronJobs and DaemonSets and stores nothing', () => {
    writeFileSync(join(work, 'batch.yaml'), [
      'apiVersion: batch/v1\nkind: Job\nmetadata: {name: backup, namespace: default}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: backup, image: registry.k8s.io/busybox:sandbox}]',
      'apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: default}\nspec:\n  schedule: "0 3 * * *"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers: [{name: n, image: registry.k8s.io/busybox:sandbox}]',
      'apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: node-exporter, namespace: kube-system}\nspec:\n  selector: {matchLabels: {app: node-exporter}}\n  template:\n    metadata: {labels: {app: node-exporter}}\n    spec: {containers: [{name: e, image: registry.k8s.io/busybox:sandbox, command: [sleep, "3600"]}]}',
    ].join('\n---\n'));
    expect(ok('apply', '--dry-run=server', '-f', join(work, 'batch.yaml')).trim().split('\n')).toEqual([
      'job.batch/backup created (server dry run)',
      'cronjob.batch/nightly created (server dry run)',
      'daemonset.apps/node-exporter created (server dry run)',
    ]);
    expect(ok('get', 'jobs,cronjobs', '-A', '-o', 'name')).toBe('');
    expect(ok('get', 'ds', '-n', 'kube-system', '-o', 'name').trim().split('\n')).toEqual(['daemonset.apps/calico-node', 'daemonset.apps/kube-proxy']);
  });

  it('kubectl get --raw, get -w printing a change, delete node', () => {
    const raw = JSON.parse(ok('get', '--raw', '/api/v1/nodes/node1'));
    expect(raw).toMatchObject({ kind: 'Node', apiVersion: 'v1', metadata: { name: 'node1' } });
    expect(raw.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    const watcher = spawn(KUBECTL, ['get', 'pods', '-w', '--no-headers'], { env: { ...process.env, KUBECONFIG } });
    let seen = '';
    watcher.stdout.on('data', (d: Buffer) => (seen += d.toString()));
    return new Promise<void>((resolve, reject) => {
      setTimeout(() => create('late', pod('late-1', 'node1')), 1000);
      const t0 = Date.now();
      const poll = setInterval(() => {
        if (/^late-1\s+\d\/1\s+(Pending|Running)/m.test(seen) || Date.now() - t0 > 10_000) {
          clearInterval(poll);
          watcher.kill();
          try {
            expect(seen).toMatch(/^late-1\s+\d\/1\s+(Pending|Running)/m);
            expect(ok('delete', 'node', 'node3').trim()).toBe('node "node3" deleted');
            expect(ok('get', 'nodes', '-o', 'name').trim().split('\n')).toEqual(['node/node1', 'node/node2']);
            // Its pods are collected (pod GC, within seconds); its running kubelet does not register it again.
            const onNode3 = () => ok('get', 'pods', '-A', '--field-selector', 'spec.nodeName=node3', '-o', 'name');
            for (let i = 0; i < 20 && onNode3(); i++) sleep(0.5);
            expect(onNode3()).toBe('');
            expect(ok('get', 'nodes', '-o', 'name').trim().split('\n')).toEqual(['node/node1', 'node/node2']);
            resolve();
          } catch (e) {
            reject(e);
          }
        }
      }, 100);
    });
  });

  it('answers bad requests as a real API server does: 404, 409 AlreadyExists and Conflict, 422 Invalid, 401', () => {
    expect(kubectl('get', 'node', 'nope').err.trim()).toBe('Error from server (NotFound): nodes "nope" not found');
    ok('create', 'namespace', 'team-a');
    expect(kubectl('create', 'namespace', 'team-a').err.trim()).toBe('Error from server (AlreadyExists): namespaces "team-a" already exists');
    const stale = JSON.parse(ok('get', 'node', 'node1', '-o', 'json'));
    ok('label', 'node', 'node1', 'rack=r1');
    writeFileSync(join(work, 'stale.json'), JSON.stringify(stale));
    expect(kubectl('replace', '-f', join(work, 'stale.json')).err).toContain(
      'Error from server (Conflict): error when replacing "' + join(work, 'stale.json') + '": Operation cannot be fulfilled on nodes "node1": the object has been modified; please apply your changes to the latest version and try again',
    );
    writeFileSync(join(work, 'bad.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: []}\n');
    expect(kubectl('create', '-f', join(work, 'bad.yaml')).err).toContain('The Pod "bad" is invalid: spec.containers: Required value');
    expect(kubectl('get', 'nodes', '--token', 'not-the-token').err.trim()).toBe('error: You must be logged in to the server (Unauthorized)');
  });

  it('keeps every object, with its resourceVersion, across `sandbox api stop` and `start`', () => {
    const before = ok('get', 'nodes,pods,namespaces', '-A', '-o', 'jsonpath={range .items[*]}{.kind}/{.metadata.name}@{.metadata.resourceVersion}{"\\n"}{end}');
    expect(decom(['sandbox', 'api', 'stop']).stdout).toBe('stopped (its objects are kept for the next start)\n');
    expect(kubectl('get', 'nodes').code).not.toBe(0);
    expect(decom(['sandbox', 'api', 'status'])).toMatchObject({ code: 1, stdout: 'not running\n' });
    expect(JSON.parse(decom(['sandbox', 'status', '--output', 'json']).stdout).api).toEqual({ running: false, kubeconfig: KUBECONFIG });
    expect(decom(['sandbox', 'api', 'start']).stdout).toMatch(/^started: pid \d+, kubeconfig /);
    expect(decom(['sandbox', 'status']).stdout).toContain(`  api      running, kubeconfig ${KUBECONFIG}`);
    expect(ok('get', 'nodes,pods,namespaces', '-A', '-o', 'jsonpath={range .items[*]}{.kind}/{.metadata.name}@{.metadata.resourceVersion}{"\\n"}{end}')).toBe(before);
  });

  it('@kubernetes/client-node lists, patches, evicts and watches through its typed APIs', async () => {
    const k8s = await import('@kubernetes/client-node');
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(KUBECONFIG);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    expect((await core.listNode()).items.map((n) => n.metadata?.name)).toEqual(['node1', 'node2']);
    await core.patchNode({ name: 'node2', body: { metadata: { labels: { rack: 'r2' } } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch));
    expect((await core.readNode({ name: 'node2' })).metadata?.labels?.rack).toBe('r2');
    await core.patchNode({ name: 'node2', body: { spec: { unschedulable: true } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    expect((await core.readNode({ name: 'node2' })).spec?.unschedulable).toBe(true);
    const events: string[] = [];
    const w = await new k8s.Watch(kc).watch('/api/v1/namespaces/default/pods', {}, (type, obj: { metadata?: { name?: string } }) => events.push(`${type} ${obj.metadata?.name}`), () => {});
    create('evictee', pod('evictee', 'node1'));
    await core.createNamespacedPodEviction({ name: 'evictee', namespace: 'default', body: { metadata: { name: 'evictee', namespace: 'default' } } });
    for (let i = 0; i < 150 && !events.includes('DELETED evictee'); i++) await new Promise((r) => setTimeout(r, 100));
    w.abort();
    expect(events).toContain('ADDED evictee');
    expect(events).toContain('DELETED evictee');
  });

  it('serves only over TLS with the sandbox CA, and only with the token', async () => {
    const host = nodes()[0]!.addr.replace(/\.\d+$/, '.1');
    const get = (opts: { ca?: Buffer; token?: string }) =>
      new Promise<number | string>((resolve) => {
        const req = request({ host, port: 6443, path: '/api/v1/nodes', ...(opts.ca ? { ca: opts.ca } : {}), headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {} }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
        req.end();
      });
    const kc = readFileSync(KUBECONFIG, 'utf8');
    const ca = Buffer.from(/certificate-authority-data: (\S+)/.exec(kc)![1]!, 'base64');
    const token = /token: (\S+)/.exec(kc)![1]!;
    expect(await get({ ca, token })).toBe(200);
    expect(await get({ ca })).toBe(401);
    expect(await get({ ca, token: 'x'.repeat(token.length) })).toBe(401);
    // Without the sandbox CA, the server's certificate is not trusted (its chain, sent with the CA that signs client certificates, ends in a CA the client does not know).
    expect(['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN']).toContain(await get({ token }));
  });
});
