/**
 * The API's side of the audit: ONE set of paginated lists per run (Pods, Nodes,
 * Namespaces, VolumeAttachments, Leases), never a request per node; the
 * APIServices only when a namespace is Terminating (they are often why).
 *
 * The lists are read in a worker thread: loading the client library costs ~0.4 s
 * of CPU, which on the main thread would stall every SSH handshake of the fleet's
 * probes. This module is that worker's entry too (see the bottom).
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { V1APIService, V1Lease, V1Namespace, V1Node, V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';
import { apiClient, errorLine, loadKubeConfig } from '../cluster/kubeconfig.js';
import { UserError } from '../util/errors.js';

export interface ClusterView {
  server: string;
  pods: V1Pod[];
  nodes: V1Node[];
  namespaces: V1Namespace[];
  volumeAttachments: V1VolumeAttachment[];
  leases: V1Lease[];
  apiServices?: V1APIService[];
}

/** Where the API is: the kubeconfig kubectl would use (--kubeconfig, the inventory's, $KUBECONFIG, ~/.kube/config, in-cluster). */
export interface ApiSource {
  kubeconfig?: string;
  context?: string;
}

/** What reading the API came to: its lists, no kubeconfig at all, or why the lists failed. */
export type ClusterRead = { view: ClusterView } | { none: true } | { server: string; error: string };

/** How many items a page holds: kubectl's default chunk size. */
const PAGE = 500;

/** Every page of one list (limit/continue), so a 100k-pod cluster is read in bounded responses. */
async function all<T>(list: (page: { limit: number; _continue?: string }) => Promise<{ items: T[]; metadata?: { _continue?: string } }>): Promise<T[]> {
  const items: T[] = [];
  let next: string | undefined;
  do {
    const r = await list({ limit: PAGE, ...(next ? { _continue: next } : {}) });
    items.push(...r.items);
    next = r.metadata?._continue || undefined;
  } while (next);
  return items;
}

/** The API's clients, from the kubeconfig kubectl would use; undefined when there is none. */
export async function auditClients(source: ApiSource) {
  const loaded = await loadKubeConfig(source.kubeconfig, source.context);
  if (!loaded) return undefined;
  const { kc, k8s, server } = loaded;
  return {
    server,
    core: apiClient(k8s, kc, k8s.CoreV1Api),
    storage: apiClient(k8s, kc, k8s.StorageV1Api),
    coordination: apiClient(k8s, kc, k8s.CoordinationV1Api),
    registration: apiClient(k8s, kc, k8s.ApiregistrationV1Api),
  };
}

/** The lists, in this thread. */
async function listCluster(source: ApiSource): Promise<ClusterRead> {
  const c = await auditClients(source);
  if (!c) return { none: true };
  try {
    const [pods, nodes, namespaces, volumeAttachments, leases] = await Promise.all([
      all((p) => c.core.listPodForAllNamespaces(p)),
      all((p) => c.core.listNode(p)),
      all((p) => c.core.listNamespace(p)),
      all((p) => c.storage.listVolumeAttachment(p)),
      all((p) => c.coordination.listLeaseForAllNamespaces(p)),
    ]);
    const view: ClusterView = { server: c.server, pods, nodes, namespaces, volumeAttachments, leases };
    if (namespaces.some((n) => n.metadata?.deletionTimestamp)) {
      // Unavailable APIServices are one reason a namespace cannot be emptied; not every cluster serves the list.
      view.apiServices = await all((p) => c.registration.listAPIService(p)).catch(() => []);
    }
    return { view };
  } catch (e) {
    return { server: c.server, error: errorLine(e) };
  }
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
