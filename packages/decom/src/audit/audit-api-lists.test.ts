// Each of the audit's API lists refused on its own (RBAC's 403, as kube-apiserver words
// it): exactly the kinds that read that list are not checked, named with the API's
// message; every other kind is still judged; no kind with a refused input says a thing.
// Unit only: the lists' outcomes are made here (clusterRead is the seam), no API, no node.
import { describe, expect, it } from 'vitest';
import { ApiException, type V1APIService, type V1Lease, type V1Namespace, type V1Node, type V1PersistentVolume, type V1Pod, type V1VolumeAttachment } from '@kubernetes/client-node';
import { emptyState } from '../probes/index.js';
import type { NodeState } from '../probes/state.js';
import type { Host } from '../inventory/index.js';
import { clusterRead, type ClusterRead, type SettledLists } from './cluster.js';
import type { ApiList, ClusterView } from '../rules/audit.js';
import { auditExitCode, judge, type AuditReport } from './audit.js';
import { mergeReports, renderJson, renderJunit, renderPrometheus, renderTable } from './report.js';
import { renderHtml } from './html.js';

const now = Date.parse('2026-11-25T12:00:00Z');
const PHANTOM = '6a7789b6-6d5b-415c-8273-04842e2a6f4d';
const WEB = '0b0b0b0b-1111-4222-8333-444444444444';
const GONE = '0c0c0c0c-1111-4222-8333-444444444444'; // a pod dir's, of no pod at all

const host: Host = {
  name: 'node2', address: '198.18.0.12', port: 22, user: 'root', become: false, becomeUser: 'root',
  strictHostKeyChecking: 'yes', proxyJump: [], connectTimeoutSec: 10, groups: ['all'], vars: {},
};
const running = (id: string, uid: string, kind: 'sandbox' | 'container', pid: number, pod: string) => ({ id, runtime: 'containerd' as const, kind, podUid: uid, pod, state: 'running', pid });
const node2: NodeState = {
  ...emptyState(),
  hostname: 'node2',
  runtimes: [{ name: 'containerd', running: true, answered: true }],
  // A pod the API knows, and a phantom it does not.
  containers: [running('s-web', WEB, 'sandbox', 10, 'default/web'), running('s-ph', PHANTOM, 'sandbox', 20, 'default/ghost'), running('c-ph', PHANTOM, 'container', 21, 'default/ghost')],
  netns: ['cni-dead'],
  pods: { ...emptyState().pods, dirs: [GONE], netnsInodes: new Map([['cni-dead', '5']]) },
  etcdGroup: { addresses: ['node2'], self: true },
  etcd: { endpoint: 'https://127.0.0.1:2379', members: [{ id: 'c0ffee', name: 'old-cp', isLearner: false, peerURLs: ['https://10.0.0.3:2380'], clientURLs: [] }], health: [] },
};

const ago = (t: string) => new Date(t);
const pods: V1Pod[] = [
  { metadata: { name: 'web', namespace: 'default', uid: WEB }, spec: { nodeName: 'node2', containers: [] } },
  { metadata: { name: 'stuck', namespace: 'default', uid: 'u-stuck', deletionTimestamp: ago('2026-11-25T11:00:00Z'), finalizers: ['example.com/x'] }, spec: { nodeName: 'node2', containers: [] } },
  { metadata: { name: 'left', namespace: 'retired', uid: 'u-left' }, spec: { nodeName: 'node2', containers: [] } },
];
const ready = (name: string, status: string, since: string): V1Node => ({ metadata: { name, labels: { 'kubernetes.io/hostname': name } }, status: { conditions: [{ type: 'Ready', status, lastTransitionTime: ago(since) }] } });
const nodes = [ready('node2', 'True', '2026-11-01T00:00:00Z'), ready('node9', 'Unknown', '2026-11-25T09:00:00Z')];
const namespaces: V1Namespace[] = [
  { metadata: { name: 'default' }, status: { phase: 'Active' } },
  { metadata: { name: 'retired', deletionTimestamp: ago('2026-11-25T11:00:00Z') }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Terminating' } },
];
const volumeattachments: V1VolumeAttachment[] = [{ metadata: { name: 'csi-abc' }, spec: { attacher: 'ebs.csi.aws.com', nodeName: 'node-gone', source: { persistentVolumeName: 'pv-1' } }, status: { attached: true } }];
// A local PV of a Node that is gone (stale-local-pv), and one of a live Node (not a finding).
const pinned = (name: string, node: string): V1PersistentVolume => ({
  metadata: { name },
  spec: { local: { path: `/mnt/disks/${name}` }, claimRef: { namespace: 'default', name: `data-${name}` }, persistentVolumeReclaimPolicy: 'Retain', nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }] } } },
  status: { phase: 'Bound' },
});
const persistentvolumes: V1PersistentVolume[] = [pinned('ssd-gone', 'node-gone'), pinned('ssd-live', 'node2')];
const leases: V1Lease[] = [{ metadata: { name: 'node9', namespace: 'kube-node-lease' }, spec: { renewTime: ago('2026-11-25T09:00:00Z') } }];
const apiservices: V1APIService[] = [
  { metadata: { name: 'v1beta1.metrics.k8s.io' }, spec: { groupPriorityMinimum: 100, versionPriority: 100 }, status: { conditions: [{ type: 'Available', status: 'False', reason: 'FailedDiscoveryCheck', message: 'failing or missing response' }] } },
];

