/**
 * The API's side of the audit: ONE set of paginated lists per run, never a request per
 * node: Pods, Nodes, Namespaces, VolumeAttachments, PersistentVolumes, Leases and APIServices in full
 * (every page, cluster/pages.ts), and every other resource discovery names, custom
 * resources included, metadata-only (cluster/metadata-lists.ts).
 *
 * Each list stands on its own: one the API refuses (RBAC's 403, or any error) leaves
 * unchecked only the kinds that read it (rules/audit.ts API_INPUTS), the others are still
 * judged. Only when every list fails is the API as a whole unread (down, unreachable,
 * its certificate, our credentials).
 *
 * For a token or a client certificate (and the pod's service account) the lists are
 * read over plain HTTPS (cluster/https-api.ts), on this thread, and the client library
 * is never loaded. For any other credential they are read through the library, in a
 * worker thread: loading it costs ~0.4 s of CPU, which on the main thread would stall
 * every SSH handshake of the fleet's probes. This module is that worker's entry too
 * (see the bottom).
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { V1APIService, V1Lease, V1Namespace, V1Node, V1PersistentVolume, V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';
import { codeOf, errorLine, findApi, kubeClients, type ApiSource } from '../cluster/kubeconfig.js';
import type { ApiGet } from '../cluster/context.js';
import { plainApi, plainCredentials, type TypedList } from '../cluster/https-api.js';
import { discover, groupResource } from '../cluster/discovery.js';
import { listMetadata } from '../cluster/metadata-lists.js';
import { listAll, listPageSize, type Page, type PageRequest } from '../cluster/pages.js';
import { UserError } from '../util/errors.js';
import { pool } from '../util/pool.js';
import type { ApiList, ClusterView, ListedResource } from '../rules/audit.js';

/** The lists an audit reads, the seven read in full as RBAC names their resources (deploy/audit-cronjob.yaml's ClusterRoles grant them), then the rest. */
export const API_LISTS = {
  pods: 'pods',
  nodes: 'nodes',
  namespaces: 'namespaces',
  volumeattachments: 'volumeattachments.storage.k8s.io',
  persistentvolumes: 'persistentvolumes',
  leases: 'leases.coordination.k8s.io',
  apiservices: 'apiservices.apiregistration.k8s.io',
  objects: 'every other resource, through discovery',
} as const satisfies Record<ApiList, string>;

/**
 * Resources discovery names that the objects' lists leave out, and why. The rest of
 * what can be listed and deleted is listed metadata-only: what cannot be deleted
 * (metrics, reviews) cannot be stuck in deletion.
 */
export const NOT_LISTED: Readonly<Record<string, string>> = {
  secrets: 'a list of Secrets returns their data, so the audit is never granted one: a Secret held by a finalizer is not seen',
  'events.events.k8s.io': 'the core events under another name, listed as events',
  pods: 'read in full, judged by stuck-terminating-pod',
  namespaces: 'read in full, judged by stuck-terminating-namespace',
  nodes: 'read in full',
  'volumeattachments.storage.k8s.io': 'read in full',
  persistentvolumes: 'read in full, judged by stale-local-pv (a node affinity is not in the metadata)',
  'leases.coordination.k8s.io': 'read in full',
  'apiservices.apiregistration.k8s.io': 'read in full',
};

/** What reading the API came to: its lists (some maybe refused), no kubeconfig at all, or why no list could be read. */
export type ClusterRead = { view: ClusterView } | { none: true } | { server: string; error: string };

/** Every other resource, metadata-only: those listed, and those (resources, group versions) that could not be. */
export interface ObjectLists {
  objects: ListedResource[];
  unlisted: Record<string, string>;
}

/** Each list's outcome, as Promise.allSettled gives it. */
export interface SettledLists {
  pods: PromiseSettledResult<V1Pod[]>;
  nodes: PromiseSettledResult<V1Node[]>;
  namespaces: PromiseSettledResult<V1Namespace[]>;
  volumeattachments: PromiseSettledResult<V1VolumeAttachment[]>;
  persistentvolumes: PromiseSettledResult<V1PersistentVolume[]>;
  leases: PromiseSettledResult<V1Lease[]>;
  apiservices: PromiseSettledResult<V1APIService[]>;
  objects: PromiseSettledResult<ObjectLists>;
}

