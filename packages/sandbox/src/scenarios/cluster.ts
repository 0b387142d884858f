/**
 * The cluster side of the API scenarios: the objects a real cluster of this shape holds,
 * created through the sandbox's API after every node's kubelet has registered. The
 * pods then run on the nodes because their kubelets run what the API binds to them.
 *
 *   cluster                 control plane (kubeadm's label and taint) + workers; the
 *                           kube-proxy and calico-node DaemonSets; Deployment `web`
 *                           (3 pods over the workers) with a PDB allowing one eviction;
 *                           on the first worker a pod with emptyDir (ReplicaSet `cache`)
 *                           and a bare pod; on the last worker a pod with a CSI volume
 *                           (ReplicaSet `db`) and its VolumeAttachment
 *   pdb-blocked             + ReplicaSet `ledger`'s pod on the first worker, under a PDB
 *                           that allows no disruption
 *   etcd-restore-phantoms   + pods that run on the first worker, then an etcd restore to
 *                           a snapshot taken before them: the API lists none of them
 *   runtime-lost            + the first worker's runtime loses its state (runtimeLost); with
 *                           workers on several containerd versions, the first worker of each
 *   stuck-terminating       + a pod Terminating on a finalizer (first worker), a pod
 *                           Terminating on the last worker whose kubelet stopped (NotReady
 *                           after the grace period), namespace `retired` Terminating on
 *                           its content's finalizer and an unavailable APIService
 */
import { copyFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiClient } from '../api/client.js';
import { apiDir, startApi, stopApi } from '../api/control.js';
import { hostAddr } from '../layout.js';
import { FAULTS } from '../api/behaviour.js';
import { nodeExec, waitFor } from '../node.js';
import type { SandboxNode, SandboxState } from '../types.js';
import type { ScenarioName } from './catalog.js';
import { runNodeScript } from './index.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const MERGE = 'application/merge-patch+json';
const IMAGE = 'registry.k8s.io/busybox:sandbox';
/** The API, polled every 250 ms. */
const until = <T>(what: string, seconds: number, probe: () => Promise<T | undefined>): Promise<T> => waitFor(`the sandbox API: ${what}`, seconds * 1000, probe, 250);

const container = (name: string, command: string[] = ['/bin/sleep', '2147483647']) => ({ name, image: IMAGE, command });

export interface ClusterPlan {
  /** The API scenarios named (each planted once). */
  scenarios: Set<ScenarioName>;
  state: SandboxState;
  dir: string;
  api: ApiClient;
  log: (line: string) => void;
}