/** RBAC's refusal as kube-apiserver sends it (a Status), as the client library throws it. */
type Listed = Exclude<ApiList, 'objects'>;
const RESOURCE: Record<Listed, [plural: string, group: string]> = {
  pods: ['pods', ''], nodes: ['nodes', ''], namespaces: ['namespaces', ''],
  volumeattachments: ['volumeattachments', 'storage.k8s.io'], persistentvolumes: ['persistentvolumes', ''], leases: ['leases', 'coordination.k8s.io'], apiservices: ['apiservices', 'apiregistration.k8s.io'],
};
const forbiddenMessage = (l: Listed) => {
  const [plural, group] = RESOURCE[l];
  return `${group ? `${plural}.${group}` : plural} is forbidden: User "system:serviceaccount:decom:decom-audit" cannot list resource "${plural}" in API group "${group}" at the cluster scope`;
};
const forbidden = (l: Listed) =>
  new ApiException(403, 'Unknown API Status Code!', JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: forbiddenMessage(l), reason: 'Forbidden', details: { kind: RESOURCE[l][0], group: RESOURCE[l][1] }, code: 403 }), {});

/** A ConfigMap held by a finalizer no controller removes, as the metadata-only lists find it. */
const objects = { objects: [{ resource: 'configmaps', kind: 'ConfigMap', namespaced: true, count: 2, deleting: [{ name: 'held', namespace: 'default', uid: 'u-held', deletionTimestamp: '2026-11-25T11:00:00Z', finalizers: ['example.com/hold'] }] }], unlisted: {} };

/** The lists as listCluster settles them, some refused with `errors`. */
function read(errors: Partial<Record<ApiList, unknown>> = {}): ClusterRead {
  const settle = <T>(l: ApiList, value: T): PromiseSettledResult<T> => (l in errors ? { status: 'rejected', reason: errors[l] } : { status: 'fulfilled', value });
  const s: SettledLists = {
    pods: settle('pods', pods), nodes: settle('nodes', nodes), namespaces: settle('namespaces', namespaces),
    volumeattachments: settle('volumeattachments', volumeattachments), persistentvolumes: settle('persistentvolumes', persistentvolumes), leases: settle('leases', leases),
    apiservices: settle('apiservices', apiservices), objects: settle('objects', objects),
  };
  return clusterRead('https://198.18.0.10:6443', s);
}
const report = (cluster: ClusterRead): AuditReport => judge([host], [{ state: node2 }], cluster, { inventory: [host], stuckAfterSec: 300, staleAfterSec: 3600, finishedPods: 1000 }, now);
const found = (r: AuditReport) => [...r.hosts.flatMap((h) => h.findings.map((f) => `${h.host} ${f.kind} ${f.subject}`)), ...r.cluster.map((f) => `(cluster) ${f.kind} ${f.subject}`)];

const EVERY = [
  'node2 phantom-pod default/ghost',
  `node2 orphan-pod-dir /var/lib/kubelet/pods/${GONE}`,
  'node2 orphan-netns cni-dead',
  'node2 stuck-terminating-pod default/stuck',
  '(cluster) stale-etcd-member old-cp',
  '(cluster) stuck-terminating-namespace retired',
  '(cluster) stale-node node9',
  '(cluster) stale-volume-attachment csi-abc',
  '(cluster) stale-local-pv ssd-gone',
  '(cluster) stuck-deleting-object configmaps/default/held',
  '(cluster) unavailable-apiservice v1beta1.metrics.k8s.io',
];