/**
 * What the lists came to, judged each on its own (pure: the seam the unit tests use).
 * Every list failed: the API could not be read at all, said as one line (the first
 * list's error: a connection refused fails them all alike). Otherwise a refused list
 * is named in `refused` with the API's own words, and the others stand.
 */
export function clusterRead(server: string, s: SettledLists): ClusterRead {
  const all = [s.pods, s.nodes, s.namespaces, s.volumeattachments, s.persistentvolumes, s.leases, s.apiservices, s.objects];
  const failed = all.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed && all.every((r) => r.status === 'rejected')) return { server, error: errorLine(failed.reason) };
  const refused: Partial<Record<ApiList, string>> = {};
  const unlisted: Record<string, string> = {};
  const items = <T>(list: ApiList, r: PromiseSettledResult<T[]>): T[] => {
    if (r.status === 'fulfilled') return r.value;
    refused[list] = `list ${API_LISTS[list]}: ${errorLine(r.reason)}`;
    // Its objects stuck in deletion were not seen either (pods and namespaces have kinds of their own).
    if (list !== 'pods' && list !== 'namespaces') unlisted[API_LISTS[list]] = refused[list];
    return [];
  };
  // A 404: the cluster does not serve apiregistration.k8s.io, so it has no APIService to
  // be unavailable; the empty list is the truth. Any other error (RBAC's 403) is a refusal.
  const apiservices = s.apiservices.status === 'rejected' && codeOf(s.apiservices.reason) === 404 ? { status: 'fulfilled' as const, value: [] } : s.apiservices;
  const view: ClusterView = {
    server,
    pods: items('pods', s.pods),
    nodes: items('nodes', s.nodes),
    namespaces: items('namespaces', s.namespaces),
    volumeAttachments: items('volumeattachments', s.volumeattachments),
    persistentVolumes: items('persistentvolumes', s.persistentvolumes),
    leases: items('leases', s.leases),
    apiServices: items('apiservices', apiservices),
    objects: [],
  };
  if (s.objects.status === 'fulfilled') {
    view.objects = s.objects.value.objects;
    Object.assign(unlisted, s.objects.value.unlisted);
  } else refused.objects = `discovery: ${errorLine(s.objects.reason)}`;
  if (Object.keys(refused).length) view.refused = refused;
  if (Object.keys(unlisted).length) view.unlisted = unlisted;
  return { view };
}

/** How many resources are listed at once: a few, so one slow resource does not hold the rest, and the API is not flooded. */
const LISTS_AT_ONCE = 8;

/**
 * Discovery, then every resource it names that can be listed and deleted (NOT_LISTED
 * aside), metadata-only. A group version discovery could not read, or a resource whose
 * list fails (RBAC's 403, a conversion webhook that is down), is named with the API's
 * words; the rest stand. Only a failure of discovery itself fails the whole.
 */
async function listObjects(get: ApiGet, size: number): Promise<ObjectLists> {
  const found = await discover(get);
  const unlisted: Record<string, string> = Object.fromEntries(found.failed.map((f) => [f.groupVersion, f.why]));
  const wanted = found.resources.filter((r) => r.verbs.includes('list') && r.verbs.includes('delete') && !(groupResource(r) in NOT_LISTED));
  const lists = await pool(wanted, LISTS_AT_ONCE, async (r) => {
    try {
      return await listMetadata(get, r, size);
    } catch (e) {
      unlisted[groupResource(r)] = `list ${groupResource(r)}: ${errorLine(e)}`;
      return undefined;
    }
  });
  return { objects: lists.filter((l): l is ListedResource => !!l), unlisted };
}

/** Each full list's page as its model holds it. */
type FullPages = {
  [K in Exclude<ApiList, 'objects'>]: (p: PageRequest) => Promise<Page<SettledLists[K] extends PromiseSettledResult<(infer T)[]> ? T : never>>;
};

/** What the lists are read through: the client library's typed clients, or plain HTTPS. */
interface Lister {
  server: string;
  get: ApiGet;
  pages: FullPages;
}

