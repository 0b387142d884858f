// The volumes step waits only for the volumes the drain moved, and names every other
// attachment on the Node: on the cluster scenario's node3, a Deployment's RWO volume
// whose detach the sandbox's fault switch holds, an attachment of the sandbox's second
// driver (which never detaches) whose claim was force-deleted, a DaemonSet's volume, and
// a moved pod's ReadWriteMany volume of that second driver. The first run is killed while
// it waits; the second finishes its work, waiting for the same volume, read back from the
// first one's journal. What is asserted is what the journal, the report and kubectl show.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { down, up } from '../helpers/sandbox.js';
import { INVENTORY, reportOf, startRun, until } from '../helpers/run.js';
import { applyIn, kubectl, ok, requireKubectl } from '../helpers/kubectl.js';
import { tempDir } from '../helpers/temp.js';
import { FAULTS, SANDBOX_DRIVER, STRANDED_DRIVER } from '../../../sandbox/src/api/behaviour.js';

type Event = Record<string, unknown> & { ts: string; event: string };
const journalOf = (file: string): Event[] => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Event);
/** The PVs of the VolumeAttachments on node3, each as PV=DELETION-TIMESTAMP (empty while not being deleted). */
const attachedTo3 = () =>
  ok('get', 'volumeattachments', '-o', 'jsonpath={range .items[?(@.spec.nodeName=="node3")]}{.spec.source.persistentVolumeName}={.metadata.deletionTimestamp};{end}').split(';').filter(Boolean).sort();

/** A CSI volume pre-bound to its claim, and the claim. */
const volume = (name: string, driver: string, mode: string) => `apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-${name}}
spec:
  capacity: {storage: 1Gi}
  accessModes: [${mode}]
  storageClassName: sandbox-csi
  claimRef: {namespace: default, name: ${name}}
  csi: {driver: ${driver}, volumeHandle: vol-${name}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ${name}, namespace: default}
spec:
  accessModes: [${mode}]
  resources: {requests: {storage: 1Gi}}
  storageClassName: sandbox-csi
  volumeName: pv-${name}
`;
const podSpec = (claim: string) => `
      containers: [{name: main, image: registry.k8s.io/busybox:sandbox, command: [sleep, '3600'], volumeMounts: [{name: data, mountPath: /data}]}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: ${claim}}}]`;
const workload = (kind: string, name: string) => `apiVersion: apps/v1
kind: ${kind}
metadata: {name: ${name}, namespace: default}
spec:
  ${kind === 'Deployment' ? 'replicas: 1\n  ' : ''}selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:${podSpec(name)}
`;
/** The ReplicaSet a Deployment's controller makes, owned by it: its pods carry the template's hash. */
const replicaSetOf = (name: string, uid: string) => `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: ${name}-5d8f7c9b6
  namespace: default
  labels: {app: ${name}, pod-template-hash: 5d8f7c9b6}
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: ${name}, uid: ${uid}, controller: true, blockOwnerDeletion: true}]
spec:
  replicas: 1
  selector: {matchLabels: {app: ${name}, pod-template-hash: 5d8f7c9b6}}
  template:
    metadata: {labels: {app: ${name}, pod-template-hash: 5d8f7c9b6}}
    spec:${podSpec(name)}
`;

