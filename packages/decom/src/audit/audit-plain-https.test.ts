// The audit's lists over plain HTTPS (cluster/https-api.ts) against the client library's,
// the library the judge: one local HTTPS server answers both the same JSON, as
// kube-apiserver words it, a page of two at a time. Both paths read the same lists (Date
// fields and all), the rules conclude the same report from them, and a refusal, a
// rejected token and a server that is gone read alike. The table of the models' Date
// fields (cluster/model-times.ts) is held to the library's own models. Which kubeconfigs
// take which path is decided here too. Unit: no sandbox; openssl makes the certificates.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as k8s from '@kubernetes/client-node';
import { emptyState } from '../probes/index.js';
import type { Host } from '../inventory/index.js';
import { plainCredentials } from '../cluster/https-api.js';
import { MODEL_TIMES } from '../cluster/model-times.js';
import { FULL_LISTS, listCluster, listPlain, type ClusterRead } from './cluster.js';
import { judge } from './audit.js';
import { tempDir } from '../../test/helpers/temp.js';

const now = Date.parse('2026-11-25T12:00:00Z');
const dir = tempDir('decom-plain-https-');
const TOKEN = 'plain-https-token';

/** A self-signed certificate and its key, for `ip` (the server) or a user (the client). */
function selfSigned(name: string, san?: string): { cert: string; key: string } {
  const [cert, key] = [join(dir, `${name}.crt`), join(dir, `${name}.key`)];
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=${name}`, ...(san ? ['-addext', `subjectAltName=${san}`] : []), '-keyout', key, '-out', cert], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl: ${r.stderr}`);
  return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
}

