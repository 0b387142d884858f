// The audit's rules (src/rules/audit.ts) on hand-made node states and API lists: the edges the
// sandbox scenarios do not plant (a static pod known by its mirror hash, a pod that failed but
// was never deleted, cgroups of the systemd driver, a netns a process entered).
import { describe, expect, it } from 'vitest';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { emptyState } from '../probes/index.js';
import type { NodeState } from '../probes/state.js';
import { parseKubeCgroups, parsePodTraces, podUidOfCgroup } from '../probes/parse.js';
import { apiFindings, etcdFindings, knownPods, nodeFindings, type ClusterView, type Fleet, type ListedResource } from './audit.js';
import { finishedPods, stuckObjects, unavailableApiServices } from './deletions.js';
import { finalizerRemover } from './finalizers.js';

const UID = '6a7789b6-6d5b-415c-8273-04842e2a6f4d';
const HASH = '3f2b0a4c9d8e7f6a5b4c3d2e1f0a9b8c'; // a static pod's UID on the node: its manifest's hash
const state = (over: Partial<NodeState>): NodeState => ({ ...emptyState(), hostname: 'node2', runtimes: [{ name: 'containerd', running: true, answered: true }], ...over });
const pod = (uid: string, over: Partial<V1Pod> = {}): V1Pod => ({ metadata: { name: `p-${uid.slice(0, 4)}`, namespace: 'default', uid, ...over.metadata }, spec: { nodeName: 'node2', containers: [], ...over.spec }, ...(over.status ? { status: over.status } : {}) });
const kinds = (fs: { kind: string; subject: string }[]) => fs.map((f) => `${f.kind} ${f.subject}`);
/** The kubelet's cgroups as the probe lists them in one hierarchy. */
const cgroups = (...paths: string[]) => parseKubeCgroups(`@/sys/fs/cgroup/pids\n${paths.join('\n')}\n`);

describe('pod traces as the probe reads them', () => {
  it('reads pod UIDs from the cgroupfs and systemd drivers, and static pods\' hashes', () => {
    expect(podUidOfCgroup(`/kubepods/besteffort/pod${UID.replaceAll('-', '_')}`)).toBe(UID);
    expect(podUidOfCgroup(`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID.replaceAll('-', '_')}.slice`)).toBe(UID);
    expect(podUidOfCgroup(`/kubepods/pod${HASH}`)).toBe(HASH);
    expect(podUidOfCgroup('/kubepods.slice/kubepods-besteffort.slice')).toBeUndefined();
  });
  it('reads netns inodes, each process\'s netns and host-local leases, skipping the allocator\'s own files', () => {
    const t = parsePodTraces(
      `${UID}\n`,
      '4026532837 /run/netns/cni-2fd2f851\n4026532404 /run/netns/app-vpn\n',
      'lrwxrwxrwx 1 root root 0 Nov 25 00:36 /proc/1/ns/net -> net:[4026532258]\nlrwxrwxrwx 1 root root 0 Nov 25 00:36 /proc/2656/ns/net -> net:[4026532837]\n',
      '/var/lib/cni/networks/cbr0/10.244.1.2\tc01a9db4\n/var/lib/cni/networks/cbr0/fd00::5\tabc\n',
    );
    expect(t.dirs).toEqual([UID]);
    expect([...t.netnsInodes]).toEqual([['cni-2fd2f851', '4026532837'], ['app-vpn', '4026532404']]);
    expect(t.procNetns.get(2656)).toBe('4026532837');
    expect(t.leases.map((l) => `${l.network} ${l.ip} ${l.sandbox}`)).toEqual(['cbr0 10.244.1.2 c01a9db4', 'cbr0 fd00::5 abc']);
  });
});