export async function plantCluster(p: ClusterPlan): Promise<void> {
  const { api, state } = p;
  const names = state.nodes.map((n) => n.name);
  await until('every kubelet registering its Node', 60, async () => {
    const nodes = (await api.must('GET', '/api/v1/nodes')).items as Any[];
    const ready = nodes.filter((n) => n.spec?.podCIDR && (n.status?.conditions ?? []).some((c: Any) => c.type === 'Ready' && c.status === 'True'));
    return names.every((name) => ready.some((n) => n.metadata.name === name)) ? true : undefined;
  });
  // kubeadm's mark-control-plane phase.
  for (const n of state.nodes.filter((x) => x.roles.includes('control-plane'))) {
    await api.must('PATCH', `/api/v1/nodes/${n.name}`, {
      metadata: { labels: { 'node-role.kubernetes.io/control-plane': '', 'node.kubernetes.io/exclude-from-external-load-balancers': '' } },
      spec: { taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }] },
    }, MERGE);
  }
  const workers = state.nodes.filter((n) => n.roles.includes('worker'));
  const first = workers[0] ?? (state.nodes[0] as SandboxNode);
  const last = workers[workers.length - 1] ?? first;
  const create = (path: string, obj: Any) => api.must('POST', path, obj);

  // DaemonSets (their controller puts a pod on every node) and the Deployment `web`.
  const daemonSet = (name: string, cmd: string[]) =>
    create('/apis/apps/v1/namespaces/kube-system/daemonsets', {
      apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name, namespace: 'kube-system', labels: { 'k8s-app': name } },
      spec: {
        selector: { matchLabels: { 'k8s-app': name } },
        template: { metadata: { labels: { 'k8s-app': name } }, spec: { hostNetwork: true, priorityClassName: 'system-node-critical', tolerations: [{ operator: 'Exists' }], containers: [container(name, cmd)] } },
      },
    });
  await daemonSet('kube-proxy', ['/bin/sh', '-c', 'httpd -p 127.0.0.1:10249 && exec httpd -f -p 10256']);
  await daemonSet('calico-node', ['/bin/httpd', '-f', '-p', '127.0.0.1:9099']);
  const web = await create('/apis/apps/v1/namespaces/default/deployments', {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
    spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [container('web', ['/bin/httpd', '-f', '-p', '8080'])] } } },
  });
  await replicaSet('web-7c5ddbdf54', { app: 'web', 'pod-template-hash': '7c5ddbdf54' }, 3, { containers: [container('web', ['/bin/httpd', '-f', '-p', '8080'])] }, { kind: 'Deployment', obj: web });
  await pdb('web', { minAvailable: 2 }, { app: 'web' });

  // On the first worker: a pod with emptyDir data (its ReplicaSet replaces it elsewhere) and a bare pod.
  await pinned('cache', first, { volumes: [{ name: 'scratch', emptyDir: {} }], containers: [{ ...container('cache'), volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }] });
  await create('/api/v1/namespaces/default/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'debug-shell', namespace: 'default', labels: { run: 'debug-shell' } }, spec: { nodeName: first.name, containers: [container('debug-shell')] } });

  // On the last worker: a pod whose PVC is bound to a CSI volume; the attach/detach controller attaches it there.
  await create('/api/v1/persistentvolumes', {
    apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv-db-data' },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: 'sandbox-csi', claimRef: { namespace: 'default', name: 'db-data' }, csi: { driver: 'csi.sandbox.decom.io', volumeHandle: 'vol-db-data' } },
    status: { phase: 'Bound' },
  });
  await create('/api/v1/namespaces/default/persistentvolumeclaims', {
    apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'db-data', namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'sandbox-csi', volumeName: 'pv-db-data' },
    status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } },
  });
  await create('/apis/storage.k8s.io/v1/csinodes', {
    apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', metadata: { name: last.name }, spec: { drivers: [{ name: 'csi.sandbox.decom.io', nodeID: last.name, topologyKeys: null }] },
  });
  await pinned('db', last, { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'db-data' } }], containers: [{ ...container('db'), volumeMounts: [{ name: 'data', mountPath: '/data' }] }] });

  if (p.scenarios.has('pdb-blocked')) {
    await pinned('ledger', first, { containers: [container('ledger')] });
    await pdb('ledger', { maxUnavailable: 0 }, { app: 'ledger' });
  }
  await allRunning(api);
  if (p.scenarios.has('etcd-restore-phantoms')) await etcdRestore(p, first);
  if (p.scenarios.has('stuck-terminating')) await stuckTerminating(p, first, last);
  if (p.scenarios.has('runtime-lost')) {
    // The first worker of each containerd version (one, unless --containerd mixes them).
    const families = new Set<string>();
    for (const n of workers.length ? workers : [first]) {
      if (families.has(n.runtime.family)) continue;
      families.add(n.runtime.family);
      await runtimeLost(p, n);
    }
  }

  /** A ReplicaSet, owned by a Deployment when given. */
  async function replicaSet(name: string, labels: Record<string, string>, replicas: number, spec: Any, owner?: { kind: string; obj: Any }): Promise<Any> {
    return create('/apis/apps/v1/namespaces/default/replicasets', {
      apiVersion: 'apps/v1', kind: 'ReplicaSet',
      metadata: { name, namespace: 'default', labels, ...(owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: owner.kind, name: owner.obj.metadata.name, uid: owner.obj.metadata.uid, controller: true, blockOwnerDeletion: true }] } : {}) },
      spec: { replicas, selector: { matchLabels: labels }, template: { metadata: { labels }, spec } },
    });
  }

  /**
   * A ReplicaSet of one whose pod runs on `node`, as if the scheduler had put it there:
   * its template first pins it (nodeSelector), then, once the pod runs, no longer does,
   * so a replacement goes wherever the scheduler puts it (a template change leaves
   * running pods alone).
   */
  async function pinned(app: string, node: SandboxNode, spec: Any): Promise<void> {
    const rs = await replicaSet(`${app}-6b9f7d5c8`, { app }, 1, { ...spec, nodeSelector: { 'kubernetes.io/hostname': node.name } });
    await until(`the ${app} pod running on ${node.name}`, 60, async () => {
      const pods = (await api.must('GET', `/api/v1/namespaces/default/pods?labelSelector=app%3D${app}`)).items as Any[];
      return pods.some((x) => x.spec.nodeName === node.name && x.status?.phase === 'Running') ? true : undefined;
    });
    await api.must('PATCH', `/apis/apps/v1/namespaces/default/replicasets/${rs.metadata.name}`, { spec: { template: { spec: { nodeSelector: null } } } }, MERGE);
  }

  function pdb(name: string, budget: Any, labels: Record<string, string>): Promise<Any> {
    return create('/apis/policy/v1/namespaces/default/poddisruptionbudgets', {
      apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name, namespace: 'default' }, spec: { ...budget, selector: { matchLabels: labels } },
    });
  }
}

async function allRunning(api: ApiClient): Promise<void> {
  await until('every pod Running', 120, async () => {
    const pods = (await api.must('GET', '/api/v1/pods')).items as Any[];
    return pods.length && pods.every((x) => x.metadata.deletionTimestamp || x.status?.phase === 'Running') ? true : undefined;
  });
}

