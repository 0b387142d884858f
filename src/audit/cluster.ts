/**
 * The API's side of the audit: ONE set of paginated lists per run (Pods, Nodes,
 * Namespaces, VolumeAttachments, Leases), never a request per node; the
 * APIServices only when a namespace is Terminating (they are often why).
 */
import type { V1APIService, V1Lease, V1Namespace, V1Node, V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';
import { loadKubeConfig } from '../cluster/kubeconfig.js';

export interface ClusterView {
  server: string;
  pods: V1Pod[];
  nodes: V1Node[];
  namespaces: V1Namespace[];
  volumeAttachments: V1VolumeAttachment[];
  leases: V1Lease[];
  apiServices?: V1APIService[];
}

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

/** The API's clients for the audit, from the kubeconfig kubectl would use; undefined when there is none. */
export async function auditClients(flag?: string, context?: string) {
  const loaded = await loadKubeConfig(flag, context);
  if (!loaded) return undefined;
  const { kc, k8s, server, source } = loaded;
  return {
    server,
    source,
    core: kc.makeApiClient(k8s.CoreV1Api),
    storage: kc.makeApiClient(k8s.StorageV1Api),
    coordination: kc.makeApiClient(k8s.CoordinationV1Api),
    registration: kc.makeApiClient(k8s.ApiregistrationV1Api),
  };
}
export type AuditClients = NonNullable<Awaited<ReturnType<typeof auditClients>>>;

export async function readCluster(c: AuditClients): Promise<ClusterView> {
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
  return view;
}
