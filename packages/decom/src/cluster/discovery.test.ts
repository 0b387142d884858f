// Discovery and the metadata-only lists (src/cluster/discovery.ts, metadata-lists.ts) against
// documents shaped as kube-apiserver answers them (aggregated apidiscovery.k8s.io/v2, and the
// plain documents of a server without it), through a fake GET that records what was asked. Unit
// only: the sandbox API's side is packages/decom/test/audit/stuck-deletions.test.ts.
import { describe, expect, it } from 'vitest';
import { ApiException } from '@kubernetes/client-node';
import type { ApiGet } from './context.js';
import { discover } from './discovery.js';
import { listMetadata } from './metadata-lists.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A GET answering from `docs` by path (a function: by the query too), recording each request. */
function fakeGet(docs: Record<string, unknown | ((q: Record<string, string>) => unknown)>): { get: ApiGet; asked: string[] } {
  const asked: string[] = [];
  const get: ApiGet = async (path, o = {}) => {
    asked.push(`${path}${o.query ? `?${new URLSearchParams(o.query)}` : ''} ${o.accept ?? ''}`.trim());
    const doc = docs[path];
    if (doc === undefined) throw new ApiException(404, 'GET', '{"kind":"Status","message":"the server could not find the requested resource","code":404}', {});
    if (doc instanceof Error) throw doc;
    return typeof doc === 'function' ? (doc as (q: Record<string, string>) => unknown)(o.query ?? {}) : doc;
  };
  return { get, asked };
}

const resource = (name: string, kind: string, scope: string, verbs: string[]) => ({ resource: name, responseKind: { group: '', version: '', kind }, scope, verbs });
const RW = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];

describe('discovery, as kubectl api-resources finds it', () => {
  it('aggregated: every group in one request each for /api and /apis; a resource once per group, from the preferred version; a Stale version failed', async () => {
    const { get, asked } = fakeGet({
      '/api': { kind: 'APIGroupDiscoveryList', items: [{ metadata: { name: '' }, versions: [{ version: 'v1', freshness: 'Current', resources: [resource('configmaps', 'ConfigMap', 'Namespaced', RW), resource('nodes', 'Node', 'Cluster', RW)] }] }] },
      '/apis': {
        kind: 'APIGroupDiscoveryList',
        items: [
          { metadata: { name: 'example.com' }, versions: [
            { version: 'v2', freshness: 'Current', resources: [resource('widgets', 'Widget', 'Namespaced', RW)] },
            { version: 'v1', freshness: 'Current', resources: [resource('widgets', 'Widget', 'Namespaced', RW), resource('gadgets', 'Gadget', 'Cluster', RW)] },
          ] },
          { metadata: { name: 'metrics.k8s.io' }, versions: [{ version: 'v1beta1', freshness: 'Stale', resources: [resource('pods', 'PodMetrics', 'Namespaced', ['get', 'list'])] }] },
        ],
      },
    });
    const d = await discover(get);
    expect(d.resources.map((r) => `${r.group}/${r.version} ${r.resource} ${r.kind} ${r.namespaced}`)).toEqual([
      '/v1 configmaps ConfigMap true', '/v1 nodes Node false', 'example.com/v2 widgets Widget true', 'example.com/v1 gadgets Gadget false',
    ]);
    expect(d.failed).toEqual([{ groupVersion: 'metrics.k8s.io/v1beta1', why: 'stale GroupVersion discovery: metrics.k8s.io/v1beta1 (its API server does not answer)' }]);
    const accept = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';
    expect(asked).toEqual([`/api ${accept}`, `/apis ${accept}`]);
  });

  it('a server without it: the plain documents, every version of each group, a resource from the most preferred that serves it; one that answers 503 is failed with its words, the rest stand', async () => {
    const { get } = fakeGet({
      '/api': { kind: 'APIVersions', versions: ['v1'] },
      '/apis': { kind: 'APIGroupList', groups: [
        { name: 'apps', versions: [{ groupVersion: 'apps/v1', version: 'v1' }], preferredVersion: { groupVersion: 'apps/v1', version: 'v1' } },
        {
          name: 'monitoring.coreos.com', versions: [{ groupVersion: 'monitoring.coreos.com/v1', version: 'v1' }, { groupVersion: 'monitoring.coreos.com/v1alpha1', version: 'v1alpha1' }],
          preferredVersion: { groupVersion: 'monitoring.coreos.com/v1', version: 'v1' },
        },
        { name: 'metrics.k8s.io', versions: [{ groupVersion: 'metrics.k8s.io/v1beta1', version: 'v1beta1' }], preferredVersion: { groupVersion: 'metrics.k8s.io/v1beta1', version: 'v1beta1' } },
      ] },
      '/api/v1': { kind: 'APIResourceList', resources: [{ name: 'pods', kind: 'Pod', namespaced: true, verbs: RW }, { name: 'pods/status', kind: 'Pod', namespaced: true, verbs: ['get'] }] },
      '/apis/apps/v1': { kind: 'APIResourceList', resources: [{ name: 'deployments', kind: 'Deployment', namespaced: true, verbs: RW }] },
      '/apis/monitoring.coreos.com/v1': { kind: 'APIResourceList', resources: [{ name: 'prometheuses', kind: 'Prometheus', namespaced: true, verbs: RW }] },
      '/apis/monitoring.coreos.com/v1alpha1': { kind: 'APIResourceList', resources: [
        { name: 'prometheuses', kind: 'Prometheus', namespaced: true, verbs: RW }, { name: 'alertmanagerconfigs', kind: 'AlertmanagerConfig', namespaced: true, verbs: RW },
      ] },
      '/apis/metrics.k8s.io/v1beta1': new ApiException(503, 'GET', 'service unavailable\n', {}),
    });
    const d = await discover(get);
    expect(d.resources.map((r) => `${r.group}/${r.version} ${r.resource}`).sort()).toEqual([
      '/v1 pods', 'apps/v1 deployments', 'monitoring.coreos.com/v1 prometheuses', 'monitoring.coreos.com/v1alpha1 alertmanagerconfigs',
    ]);
    expect(d.failed).toEqual([{ groupVersion: 'metrics.k8s.io/v1beta1', why: 'service unavailable (HTTP 503)' }]);
  });

  it('discovery itself refused: thrown, so the audit names the kind as not checked', async () => {
    const { get } = fakeGet({ '/api': new ApiException(403, 'GET', '{"kind":"Status","message":"forbidden","code":403}', {}), '/apis': { kind: 'APIGroupList', groups: [] } });
    await expect(discover(get)).rejects.toThrow(/HTTP-Code: 403/);
  });
});

