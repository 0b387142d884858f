// The local-data interlock (cluster/local-data.ts) on a made-up API: a Node holding a local volume is
// refused, with --allow-local-data named instead; a PersistentVolume list the API refuses (RBAC's 403)
// refuses the run unless --allow-local-data; a Node not registered has nothing to judge.
import { describe, expect, it } from 'vitest';
import { ApiException, type V1Node, type V1PersistentVolume, type V1Pod } from '@kubernetes/client-node';
import type { ClusterContext, Kube } from './context.js';
import { localDataVerdict } from './local-data.js';

const node = (name: string): V1Node => ({ metadata: { name, labels: { 'kubernetes.io/hostname': name } } });
const pv: V1PersistentVolume = {
  metadata: { name: 'local-a' },
  spec: { local: { path: '/mnt/disks/a' }, claimRef: { namespace: 'default', name: 'data-a' }, nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node2'] }] }] } } },
  status: { phase: 'Bound' },
};
const pod: V1Pod = { metadata: { name: 'app', namespace: 'default' }, spec: { containers: [], volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'data-a' } }] } };
const forbidden = new ApiException(403, '', JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'persistentvolumes is forbidden: User "drainer" cannot list resource "persistentvolumes" in API group "" at the cluster scope' }), {});

function context(o: { allow: boolean; pvs?: V1PersistentVolume[] | Error; registered?: boolean }): ClusterContext {
  const list = <T>(items: T[] | Error) => async () => (items instanceof Error ? Promise.reject(items) : { items, metadata: {} });
  const kube = {
    server: 'https://api:6443',
    core: { listPersistentVolume: list(o.pvs ?? [pv]), listNode: list([node('node1'), node('node2')]), listPodForAllNamespaces: list([pod]) },
  } as unknown as Kube;
  return { kube, nodeName: 'node2', options: { allowLocalData: o.allow }, ...(o.registered === false ? {} : { node: node('node2') }) } as unknown as ClusterContext;
}

describe('the local-data interlock', () => {
  it('refuses a Node holding the only copy of a local volume, naming it, its claim and its pod', async () => {
    const v = await localDataVerdict(context({ allow: false }));
    expect(v.refusal).toBe(
      "Node node2 holds the only copy of local data: PersistentVolume local-a (local /mnt/disks/a; claim default/data-a, Bound; used by pod default/app); it stays on the node's disk and leaves the cluster with the node, and the volumes stay bound to a Node that is gone; move the data first, or pass --allow-local-data if that is the intent",
    );
    expect(v.warnings).toEqual([]);
  });
  it('--allow-local-data: no refusal, the volume named as a warning', async () => {
    const v = await localDataVerdict(context({ allow: true }));
    expect(v.refusal).toBeUndefined();
    expect(v.warnings).toEqual(['--allow-local-data: the data of these local volumes leaves the cluster with Node node2 (decom deletes no PersistentVolume or claim): PersistentVolume local-a (local /mnt/disks/a; claim default/data-a, Bound; used by pod default/app)']);
  });
  it('the PersistentVolumes refused (403): the run is refused, in the API\'s words, unless --allow-local-data', async () => {
    const refused = await localDataVerdict(context({ allow: false, pvs: forbidden }));
    expect(refused.refusal).toMatch(/^cannot tell whether Node node2 holds the only copy of local data: listing PersistentVolumes failed: persistentvolumes is forbidden: .* \(HTTP 403\) \(the decommission needs get and list on persistentvolumes; or pass --allow-local-data\)$/);
    const allowed = await localDataVerdict(context({ allow: true, pvs: forbidden }));
    expect(allowed.refusal).toBeUndefined();
    expect(allowed.warnings[0]).toMatch(/^--allow-local-data: whether Node node2 holds the only copy of local data was not checked: listing PersistentVolumes failed: persistentvolumes is forbidden/);
  });
  it('no local volume, or no Node registered: nothing to say', async () => {
    expect(await localDataVerdict(context({ allow: false, pvs: [] }))).toEqual({ warnings: [], volumes: [] });
    expect(await localDataVerdict(context({ allow: false, registered: false }))).toEqual({ warnings: [], volumes: [] });
  });
});
