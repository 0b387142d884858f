/**
 * The API's side of the audit: ONE set of paginated lists per run (Pods, Nodes,
 * Namespaces, VolumeAttachments, Leases; every page, cluster/pages.ts), never a request per node; the
 * APIServices only when a namespace is Terminating (they are often why).
 *
 * Each list stands on its own: one the API refuses (RBAC's 403, or any error) leaves
 * unchecked only the kinds that read it (rules/audit.ts API_INPUTS), the others are still
 * judged. Only when every list fails is the API as a whole unread (down, unreachable,
 * its certificate, our credentials).
 *
 * The lists are read in a worker thread: loading the client library costs ~0.4 s
 * of CPU, which on the main thread would stall every SSH handshake of the fleet's
 * probes. This module is that worker's entry too (see the bottom).
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { V1APIService, V1Lease, V1Namespace, V1Node, V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';
import { codeOf, errorLine, kubeClients, type ApiSource } from '../cluster/kubeconfig.js';
import { listAll, listPageSize } from '../cluster/pages.js';
import { UserError } from '../util/errors.js';
import type { ApiList, ClusterView } from '../rules/audit.js';

/** The lists an audit reads, each as RBAC names its resource (the ClusterRole of deploy/audit-cronjob.yaml grants exactly these). */
export const API_LISTS = {
  pods: 'pods',
  nodes: 'nodes',
  namespaces: 'namespaces',
  volumeattachments: 'volumeattachments.storage.k8s.io',
  leases: 'leases.coordination.k8s.io',
  apiservices: 'apiservices.apiregistration.k8s.io',
} as const satisfies Record<ApiList, string>;

/** What reading the API came to: its lists (some maybe refused), no kubeconfig at all, or why no list could be read. */
export type ClusterRead = { view: ClusterView } | { none: true } | { server: string; error: string };

/** Each list's outcome, as Promise.allSettled gives it; apiservices undefined when it was not read. */
export interface SettledLists {
  pods: PromiseSettledResult<V1Pod[]>;
  nodes: PromiseSettledResult<V1Node[]>;
  namespaces: PromiseSettledResult<V1Namespace[]>;
  volumeattachments: PromiseSettledResult<V1VolumeAttachment[]>;
  leases: PromiseSettledResult<V1Lease[]>;
  apiservices?: PromiseSettledResult<V1APIService[]>;
}

/** Why the APIServices are read: a namespace is Terminating (an unavailable APIService is one reason it cannot be emptied). */
export const needsApiServices = (namespaces: readonly V1Namespace[]): boolean => namespaces.some((n) => n.metadata?.deletionTimestamp);

/**
 * What the lists came to, judged each on its own (pure: the seam the unit tests use).
 * Every list failed: the API could not be read at all, said as one line (the first
 * list's error: a connection refused fails them all alike). Otherwise a refused list
 * is named in `refused` with the API's own words, and the others stand.
 */
export function clusterRead(server: string, s: SettledLists): ClusterRead {
  const always = [s.pods, s.nodes, s.namespaces, s.volumeattachments, s.leases];
  const failed = always.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed && always.every((r) => r.status === 'rejected')) return { server, error: errorLine(failed.reason) };
  const refused: Partial<Record<ApiList, string>> = {};
  const items = <T>(list: ApiList, r: PromiseSettledResult<T[]>): T[] => {
    if (r.status === 'fulfilled') return r.value;
    refused[list] = `list ${API_LISTS[list]}: ${errorLine(r.reason)}`;
    return [];
  };
  const view: ClusterView = {
    server,
    pods: items('pods', s.pods),
    nodes: items('nodes', s.nodes),
    namespaces: items('namespaces', s.namespaces),
    volumeAttachments: items('volumeattachments', s.volumeattachments),
    leases: items('leases', s.leases),
  };
  const a = s.apiservices;
  // A 404: the cluster does not serve apiregistration.k8s.io, so it has no APIService to
  // be unavailable; the empty list is the truth. Any other error (RBAC's 403) is a refusal:
  // a stuck namespace's why would silently lack them.
  if (a) view.apiServices = a.status === 'rejected' && codeOf(a.reason) === 404 ? [] : items('apiservices', a);
  if (Object.keys(refused).length) view.refused = refused;
  return { view };
}

/** The lists, in this thread: all at once, each settled on its own. */
async function listCluster(source: ApiSource): Promise<ClusterRead> {
  const c = await kubeClients(source);
  if (!c) return { none: true };
  // A bad DECOM_LIST_PAGE_SIZE is bad input (exit 2), not five refused lists.
  const size = listPageSize();
  const [pods, nodes, namespaces, volumeattachments, leases] = await Promise.allSettled([
    listAll((p) => c.core.listPodForAllNamespaces(p), size),
    listAll((p) => c.core.listNode(p), size),
    listAll((p) => c.core.listNamespace(p), size),
    listAll((p) => c.storage.listVolumeAttachment(p), size),
    listAll((p) => c.coordination.listLeaseForAllNamespaces(p), size),
  ]);
  const settled: SettledLists = { pods, nodes, namespaces, volumeattachments, leases };
  if (namespaces.status === 'fulfilled' && needsApiServices(namespaces.value)) {
    [settled.apiservices] = await Promise.allSettled([listAll((p) => c.registration.listAPIService(p), size)]);
  }
  return clusterRead(c.server, settled);
}

/** The lists, in a worker thread. A kubeconfig the user got wrong is their input error (exit 2), as in this thread. */
export function readCluster(source: ApiSource): Promise<ClusterRead> {
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
