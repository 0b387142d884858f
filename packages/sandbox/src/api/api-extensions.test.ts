// Custom resources, metadata-only lists, APIService availability, aggregation and the audit
// log, on the sandbox API's process alone (dist/api/main.js on a free loopback port, its own
// directory and certificates): no sandbox nodes, not the shared sandbox's state.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KUBECTL, requireKubectl } from '../../../decom/test/helpers/kubectl.js';
import { tempDir } from '../../../decom/test/helpers/temp.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'api', 'main.js');
const dir = tempDir('decom-api-ext-');
const p = (f: string) => join(dir, f);
const token = 'test-token-0123456789abcdef';
let port = 0;
let api: ChildProcess | undefined;

const openssl = (...args: string[]) => {
  const r = spawnSync('openssl', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
};

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address() as { port: number };
      s.close(() => resolve(a.port));
    });
  });
}

async function start(): Promise<void> {
  api = spawn(process.execPath, [MAIN, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  api.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  for (let i = 0; i < 100; i++) {
    if ((await raw('GET', '/readyz').catch(() => ({ code: 0 }))).code === 200) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the API did not start: ${log}`);
}

/** SIGTERM, as stopApi sends it, and the exit. */
async function stop(): Promise<void> {
  const child = api;
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** Raw HTTPS with the token: status, Content-Type, body (JSON when it parses). */
function raw(method: string, path: string, opts: { accept?: string; body?: unknown; type?: string } = {}): Promise<{ code: number; type: string; text: string; json: Any }> {
  const data = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1', port, path, method, ca: readFileSync(p('ca.crt')),
        headers: { Authorization: `Bearer ${token}`, ...(opts.accept ? { Accept: opts.accept } : {}), ...(data ? { 'Content-Type': opts.type ?? 'application/json', 'Content-Length': data.length } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let json: Any = {};
          try {
            json = JSON.parse(text) as Any;
          } catch {
            /* not JSON */
          }
          resolve({ code: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

const kubectl = (...args: string[]) => {
  const r = spawnSync(KUBECTL, [`--cache-dir=${p('cache')}`, ...args], { encoding: 'utf8', env: { ...process.env, KUBECONFIG: p('kubeconfig') }, timeout: 60_000 });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
};
const ok = (...args: string[]) => {
  const r = kubectl(...args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: exit ${r.code}: ${r.err}`);
  return r.out;
};
const apply = (name: string, yaml: string, verb = 'create') => {
  writeFileSync(p(`${name}.yaml`), yaml);
  return kubectl(verb, '-f', p(`${name}.yaml`));
};
/** Polls (the controllers run once a second) until `probe` is truthy, for up to 15 s. */
async function until<T>(probe: () => T | Promise<T>): Promise<T> {
  let v = await probe();
  for (let i = 0; i < 60 && !v; i++) {
    await new Promise((r) => setTimeout(r, 250));
    v = await probe();
  }
  return v;
}

const crd = (plural: string, kind: string, extra = '') => `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ${plural}.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: ${plural}, kind: ${kind}${extra}}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
`;
const condition = (o: Any, type: string): Any => ((o.status?.conditions ?? []) as Any[]).find((c) => c.type === type) ?? {};

describe('the sandbox API process: custom resources, metadata-only lists, APIService availability, aggregation, audit', () => {
  beforeAll(async () => {
    requireKubectl();
    port = await freePort();
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=test-ca', '-keyout', p('ca.key'), '-out', p('ca.crt'));
    writeFileSync(p('san.cnf'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
    openssl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=kube-apiserver', '-keyout', p('server.key'), '-out', p('server.csr'));
    openssl('x509', '-req', '-in', p('server.csr'), '-CA', p('ca.crt'), '-CAkey', p('ca.key'), '-CAcreateserial', '-days', '1', '-extfile', p('san.cnf'), '-out', p('server.crt'));
    writeFileSync(p('api.json'), JSON.stringify({ host: '127.0.0.1', port, token, nodeMonitorGracePeriodSeconds: 50 }));
    const ca = readFileSync(p('ca.crt')).toString('base64');
    writeFileSync(p('kubeconfig'), `apiVersion: v1\nkind: Config\nclusters:\n- cluster: {certificate-authority-data: ${ca}, server: 'https://127.0.0.1:${port}'}\n  name: t\ncontexts:\n- context: {cluster: t, user: admin}\n  name: t\ncurrent-context: t\nusers:\n- name: admin\n  user: {token: ${token}}\n`);
    await start();
  });
  afterAll(async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a CRD created with kubectl is Established; kubectl api-resources lists its resource; kubectl gets, patches and deletes its objects', async () => {
    expect(apply('widgets', crd('widgets', 'Widget', ', shortNames: [wd]')).out.trim()).toBe('customresourcedefinition.apiextensions.k8s.io/widgets.example.com created');
    expect(ok('wait', '--for=condition=Established', 'crd/widgets.example.com', '--timeout=10s').trim()).toBe('customresourcedefinition.apiextensions.k8s.io/widgets.example.com condition met');
    const got = JSON.parse(ok('get', 'crd', 'widgets.example.com', '-o', 'json'));
    expect(got.spec.names).toEqual({ plural: 'widgets', kind: 'Widget', shortNames: ['wd'], singular: 'widget', listKind: 'WidgetList' });
    expect(got.status.acceptedNames).toEqual(got.spec.names);
    expect(got.status.storedVersions).toEqual(['v1']);
    expect(condition(got, 'NamesAccepted')).toMatchObject({ status: 'True', reason: 'NoConflicts', message: 'no conflicts found' });
    expect(condition(got, 'Established')).toMatchObject({ status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' });

    expect(ok('api-resources', '--api-group=example.com').trim().split('\n').map((l) => l.trim().split(/\s+/))).toEqual([
      ['NAME', 'SHORTNAMES', 'APIVERSION', 'NAMESPACED', 'KIND'],
      ['widgets', 'wd', 'example.com/v1', 'true', 'Widget'],
    ]);
    ok('create', 'namespace', 'shop');
    expect(apply('w', 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: sprocket, namespace: shop}\nspec: {size: 3}\n').out.trim()).toBe('widget.example.com/sprocket created');
    const rows = ok('get', 'widgets', '-A').trim().split('\n');
    expect(rows[0]!.split(/\s{2,}/)).toEqual(['NAMESPACE', 'NAME', 'SIZE', 'AGE']);
    expect(rows.slice(1)).toEqual([expect.stringMatching(/^shop\s+sprocket\s+3\s+\d+s$/)]);
    expect(JSON.parse(ok('get', 'wd', 'sprocket', '-n', 'shop', '-o', 'json'))).toMatchObject({ apiVersion: 'example.com/v1', kind: 'Widget', spec: { size: 3 } });

    // No strategic merge for custom resources (415), merge patches work; the status subresource changes status alone.
    const smp = kubectl('patch', 'widget', 'sprocket', '-n', 'shop', '--type=strategic', '-p', '{"spec":{"size":4}}');
    expect(smp.code).toBe(1);
    expect(smp.err).toContain('the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml');
    ok('patch', 'widget', 'sprocket', '-n', 'shop', '--type=merge', '-p', '{"spec":{"size":4},"status":{"ready":true}}');
    ok('patch', 'widget', 'sprocket', '-n', 'shop', '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Shiny"}}');
    expect(JSON.parse(ok('get', 'widget', 'sprocket', '-n', 'shop', '-o', 'json'))).toMatchObject({ spec: { size: 4 }, status: { phase: 'Shiny' } });

    // The name must be PLURAL.GROUP.
    const bad = apply('bad-crd', crd('gizmos', 'Gizmo').replace('name: gizmos.example.com', 'name: gizmo.example.com'));
    expect(bad.code).toBe(1);
    // kubectl names the Status's details.kind; the message itself names the qualified kind, as errors.NewInvalid words it.
    expect(bad.err).toContain('The CustomResourceDefinition "gizmo.example.com" is invalid: metadata.name: Invalid value: "gizmo.example.com": must be spec.names.plural+"."+spec.group');
    const invalid = await raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'gizmo.example.com' }, spec: { group: 'example.com', names: { plural: 'gizmos', kind: 'Gizmo' }, scope: 'Namespaced', versions: [{ name: 'v1', served: true, storage: true }] } } });
    expect(invalid.json).toMatchObject({ code: 422, reason: 'Invalid', message: 'CustomResourceDefinition.apiextensions.k8s.io "gizmo.example.com" is invalid: metadata.name: Invalid value: "gizmo.example.com": must be spec.names.plural+"."+spec.group', details: { name: 'gizmo.example.com', group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition' } });

    expect(ok('delete', 'widget', 'sprocket', '-n', 'shop', '--wait=false').trim()).toBe('widget.example.com "sprocket" deleted from shop namespace');
    expect(ok('get', 'widgets', '-A', '-o', 'name')).toBe('');
  });

  it('a metadata-only list (PartialObjectMetadataList) pages with limit/continue and holds every object exactly once; one object as PartialObjectMetadata', async () => {
    ok('create', 'namespace', 'meta');
    for (let i = 0; i < 7; i++) ok('create', 'configmap', `cm-${i}`, '-n', 'meta', `--from-literal=k=${i}`);
    // The seven and the namespace's kube-root-ca.crt (the root CA controller's, on its next pass).
    expect(await until(() => kubectl('get', 'configmap', 'kube-root-ca.crt', '-n', 'meta').code === 0)).toBe(true);
    const all = ok('get', 'configmaps', '-n', 'meta', '-o', 'jsonpath={.items[*].metadata.name}').trim().split(' ');
    expect(all).toHaveLength(8);
    const accept = 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
    const names: string[] = [];
    let cont = '';
    let pages = 0;
    do {
      const r = await raw('GET', `/api/v1/namespaces/meta/configmaps?limit=3${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`, { accept });
      expect(r.code).toBe(200);
      expect(r.type).toBe('application/json');
      expect(r.json).toMatchObject({ kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: expect.any(String) } });
      for (const item of r.json.items as Any[]) {
        expect(Object.keys(item).sort()).toEqual(['apiVersion', 'kind', 'metadata']);
        expect(item).toMatchObject({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { namespace: 'meta', uid: expect.any(String) } });
        names.push(item.metadata.name);
      }
      cont = r.json.metadata.continue ?? '';
      if (cont) expect(r.json.metadata.remainingItemCount).toBe(all.length - names.length);
      pages++;
    } while (cont);
    expect(pages).toBe(3);
    expect(names.sort()).toEqual(all.sort());
    expect(new Set(names).size).toBe(names.length);
    const one = await raw('GET', '/api/v1/namespaces/meta/configmaps/cm-0', { accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json' });
    expect(one.json).toEqual({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: expect.objectContaining({ name: 'cm-0', namespace: 'meta' }) });
  });

  it('a ConfigMap with a finalizer, deleted, stays with its deletionTimestamp until the finalizer is patched away', async () => {
    apply('held-cm', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: meta, finalizers: [example.com/hold]}\ndata: {k: v}\n');
    expect(ok('delete', 'configmap', 'held', '-n', 'meta', '--wait=false').trim()).toBe('configmap "held" deleted from meta namespace');
    const held = JSON.parse(ok('get', 'configmap', 'held', '-n', 'meta', '-o', 'json'));
    expect(held.metadata.deletionTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(held.metadata.finalizers).toEqual(['example.com/hold']);
    ok('patch', 'configmap', 'held', '-n', 'meta', '--type=merge', '-p', '{"metadata":{"finalizers":null}}');
    expect(kubectl('get', 'configmap', 'held', '-n', 'meta').err.trim()).toBe('Error from server (NotFound): configmaps "held" not found');
  });

  it('a CRD deleted while a custom resource holds a finalizer stays Terminating with the cleanup finalizer, refuses creates, and goes once that finalizer is removed', async () => {
    apply('gadgets', crd('gadgets', 'Gadget'));
    await until(() => kubectl('get', 'gadgets', '-A').code === 0);
    apply('g', ['held', 'free-1', 'free-2'].map((n) => `apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: ${n}, namespace: shop${n === 'held' ? ', finalizers: [example.com/hold]' : ''}}\nspec: {size: 1}`).join('\n---\n'));
    expect(ok('delete', 'crd', 'gadgets.example.com', '--wait=false').trim()).toBe('customresourcedefinition.apiextensions.k8s.io "gadgets.example.com" deleted');
    expect(await until(() => ok('get', 'gadgets', '-n', 'shop', '-o', 'name').trim() === 'gadget.example.com/held')).toBe(true);
    const terminating = JSON.parse(ok('get', 'crd', 'gadgets.example.com', '-o', 'json'));
    expect(terminating.metadata.deletionTimestamp).toBeDefined();
    expect(terminating.metadata.finalizers).toEqual(['customresourcecleanup.apiextensions.k8s.io']);
    expect(condition(terminating, 'Terminating')).toMatchObject({ status: 'True', reason: 'InstanceDeletionInProgress', message: 'CustomResource deletion is in progress' });
    expect(JSON.parse(ok('get', 'gadget', 'held', '-n', 'shop', '-o', 'json')).metadata.deletionTimestamp).toBeDefined();
    const refused = await raw('POST', '/apis/example.com/v1/namespaces/shop/gadgets', { body: { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'late' } } });
    expect(refused.code).toBe(405);
    expect(refused.json).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'MethodNotAllowed', message: 'create not allowed while custom resource definition is terminating', code: 405 });

    ok('patch', 'gadget', 'held', '-n', 'shop', '--type=merge', '-p', '{"metadata":{"finalizers":null}}');
    expect(await until(() => kubectl('get', 'crd', 'gadgets.example.com').code !== 0)).toBe(true);
    expect(kubectl('get', 'crd', 'gadgets.example.com').err.trim()).toBe('Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "gadgets.example.com" not found');
    expect((await raw('GET', '/apis/example.com/v1/namespaces/shop/gadgets')).code).toBe(404);
    // The other CRD's resource is still served.
    expect((await raw('GET', '/apis/example.com/v1/widgets')).code).toBe(200);
  });

  it('the metrics APIService: Available while served; with the fault switch FailedDiscoveryCheck, Stale in discovery, 503 under it; recovers when unset', async () => {
    expect((await raw('GET', '/apis/metrics.k8s.io/v1beta1/nodes')).code).toBe(404);
    apply('apiservice', 'apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1beta1.metrics.k8s.io}\nspec: {group: metrics.k8s.io, version: v1beta1, service: {namespace: kube-system, name: metrics-server, port: 443}, groupPriorityMinimum: 100, versionPriority: 100, insecureSkipTLSVerify: true}\n');
    const available = () => condition(JSON.parse(ok('get', 'apiservice', 'v1beta1.metrics.k8s.io', '-o', 'json')), 'Available');
    expect(await until(() => available()?.status === 'True')).toBe(true);
    expect(available()).toMatchObject({ reason: 'Passed', message: 'all checks passed' });
    const since = available().lastTransitionTime;
    expect((await raw('GET', '/apis/metrics.k8s.io/v1beta1/nodes')).json).toMatchObject({ kind: 'NodeMetricsList', apiVersion: 'metrics.k8s.io/v1beta1', items: [] });
    expect((await raw('POST', '/apis/metrics.k8s.io/v1beta1/nodes', { body: {} })).code).toBe(405);
    const metricsGroup = async (): Promise<Any> => ((await raw('GET', '/apis', { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' })).json.items as Any[]).find((g) => g.metadata.name === 'metrics.k8s.io') ?? {};
    expect((await metricsGroup()).versions).toEqual([expect.objectContaining({ version: 'v1beta1', freshness: 'Current' })]);
    expect(ok('api-resources', '--api-group=metrics.k8s.io').trim().split('\n').slice(1).map((l) => l.trim().split(/\s+/))).toEqual([
      ['nodes', 'metrics.k8s.io/v1beta1', 'false', 'NodeMetrics'],
      ['pods', 'metrics.k8s.io/v1beta1', 'true', 'PodMetrics'],
    ]);

    ok('create', 'configmap', 'decom-sandbox-faults', '-n', 'kube-system', '--from-literal=apiServiceUnavailable=v1beta1.metrics.k8s.io');
    expect(await until(() => available()?.status === 'False')).toBe(true);
    expect(available()).toMatchObject({
      reason: 'FailedDiscoveryCheck',
      message: 'failing or missing response from https://10.96.0.20:443/apis/metrics.k8s.io/v1beta1: Get "https://10.96.0.20:443/apis/metrics.k8s.io/v1beta1": dial tcp 10.96.0.20:443: connect: connection refused',
    });
    expect(ok('get', 'apiservices')).toMatch(/^v1beta1\.metrics\.k8s\.io\s+kube-system\/metrics-server\s+False \(FailedDiscoveryCheck\)\s+\d+s$/m);
    const stale = await metricsGroup();
    expect(stale.versions).toEqual([expect.objectContaining({ version: 'v1beta1', freshness: 'Stale' })]);
    const down = await raw('GET', '/apis/metrics.k8s.io/v1beta1/nodes');
    expect({ code: down.code, text: down.text }).toEqual({ code: 503, text: 'service unavailable\n' });
    expect((await raw('GET', '/apis/metrics.k8s.io/v1beta1')).code).toBe(503);
    expect(kubectl('get', '--raw', '/apis/metrics.k8s.io/v1beta1/pods').err.trim()).toBe('Error from server (ServiceUnavailable): the server is currently unable to handle the request');
    // kubectl 1.36 (its disk-cached discovery) leaves a Stale group version out without a word.
    const resources = kubectl('api-resources');
    expect(resources.code).toBe(0);
    expect(resources.out).not.toContain('metrics.k8s.io');

    ok('patch', 'configmap', 'decom-sandbox-faults', '-n', 'kube-system', '--type=merge', '-p', '{"data":{"apiServiceUnavailable":""}}');
    expect(await until(() => available()?.status === 'True')).toBe(true);
    expect(available().lastTransitionTime >= since).toBe(true);
    expect((await metricsGroup()).versions[0].freshness).toBe('Current');
    expect((await raw('GET', '/apis/metrics.k8s.io/v1beta1/namespaces/default/pods')).json).toMatchObject({ kind: 'PodMetricsList', items: [] });
    expect(ok('api-resources')).toMatch(/^nodes\s+metrics\.k8s\.io\/v1beta1\s+false\s+NodeMetrics$/m);

    // Any other APIService: a local one is always available; one naming a service the sandbox does not have
    // (it has no Services) is ServiceNotFound, and its group version is unavailable as the metrics one was.
    apply('others', ['v1.local.example.io', 'v1.remote.example.io'].map((name) => `apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: ${name}}\nspec: {group: ${name.slice(3)}, version: v1, groupPriorityMinimum: 100, versionPriority: 100${name.startsWith('v1.remote') ? ', service: {namespace: gadgets, name: gadget-api, port: 443}' : ''}}`).join('\n---\n'));
    const of = (name: string) => condition(JSON.parse(ok('get', 'apiservice', name, '-o', 'json')), 'Available');
    expect(await until(() => of('v1.remote.example.io')?.status === 'False' && of('v1.local.example.io')?.status === 'True')).toBe(true);
    expect(of('v1.local.example.io')).toMatchObject({ reason: 'Local', message: 'Local APIServices are always available' });
    expect(of('v1.remote.example.io')).toMatchObject({ reason: 'ServiceNotFound', message: 'service/gadget-api in "gadgets" is not present' });
    expect((await raw('GET', '/apis/remote.example.io/v1')).code).toBe(503);
    ok('delete', 'apiservice', 'v1.local.example.io', 'v1.remote.example.io');
  });

  it("a namespace's deletion deletes its custom resources (the namespace controller), then the namespace goes", async () => {
    ok('create', 'namespace', 'doomed');
    apply('doomed-w', 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: cog, namespace: doomed}\nspec: {size: 2}\n');
    ok('delete', 'namespace', 'doomed', '--wait=false');
    expect(await until(() => kubectl('get', 'namespace', 'doomed').code !== 0)).toBe(true);
    expect((await raw('GET', '/apis/example.com/v1/namespaces/doomed/widgets')).json.items).toEqual([]);
  });

  it("an aggregated ClusterRole's rules follow the labelled ClusterRoles", async () => {
    apply('agg', [
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: monitoring}\naggregationRule:\n  clusterRoleSelectors: [{matchLabels: {rbac.example.com/aggregate-to-monitoring: "true"}}]\nrules: []',
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: b-pods, labels: {rbac.example.com/aggregate-to-monitoring: "true"}}\nrules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]',
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: a-nodes, labels: {rbac.example.com/aggregate-to-monitoring: "true"}}\nrules: [{apiGroups: [""], resources: [nodes], verbs: [get]}, {apiGroups: [""], resources: [pods], verbs: [get, list]}]',
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: other}\nrules: [{apiGroups: [apps], resources: [deployments], verbs: [get]}]',
    ].join('\n---\n'));
    const rules = () => JSON.parse(ok('get', 'clusterrole', 'monitoring', '-o', 'json')).rules;
    const want = [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }, { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }];
    expect(await until(() => JSON.stringify(rules()) === JSON.stringify(want))).toBe(true);
    ok('label', 'clusterrole', 'other', 'rbac.example.com/aggregate-to-monitoring=true');
    expect(await until(() => rules()?.length === 3)).toBe(true);
    expect(rules()[2]).toEqual({ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'] });
    ok('delete', 'clusterrole', 'a-nodes', 'other');
    expect(await until(() => JSON.stringify(rules()) === JSON.stringify([want[1]]))).toBe(true);
  });

  it('logs each request once answered, with requestReceivedTimestamp, stageTimestamp (microseconds) and responseStatus', () => {
    kubectl('get', 'configmap', 'nope', '-n', 'meta');
    const lines = readFileSync(p('audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Any);
    const miss = [...lines].reverse().find((l) => l.requestURI === '/api/v1/namespaces/meta/configmaps/nope');
    expect(miss).toMatchObject({ user: 'kubernetes-admin', verb: 'get', userAgent: expect.stringMatching(/^kubectl/), responseStatus: { code: 404 } });
    const micro = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
    for (const l of lines) {
      expect(l.requestReceivedTimestamp).toMatch(micro);
      expect(l.stageTimestamp).toMatch(micro);
      expect(l.stageTimestamp >= l.requestReceivedTimestamp).toBe(true);
      expect(l.responseStatus.code).toBeGreaterThanOrEqual(200);
    }
  });

  it('writes its objects on SIGTERM: one created just before a stop is there after the restart', async () => {
    expect((await raw('POST', '/apis/example.com/v1/namespaces/shop/widgets', { body: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'kept' }, spec: { size: 1 } } })).code).toBe(201);
    expect((await raw('POST', '/api/v1/namespaces/meta/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'last-write' } } })).code).toBe(201);
    await stop();
    const saved = JSON.parse(readFileSync(p('objects.json'), 'utf8')) as { objects: { resource: string; obj: Any }[] };
    expect(saved.objects.some((o) => o.resource === 'configmaps' && o.obj.metadata.name === 'last-write')).toBe(true);
    // A custom resource is kept under PLURAL.GROUP.
    expect(saved.objects.filter((o) => o.obj.kind === 'Widget').map((o) => `${o.resource} ${o.obj.metadata.name}`)).toEqual(['widgets.example.com kept']);
    await start();
    expect(ok('get', 'configmap', 'last-write', '-n', 'meta', '-o', 'name').trim()).toBe('configmap/last-write');
    expect(ok('get', 'widgets', '-n', 'shop', '-o', 'name').trim()).toBe('widget.example.com/kept');
  });
});