/** The full lists' collections across all namespaces, with their items' models: what the typed clients' list calls ask. */
export const FULL_LISTS: Record<Exclude<ApiList, 'objects'>, TypedList> = {
  pods: { path: '/api/v1/pods', model: 'V1Pod' },
  nodes: { path: '/api/v1/nodes', model: 'V1Node' },
  namespaces: { path: '/api/v1/namespaces', model: 'V1Namespace' },
  volumeattachments: { path: '/apis/storage.k8s.io/v1/volumeattachments', model: 'V1VolumeAttachment' },
  persistentvolumes: { path: '/api/v1/persistentvolumes', model: 'V1PersistentVolume' },
  leases: { path: '/apis/coordination.k8s.io/v1/leases', model: 'V1Lease' },
  apiservices: { path: '/apis/apiregistration.k8s.io/v1/apiservices', model: 'V1APIService' },
};

/** The lists: all at once, each settled on its own. */
async function listWith(l: Lister): Promise<ClusterRead> {
  // A bad DECOM_LIST_PAGE_SIZE is bad input (exit 2), not eight refused lists.
  const size = listPageSize();
  const [pods, nodes, namespaces, volumeattachments, persistentvolumes, leases, apiservices, objects] = await Promise.allSettled([
    listAll(l.pages.pods, size),
    listAll(l.pages.nodes, size),
    listAll(l.pages.namespaces, size),
    listAll(l.pages.volumeattachments, size),
    listAll(l.pages.persistentvolumes, size),
    listAll(l.pages.leases, size),
    listAll(l.pages.apiservices, size),
    listObjects(l.get, size),
  ]);
  return clusterRead(l.server, { pods, nodes, namespaces, volumeattachments, persistentvolumes, leases, apiservices, objects });
}

/** The lists through the client library (the worker's side). */
export async function listCluster(source: ApiSource): Promise<ClusterRead> {
  const c = await kubeClients(source);
  if (!c) return { none: true };
  return listWith({
    server: c.server,
    get: c.get,
    pages: {
      pods: (p) => c.core.listPodForAllNamespaces(p),
      nodes: (p) => c.core.listNode(p),
      namespaces: (p) => c.core.listNamespace(p),
      volumeattachments: (p) => c.storage.listVolumeAttachment(p),
      persistentvolumes: (p) => c.core.listPersistentVolume(p),
      leases: (p) => c.coordination.listLeaseForAllNamespaces(p),
      apiservices: (p) => c.registration.listAPIService(p),
    },
  });
}

/** The lists over plain HTTPS, on this thread, when the source's credentials allow it; undefined when they are the library's. */
export async function listPlain(source: ApiSource): Promise<ClusterRead | undefined> {
  const credentials = await plainCredentials(source);
  if (!credentials) return undefined;
  const api = plainApi(credentials);
  const pages = Object.fromEntries(Object.entries(FULL_LISTS).map(([list, typed]) => [list, (p: PageRequest) => api.page(typed, p)])) as FullPages;
  try {
    return await listWith({ server: api.server, get: api.get, pages });
  } finally {
    api.close();
  }
}

/**
 * The lists: over plain HTTPS when the credentials are a token or a client certificate,
 * else through the client library in a worker thread. No kubeconfig at all: none. A
 * kubeconfig the user got wrong is their input error (exit 2), on either path.
 */
export async function readCluster(source: ApiSource): Promise<ClusterRead> {
  if (!findApi(source)) return { none: true };
  return (await listPlain(source)) ?? inWorker(source);
}

/** The lists through the client library, in a worker thread. */
function inWorker(source: ApiSource): Promise<ClusterRead> {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL(import.meta.url), { workerData: { decomAuditLists: source } });
    w.once('message', (m: ClusterRead | { userError: string; exitCode: number }) => {
      if ('userError' in m) reject(new UserError(m.userError, m.exitCode));
      else resolve(m);
    });
    w.once('error', reject);
    w.once('exit', (code) => code !== 0 && reject(new Error(`the API's lists: the worker exited with ${code}`)));
  });
}

// The worker: read the lists, hand them over (structured clone), end.
if (!isMainThread && (workerData as { decomAuditLists?: ApiSource } | undefined)?.decomAuditLists) {
  const source = (workerData as { decomAuditLists: ApiSource }).decomAuditLists;
  listCluster(source).then(
    (r) => parentPort?.postMessage(r),
    (e: unknown) => parentPort?.postMessage(e instanceof UserError ? { userError: e.message, exitCode: e.exitCode } : { server: '', error: errorLine(e) }),
  );
}
