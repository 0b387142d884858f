/**
 * The resources the sandbox API serves, as discovery describes them: the built-ins'
 * table, and what the cluster adds to it (the metrics group while its APIService
 * exists, the established CustomResourceDefinitions' resources), which together drive
 * routing, discovery (aggregated and plain) and kubectl's short names.
 */
import { crdResources } from './crds.js';
import type { Store } from './store.js';
import type { PrinterColumns } from './tables.js';

export interface Resource {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  subresources?: { name: string; kind: string; group?: string; version?: string; verbs: string[] }[];
  /** The verbs served when not all of VERBS (an aggregated group's read-only resources). */
  verbs?: string[];
  /** The store's key for its objects when not the plural (a custom resource's PLURAL.GROUP: no clash with a built-in). */
  store?: string;
  /** A custom resource's: its CRD's name, whether that CRD is being deleted, its version's additionalPrinterColumns. */
  crd?: { name: string; terminating: boolean; printerColumns: PrinterColumns };
}

const RW = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const STATUS = { name: 'status', kind: '', verbs: ['get', 'patch', 'update'] };

export const RESOURCES: Resource[] = [
  { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', singular: 'namespace', namespaced: false, shortNames: ['ns'], subresources: [{ ...STATUS, kind: 'Namespace' }, { name: 'finalize', kind: 'Namespace', verbs: ['update'] }] },
  { group: '', version: 'v1', kind: 'Node', plural: 'nodes', singular: 'node', namespaced: false, shortNames: ['no'], subresources: [{ ...STATUS, kind: 'Node' }] },
  {
    group: '', version: 'v1', kind: 'Pod', plural: 'pods', singular: 'pod', namespaced: true, shortNames: ['po'], categories: ['all'],
    // kubectl drain evicts only when discovery lists pods/eviction as policy/v1 Eviction; otherwise it deletes.
    subresources: [{ ...STATUS, kind: 'Pod' }, { name: 'log', kind: 'Pod', verbs: ['get'] }, { name: 'eviction', kind: 'Eviction', group: 'policy', version: 'v1', verbs: ['create'] }],
  },
  { group: '', version: 'v1', kind: 'PersistentVolume', plural: 'persistentvolumes', singular: 'persistentvolume', namespaced: false, shortNames: ['pv'], subresources: [{ ...STATUS, kind: 'PersistentVolume' }] },
  { group: '', version: 'v1', kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims', singular: 'persistentvolumeclaim', namespaced: true, shortNames: ['pvc'], subresources: [{ ...STATUS, kind: 'PersistentVolumeClaim' }] },
  { group: '', version: 'v1', kind: 'Event', plural: 'events', singular: 'event', namespaced: true, shortNames: ['ev'] },
  // What deployments of cluster tools (decom's own CronJob and DaemonSet among them) bring along.
  {
    group: '', version: 'v1', kind: 'ServiceAccount', plural: 'serviceaccounts', singular: 'serviceaccount', namespaced: true, shortNames: ['sa'],
    subresources: [{ name: 'token', kind: 'TokenRequest', group: 'authentication.k8s.io', version: 'v1', verbs: ['create'] }],
  },
  { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', singular: 'configmap', namespaced: true, shortNames: ['cm'] },
  { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', singular: 'secret', namespaced: true },
  { group: 'apps', version: 'v1', kind: 'DaemonSet', plural: 'daemonsets', singular: 'daemonset', namespaced: true, shortNames: ['ds'], categories: ['all'], subresources: [{ ...STATUS, kind: 'DaemonSet' }] },
  { group: 'apps', version: 'v1', kind: 'ReplicaSet', plural: 'replicasets', singular: 'replicaset', namespaced: true, shortNames: ['rs'], categories: ['all'], subresources: [{ ...STATUS, kind: 'ReplicaSet' }] },
  { group: 'apps', version: 'v1', kind: 'Deployment', plural: 'deployments', singular: 'deployment', namespaced: true, shortNames: ['deploy'], categories: ['all'], subresources: [{ ...STATUS, kind: 'Deployment' }] },
  { group: 'batch', version: 'v1', kind: 'Job', plural: 'jobs', singular: 'job', namespaced: true, categories: ['all'], subresources: [{ ...STATUS, kind: 'Job' }] },
  { group: 'batch', version: 'v1', kind: 'CronJob', plural: 'cronjobs', singular: 'cronjob', namespaced: true, shortNames: ['cj'], categories: ['all'], subresources: [{ ...STATUS, kind: 'CronJob' }] },
  { group: 'policy', version: 'v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets', singular: 'poddisruptionbudget', namespaced: true, shortNames: ['pdb'], subresources: [{ ...STATUS, kind: 'PodDisruptionBudget' }] },
  { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', singular: 'lease', namespaced: true },
  { group: 'storage.k8s.io', version: 'v1', kind: 'VolumeAttachment', plural: 'volumeattachments', singular: 'volumeattachment', namespaced: false, subresources: [{ ...STATUS, kind: 'VolumeAttachment' }] },
  { group: 'storage.k8s.io', version: 'v1', kind: 'CSINode', plural: 'csinodes', singular: 'csinode', namespaced: false },
  { group: 'certificates.k8s.io', version: 'v1', kind: 'CertificateSigningRequest', plural: 'certificatesigningrequests', singular: 'certificatesigningrequest', namespaced: false, shortNames: ['csr'], subresources: [{ ...STATUS, kind: 'CertificateSigningRequest' }, { name: 'approval', kind: 'CertificateSigningRequest', verbs: ['get', 'patch', 'update'] }] },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole', plural: 'clusterroles', singular: 'clusterrole', namespaced: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRoleBinding', plural: 'clusterrolebindings', singular: 'clusterrolebinding', namespaced: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'Role', plural: 'roles', singular: 'role', namespaced: true },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'RoleBinding', plural: 'rolebindings', singular: 'rolebinding', namespaced: true },
  { group: 'apiregistration.k8s.io', version: 'v1', kind: 'APIService', plural: 'apiservices', singular: 'apiservice', namespaced: false, categories: ['api-extensions'], subresources: [{ ...STATUS, kind: 'APIService' }] },
  {
    group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', plural: 'customresourcedefinitions', singular: 'customresourcedefinition', namespaced: false,
    shortNames: ['crd', 'crds'], categories: ['api-extensions'], subresources: [{ ...STATUS, kind: 'CustomResourceDefinition' }],
  },
];

/** The APIService metrics-server registers; while it exists the sandbox serves its group itself (nothing stored: empty lists). */
export const METRICS_APISERVICE = 'v1beta1.metrics.k8s.io';
const METRICS: Resource[] = [
  { group: 'metrics.k8s.io', version: 'v1beta1', kind: 'NodeMetrics', plural: 'nodes', singular: 'node', namespaced: false, verbs: ['get', 'list'], store: 'nodes.metrics.k8s.io' },
  { group: 'metrics.k8s.io', version: 'v1beta1', kind: 'PodMetrics', plural: 'pods', singular: 'pod', namespaced: true, verbs: ['get', 'list'], store: 'pods.metrics.k8s.io' },
];

export const VERBS = RW;

/** The built-in groups, in discovery order (the core group first, under /api). */
export const GROUPS = [...new Set(RESOURCES.filter((r) => r.group).map((r) => r.group))];

export const apiVersionOf = (r: Resource): string => (r.group ? `${r.group}/${r.version}` : r.version);

/** Where the store keeps a resource's objects: the plural, or a custom resource's PLURAL.GROUP. */
export const storeKey = (r: Resource): string => r.store ?? r.plural;

/** Every resource served now: the built-ins, the metrics group while its APIService exists, the established CRDs' served versions. */
export function servedResources(store: Store): Resource[] {
  return [...RESOURCES, ...(store.find('apiservices', undefined, METRICS_APISERVICE) ? METRICS : []), ...store.list('customresourcedefinitions').flatMap(crdResources)];
}

/** A built-in resource; with the store, any resource served now (servedResources). */
export function findResource(group: string, version: string, plural: string, store?: Store): Resource | undefined {
  return (store ? servedResources(store) : RESOURCES).find((r) => r.group === group && r.version === version && r.plural === plural);
}

/**
 * apimachinery's version.CompareKubeAwareVersionStrings: GA before beta before alpha,
 * higher numbers first, anything else after them, alphabetically.
 */
export function compareKubeAwareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    return m ? { rank: m[2] === 'alpha' ? 1 : m[2] === 'beta' ? 2 : 3, major: Number(m[1]), minor: Number(m[3] ?? 0) } : undefined;
  };
  const x = parse(a);
  const y = parse(b);
  if (!x || !y) return x ? -1 : y ? 1 : a.localeCompare(b);
  return y.rank - x.rank || y.major - x.major || y.minor - x.minor;
}

/** The groups served now and their versions, in discovery order (built-ins, then the rest as added), each version list by priority. */
export function servedGroups(store: Store): { name: string; versions: string[] }[] {
  const groups = new Map<string, Set<string>>();
  for (const r of servedResources(store)) {
    if (!groups.has(r.group)) groups.set(r.group, new Set());
    groups.get(r.group)?.add(r.version);
  }
  return [...groups].map(([name, versions]) => ({ name, versions: [...versions].sort(compareKubeAwareVersions) }));
}