describe('node traces against the pods the API knows', () => {
  const running = (id: string, uid: string, kind: 'sandbox' | 'container', pid: number) => ({ id, runtime: 'containerd' as const, kind, podUid: uid, pod: 'kube-system/etcd-node2', state: 'running', pid });

  it('knows a static pod by its mirror pod\'s config.mirror hash: its containers are no phantom', () => {
    const s = state({ containers: [running('s1', HASH, 'sandbox', 10), running('c1', HASH, 'container', 11)] });
    const mirror = pod('9c1e0c5e-0000-4000-8000-000000000001', { metadata: { annotations: { 'kubernetes.io/config.mirror': HASH } } });
    expect(nodeFindings(s, knownPods([mirror])).findings).toEqual([]);
    expect(kinds(nodeFindings(s, knownPods([])).findings)).toEqual(['phantom-pod kube-system/etcd-node2']);
  });

  it("says which ports a phantom's processes hold (a rejoin's \"port already in use\")", () => {
    const s = state({
      containers: [running('s1', UID, 'sandbox', 10), running('c1', UID, 'container', 11)],
      k8sCgroups: new Map([[11, `/kubepods/besteffort/pod${UID.replaceAll('-', '_')}/c1`]]),
      processes: new Map([[11, { pid: 11, ppid: 9, name: 'kube-apiserver', args: 'kube-apiserver --secure-port=6443', start: 3 }]]),
      listeners: [{ addr: '*', port: 6443, holders: [{ name: 'kube-apiserver', pid: 11 }] }, { addr: '*', port: 22, holders: [{ name: 'sshd', pid: 5 }] }],
    });
    const [f] = nodeFindings(s, knownPods([])).findings;
    expect(f!.detail).toBe(`pod ${UID} runs on the node (2 of 2 containers running, listening on *:6443) but the API has no such pod`);
    expect(f!.evidence).toContain('process 11 kube-apiserver --secure-port=6443');
    expect(f!.evidence).toContain('port *:6443');
  });

  it('does not judge phantoms without the API, and counts a pod the runtime has as known', () => {
    const s = state({
      containers: [running('s1', UID, 'sandbox', 10)],
      pods: { ...emptyState().pods, dirs: [UID] },
      cgroups: cgroups('/kubepods', '/kubepods/besteffort', `/kubepods/besteffort/pod${UID}`),
    });
    expect(nodeFindings(s, undefined).findings).toEqual([]);
  });

  it('an empty orphaned cgroup and a pod dir of no pod; with processes left the cgroup says so', () => {
    const other = '0b0b0b0b-1111-4222-8333-444444444444';
    const s = state({
      mounts: [{ target: `/var/lib/kubelet/pods/${other}/volumes/kubernetes.io~empty-dir/cache`, source: 'tmpfs', fstype: 'tmpfs' }],
      k8sCgroups: new Map([[77, `/kubepods/besteffort/pod${other.replaceAll('-', '_')}/abc`]]),
      processes: new Map([[77, { pid: 77, ppid: 1, name: 'sleep', args: 'sleep 1d', start: 5 }]]),
      pods: { ...emptyState().pods, dirs: [other] },
      // The QoS tree and the container's cgroup are no orphans of their own: the pod's cgroup is the finding.
      cgroups: cgroups('/kubepods', '/kubepods/besteffort', `/kubepods/besteffort/pod${other.replaceAll('-', '_')}`, `/kubepods/besteffort/pod${other.replaceAll('-', '_')}/abc`),
    });
    const f = nodeFindings(s, knownPods([])).findings;
    expect(kinds(f)).toEqual([`orphan-pod-dir /var/lib/kubelet/pods/${other}`, `orphan-pod-cgroup /kubepods/besteffort/pod${other.replaceAll('-', '_')}`]);
    expect(f[0]!.detail).toBe('pod dir of no known pod, 1 mount still in it');
    expect(f[1]!.detail).toBe('pod cgroup of no known pod, 1 process still in it');
    expect(f[1]!.evidence).toEqual(['process 77 sleep 1d']);
  });

  it('a cni netns a process is in is used; a netns not named cni-* and its veth are never judged', () => {
    const s = state({
      netns: ['cni-a', 'cni-b', 'app-vpn'],
      links: [{ name: 'veth1', master: 'cni0', peerNetns: 'cni-a' }, { name: 'veth2', master: 'cni0', peerNetns: 'cni-b' }, { name: 'app-veth0', peerNetns: 'app-vpn' }],
      pods: { ...emptyState().pods, netnsInodes: new Map([['cni-a', '1'], ['cni-b', '2'], ['app-vpn', '3']]), procNetns: new Map([[10, '1'], [1, '9']]) },
    });
    expect(kinds(nodeFindings(s, knownPods([])).findings)).toEqual(['orphan-netns cni-b', 'orphan-veth veth2']);
  });

  const kubelet = new Map([[900, { pid: 900, ppid: 1, name: 'kubelet', args: '/usr/local/bin/kubelet', start: 1 }]]);

  it("a lease of a running sandbox is its pod's; of a stopped one too while a kubelet runs (the sandbox's teardown releases it), not with none; of an unknown one it is orphaned", () => {
    const s = state({
      containers: [running('live', UID, 'sandbox', 10), { ...running('stopped', HASH, 'sandbox', 11), state: 'exited' }],
      pods: { ...emptyState().pods, leases: ['live', 'stopped', 'gone'].map((id, i) => ({ file: `/var/lib/cni/networks/cbr0/10.0.0.${i}`, network: 'cbr0', ip: `10.0.0.${i}`, sandbox: id })) },
    });
    const leases = (st: NodeState) => nodeFindings(st, knownPods([pod(UID), pod(HASH)])).findings.filter((x) => x.kind === 'orphan-ipam-lease').map((x) => x.detail);
    expect(leases({ ...s, processes: kubelet })).toEqual(['cbr0 lease of 10.0.0.2 names sandbox gone, which does not exist']);
    expect(leases(s)).toEqual(['cbr0 lease of 10.0.0.1 names sandbox stopped, which is stopped, with no kubelet to tear it down', 'cbr0 lease of 10.0.0.2 names sandbox gone, which does not exist']);
  });

  it('a pod network mid-teardown is not an orphan while a kubelet runs: the empty netns a stopped sandbox still names, and its veth, are its teardown\'s', () => {
    const tearing = { ...running('stopped', UID, 'sandbox', 11), state: 'exited', pid: undefined, netns: 'cni-a' };
    const s = state({
      processes: kubelet,
      containers: [tearing],
      netns: ['cni-a', 'cni-b'],
      links: [{ name: 'veth1', master: 'cni0', peerNetns: 'cni-a' }, { name: 'veth2', master: 'cni0', peerNetns: 'cni-b' }],
      pods: { ...emptyState().pods, netnsInodes: new Map([['cni-a', '1'], ['cni-b', '2']]), procNetns: new Map([[1, '9']]) },
    });
    expect(kinds(nodeFindings(s, knownPods([pod(UID)])).findings)).toEqual(['orphan-netns cni-b', 'orphan-veth veth2']);
    const all = ['orphan-netns cni-a', 'orphan-netns cni-b', 'orphan-veth veth1', 'orphan-veth veth2'];
    // Once the runtime has removed the sandbox, or with no kubelet to finish its teardown, what is left is orphaned.
    expect(kinds(nodeFindings({ ...s, containers: [] }, knownPods([pod(UID)])).findings)).toEqual(all);
    expect(kinds(nodeFindings({ ...s, processes: new Map() }, knownPods([pod(UID)])).findings)).toEqual(all);
  });
});

