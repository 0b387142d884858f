/**
 * The resources the sandbox API serves, as discovery describes them: one table that
 * drives routing, discovery (aggregated and plain) and kubectl's short names.
 */
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
];

export const VERBS = RW;

/** The groups, in discovery order (the core group first, under /api). */
export const GROUPS = [...new Set(RESOURCES.filter((r) => r.group).map((r) => r.group))];

export const apiVersionOf = (r: Resource): string => (r.group ? `${r.group}/${r.version}` : r.version);

export function findResource(group: string, version: string, plural: string): Resource | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.plural === plural);
}