/** The kinds each list's refusal leaves unchecked (rules/audit.ts API_INPUTS, read from apiFindings, namespaceFinding and nodeFindings). */
const DEPENDENTS: Record<Listed, string[]> = {
  pods: ['phantom-pod', 'stuck-terminating-pod', 'stuck-terminating-namespace', 'finished-pods'],
  nodes: ['stuck-terminating-pod', 'stale-node', 'stale-volume-attachment', 'stale-local-pv'],
  namespaces: ['stuck-terminating-namespace'],
  volumeattachments: ['stale-volume-attachment'],
  persistentvolumes: ['stale-local-pv'],
  leases: ['stale-node'],
  apiservices: ['stuck-terminating-namespace', 'unavailable-apiservice'],
};
const LIST_NAME: Record<Listed, string> = {
  pods: 'pods', nodes: 'nodes', namespaces: 'namespaces',
  volumeattachments: 'volumeattachments.storage.k8s.io', persistentvolumes: 'persistentvolumes', leases: 'leases.coordination.k8s.io', apiservices: 'apiservices.apiregistration.k8s.io',
};

describe("the audit's API lists, each judged on its own", () => {
  it('every list read: every kind judged, one finding each, nothing not checked, exit 1', () => {
    const r = report(read());
    expect(found(r)).toEqual(EVERY);
    expect(r.notChecked).toBeUndefined();
    expect(r.apiError).toBeUndefined();
    expect(r.cluster.find((f) => f.kind === 'stuck-terminating-namespace')!.detail).toBe(
      'Terminating for 1h0m: finalizers left: kubernetes; unavailable APIServices: v1beta1.metrics.k8s.io',
    );
    // The local PV of the Node that is gone, with its claim, phase and reclaim policy, and how to delete it: no remedy.
    const stranded = r.cluster.find((f) => f.kind === 'stale-local-pv')!;
    expect(stranded.detail).toBe('local PersistentVolume (local /mnt/disks/ssd-gone) whose node affinity selects no Node: its data left with its node; claim default/data-ssd-gone, Bound, reclaim policy Retain');
    expect(stranded.evidence).toEqual([
      'affinity kubernetes.io/hostname In (node-gone)', 'claim default/data-ssd-gone', 'phase Bound', 'reclaim policy Retain',
      'if its data is not wanted: kubectl delete pvc --namespace default data-ssd-gone, then kubectl delete pv ssd-gone',
    ]);
    expect(auditExitCode(r)).toBe(1);
  });

  for (const list of Object.keys(DEPENDENTS) as Listed[]) {
    it(`${list} refused (403): ${DEPENDENTS[list].join(', ')} not checked, with the API's words; every other kind still judged; exit 3`, () => {
      const r = report(read({ [list]: forbidden(list) }));
      const why = `list ${LIST_NAME[list]}: ${forbiddenMessage(list)} (HTTP 403)`;
      // A list read in full and refused hides its objects stuck in deletion too: named as a resource not checked.
      const resources = list === 'pods' || list === 'namespaces' ? {} : { resources: { [LIST_NAME[list]]: why } };
      expect(r.notChecked).toEqual({ kinds: DEPENDENTS[list], why, refused: Object.fromEntries(DEPENDENTS[list].map((k) => [k, why])), ...resources });
      // Exactly the findings of the kinds still checked: none of an unchecked kind, none lost of the others.
      expect(found(r)).toEqual(EVERY.filter((f) => !DEPENDENTS[list].includes(f.split(' ')[1] as string)));
      expect(r.apiError).toBeUndefined();
      expect(auditExitCode(r)).toBe(3);

      const text = renderTable(r);
      expect(text).toContain(`not checked: ${DEPENDENTS[list].join(', ')}: ${why}\n`);
      const table = text.split('\n');
      const heads = table[0]!.split(/\s+/);
      for (const row of table.slice(1, 3)) {
        const cells = row.split(/\s+/);
        for (const k of DEPENDENTS[list]) expect(cells[heads.indexOf({ 'phantom-pod': 'phantom', 'stuck-terminating-pod': 'term-pod', 'stuck-terminating-namespace': 'term-ns', 'stale-node': 'node', 'stale-volume-attachment': 'vol-att', 'stale-local-pv': 'local-pv', 'finished-pods': 'finished', 'unavailable-apiservice': 'apisvc' }[k]!)], `${row} ${k}`).toBe('-');
      }
      expect(JSON.parse(renderJson(r)).notChecked).toEqual(r.notChecked);
      const prom = renderPrometheus(r);
      for (const k of DEPENDENTS[list]) expect(prom).not.toContain(`kind="${k}"`);
      expect(prom).toContain('decom_residue{host="(cluster)",kind="stale-etcd-member"} 1');
      expect(renderJunit(r)).toContain(`name="${DEPENDENTS[list][0]}"><skipped message="${why.replaceAll('"', '&quot;')}"/>`);
      expect(renderHtml(r)).toContain(`Not checked: ${DEPENDENTS[list].join(', ')} (`);
    });
  }

  it('the pods refused: the node-side kinds are judged as without an API, and a pod the runtime has is never a phantom', () => {
    const r = report(read({ pods: forbidden('pods') }));
    const dir = r.hosts[0]!.findings.find((f) => f.kind === 'orphan-pod-dir')!;
    expect(dir.detail).toBe('pod dir of no pod the runtime has');
    expect(r.hosts[0]!.findings.map((f) => f.kind)).not.toContain('phantom-pod');
  });

  it('the nodes refused: no attachment of a "deleted" Node, no pod whose "node is gone"', () => {
    const r = report(read({ nodes: forbidden('nodes') }));
    expect(JSON.stringify(r)).not.toMatch(/which is deleted|is gone|NotReady/);
  });

  it('two lists refused: their kinds, a line each in the text; why joins both', () => {
    const r = report(read({ volumeattachments: forbidden('volumeattachments'), leases: forbidden('leases') }));
    const va = `list volumeattachments.storage.k8s.io: ${forbiddenMessage('volumeattachments')} (HTTP 403)`;
    const lease = `list leases.coordination.k8s.io: ${forbiddenMessage('leases')} (HTTP 403)`;
    expect(r.notChecked).toEqual({
      kinds: ['stale-node', 'stale-volume-attachment'], why: `${va}; ${lease}`, refused: { 'stale-node': lease, 'stale-volume-attachment': va },
      resources: { 'volumeattachments.storage.k8s.io': va, 'leases.coordination.k8s.io': lease },
    });
    expect(renderTable(r)).toContain(`not checked: stale-node: ${lease}\nnot checked: stale-volume-attachment: ${va}\n`);
  });

  it('the APIServices are read whether or not a namespace is Terminating: one not Available is a finding of its own', () => {
    const calm = clusterRead('s', {
      pods: { status: 'fulfilled', value: [] }, nodes: { status: 'fulfilled', value: [] }, namespaces: { status: 'fulfilled', value: [namespaces[0]!] },
      volumeattachments: { status: 'fulfilled', value: [] }, persistentvolumes: { status: 'fulfilled', value: [] }, leases: { status: 'fulfilled', value: [] },
      apiservices: { status: 'fulfilled', value: apiservices }, objects: { status: 'fulfilled', value: { objects: [], unlisted: {} } },
    });
    const r = report(calm);
    expect(found(r).filter((f) => f.startsWith('(cluster)'))).toEqual(['(cluster) stale-etcd-member old-cp', '(cluster) unavailable-apiservice v1beta1.metrics.k8s.io']);
    expect(r.cluster.find((f) => f.kind === 'unavailable-apiservice')!.detail).toBe(
      'Available=False (FailedDiscoveryCheck): failing or missing response; metrics.k8s.io/v1beta1 cannot be discovered or listed, and a namespace being deleted waits on it',
    );
  });

  it('discovery refused: stuck-deleting-object not checked, named with the API\'s words; the full lists still judged', () => {
    const r = report(read({ objects: new ApiException(403, '', '{"kind":"Status","message":"forbidden: User \\"x\\" cannot get path \\"/apis\\"","code":403}', {}) }));
    const why = 'discovery: forbidden: User "x" cannot get path "/apis" (HTTP 403)';
    expect(r.notChecked).toEqual({ kinds: ['stuck-deleting-object'], why, refused: { 'stuck-deleting-object': why } });
    expect(found(r)).toEqual(EVERY.filter((f) => !f.includes('stuck-deleting-object')));
    expect(auditExitCode(r)).toBe(3);
  });

  it('a resource or group version the objects\' lists could not cover: named as not checked, the rest judged; exit 3 in every output', () => {
    const unlisted = { 'widgets.example.com': 'list widgets.example.com: widgets.example.com is forbidden (HTTP 403)', 'metrics.k8s.io/v1beta1': 'stale GroupVersion discovery: metrics.k8s.io/v1beta1 (its API server does not answer)' };
    const base = read() as { view: ClusterView };
    const r = report({ view: { ...base.view, unlisted } });
    expect(r.notChecked).toEqual({ kinds: [], why: 'some resources could not be listed', resources: unlisted });
    expect(found(r)).toEqual(EVERY);
    expect(auditExitCode(r)).toBe(3);
    const text = renderTable(r);
    expect(text).toContain(`not checked: stuck-deleting-object: widgets.example.com: ${unlisted['widgets.example.com']}\n`);
    expect(text).toContain(`not checked: stuck-deleting-object: metrics.k8s.io/v1beta1: ${unlisted['metrics.k8s.io/v1beta1']}\n`);
    expect(renderPrometheus(r)).toContain('decom_audit_resources_not_checked 2\n');
    expect(renderJunit(r)).toContain('<system-err>not checked: widgets.example.com: ');
    expect(renderHtml(r)).toContain('Not checked: stuck-deleting-object (metrics.k8s.io/v1beta1: stale GroupVersion discovery');
    expect(mergeReports([{ file: 'a.json', report: r }]).notChecked).toEqual(r.notChecked);
  });

  it('the APIServices not served (404): tolerated, the namespace still judged (no APIService can be unavailable)', () => {
    const r = report(read({ apiservices: new ApiException(404, 'Unknown API Status Code!', '{"kind":"Status","message":"the server could not find the requested resource","code":404}', {}) }));
    expect(r.notChecked).toBeUndefined();
    expect(r.cluster.find((f) => f.kind === 'stuck-terminating-namespace')!.detail).toBe('Terminating for 1h0m: finalizers left: kubernetes');
  });

  it('every list failing is the API unread, as one line (apiError): every API kind not checked, exit 3', () => {
    const refused = (url: string) => new Error(`request to https://198.18.0.10:6443${url}?limit=500 failed, reason: connect ECONNREFUSED 198.18.0.10:6443`);
    const r = report(read({
      pods: refused('/api/v1/pods'), nodes: refused('/api/v1/nodes'), namespaces: refused('/api/v1/namespaces'), volumeattachments: refused('/apis/storage.k8s.io/v1/volumeattachments'), persistentvolumes: refused('/api/v1/persistentvolumes'),
      leases: refused('/apis/coordination.k8s.io/v1/leases'), apiservices: refused('/apis/apiregistration.k8s.io/v1/apiservices'), objects: refused('/api'),
    }));
    const apiError = 'the API at https://198.18.0.10:6443 could not be listed: request to https://198.18.0.10:6443/api/v1/pods?limit=500 failed, reason: connect ECONNREFUSED 198.18.0.10:6443';
    expect(r.apiError).toBe(apiError);
    expect(r.notChecked).toEqual({ kinds: ['phantom-pod', 'stuck-terminating-pod', 'stuck-terminating-namespace', 'stale-node', 'stale-volume-attachment', 'stale-local-pv', 'stuck-deleting-object', 'unavailable-apiservice', 'finished-pods'], why: apiError });
    expect(found(r)).toEqual(['node2 orphan-pod-dir /var/lib/kubelet/pods/' + GONE, 'node2 orphan-netns cni-dead', '(cluster) stale-etcd-member old-cp']);
    expect(auditExitCode(r)).toBe(3);
  });

  it("audit-report: what any shard could not check is not checked in the merge, with each refusal once; exit 3", () => {
    const leases = report(read({ leases: forbidden('leases') }));
    const va = report(read({ volumeattachments: forbidden('volumeattachments') }));
    const part = (r: AuditReport, name: string, shard: string): AuditReport => ({ ...r, shard, hosts: r.hosts.map((h) => ({ ...h, host: name })), cluster: shard.startsWith('0/') ? r.cluster : [] });
    const merged = mergeReports([
      { file: 'a.json', report: part(leases, 'node2', '0/3') },
      { file: 'b.json', report: part(leases, 'node3', '1/3') },
      { file: 'c.json', report: part(va, 'node4', '2/3') },
    ]);
    expect(merged.notChecked).toEqual({
      kinds: ['stale-node', 'stale-volume-attachment'],
      why: `${leases.notChecked!.why}; ${va.notChecked!.why}`,
      refused: { 'stale-node': leases.notChecked!.why, 'stale-volume-attachment': va.notChecked!.why },
      resources: { 'leases.coordination.k8s.io': leases.notChecked!.why, 'volumeattachments.storage.k8s.io': va.notChecked!.why },
    });
    expect(auditExitCode(merged)).toBe(3);
    // One shard's report alone merges to itself.
    expect(mergeReports([{ file: 'a.json', report: leases }]).notChecked).toEqual(leases.notChecked);
  });
});