// The API's JSON: what kube-apiserver sends (RFC 3339 strings, null probe times, a MicroTime renewal).
const meta = (name: string, extra: Record<string, unknown> = {}) => ({ name, uid: `uid-${name}`, resourceVersion: '7', creationTimestamp: '2026-11-01T00:00:00Z', managedFields: [{ manager: 'kubelet', operation: 'Update', apiVersion: 'v1', time: '2026-11-01T00:00:01Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }], ...extra });
const pod = (name: string, ns: string, node: string, extra: Record<string, unknown> = {}, phase = 'Running') => ({
  metadata: meta(name, { namespace: ns, ...extra }),
  spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox' }] },
  status: { phase, startTime: '2026-11-01T00:00:02Z', conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-11-01T00:00:03Z' }], containerStatuses: [{ name: 'c', image: 'busybox', imageID: '', ready: true, restartCount: 0, state: { running: { startedAt: '2026-11-01T00:00:04Z' } }, lastState: {} }] },
});
const node = (name: string, ready: string, since: string) => ({
  metadata: meta(name, { labels: { 'kubernetes.io/hostname': name } }),
  spec: { taints: ready === 'True' ? [] : [{ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule', timeAdded: since }] },
  status: { conditions: [{ type: 'Ready', status: ready, reason: ready === 'True' ? 'KubeletReady' : 'NodeStatusUnknown', lastHeartbeatTime: since, lastTransitionTime: since }], nodeInfo: { machineID: `m-${name}`, systemUUID: '', bootID: '', kernelVersion: '', osImage: '', containerRuntimeVersion: '', kubeletVersion: '', kubeProxyVersion: '', operatingSystem: 'linux', architecture: 'amd64' } },
});
const LISTS: Record<keyof typeof FULL_LISTS, unknown[]> = {
  pods: [
    pod('web', 'default', 'node2'),
    pod('stuck', 'default', 'node2', { deletionTimestamp: '2026-11-25T11:00:00Z', deletionGracePeriodSeconds: 30, finalizers: ['example.com/x'] }),
    pod('left', 'retired', 'node9'),
    pod('done-1', 'batch', 'node2', {}, 'Succeeded'),
    pod('done-2', 'batch', 'node2', {}, 'Failed'),
  ],
  nodes: [node('node2', 'True', '2026-11-01T00:00:00Z'), node('node9', 'Unknown', '2026-11-25T09:00:00Z')],
  namespaces: [
    { metadata: meta('default'), spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } },
    { metadata: meta('retired', { deletionTimestamp: '2026-11-25T11:00:00Z' }), spec: { finalizers: ['kubernetes'] }, status: { phase: 'Terminating', conditions: [{ type: 'NamespaceDeletionDiscoveryFailure', status: 'True', reason: 'DiscoveryFailed', message: 'metrics.k8s.io/v1beta1: stale', lastTransitionTime: '2026-11-25T11:00:05Z' }] } },
  ],
  volumeattachments: [{ metadata: meta('csi-abc', { finalizers: ['external-attacher/ebs-csi-aws-com'] }), spec: { attacher: 'ebs.csi.aws.com', nodeName: 'node-gone', source: { persistentVolumeName: 'pv-1' } }, status: { attached: true, detachError: { message: 'gone', time: '2026-11-25T10:00:00Z' } } }],
  persistentvolumes: [
    { metadata: meta('ssd-gone'), spec: { capacity: { storage: '1Gi' }, local: { path: '/mnt/disks/a' }, accessModes: ['ReadWriteOnce'], claimRef: { namespace: 'default', name: 'data-a' }, persistentVolumeReclaimPolicy: 'Delete', nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-gone'] }] }] } } }, status: { phase: 'Bound', lastPhaseTransitionTime: '2026-11-02T00:00:00Z' } },
    { metadata: meta('held', { deletionTimestamp: '2026-11-25T10:00:00Z', finalizers: ['kubernetes.io/pv-protection'] }), spec: { capacity: { storage: '1Gi' }, hostPath: { path: '/srv' }, persistentVolumeReclaimPolicy: 'Retain' }, status: { phase: 'Released' } },
  ],
  leases: [{ metadata: meta('node9', { namespace: 'kube-node-lease' }), spec: { holderIdentity: 'node9', leaseDurationSeconds: 40, renewTime: '2026-11-25T09:00:00.123456Z' } }],
  apiservices: [{ metadata: meta('v1beta1.metrics.k8s.io'), spec: { group: 'metrics.k8s.io', version: 'v1beta1', groupPriorityMinimum: 100, versionPriority: 100, service: { namespace: 'kube-system', name: 'metrics-server', port: 443 } }, status: { conditions: [{ type: 'Available', status: 'False', reason: 'FailedDiscoveryCheck', message: 'failing or missing response', lastTransitionTime: '2026-11-25T08:00:00Z' }] } }],
};
// Discovery (the plain documents) and one other resource, listed metadata-only: a ConfigMap held by a finalizer.
const DISCOVERY: Record<string, unknown> = {
  '/api': { kind: 'APIVersions', versions: ['v1'] },
  '/apis': { kind: 'APIGroupList', groups: [] },
  '/api/v1': { kind: 'APIResourceList', groupVersion: 'v1', resources: [{ name: 'configmaps', namespaced: true, kind: 'ConfigMap', verbs: ['delete', 'get', 'list'] }, { name: 'pods', namespaced: true, kind: 'Pod', verbs: ['delete', 'list'] }] },
  '/api/v1/configmaps': { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: {}, items: [{ metadata: meta('cm', { namespace: 'default' }) }, { metadata: meta('held', { namespace: 'default', deletionTimestamp: '2026-11-25T11:00:00Z', finalizers: ['example.com/hold'] }) }] },
};

/** How the server answers this test's case: the lists, one refused, every request unauthorized. */
let mode: 'lists' | 'refuse-nodes' | 'no-apiservices' = 'lists';
const seen: { ua: string; auth: string; cert: boolean }[] = [];
let server: Server;
let url = '';
const client = { cert: '', key: '' };
let serverCa = '';

const status = (code: number, reason: string, message: string) => JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

beforeAll(async () => {
  const s = selfSigned('server', 'IP:127.0.0.1');
  Object.assign(client, selfSigned('decom-user'));
  serverCa = s.cert;
  server = createServer({ cert: s.cert, key: s.key, ca: client.cert, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    const u = new URL(req.url ?? '/', 'https://x');
    const cert = (req.socket as import('node:tls').TLSSocket).authorized;
    seen.push({ ua: String(req.headers['user-agent']), auth: String(req.headers.authorization ?? ''), cert });
    const send = (code: number, body: string) => {
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(body);
    };
    if (req.headers.authorization !== `Bearer ${TOKEN}` && !cert) return send(401, status(401, 'Unauthorized', 'Unauthorized'));
    if (mode === 'refuse-nodes' && u.pathname === FULL_LISTS.nodes.path) return send(403, status(403, 'Forbidden', 'nodes is forbidden: User "decom" cannot list resource "nodes" in API group "" at the cluster scope'));
    if (mode === 'no-apiservices' && u.pathname === FULL_LISTS.apiservices.path) return send(404, '404 page not found\n');
    const list = Object.entries(FULL_LISTS).find(([, l]) => l.path === u.pathname)?.[0] as keyof typeof FULL_LISTS | undefined;
    const doc = list ? { kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '9' }, items: LISTS[list] } : DISCOVERY[u.pathname];
    if (!doc) return send(404, status(404, 'NotFound', 'the server could not find the requested resource'));
    const items = (doc as { items?: unknown[] }).items;
    if (!items) return send(200, JSON.stringify(doc));
    // Pages as kube-apiserver serves them: limit, an opaque continue token.
    const from = Number(u.searchParams.get('continue') ?? '0');
    const limit = Number(u.searchParams.get('limit') ?? items.length);
    const more = from + limit < items.length;
    send(200, JSON.stringify({ ...doc, metadata: { resourceVersion: '9', ...(more ? { continue: String(from + limit) } : {}) }, items: items.slice(from, from + limit) }));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env.DECOM_LIST_PAGE_SIZE = '2';
});
afterAll(() => {
  delete process.env.DECOM_LIST_PAGE_SIZE;
  server?.close();
});

const b64 = (s: string) => Buffer.from(s).toString('base64');
/** A kubeconfig of this server with `user`'s fields, written to a file of its own. */
function kubeconfig(name: string, user: Record<string, unknown>, cluster: Record<string, unknown> = {}): string {
  const file = join(dir, `${name}.kubeconfig`);
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'Config', 'current-context': 'c', contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }], clusters: [{ name: 'k', cluster: { server: url, 'certificate-authority-data': b64(serverCa), ...cluster } }], users: [{ name: 'u', user }] }));
  return file;
}
const viaToken = () => kubeconfig('token', { token: TOKEN });
const viaCert = () => kubeconfig('cert', { 'client-certificate-data': b64(client.cert), 'client-key-data': b64(client.key) });

/** Both paths' reads of the same source: plain HTTPS, and the client library's. */
async function both(file: string): Promise<[ClusterRead | undefined, ClusterRead]> {
  return [await listPlain({ kubeconfig: file }), await listCluster({ kubeconfig: file })];
}

const host: Host = { name: 'node2', address: '198.18.0.12', port: 22, user: 'root', become: false, becomeUser: 'root', strictHostKeyChecking: 'yes', proxyJump: [], connectTimeoutSec: 10, groups: ['all'], vars: {} };
const reportOf = (c: ClusterRead) =>
  judge([host], [{ state: { ...emptyState(), hostname: 'node2', runtimes: [{ name: 'containerd', running: true, answered: true }] } }], c, { inventory: [host], stuckAfterSec: 300, staleAfterSec: 3600, finishedPods: 1 }, now);

describe('the same API JSON through plain HTTPS and through the client library', () => {
  it('lists the same objects, Dates where the library has Dates, and the rules conclude the same report', async () => {
    mode = 'lists';
    for (const file of [viaToken(), viaCert()]) {
      const [plain, library] = await both(file);
      expect(plain).toBeDefined();
      expect(plain).toEqual(library);
      const view = (plain as { view: { pods: k8s.V1Pod[]; leases: k8s.V1Lease[]; nodes: k8s.V1Node[] } }).view;
      expect(view.pods.length).toBe(LISTS.pods.length); // every page
      expect(view.pods[1]!.metadata!.deletionTimestamp).toBeInstanceOf(Date);
      expect(view.nodes[1]!.status!.conditions![0]!.lastTransitionTime).toBeInstanceOf(Date);
      expect(typeof view.leases[0]!.spec!.renewTime).toBe('string'); // a MicroTime: the library keeps the string too
      const report = reportOf(plain as ClusterRead);
      expect(report).toEqual(reportOf(library));
      expect(report.cluster.map((f) => `${f.kind} ${f.subject}`).sort()).toEqual([
        'finished-pods finished pods',
        'stale-local-pv ssd-gone',
        'stale-node node9',
        'stale-volume-attachment csi-abc',
        'stuck-deleting-object configmaps/default/held',
        'stuck-deleting-object persistentvolumes/held',
        'stuck-terminating-namespace retired',
        'unavailable-apiservice v1beta1.metrics.k8s.io',
      ]);
      expect(report.hosts[0]!.findings.map((f) => `${f.kind} ${f.subject}`)).toEqual(['stuck-terminating-pod default/stuck']);
    }
    // Every request named itself decom/VERSION, the token's with the token, the certificate's with the certificate.
    expect(seen.filter((s) => !/^decom\/\d/.test(s.ua))).toEqual([]);
    expect(seen.some((s) => s.cert && !s.auth) && seen.some((s) => s.auth === `Bearer ${TOKEN}`)).toBe(true);
  });

  it('reads a refused list, a cluster without apiregistration, a rejected token and a server that is gone alike', async () => {
    for (const m of ['refuse-nodes', 'no-apiservices'] as const) {
      mode = m;
      const [plain, library] = await both(viaToken());
      expect(plain).toEqual(library);
      if (m === 'refuse-nodes') expect((plain as { view: { refused: Record<string, string> } }).view.refused.nodes).toBe('list nodes: nodes is forbidden: User "decom" cannot list resource "nodes" in API group "" at the cluster scope (HTTP 403)');
      else expect((plain as { view: { refused?: unknown } }).view.refused).toBeUndefined();
    }
    mode = 'lists';
    const [plain, library] = await both(kubeconfig('wrong', { token: 'not-the-token' }));
    expect(plain).toEqual(library);
    expect(plain).toEqual({ server: url, error: 'HTTP-Code: 401' });
    const gone = kubeconfig('gone', { token: TOKEN }, { server: 'https://127.0.0.1:1' });
    const [p, l] = [await listPlain({ kubeconfig: gone }), await listCluster({ kubeconfig: gone })];
    expect(p).toEqual(l);
    expect(p).toEqual({ server: 'https://127.0.0.1:1', error: 'request to https://127.0.0.1:1/api/v1/pods?limit=2 failed, reason: connect ECONNREFUSED 127.0.0.1:1' });
  });
});

describe('which credentials take plain HTTPS', () => {
  it('a token, a token file, a client certificate (inline or in files), with the CA or insecure-skip-tls-verify', async () => {
    writeFileSync(join(dir, 'token'), `${TOKEN}\n`);
    writeFileSync(join(dir, 'user.crt'), client.cert);
    writeFileSync(join(dir, 'user.key'), client.key);
    const plain = [
      viaToken(),
      viaCert(),
      kubeconfig('token-file', { tokenFile: 'token' }), // relative to the kubeconfig, as kubectl reads it
      kubeconfig('cert-files', { 'client-certificate': join(dir, 'user.crt'), 'client-key': 'user.key' }),
      kubeconfig('insecure', { token: TOKEN }, { 'certificate-authority-data': undefined, 'insecure-skip-tls-verify': true }),
    ];
    for (const file of plain) expect(await plainCredentials({ kubeconfig: file }), file).toBeDefined();
    expect((await plainCredentials({ kubeconfig: plain[2]! }))?.token?.()).toBe(TOKEN);
  });

  it('an exec plugin, an auth provider, a username, impersonation, a proxy, a CA with insecure, a broken or contextless kubeconfig: the library', async () => {
    const library = [
      kubeconfig('exec', { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'true' } }),
      kubeconfig('auth-provider', { 'auth-provider': { name: 'oidc', config: {} } }),
      kubeconfig('basic', { username: 'a', password: 'b' }),
      kubeconfig('as', { token: TOKEN, as: 'someone' }),
      kubeconfig('proxy', { token: TOKEN }, { 'proxy-url': 'http://proxy:3128' }),
      kubeconfig('ca-and-insecure', { token: TOKEN }, { 'insecure-skip-tls-verify': true }),
      kubeconfig('no-key', { 'client-certificate-data': b64(client.cert) }),
      kubeconfig('no-token-file', { tokenFile: 'missing' }),
      kubeconfig('plain-http', { token: TOKEN }, { server: 'http://127.0.0.1:8080' }),
      kubeconfig('nobody', {}),
    ];
    writeFileSync(join(dir, 'broken.kubeconfig'), 'clusters: [\n');
    library.push(join(dir, 'broken.kubeconfig'));
    for (const file of library) expect(await plainCredentials({ kubeconfig: file }), file).toBeUndefined();
    expect(await plainCredentials({ kubeconfig: viaToken(), context: 'no-such' })).toBeUndefined();
  });
});

describe("cluster/model-times.ts: the library's Date fields", () => {
  /** Every Date attribute's path under a model, from the library's attribute type maps; and any attribute it renames. */
  function datePaths(model: string, prefix = '', seen: string[] = []): { dates: string[]; renamed: string[] } {
    const out = { dates: [] as string[], renamed: [] as string[] };
    const cls = (k8s as unknown as Record<string, { getAttributeTypeMap?: () => { name: string; baseName: string; type: string }[] }>)[model];
    if (!cls?.getAttributeTypeMap || seen.includes(model)) return out;
    for (const a of cls.getAttributeTypeMap()) {
      if (a.name !== a.baseName) out.renamed.push(`${prefix}${a.baseName}`);
      const many = /^Array<(.+)>$/.exec(a.type);
      const type = many ? (many[1] as string) : a.type;
      const path = `${prefix}${a.baseName}${many ? '[]' : ''}`;
      if (type === 'Date') out.dates.push(path);
      else {
        const sub = datePaths(type, `${path}.`, [...seen, model]);
        out.dates.push(...sub.dates);
        out.renamed.push(...sub.renamed);
      }
    }
    return out;
  }

  it('names every Date field of every model the audit lists in full, and no other; the models rename no field', () => {
    for (const [model, paths] of Object.entries(MODEL_TIMES)) {
      const { dates, renamed } = datePaths(model);
      expect([...paths].sort(), model).toEqual(dates.sort());
      expect(renamed, model).toEqual([]);
    }
    expect(Object.values(FULL_LISTS).map((l) => l.model).sort()).toEqual(Object.keys(MODEL_TIMES).sort());
  });
});