describe("the API's own leftovers", () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  const fleet = (over: Partial<Fleet> = {}): Fleet => ({
    hostOfNode: new Map([['node2', 'node2']]), unreachable: new Set(), inventoryAddresses: new Set(['node2', '198.18.0.12']),
    states: new Map(), now, stuckAfterSec: 300, staleAfterSec: 3600, ...over,
  });
  const view = (over: Partial<ClusterView>): ClusterView => ({ server: 's', pods: [], nodes: [], namespaces: [], volumeAttachments: [], persistentVolumes: [], leases: [], apiServices: [], objects: [], ...over });
  const ready = (name: string, status: string, since: string): V1Node => ({ metadata: { name }, status: { conditions: [{ type: 'Ready', status, lastTransitionTime: new Date(since) }] } });

  it('judges a Terminating pod by its deletionTimestamp, not by its phase: a failed pod never deleted is not stuck', () => {
    const failed = pod(UID, { status: { phase: 'Failed', reason: 'Error' } });
    const deleting = pod(HASH, { metadata: { name: 'stuck', namespace: 'default', uid: HASH, deletionTimestamp: new Date('2026-11-25T11:50:00Z'), finalizers: ['example.com/x'] } });
    const recent = pod('0c0c0c0c-1111-4222-8333-444444444444', { metadata: { name: 'going', namespace: 'default', uid: '0c0c0c0c-1111-4222-8333-444444444444', deletionTimestamp: new Date('2026-11-25T11:58:00Z') } });
    const f = apiFindings(view({ pods: [failed, deleting, recent], nodes: [ready('node2', 'True', '2026-11-01T00:00:00Z')] }), fleet());
    expect(f.map((x) => `${x.kind} ${x.subject} ${x.host}`)).toEqual(['stuck-terminating-pod default/stuck node2']);
    expect(f[0]!.detail).toBe('Terminating for 10m0s past its grace period on node2: finalizers left: example.com/x');
  });

  it('a Node NotReady past --stale-after, said of an unreachable host; one Ready or recently NotReady is not', () => {
    const nodes = [ready('node2', 'Unknown', '2026-11-25T09:00:00Z'), ready('node5', 'False', '2026-11-25T11:30:00Z'), ready('node6', 'True', '2026-11-20T00:00:00Z')];
    const f = apiFindings(view({ nodes }), fleet({ unreachable: new Set(['node2']) }));
    expect(f.map((x) => `${x.subject}: ${x.detail}`)).toEqual(['node2: NotReady for 3h0m: its host node2 is unreachable']);
  });

  it('an etcd member is stale only when neither its name nor its URLs name an inventory host', () => {
    const member = (id: string, name: string, peer: string) => ({ id, name, isLearner: false, peerURLs: [peer], clientURLs: [] });
    const s = { ...emptyState(), etcdGroup: { addresses: ['node2'], self: true }, etcd: { endpoint: 'e', members: [member('a', 'node2', 'https://10.9.9.9:2380'), member('b', 'etcd-x', 'https://198.18.0.12:2380'), member('c', 'old-cp', 'https://10.0.0.3:2380')], health: [] } };
    expect(etcdFindings(new Map([['node2', s]]), fleet()).map((x) => x.subject)).toEqual(['old-cp']);
    // A package's etcd serving no cluster (nothing ties it to this one) is not judged.
    expect(etcdFindings(new Map([['node2', { ...s, etcdGroup: { addresses: [], self: false } }]]), fleet())).toEqual([]);
  });
});