/**
 * An etcd restore to a snapshot taken before two pods were made: the API stops, its
 * store goes back to the snapshot, and it starts again. The kubelet saw no delete, so
 * their containers (and the network pod's netns) keep running: phantom pods.
 */
async function etcdRestore(p: ClusterPlan, node: SandboxNode): Promise<void> {
  const store = join(apiDir(p.dir), 'objects.json');
  const snapshot = `${store}.snapshot`;
  await stopApi(p.dir);
  copyFileSync(store, snapshot);
  await startApi(p.dir, hostAddr(p.state.subnet ?? 0));
  for (const [name, hostNetwork] of [['orders-5f7b8c9d4-kq2xz', false], ['metrics-agent-x8w2p', true]] as const) {
    await p.api.must('POST', '/api/v1/namespaces/default/pods', {
      apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', labels: { app: name.split('-')[0] } },
      spec: { nodeName: node.name, hostNetwork, containers: [container(name.split('-')[0] as string)] },
    });
  }
  await allRunning(p.api);
  p.log('restoring the API store to the snapshot taken before the phantom pods (an etcd restore)');
  await stopApi(p.dir);
  copyFileSync(snapshot, store);
  rmSync(snapshot);
  await startApi(p.dir, hostAddr(p.state.subnet ?? 0));
}

async function stuckTerminating(p: ClusterPlan, first: SandboxNode, last: SandboxNode): Promise<void> {
  const { api } = p;
  const pod = (name: string, ns: string, node: string, finalizers?: string[]) =>
    api.must('POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels: { app: name.replace(/-[^-]+$/, '') }, ...(finalizers ? { finalizers } : {}) },
      spec: { nodeName: node, terminationGracePeriodSeconds: 2, containers: [container('main')] },
    });
  await pod('report-gen-28734', 'default', first.name, ['example.com/archive']);
  await pod('sensor-agent-4kq9t', 'default', last.name);
  await api.must('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'retired' } });
  await pod('exporter-7xk2m', 'retired', first.name, ['example.com/drain-queue']);
  // metrics-server installed but not answering: the fault switch fails its APIService's discovery check (FailedDiscoveryCheck).
  const faults = { apiServiceUnavailable: 'v1beta1.metrics.k8s.io' };
  if ((await api.request('PATCH', `/api/v1/namespaces/kube-system/configmaps/${FAULTS}`, { data: faults }, MERGE)).code === 404) {
    await api.must('POST', '/api/v1/namespaces/kube-system/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: FAULTS, namespace: 'kube-system' }, data: faults });
  }
  await api.must('POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
    apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: 'v1beta1.metrics.k8s.io' },
    spec: { group: 'metrics.k8s.io', version: 'v1beta1', service: { namespace: 'kube-system', name: 'metrics-server', port: 443 }, groupPriorityMinimum: 100, versionPriority: 100, insecureSkipTLSVerify: true },
  });
  await allRunning(api);
  // The last worker's kubelet stops (its node goes NotReady after the grace period); then the deletes.
  const stop = await nodeExec(last, last.init === 'systemd' ? 'systemctl stop kubelet' : 'kill "$(cat /run/decom-sandbox/kubelet.pid)"');
  if (stop.code !== 0) throw new Error(`${last.name}: stopping the kubelet failed: ${stop.stderr.trim()}`);
  await api.must('DELETE', '/api/v1/namespaces/default/pods/report-gen-28734');
  await api.must('DELETE', '/api/v1/namespaces/default/pods/sensor-agent-4kq9t');
  await api.must('DELETE', '/api/v1/namespaces/retired');
}

/**
 * A runtime that lost its state under a cluster member: its kubelet stops, the pods no
 * DaemonSet owns are force-deleted from the API (as `kubectl delete --force` does for a
 * node that went away), containerd dies with its shims and pod processes and comes back
 * wiped (lib.sh lose_runtime_state), then the kubelet starts again and runs what the API
 * still binds to the node — its DaemonSet pods in new sandboxes — beside the residue.
 */
async function runtimeLost(p: ClusterPlan, node: SandboxNode): Promise<void> {
  const { api } = p;
  await runNodeScript(node, p.state, 'stopping the kubelet', 'svc_stop kubelet');
  const pods = (await api.must('GET', `/api/v1/pods?fieldSelector=spec.nodeName=${node.name}`)).items as Any[];
  for (const pod of pods) {
    const owner = pod.metadata.ownerReferences?.find((o: Any) => o.controller)?.kind;
    if (owner === 'DaemonSet' || owner === 'Node') continue;
    await api.must('DELETE', `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}?gracePeriodSeconds=0`);
  }
  p.log(`${node.name}: containerd killed with its pods and wiped; the kubelet started again`);
  await runNodeScript(node, p.state, 'losing the runtime state', 'lose_runtime_state\nsvc_start kubelet');
  await allRunning(api);
}
