/**
 * What the API serves, found as `kubectl api-resources` finds it: aggregated discovery
 * (apidiscovery.k8s.io v2, or v2beta1 before 1.30: one request for /api and one for
 * /apis), else the plain documents (/api, /apis, then each version of each group). Each
 * resource is taken once per group, from the first version in the server's order of
 * preference that serves it (client-go's ServerPreferredResources).
 *
 * A group version that cannot be read stands on its own: an aggregated API server
 * that is down (discovery marks it Stale, or its document answers 503) is named in
 * `failed` with the API's words, and every other group is still read.
 */
import type { ApiGet } from './context.js';
import { errorLine } from './kubeconfig.js';
import { pool } from '../util/pool.js';

/** A resource as discovery describes it. */
export interface ApiResource {
  group: string;
  version: string;
  /** The plural, as in a URL and in RBAC's rules. */
  resource: string;
  kind: string;
  namespaced: boolean;
  verbs: string[];
}

export interface Discovery {
  resources: ApiResource[];
  /** Group versions discovery could not read, each with why ("metrics.k8s.io/v1beta1", "the server is …"). */
  failed: { groupVersion: string; why: string }[];
}

/** The Accept header of aggregated discovery, with the plain document as the fallback an older server answers. */
const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';

/** A resource's name as kubectl and RBAC print a GroupResource: "configmaps", "widgets.example.com". */
export const groupResource = (r: Pick<ApiResource, 'group' | 'resource'>): string => (r.group ? `${r.resource}.${r.group}` : r.resource);

/** The collection's path across all namespaces: /api/v1/configmaps, /apis/example.com/v1/widgets. */
export const collectionPath = (r: Pick<ApiResource, 'group' | 'version' | 'resource'>): string => (r.group ? `/apis/${r.group}/${r.version}/${r.resource}` : `/api/${r.version}/${r.resource}`);

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** apidiscovery.k8s.io/v2's APIGroupDiscoveryList, read into resources; a Stale version is failed. */
function fromAggregated(list: Any, into: Discovery): void {
  for (const g of (list.items ?? []) as Any[]) {
    const group = String(g.metadata?.name ?? '');
    const seen = new Set<string>();
    for (const v of (g.versions ?? []) as Any[]) {
      const gv = group ? `${group}/${v.version}` : String(v.version);
      if (v.freshness === 'Stale') {
        into.failed.push({ groupVersion: gv, why: `stale GroupVersion discovery: ${gv} (its API server does not answer)` });
        continue;
      }
      for (const r of (v.resources ?? []) as Any[]) {
        if (seen.has(r.resource)) continue;
        seen.add(r.resource);
        into.resources.push({ group, version: String(v.version), resource: String(r.resource), kind: String(r.responseKind?.kind ?? ''), namespaced: r.scope === 'Namespaced', verbs: (r.verbs ?? []) as string[] });
      }
    }
  }
}

/** A plain APIResourceList (/api/v1, /apis/G/V): its resources, not their subresources, nor one an earlier version of the group gave. */
function fromResourceList(doc: Any, group: string, version: string, into: Discovery): void {
  for (const r of (doc.resources ?? []) as Any[]) {
    if (String(r.name).includes('/') || into.resources.some((x) => x.group === group && x.resource === r.name)) continue;
    into.resources.push({ group, version, resource: String(r.name), kind: String(r.kind ?? ''), namespaced: Boolean(r.namespaced), verbs: (r.verbs ?? []) as string[] });
  }
}

/** Every resource the API serves, and the group versions it could not describe. A failure of /api or /apis itself is thrown: nothing could be discovered. */
export async function discover(get: ApiGet): Promise<Discovery> {
  const out: Discovery = { resources: [], failed: [] };
  const [core, groups] = (await Promise.all([get('/api', { accept: AGGREGATED }), get('/apis', { accept: AGGREGATED })])) as [Any, Any];
  const plain: { path: string; group: string; version: string }[] = [];
  if (core?.kind === 'APIGroupDiscoveryList') fromAggregated(core, out);
  else for (const v of (core?.versions ?? ['v1']) as string[]) plain.push({ path: `/api/${v}`, group: '', version: v });
  if (groups?.kind === 'APIGroupDiscoveryList') fromAggregated(groups, out);
  else {
    // Every version, in the order the server prefers them (the preferred one first).
    for (const g of (groups?.groups ?? []) as Any[]) {
      for (const v of (g.versions ?? []) as { groupVersion?: string; version?: string }[]) {
        if (v.version) plain.push({ path: `/apis/${v.groupVersion}`, group: String(g.name), version: v.version });
      }
    }
  }
  // Fetched at once, read in that order, so a resource is its group's most preferred version's.
  const docs = await pool(plain, 8, async (p) => {
    try {
      return { doc: (await get(p.path)) as Any };
    } catch (e) {
      return { why: errorLine(e) };
    }
  });
  plain.forEach((p, i) => {
    const d = docs[i] as { doc?: Any; why?: string };
    if (d.doc) fromResourceList(d.doc, p.group, p.version, out);
    else out.failed.push({ groupVersion: p.group ? `${p.group}/${p.version}` : p.version, why: d.why ?? '' });
  });
  return out;
}
