/**
 * Discovery as kube-apiserver (with kube-aggregator before it) answers it: the
 * aggregated v2 documents at /api and /apis, the plain APIGroupList, APIGroup and
 * APIResourceList, and the OpenAPI v3 root and documents — all of what is served now
 * (resources.ts servedResources). A group version whose APIService names a service and
 * is not Available is listed Stale in aggregated discovery, as the aggregator keeps it.
 */
import { unavailableGroupVersions } from './apiservices.js';
import { VERBS, servedGroups, servedResources, type Resource } from './resources.js';
import type { Store } from './store.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const KUBERNETES_VERSION = { major: '1', minor: '32', gitVersion: 'v1.32.4', gitCommit: '59526cd4867447956156ae3a602fcbac10f2c335', gitTreeState: 'clean', buildDate: '2025-04-22T16:02:27Z', goVersion: 'go1.23.6', compiler: 'gc', platform: 'linux/amd64' };

export const DISCOVERY_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

const gv = (group: string, version: string) => (group ? `${group}/${version}` : version);

/** Every group with its versions, served or only registered (an APIService of a group the sandbox does not serve), and the stale ones. */
function groups(store: Store): { name: string; versions: string[]; stale: Set<string> }[] {
  const out = servedGroups(store).map((g) => ({ ...g, stale: new Set<string>() }));
  for (const u of unavailableGroupVersions(store)) {
    let g = out.find((x) => x.name === u.group);
    if (!g) out.push((g = { name: u.group, versions: [], stale: new Set() }));
    if (!g.versions.includes(u.version)) g.versions.push(u.version);
    g.stale.add(u.version);
  }
  return out;
}

const resourcesOf = (store: Store, group: string, version: string): Resource[] => servedResources(store).filter((r) => r.group === group && r.version === version);

/** Aggregated discovery of one group (the core group is "" under /api). */
function discoveryGroup(store: Store, g: { name: string; versions: string[]; stale: Set<string> }): Any {
  return {
    metadata: { name: g.name, creationTimestamp: null },
    versions: g.versions.map((version) => ({
      version,
      resources: resourcesOf(store, g.name, version).map((r) => ({
        resource: r.plural,
        responseKind: { group: r.group, version: r.version, kind: r.kind },
        scope: r.namespaced ? 'Namespaced' : 'Cluster',
        singularResource: r.singular,
        verbs: r.verbs ?? VERBS,
        ...(r.shortNames ? { shortNames: r.shortNames } : {}),
        ...(r.categories ? { categories: r.categories } : {}),
        ...(r.subresources
          ? { subresources: r.subresources.map((s) => ({ subresource: s.name, responseKind: { group: s.group ?? r.group, version: s.version ?? r.version, kind: s.kind }, verbs: s.verbs })) }
          : {}),
      })),
      freshness: g.stale.has(version) ? 'Stale' : 'Current',
    })),
  };
}

/** The APIGroupDiscoveryList at /api (core: true) or /apis. */
export function aggregatedDiscovery(store: Store, core: boolean): Any {
  const items = groups(store).filter((g) => (g.name === '') === core).map((g) => discoveryGroup(store, g));
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}

const groupInfo = (g: { name: string; versions: string[] }) => {
  const versions = g.versions.map((v) => ({ groupVersion: gv(g.name, v), version: v }));
  return { name: g.name, versions, preferredVersion: versions[0] };
};

export const apiGroupList = (store: Store): Any => ({ kind: 'APIGroupList', apiVersion: 'v1', groups: groups(store).filter((g) => g.name).map(groupInfo) });

/** /apis/GROUP, or undefined when no such group is served or registered. */
export function apiGroup(store: Store, name: string): Any | undefined {
  const g = groups(store).find((x) => x.name === name && name);
  return g ? { kind: 'APIGroup', apiVersion: 'v1', ...groupInfo(g) } : undefined;
}

/** /api/v1 or /apis/GROUP/VERSION, or undefined when that version is not served. */
export function apiResourceList(store: Store, group: string, version: string): Any | undefined {
  const rs = resourcesOf(store, group, version);
  if (!rs.length) return undefined;
  const list: Any[] = [];
  for (const r of rs) {
    list.push({ name: r.plural, singularName: r.singular, namespaced: r.namespaced, kind: r.kind, verbs: r.verbs ?? VERBS, ...(r.shortNames ? { shortNames: r.shortNames } : {}), ...(r.categories ? { categories: r.categories } : {}) });
    for (const s of r.subresources ?? []) {
      list.push({ name: `${r.plural}/${s.name}`, singularName: '', namespaced: r.namespaced, ...(s.group !== undefined ? { group: s.group, version: s.version } : {}), kind: s.kind, verbs: s.verbs });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv(group, version), resources: list };
}

const openApiPath = (group: string, version: string) => (group ? `apis/${group}/${version}` : `api/${version}`);

/** OpenAPI v3's root: one document per group/version served (an unavailable one's is not). */
export function openApiRoot(store: Store): Any {
  const stale = new Set(unavailableGroupVersions(store).map((u) => gv(u.group, u.version)));
  const paths: Any = {};
  for (const g of servedGroups(store)) {
    for (const v of g.versions.filter((x) => !stale.has(gv(g.name, x)))) {
      paths[openApiPath(g.name, v)] = { serverRelativeURL: `/openapi/v3/${openApiPath(g.name, v)}?hash=${KUBERNETES_VERSION.gitCommit.slice(0, 16).toUpperCase()}` };
    }
  }
  return { paths };
}

/**
 * One group/version's OpenAPI v3 document: its paths and operations, without schemas,
 * or undefined when not served. kubectl reads it to learn that the server validates
 * fields itself (the PATCH operation of a kind taking `fieldValidation`), and then
 * validates nothing on its side.
 */
export function openApiDoc(store: Store, group: string, version: string): Any | undefined {
  const rs = resourcesOf(store, group, version);
  if (!rs.length) return undefined;
  const paths: Any = {};
  const param = (name: string) => ({ name, in: 'query', schema: { type: 'string', uniqueItems: true } });
  for (const r of rs) {
    const gvk = { 'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.kind } };
    const base = `/${openApiPath(r.group, r.version)}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.plural}`;
    const op = (action: string, extra: Any[] = []) => ({ operationId: `${action}${r.kind}`, parameters: extra, responses: {}, 'x-kubernetes-action': action, ...gvk });
    const can = (verb: string) => (r.verbs ?? VERBS).includes(verb);
    paths[base] = { get: op('list'), ...(can('create') ? { post: op('post', [param('dryRun'), param('fieldManager'), param('fieldValidation')]) } : {}), ...(can('deletecollection') ? { delete: op('deletecollection') } : {}) };
    paths[`${base}/{name}`] = {
      get: op('get'),
      ...(can('update') ? { put: op('put', [param('dryRun'), param('fieldManager'), param('fieldValidation')]) } : {}),
      ...(can('patch') ? { patch: op('patch', [param('dryRun'), param('fieldManager'), param('fieldValidation'), param('force')]) } : {}),
      ...(can('delete') ? { delete: op('delete', [param('dryRun'), param('gracePeriodSeconds')]) } : {}),
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: KUBERNETES_VERSION.gitVersion }, paths, components: { schemas: {} } };
}