describe('a metadata-only list: every page, only the count and the objects being deleted kept', () => {
  it('asks PartialObjectMetadataList page by page with the token each page gave, across all namespaces', async () => {
    const item = (i: number, deleting = false) => ({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name: `w${i}`, namespace: 'shop', uid: `u${i}`, resourceVersion: '9', managedFields: [{ manager: 'kubectl' }], ...(deleting ? { deletionTimestamp: '2026-11-25T11:00:00Z', finalizers: ['example.com/protect'] } : {}) } });
    const pages: Record<string, Any> = {
      '': { kind: 'PartialObjectMetadataList', metadata: { continue: 'a' }, items: [item(1), item(2, true)] },
      a: { kind: 'PartialObjectMetadataList', metadata: { continue: 'b' }, items: [item(3), item(4)] },
      b: { kind: 'PartialObjectMetadataList', metadata: {}, items: [item(5, true)] },
    };
    const { get, asked } = fakeGet({ '/apis/example.com/v1/widgets': (q: Record<string, string>) => pages[q.continue ?? ''] });
    const listed = await listMetadata(get, { group: 'example.com', version: 'v1', resource: 'widgets', kind: 'Widget', namespaced: true, verbs: RW }, 2);
    expect(listed).toEqual({
      resource: 'widgets.example.com', kind: 'Widget', namespaced: true, count: 5,
      deleting: [
        { name: 'w2', namespace: 'shop', uid: 'u2', deletionTimestamp: '2026-11-25T11:00:00Z', finalizers: ['example.com/protect'] },
        { name: 'w5', namespace: 'shop', uid: 'u5', deletionTimestamp: '2026-11-25T11:00:00Z', finalizers: ['example.com/protect'] },
      ],
    });
    const accept = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
    expect(asked).toEqual([`/apis/example.com/v1/widgets?limit=2 ${accept}`, `/apis/example.com/v1/widgets?limit=2&continue=a ${accept}`, `/apis/example.com/v1/widgets?limit=2&continue=b ${accept}`]);
  });
});