describe('the volume wait: the drain\'s volumes waited for, every other attachment named', () => {
  const state = tempDir('decom-volume-wait-');
  const work = tempDir('decom-volume-wait-yaml-');
  const apply = applyIn(work);
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--scenario', 'cluster']);
  });
  afterAll(() => down());

  it('waits for the held RWO volume alone, killed and run again waits for it still, names the other three with their state, exits 0', async () => {
    // node3 keeps only this test's volumes: the scenario's db goes, and web's budget, which would only slow the drain.
    ok('delete', 'replicaset', '-l', 'app=db');
    ok('delete', 'pod', '-l', 'app=db');
    ok('delete', 'pdb', 'web');
    // With node2 cordoned, the new pods go to node3 (node1 is the tainted control plane); the DaemonSet's to both workers.
    ok('cordon', 'node2');
    apply('volumes', [volume('held', SANDBOX_DRIVER, 'ReadWriteOnce'), volume('orphan', STRANDED_DRIVER, 'ReadWriteOnce'), volume('agent', SANDBOX_DRIVER, 'ReadWriteMany'), volume('shared', STRANDED_DRIVER, 'ReadWriteMany')].join('---\n'));
    apply('workloads', [workload('Deployment', 'held'), workload('Deployment', 'shared'), workload('DaemonSet', 'agent'),
      `apiVersion: v1\nkind: Pod\nmetadata: {name: orphan-user, namespace: default}\nspec:\n  nodeName: node3${podSpec('orphan').replace(/\n {4}/g, '\n')}\n`].join('---\n'));
    // The sandbox's Deployment controller scales the ReplicaSet a Deployment owns, and leaves making it to the test, as the scenario does.
    apply('replicasets', ['held', 'shared'].map((name) => replicaSetOf(name, ok('get', 'deployment', name, '-o', 'jsonpath={.metadata.uid}'))).join('---\n'));
    // held's, shared's, and the DaemonSet's on both workers, once their controllers made them.
    await until(() => ok('get', 'pods', '-l', 'app in (held,shared,agent)', '-o', 'name').split('\n').filter(Boolean).length === 4, 30_000, 'the pods of the workloads');
    ok('wait', '--for=condition=Ready', 'pod', '-l', 'app in (held,shared,agent)', '--timeout=60s');
    ok('wait', '--for=condition=Ready', 'pod', 'orphan-user', '--timeout=60s');
    ok('uncordon', 'node2');
    let seen: string[] = [];
    await until(() => (seen = attachedTo3()).join(',') === 'pv-agent=,pv-held=,pv-orphan=,pv-shared=', 30_000, "node3's four attachments, and the db volume's detach").catch((e: Error) => {
      throw new Error(`${e.message}: ${seen.join(',')}`);
    });
    // (b): its pod gone, then its claim force-deleted: the second driver never detaches, so the attachment stays, detaching.
    ok('delete', 'pod', 'orphan-user', '--force', '--grace-period=0');
    ok('delete', 'pvc', 'orphan', '--force', '--grace-period=0');
    await until(() => attachedTo3().some((l) => /^pv-orphan=\S/.test(l)), 10_000, 'the orphan attachment to be detaching');
    // (a): the sandbox driver's detach of pv-held is held until the switch is cleared.
    ok('create', 'configmap', FAULTS, '-n', 'kube-system', '--from-literal=volumeDetachHeld=pv-held');

    const args = [INVENTORY, 'node3', '--yes', '--drain-timeout', '120s', '--output', 'json', '--state-dir', state];
    const journals = () => (existsSync(join(state, 'runs')) ? readdirSync(join(state, 'runs')).sort().map((f) => join(state, 'runs', f)) : []);
    const waitingLine = (file: string) => journalOf(file).find((e) => e.event === 'log' && String(e.line).startsWith('waiting for PV '));
    const heldWait = /^waiting for PV pv-held \(claim default\/held of pod default\/held-[\w-]+, ReadWriteOnce, driver csi\.sandbox\.decom\.io\) to detach from Node node3$/;

    const first = startRun(args);
    await until(() => journals().length === 1 && waitingLine(journals()[0]!) !== undefined, 90_000, 'the first run to wait for a volume');
    const firstJournal = journals()[0]!;
    expect(waitingLine(firstJournal)!.line).toMatch(heldWait);
    // It recorded the claims of the pods it moved, RWX one included, before evicting them.
    const moved = journalOf(firstJournal).filter((e) => e.event === 'drain-volumes').flatMap((e) => e.claims as { claim: string; pv: string; accessModes: string[]; driver: string }[]);
    expect(moved.map((m) => `${m.claim} ${m.pv} ${m.accessModes.join(',')} ${m.driver}`).sort()).toEqual([
      `default/held pv-held ReadWriteOnce ${SANDBOX_DRIVER}`,
      `default/shared pv-shared ReadWriteMany ${STRANDED_DRIVER}`,
    ]);
    // Its pod gone, the attachment is deleted but not detached (held): the run still waits.
    await until(() => attachedTo3().some((a) => /^pv-held=\S/.test(a)), 10_000, "pv-held's attachment to be deleted");
    expect(journalOf(firstJournal).filter((e) => e.event === 'log' && /detached/.test(String(e.line)))).toEqual([]);
    first.kill();
    expect((await first.done).code).toBe(128);

    const second = startRun(args);
    await until(() => journals().length === 2 && waitingLine(journals()[1]!) !== undefined, 90_000, 'the second run to wait for a volume');
    const secondJournal = journals()[1]!;
    expect(waitingLine(secondJournal)!.line).toMatch(heldWait);
    const released = Date.now();
    ok('delete', 'configmap', FAULTS, '-n', 'kube-system');
    const done = await second.done;
    expect(done.code, done.out).toBe(0);
    const r = reportOf(done.out);
    const h = r.hosts[0]!;
    expect(h.finishes).toBe(journalOf(firstJournal)[0]!.run);
    expect(h.clean).toBe(true);

    // The wait ended at the detach: after the switch was cleared, and the step with it.
    const events = journalOf(secondJournal);
    const detached = events.find((e) => e.event === 'log' && e.line === 'PV pv-held detached from Node node3')!;
    const stepEnd = events.find((e) => e.event === 'step' && e.step === 'volumes')!;
    expect(Date.parse(detached.ts)).toBeGreaterThanOrEqual(released);
    expect(Date.parse(stepEnd.ts) - Date.parse(detached.ts)).toBeLessThan(1000);
    const volumes = h.steps.find((s) => s.name === 'volumes')!;
    expect(volumes.actions.map((a) => a.what)).toEqual([expect.stringMatching(/^waited \d+\.\d s for PV pv-held \(claim default\/held of pod default\/held-[\w-]+, ReadWriteOnce, driver csi\.sandbox\.decom\.io\) to detach from Node node3$/)]);

    // The other three, one warning each, with their PV, claim, driver and state.
    const named = (h.warnings ?? []).filter((w) => w.startsWith('VolumeAttachment ')).sort((a, b) => a.localeCompare(b));
    const detaching = `detaching since \\S+ \\(held by its finalizer external-attacher/stranded-csi-sandbox-decom-io\\)`;
    expect(named.map((w) => w.replace(/^VolumeAttachment csi-[0-9a-f]{64}: /, ''))).toEqual(expect.arrayContaining([
      expect.stringMatching(new RegExp(`^PV pv-orphan \\(\\w+\\), claim default/orphan \\(gone\\), driver ${STRANDED_DRIVER}, ${detaching}; its claim is gone: not waited for, it goes with the Node$`)),
      expect.stringMatching(/^PV pv-agent \(Bound\), claim default\/agent \(Bound, ReadWriteMany\), driver csi\.sandbox\.decom\.io, attached; DaemonSet pod default\/agent-[\w-]+ uses it \(DaemonSets are not drained\): not waited for, it goes with the Node$/),
      expect.stringMatching(new RegExp(`^PV pv-shared \\(Bound\\), claim default/shared \\(Bound, ReadWriteMany\\), driver ${STRANDED_DRIVER}, (attached|${detaching}); the drain moved pod default/shared-[\\w-]+, and its claim allows ReadWriteMany, not ReadWriteOnce or ReadWriteOncePod: not waited for, it goes with the Node$`)),
    ]));
    expect(named).toHaveLength(3);
    // Those went with the Node: delete-node deleted each (the second driver's stay, held by their attacher's finalizer).
    expect(kubectl('get', 'node', 'node3').code).toBe(1);
    const deleted = h.steps.find((s) => s.name === 'delete-node')!.actions.map((a) => a.what).filter((a) => a.startsWith('delete VolumeAttachment '));
    expect(deleted.map((a) => a.split(' ')[2]).sort()).toEqual(named.map((w) => w.split(' ')[1]!.replace(/:$/, '')).sort());
    expect(attachedTo3().filter((a) => a.endsWith('='))).toEqual([]);
  });
});
