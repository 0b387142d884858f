// Local data and the decommission, on a 2-node sandbox with the API: node2 holds a `local` volume
// (pinned by kubernetes.io/hostname) and a local-path `hostPath` volume (pinned by a label node2
// alone has), each used by a pod. `decom run` refuses node2 without --allow-local-data, naming both,
// their claims and pods, and changes nothing; with it the run goes on, names both, and the local
// volume's data on the node is byte for byte what it was. A volume two Nodes may hold is neither's.
// Then `decom audit` names both as stale-local-pv; not one pinned to a live Node, nor a zonal CSI
// volume whose zone has no Node left. What is asserted is what kubectl and the node hold.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, down, ssh, up } from '../helpers/sandbox.js';
import { INVENTORY, runJson, until } from '../helpers/run.js';
import { applyIn, kubectl, ok, requireKubectl } from '../helpers/kubectl.js';
import { tempDir } from '../helpers/temp.js';

const work = tempDir('decom-local-data-');
const apply = applyIn(work);
const byHostname = (...nodes: string[]) => `{required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [${nodes.join(', ')}]}]}]}}`;
const pv = (name: string, source: string, affinity: string, claim?: string, policy = 'Retain') => `apiVersion: v1
kind: PersistentVolume
metadata: {name: ${name}}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: ${policy}
  storageClassName: local
  ${source}
  nodeAffinity: ${affinity}
${claim ? `  claimRef: {namespace: default, name: ${claim}}\n` : ''}---
`;
const pvc = (name: string, volume: string) => `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ${name}, namespace: default}
spec: {accessModes: [ReadWriteOnce], storageClassName: local, volumeName: ${volume}, resources: {requests: {storage: 1Gi}}}
---
`;
const pod = (name: string, claim: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: default}
spec:
  nodeName: node2
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: 'registry.k8s.io/busybox:sandbox', command: [/bin/sleep, '2147483647'], volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: ${claim}}}]
---
`;

const LOCAL = 'PersistentVolume local-ssd (local /mnt/disks/ssd1; claim default/data-local, Bound; used by pod default/app-local)';
const HOSTPATH = 'PersistentVolume lp-pvc-b (hostPath /opt/local-path-provisioner/pvc-b; claim default/data-lp, Bound; used by pod default/app-lp)';
const sums = () => ssh('node2', 'cd / && sha256sum mnt/disks/ssd1/data.bin opt/local-path-provisioner/pvc-b/data.bin');
const journalOf = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

describe('local data: refused unless accepted, then named by the audit once its node is gone', () => {
  let before = '';
  let podUids = '';

  beforeAll(async () => {
    requireKubectl();
    up(['--nodes', '2', '--api']);
    ok('label', 'node', 'node1', 'topology.kubernetes.io/zone=z-a');
    ok('label', 'node', 'node2', 'topology.kubernetes.io/zone=z-b', 'local-path.example.com/disk=node2');
    // The data: a local disk's file, and a local-path provisioner's volume dir, on node2.
    ssh('node2', 'mkdir -p /mnt/disks/ssd1 /mnt/disks/shared /opt/local-path-provisioner/pvc-b && head -c 1048576 /dev/urandom > /mnt/disks/ssd1/data.bin && head -c 4096 /dev/urandom > /opt/local-path-provisioner/pvc-b/data.bin');
    before = sums();
    apply('volumes.yaml', [
      pv('local-ssd', 'local: {path: /mnt/disks/ssd1}', byHostname('node2'), 'data-local'),
      pv('lp-pvc-b', 'hostPath: {path: /opt/local-path-provisioner/pvc-b, type: DirectoryOrCreate}', '{required: {nodeSelectorTerms: [{matchExpressions: [{key: local-path.example.com/disk, operator: In, values: [node2]}]}]}}', 'data-lp', 'Delete'),
      // Either Node may hold it: not local to node2.
      pv('shared-two', 'local: {path: /mnt/disks/shared}', byHostname('node1', 'node2'), 'data-shared'),
      // node1's, which stays.
      pv('pinned-node1', 'local: {path: /mnt/disks/n1}', byHostname('node1')),
      // A zonal CSI volume in node2's zone: no local kind.
      pv('zonal-csi', 'csi: {driver: ebs.csi.aws.com, volumeHandle: vol-zonal}', '{required: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [z-b]}]}]}}'),
      pvc('data-local', 'local-ssd'), pvc('data-lp', 'lp-pvc-b'), pvc('data-shared', 'shared-two'),
      pod('app-local', 'data-local'), pod('app-lp', 'data-lp'),
    ].join(''));
    await until(() => ok('get', 'pods', '-n', 'default', '-o', 'jsonpath={.items[*].status.phase}').trim() === 'Running Running', 60_000, 'both pods Running');
    podUids = ok('get', 'pods', '-n', 'default', '-o', 'jsonpath={.items[*].metadata.uid}');
  }, 300_000);
  afterAll(() => down());

  it('without --allow-local-data: refused (exit 4), naming both volumes, their claims and pods, and not the one two Nodes may hold; nothing changed', () => {
    const state = tempDir('decom-local-refused-');
    const r = runJson(['node2', '--yes', '--force'], state);
    expect(r.code, r.stderr).toBe(4);
    const refused = r.report.hosts.find((h) => h.host === 'node2')!.refused!;
    expect(refused).toContain(`Node node2 holds the only copy of local data: ${LOCAL}; ${HOSTPATH}; it stays on the node's disk`);
    expect(refused).toMatch(/pass --allow-local-data if that is the intent$/);
    expect(refused).not.toMatch(/shared-two|pinned-node1|zonal-csi/);
    // No cordon, no eviction: the Node schedulable, the same pods, none being deleted; no action journaled.
    expect(ok('get', 'node', 'node2', '-o', 'jsonpath={.spec.unschedulable}')).toBe('');
    expect(ok('get', 'pods', '-n', 'default', '-o', 'jsonpath={.items[*].metadata.uid}')).toBe(podUids);
    expect(ok('get', 'pods', '-n', 'default', '-o', 'jsonpath={.items[*].metadata.deletionTimestamp}')).toBe('');
    expect(journalOf(r.report.journal).filter((e) => e.event === 'action')).toEqual([]);
  });

  it('with --allow-local-data: decommissioned, both named in the report and the journal, their data on the node byte for byte as it was', () => {
    const state = tempDir('decom-local-allowed-');
    const r = runJson(['node2', '--yes', '--force', '--allow-local-data'], state);
    expect(r.code, r.stderr).toBe(0);
    const named = `--allow-local-data: the data of these local volumes leaves the cluster with Node node2 (decom deletes no PersistentVolume or claim): ${LOCAL}; ${HOSTPATH}`;
    expect(r.report.hosts.find((h) => h.host === 'node2')!.warnings).toContain(named);
    expect(journalOf(r.report.journal).some((e) => e.event === 'log' && e.line === named)).toBe(true);
    expect(JSON.stringify(r.report)).not.toMatch(/shared-two|pinned-node1|zonal-csi/);
    expect(kubectl('get', 'node', 'node2').code).not.toBe(0);
    expect(sums()).toBe(before);
    // decom deleted no volume and no claim.
    expect(ok('get', 'pv', '-o', 'name').split('\n').filter(Boolean).sort()).toEqual(['persistentvolume/local-ssd', 'persistentvolume/lp-pvc-b', 'persistentvolume/pinned-node1', 'persistentvolume/shared-two', 'persistentvolume/zonal-csi']);
    expect(ok('get', 'pvc', '-n', 'default', '-o', 'name').split('\n').filter(Boolean).sort()).toEqual(['persistentvolumeclaim/data-local', 'persistentvolumeclaim/data-lp', 'persistentvolumeclaim/data-shared']);
  });

  it('the audit names both as stale-local-pv, with claim, phase and reclaim policy; not the one of a live Node, nor the zonal CSI volume', () => {
    const a = decom(['audit', INVENTORY, 'node1', '--output', 'json']);
    const report = JSON.parse(a.stdout) as { cluster: { kind: string; subject: string; detail: string; evidence: string[] }[] };
    const stale = report.cluster.filter((f) => f.kind === 'stale-local-pv');
    expect(stale.map((f) => f.subject)).toEqual(['local-ssd', 'lp-pvc-b']);
    expect(stale[0]!.detail).toBe('local PersistentVolume (local /mnt/disks/ssd1) whose node affinity selects no Node: its data left with its node; claim default/data-local, Bound, reclaim policy Retain');
    expect(stale[1]!.detail).toBe('local PersistentVolume (hostPath /opt/local-path-provisioner/pvc-b) whose node affinity selects no Node: its data left with its node; claim default/data-lp, Bound, reclaim policy Delete');
    expect(stale[1]!.evidence).toContain(
      `if its data is not wanted: kubectl patch pv lp-pvc-b -p '{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}' (a provisioner cannot clean a node that is gone), then kubectl delete pvc --namespace default data-lp, then kubectl delete pv lp-pvc-b`,
    );
    expect(a.code).toBe(1);
  });
});