describe('deletions that do not finish', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  const o = { now, stuckAfterSec: 300, finishedPods: 100, hostOfNode: new Map([['node2', 'host-2']]) };
  const view = (over: Partial<ClusterView>): ClusterView => ({ server: 's', pods: [], nodes: [], namespaces: [], volumeAttachments: [], persistentVolumes: [], leases: [], apiServices: [], objects: [], ...over });
  const listed = (resource: string, kind: string, deleting: ListedResource['deleting'], count = deleting.length): ListedResource => ({ resource, kind, namespaced: true, count, deleting });

  it('an object of any resource deleted longer ago than --stuck-after: its resource, finalizers, age and what removes each; a recent one is not', () => {
    const v = view({ objects: [listed('configmaps', 'ConfigMap', [
      { name: 'held', namespace: 'default', uid: 'u1', deletionTimestamp: '2026-11-25T11:00:00Z', finalizers: ['example.com/hold'] },
      { name: 'going', namespace: 'default', uid: 'u2', deletionTimestamp: '2026-11-25T11:58:00Z', finalizers: ['example.com/hold'] },
    ], 5), listed('persistentvolumeclaims', 'PersistentVolumeClaim', [{ name: 'data', namespace: 'db', deletionTimestamp: '2026-11-24T10:00:00Z', finalizers: ['kubernetes.io/pvc-protection'] }])] });
    const f = stuckObjects(v, o);
    expect(f.map((x) => [x.subject, x.detail, x.evidence])).toEqual([
      ['configmaps/default/held', 'ConfigMap deleted 1h0m ago, held by example.com/hold (no finalizer of it is one decom knows)', [
        "finalizer example.com/hold: removed by a controller of example.com (a guess from the finalizer's domain)", 'deletionTimestamp 2026-11-25T11:00:00Z',
      ]],
      ['persistentvolumeclaims/db/data', 'PersistentVolumeClaim deleted 1d2h ago, held by kubernetes.io/pvc-protection', [
        'finalizer kubernetes.io/pvc-protection: removed by the PVC protection controller (kube-controller-manager), once no pod uses the claim', 'deletionTimestamp 2026-11-24T10:00:00Z',
      ]],
    ]);
    expect(f[0]!.target).toEqual({ resource: 'configmaps', namespace: 'default', name: 'held', uid: 'u1', finalizers: ['example.com/hold'] });
    expect(stuckObjects(v, { ...o, stuckAfterSec: 7200 }).map((x) => x.subject)).toEqual(['persistentvolumeclaims/db/data']);
  });

  it('a CRD held by customresourcecleanup names the custom resources that still hold it, with their finalizers', () => {
    const crd = listed('customresourcedefinitions.apiextensions.k8s.io', 'CustomResourceDefinition', [
      { name: 'widgets.example.com', uid: 'c1', deletionTimestamp: '2026-11-25T11:30:00Z', finalizers: ['customresourcecleanup.apiextensions.k8s.io'] },
    ]);
    const widgets = listed('widgets.example.com', 'Widget', [{ name: 'w1', namespace: 'shop', deletionTimestamp: '2026-11-25T11:30:00Z', finalizers: ['example.com/protect'] }]);
    const f = stuckObjects(view({ objects: [crd, widgets] }), o);
    const def = f.find((x) => x.subject === 'customresourcedefinitions.apiextensions.k8s.io/widgets.example.com')!;
    expect(def.detail).toBe('CustomResourceDefinition deleted 30m0s ago, held by customresourcecleanup.apiextensions.k8s.io; 1 custom resource of it still exists (widgets.example.com)');
    expect(def.evidence).toEqual([
      'finalizer customresourcecleanup.apiextensions.k8s.io: removed by the CRD finalizer controller (kube-apiserver), once every custom resource of the definition is deleted',
      'custom resource shop/w1 held by example.com/protect',
      'deletionTimestamp 2026-11-25T11:30:00Z',
    ]);
    expect(f.map((x) => x.subject)).toContain('widgets.example.com/shop/w1');
    // Its resource not listed (refused): said so, with why.
    const refused = stuckObjects(view({ objects: [crd], unlisted: { 'widgets.example.com': 'list widgets.example.com: forbidden (HTTP 403)' } }), o);
    expect(refused[0]!.detail).toMatch(/; its custom resources could not be listed: list widgets\.example\.com: forbidden \(HTTP 403\)$/);
  });

  it('the lists read in full count too: a Node stuck in deletion is its host\'s; an attachment to a deleted Node is stale-volume-attachment\'s alone', () => {
    const gone = new Date('2026-11-25T10:00:00Z');
    const v = view({
      nodes: [{ metadata: { name: 'node2', deletionTimestamp: gone, finalizers: ['example.com/node-cleanup'] } }],
      volumeAttachments: [{ metadata: { name: 'csi-x', deletionTimestamp: gone, finalizers: ['external-attacher/ebs-csi-aws-com'] }, spec: { attacher: 'ebs.csi.aws.com', nodeName: 'node-gone', source: {} } }],
    });
    const f = stuckObjects(v, o);
    expect(f.map((x) => `${x.subject} ${x.host}`)).toEqual(['nodes/node2 host-2']);
  });

  it('every list read in full is judged: a stuck attachment to a live Node, a PersistentVolume, a Lease, an APIService; with the Nodes refused, every attachment', () => {
    const gone = new Date('2026-11-25T10:00:00Z');
    const held = (name: string, finalizer: string) => ({ name, deletionTimestamp: gone, finalizers: [finalizer] });
    const v = view({
      nodes: [{ metadata: { name: 'node2' } }],
      volumeAttachments: [
        { metadata: held('csi-live', 'external-attacher/ebs-csi-aws-com'), spec: { attacher: 'ebs.csi.aws.com', nodeName: 'node2', source: {} } },
        { metadata: held('csi-gone', 'external-attacher/ebs-csi-aws-com'), spec: { attacher: 'ebs.csi.aws.com', nodeName: 'node-gone', source: {} } },
      ],
      persistentVolumes: [{ metadata: held('pv-held', 'example.com/pv-guard') }],
      leases: [{ metadata: { ...held('node2', 'example.com/lease'), namespace: 'kube-node-lease' } }],
      apiServices: [{ metadata: held('v1.example.io', 'example.com/svc'), status: { conditions: [{ type: 'Available', status: 'True' }] } }],
    });
    expect(stuckObjects(v, o).map((x) => x.subject)).toEqual([
      'volumeattachments.storage.k8s.io/csi-live', 'persistentvolumes/pv-held', 'leases.coordination.k8s.io/kube-node-lease/node2', 'apiservices.apiregistration.k8s.io/v1.example.io',
    ]);
    // The Nodes refused: no Node is known deleted, so no attachment is stale-volume-attachment's to judge.
    const refused = stuckObjects({ ...v, nodes: [], refused: { nodes: 'list nodes: forbidden' } }, o).map((x) => x.subject);
    expect(refused.filter((x) => x.startsWith('volumeattachments'))).toEqual(['volumeattachments.storage.k8s.io/csi-live', 'volumeattachments.storage.k8s.io/csi-gone']);
  });

  it('an APIService\'s group version from its spec (the core group\'s is "v1"), else from its name', () => {
    const down = { status: { conditions: [{ type: 'Available', status: 'False' }] } };
    const gvs = unavailableApiServices(view({ apiServices: [
      { metadata: { name: 'v1.' }, spec: { group: '', version: 'v1', groupPriorityMinimum: 1, versionPriority: 1 }, ...down },
      { metadata: { name: 'v2.widgets.example.io' }, ...down },
      { metadata: { name: 'nodot' }, ...down },
    ] }), o).map((x) => x.target.groupVersion);
    expect(gvs).toEqual(['v1', 'widgets.example.io/v2', 'nodot']);
  });

  it('finalizers decom knows say who removes them; any other is a guess from its domain, or from nothing', () => {
    expect(finalizerRemover('external-attacher/csi-sandbox-decom-io')).toEqual({ guess: false, removedBy: "the CSI driver's external-attacher, once the volume is detached from the node (ControllerUnpublishVolume)" });
    expect(finalizerRemover('foregroundDeletion').guess).toBe(false);
    expect(finalizerRemover('my-finalizer')).toEqual({ guess: true, removedBy: 'the controller that added it (a guess: the finalizer names no domain)' });
  });

  it('an APIService not Available is a finding whatever else holds, with its reason, message and age; an Available one is not', () => {
    const svc = (name: string, status: string | undefined): NonNullable<ClusterView['apiServices']>[number] => ({
      metadata: { name }, spec: { group: name.slice(name.indexOf('.') + 1), version: name.slice(0, name.indexOf('.')), service: { namespace: 'kube-system', name: 'x', port: 443 }, groupPriorityMinimum: 1, versionPriority: 1 },
      ...(status ? { status: { conditions: [{ type: 'Available', status, reason: status === 'True' ? 'Passed' : 'FailedDiscoveryCheck', message: 'no answer', lastTransitionTime: new Date('2026-11-25T11:00:00Z') }] } } : {}),
    });
    const f = unavailableApiServices(view({ apiServices: [svc('v1beta1.metrics.k8s.io', 'False'), svc('v1.example.io', 'True'), svc('v1alpha1.new.io', undefined), svc('v1.flaky.io', 'Unknown')] }), o);
    expect(f.map((x) => `${x.subject}: ${x.detail}`)).toEqual([
      'v1beta1.metrics.k8s.io: Available=False (FailedDiscoveryCheck) for 1h0m: no answer; metrics.k8s.io/v1beta1 cannot be discovered or listed, and a namespace being deleted waits on it',
      'v1alpha1.new.io: no Available condition reported; new.io/v1alpha1 cannot be discovered or listed, and a namespace being deleted waits on it',
      'v1.flaky.io: Available=Unknown (FailedDiscoveryCheck) for 1h0m: no answer; flaky.io/v1 cannot be discovered or listed, and a namespace being deleted waits on it',
    ]);
    expect(f[0]!.evidence).toEqual(['service kube-system/x:443', 'condition Available=False FailedDiscoveryCheck since 2026-11-25T11:00:00.000Z']);
  });

  it('finished pods above --finished-pods: one finding, counted per namespace and per node, a Job\'s pods as its history', () => {
    const finished = (i: number, over: Partial<V1Pod> & { ns?: string; node?: string } = {}): V1Pod => ({
      metadata: { name: `p${i}`, namespace: over.ns ?? 'default', uid: `u${i}`, ...over.metadata },
      spec: { nodeName: over.node ?? 'node2', containers: [] },
      status: { phase: 'Failed', reason: 'Evicted', ...over.status },
    });
    const job = { metadata: { ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'backup-1', uid: 'j' }] } as V1Pod['metadata'], status: { phase: 'Succeeded' } };
    const pods = [
      ...Array.from({ length: 200 }, (_, i) => finished(i)),
      ...Array.from({ length: 3 }, (_, i) => finished(300 + i, { ...job, metadata: { ...job.metadata, name: `backup-1-${i}`, uid: `j${i}` }, ns: 'ops', node: 'node3' })),
      finished(400, { status: { phase: 'Running' } }),
    ];
    const f = finishedPods(view({ pods }), o);
    expect(f).toHaveLength(1);
    expect(f[0]!.detail).toBe('203 (Evicted 200, Job history 3) Succeeded and Failed pods kept, more than --finished-pods 100: kube-controller-manager deletes finished pods only past --terminated-pod-gc-threshold (12500 by default)');
    expect(f[0]!.evidence).toEqual(['namespace default: 200 (Evicted 200)', 'namespace ops: 3 (Job history 3)', 'node node2: 200 (Evicted 200)', 'node node3: 3 (Job history 3)']);
    expect(finishedPods(view({ pods }), { finishedPods: 203 })).toEqual([]);
  });
});
