/**
 * How a pod gets its API credentials, as kube-apiserver and kube-controller-manager
 * (1.32) give them:
 *   - the ServiceAccount admission plugin: a pod names `default` unless it names an
 *     account, the account must exist, and unless automountServiceAccountToken is false
 *     (the pod's, else the account's) it gets the projected volume `kube-api-access-…`
 *     (a bound token, the cluster CA from `kube-root-ca.crt`, its namespace) mounted
 *     read-only in every container at /var/run/secrets/kubernetes.io/serviceaccount;
 *   - the serviceaccount controller: a `default` account in every namespace;
 *   - the root-ca-cert-publisher: a `kube-root-ca.crt` ConfigMap in every namespace.
 * Mirror pods are left alone (a static pod never gets API credentials).
 */
import { ApiError } from './errors.js';
import { suffix, type Obj, type Store } from './store.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const TOKEN_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The projected token's lifetime the plugin asks for (an hour and 7 s, so a kubelet's refresh is told apart). */
const TOKEN_SECONDS = 3607;
const ROOT_CA = 'kube-root-ca.crt';

const isActive = (store: Store, ns: string) => {
  const n = store.find('namespaces', undefined, ns);
  return Boolean(n && !n.metadata.deletionTimestamp);
};
const defaultAccount = (store: Store, ns: string) =>
  store.create('serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: ns } as unknown as Obj['metadata'] }, '');

export function serviceAccountAdmission(store: Store): (resource: string, obj: Obj) => void {
  return (resource, pod) => {
    if (resource !== 'pods' || pod.metadata.annotations?.['kubernetes.io/config.mirror']) return;
    // A copy: a controller's pod shares its template's containers, which must not change.
    const spec = structuredClone(pod.spec ?? {}) as Any;
    pod.spec = spec;
    const ns = pod.metadata.namespace as string;
    const name = (spec.serviceAccountName || spec.serviceAccount || 'default') as string;
    spec.serviceAccountName = name;
    spec.serviceAccount = name;
    // The plugin waits for the serviceaccount controller to make `default` in a new namespace (it retries
    // the lookup); here the controller's work is done at once, so a pod made just after its namespace runs.
    if (name === 'default' && !store.find('serviceaccounts', ns, name) && isActive(store, ns)) defaultAccount(store, ns);
    const sa = store.find('serviceaccounts', ns, name);
    if (!sa) {
      throw new ApiError(403, 'Forbidden', `pods "${pod.metadata.name}" is forbidden: error looking up service account ${ns}/${name}: serviceaccount "${name}" not found`, { name: pod.metadata.name, kind: 'pods' });
    }
    const automount = spec.automountServiceAccountToken ?? (sa as Any).automountServiceAccountToken ?? true;
    if (!automount) return;
    const all = [...((spec.initContainers ?? []) as Any[]), ...((spec.containers ?? []) as Any[])];
    // A pod that mounts something there itself keeps its own.
    if (all.some((c) => ((c.volumeMounts ?? []) as Any[]).some((m) => m.mountPath === TOKEN_MOUNT))) return;
    const volume = `kube-api-access-${suffix()}`;
    spec.volumes = [
      ...((spec.volumes ?? []) as Any[]),
      {
        name: volume,
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { expirationSeconds: TOKEN_SECONDS, path: 'token' } },
            { configMap: { name: ROOT_CA, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
          ],
        },
      },
    ];
    for (const c of all) c.volumeMounts = [...((c.volumeMounts ?? []) as Any[]), { name: volume, readOnly: true, mountPath: TOKEN_MOUNT }];
  };
}

/** The serviceaccount controller and the root CA publisher, for every namespace not terminating. */
export function serviceAccountsController(caPem: string): (store: Store) => void {
  return (store) => {
    for (const ns of store.list('namespaces')) {
      if (ns.metadata.deletionTimestamp) continue;
      const name = ns.metadata.name;
      if (!store.find('serviceaccounts', name, 'default')) defaultAccount(store, name);
      if (!store.find('configmaps', name, ROOT_CA)) {
        store.create('configmaps', {
          apiVersion: 'v1', kind: 'ConfigMap',
          metadata: { name: ROOT_CA, namespace: name, annotations: { 'kubernetes.io/description': 'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.' } } as unknown as Obj['metadata'],
          data: { 'ca.crt': caPem },
        }, '');
      }
    }
  };
}
