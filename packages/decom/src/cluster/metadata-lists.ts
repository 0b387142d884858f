/**
 * A resource listed metadata-only (PartialObjectMetadataList), every page: what the
 * audit needs of objects whose types decom does not know (custom resources among them),
 * at a fraction of a full list's bytes. What is kept of each page is only the count and
 * the objects being deleted, so memory stays flat however many objects a resource has.
 */
import type { ApiGet } from './context.js';
import { collectionPath, groupResource, type ApiResource } from './discovery.js';
import { listAll } from './pages.js';
import type { ListedResource, ObjectMeta } from '../rules/audit.js';

/** client-go's Accept for a metadata-only list, with plain JSON for a server that cannot (it answers full objects, read the same way). */
const METADATA = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** What a rule reads of one object's metadata. */
function kept(m: Any): ObjectMeta {
  return {
    name: String(m.name ?? ''),
    ...(m.namespace ? { namespace: String(m.namespace) } : {}),
    ...(m.uid ? { uid: String(m.uid) } : {}),
    ...(m.deletionTimestamp ? { deletionTimestamp: String(m.deletionTimestamp) } : {}),
    ...(Array.isArray(m.finalizers) && m.finalizers.length ? { finalizers: m.finalizers.map(String) } : {}),
  };
}

/** Every page of the resource's list across all namespaces. */
export async function listMetadata(get: ApiGet, r: ApiResource, pageSize: number): Promise<ListedResource> {
  let count = 0;
  const deleting: ObjectMeta[] = [];
  await listAll(async (p) => {
    const doc = (await get(collectionPath(r), { accept: METADATA, query: { limit: String(p.limit), ...(p._continue ? { continue: p._continue } : {}) } })) as Any;
    const items = (doc?.items ?? []) as Any[];
    count += items.length;
    for (const i of items) if (i?.metadata?.deletionTimestamp) deleting.push(kept(i.metadata));
    // Nothing of the page is kept for listAll to gather: only its token.
    return { items: [], metadata: { _continue: doc?.metadata?.continue || undefined } };
  }, pageSize);
  return { resource: groupResource(r), kind: r.kind, namespaced: r.namespaced, count, deleting };
}
