// Plain unit tests: the sandbox API's Store and its batch and volume controllers in memory,
// each pass run by hand with the clock it is given. No process, no sandbox.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { batchGarbageCollector, COMPLETION_INDEX, cronJobController, formatIndexes, jobController, parseIndexes, SCHEDULED_TIMESTAMP, TRACKING_FINALIZER, ttlAfterFinishedController } from './batch.js';
import { cronJobDefaults } from './batch-strategy.js';
import { scheduler, validate, withDefaults } from './behaviour.js';
import { mostRecent, parseSchedule } from './cron.js';
import { ApiError } from './errors.js';
import { decodeProtobuf } from './protobuf.js';
import { findResource } from './resources.js';
import { rfc3339, Store, type Obj } from './store.js';
import { volumeBinder } from './volume-binder.js';
import { ROOT as DECOM } from '../../../decom/test/helpers/sandbox.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const HERE = join(dirname(fileURLToPath(import.meta.url)));
/** deploy/audit-cronjob.yaml's CronJob, read as kubectl reads YAML (1.1: `0440` is octal). */
const AUDIT = parseAllDocuments(readFileSync(join(DECOM, 'deploy/audit-cronjob.yaml'), 'utf8'), { version: '1.1' }).map((d) => d.toJS() as Any).find((d) => d.kind === 'CronJob') as Obj;

/** A create as the API server makes it: defaults, validation, the store. */
function create(store: Store, group: string, plural: string, obj: Any): Obj {
  const r = findResource(group, 'v1', plural);
  if (!r) throw new Error(`no resource ${plural}`);
  const ns = r.namespaced ? (obj.metadata?.namespace ?? 'decom') : undefined;
  return store.create(plural, validate(store, r, withDefaults(r, obj as Obj, ns), ns), group);
}

function cluster(): Store {
  const store = new Store();
  create(store, '', 'namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'decom' } });
  return store;
}

const pods = (store: Store, job?: Obj) => store.list('pods', 'decom').filter((p) => !job || p.metadata.ownerReferences?.some((r) => r.uid === job.metadata.uid));
const job = (store: Store, name: string) => store.get('jobs', 'decom', name, 'batch');
const st = (o: Obj) => (o.status ?? {}) as Any;

/** What the kubelet posts when the pod's container ends. */
function end(store: Store, pod: Obj, phase: 'Succeeded' | 'Failed', at: number): void {
  const cur = store.get('pods', 'decom', pod.metadata.name, '');
  store.update('pods', { ...cur, status: { ...(cur.status ?? {}), phase, containerStatuses: [{ name: 'audit', state: { terminated: { exitCode: phase === 'Succeeded' ? 0 : 2, finishedAt: rfc3339(at) } } }] } }, '');
}

/** The Job `kubectl create job --from=cronjob/decom-audit NAME` posts. */
function manualJob(cj: Obj, name: string): Any {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: 'decom', annotations: { 'cronjob.kubernetes.io/instantiate': 'manual' }, ownerReferences: [{ apiVersion: 'batch/v1', kind: 'CronJob', name: cj.metadata.name, uid: cj.metadata.uid, controller: true }] },
    spec: structuredClone((cj.spec as Any).jobTemplate.spec),
  };
}

describe('protobuf Job bodies', () => {
  it('decodes the Job kubectl v1.32 posts for `create job --from=cronjob/decom-audit` to the CronJob template it copied', () => {
    // Captured from kubectl v1.32 against the sandbox API serving the CronJob beside it (deploy/'s at the time).
    const body = readFileSync(join(HERE, '..', '..', 'test', 'fixtures', 'protobuf', 'kubectl-create-job-from-cronjob.pb'));
    const captured = parseAllDocuments(readFileSync(join(HERE, '..', '..', 'test', 'fixtures', 'protobuf', 'audit-cronjob.yaml'), 'utf8'), { version: '1.1' }).map((d) => d.toJS() as Any).find((d) => d.kind === 'CronJob') as Obj;
    const served = cronJobDefaults(captured).spec as Any;
    expect(decodeProtobuf(body)).toEqual({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: 'manual-1',
        namespace: 'decom',
        annotations: { 'cronjob.kubernetes.io/instantiate': 'manual' },
        ownerReferences: [{ apiVersion: 'batch/v1', kind: 'CronJob', name: 'decom-audit', uid: '07d2e35f-c1ab-46a2-a752-94a88752d00a', controller: true }],
      },
      spec: served.jobTemplate.spec,
      status: {},
    });
  });

  // The messages a realistic Job uses, written from k8s.io/api's generated.proto field numbers.
  const PROTO = `
    syntax = "proto2";
    message TypeMeta { optional string apiVersion = 1; optional string kind = 2; }
    message Unknown { optional TypeMeta typeMeta = 1; optional bytes raw = 2; }
    message Quantity { optional string string = 1; }
    message IntOrString { optional int64 type = 1; optional int32 intVal = 2; optional string strVal = 3; }
    message OwnerReference { optional string kind = 1; optional string name = 3; optional string uid = 4; optional string apiVersion = 5; optional bool controller = 6; optional bool blockOwnerDeletion = 7; }
    message ObjectMeta { optional string name = 1; optional string generateName = 2; optional string namespace = 3; optional string selfLink = 4; optional string uid = 5;
      optional string resourceVersion = 6; optional int64 generation = 7; map<string, string> labels = 11; map<string, string> annotations = 12;
      repeated OwnerReference ownerReferences = 13; repeated string finalizers = 14; }
    message LabelSelectorRequirement { optional string key = 1; optional string operator = 2; repeated string values = 3; }
    message LabelSelector { map<string, string> matchLabels = 1; repeated LabelSelectorRequirement matchExpressions = 2; }
    message LocalObjectReference { optional string name = 1; }
    message ObjectFieldSelector { optional string apiVersion = 1; optional string fieldPath = 2; }
    message ResourceFieldSelector { optional string containerName = 1; optional string resource = 2; optional Quantity divisor = 3; }
    message KeySelector { optional LocalObjectReference localObjectReference = 1; optional string key = 2; optional bool optional = 3; }
    message EnvVarSource { optional ObjectFieldSelector fieldRef = 1; optional ResourceFieldSelector resourceFieldRef = 2; optional KeySelector configMapKeyRef = 3; optional KeySelector secretKeyRef = 4; }
    message EnvVar { optional string name = 1; optional string value = 2; optional EnvVarSource valueFrom = 3; }
    message ResourceRequirements { map<string, Quantity> limits = 1; map<string, Quantity> requests = 2; }
    message VolumeMount { optional string name = 1; optional bool readOnly = 2; optional string mountPath = 3; optional string subPath = 4; }
    message ContainerPort { optional string name = 1; optional int32 hostPort = 2; optional int32 containerPort = 3; optional string protocol = 4; }
    message Capabilities { repeated string add = 1; repeated string drop = 2; }
    message SeccompProfile { optional string type = 1; optional string localhostProfile = 2; }
    message SecurityContext { optional Capabilities capabilities = 1; optional bool privileged = 2; optional int64 runAsUser = 4; optional bool runAsNonRoot = 5;
      optional bool readOnlyRootFilesystem = 6; optional bool allowPrivilegeEscalation = 7; optional SeccompProfile seccompProfile = 11; }
    message HTTPGetAction { optional string path = 1; optional IntOrString port = 2; optional string scheme = 4; }
    message ExecAction { repeated string command = 1; }
    message ProbeHandler { optional ExecAction exec = 1; optional HTTPGetAction httpGet = 2; }
    message Probe { optional ProbeHandler handler = 1; optional int32 initialDelaySeconds = 2; optional int32 timeoutSeconds = 3; optional int32 periodSeconds = 4;
      optional int32 successThreshold = 5; optional int32 failureThreshold = 6; }
    message Container { optional string name = 1; optional string image = 2; repeated string command = 3; repeated string args = 4; optional string workingDir = 5;
      repeated ContainerPort ports = 6; repeated EnvVar env = 7; optional ResourceRequirements resources = 8; repeated VolumeMount volumeMounts = 9; optional Probe readinessProbe = 11;
      optional string terminationMessagePath = 13; optional string imagePullPolicy = 14; optional SecurityContext securityContext = 15; optional bool stdin = 16;
      optional bool stdinOnce = 17; optional bool tty = 18; optional string terminationMessagePolicy = 20; }
    message KeyToPath { optional string key = 1; optional string path = 2; optional int32 mode = 3; }
    message HostPathVolumeSource { optional string path = 1; optional string type = 2; }
    message EmptyDirVolumeSource { optional string medium = 1; optional Quantity sizeLimit = 2; }
    message SecretVolumeSource { optional string secretName = 1; repeated KeyToPath items = 2; optional int32 defaultMode = 3; optional bool optional = 4; }
    message PersistentVolumeClaimVolumeSource { optional string claimName = 1; optional bool readOnly = 2; }
    message ConfigMapVolumeSource { optional LocalObjectReference localObjectReference = 1; repeated KeyToPath items = 2; optional int32 defaultMode = 3; optional bool optional = 4; }
    message ServiceAccountTokenProjection { optional string audience = 1; optional int64 expirationSeconds = 2; optional string path = 3; }
    message ConfigMapProjection { optional LocalObjectReference localObjectReference = 1; repeated KeyToPath items = 2; optional bool optional = 4; }
    message DownwardAPIVolumeFile { optional string path = 1; optional ObjectFieldSelector fieldRef = 2; optional ResourceFieldSelector resourceFieldRef = 3; optional int32 mode = 4; }
    message DownwardAPIProjection { repeated DownwardAPIVolumeFile items = 1; }
    message VolumeProjection { optional DownwardAPIProjection downwardAPI = 2; optional ConfigMapProjection configMap = 3; optional ServiceAccountTokenProjection serviceAccountToken = 4; }
    message ProjectedVolumeSource { repeated VolumeProjection sources = 1; optional int32 defaultMode = 2; }
    message VolumeSource { optional HostPathVolumeSource hostPath = 1; optional EmptyDirVolumeSource emptyDir = 2; optional SecretVolumeSource secret = 6;
      optional PersistentVolumeClaimVolumeSource persistentVolumeClaim = 10; optional ConfigMapVolumeSource configMap = 19; optional ProjectedVolumeSource projected = 26; }
    message Volume { optional string name = 1; optional VolumeSource volumeSource = 2; }
    message Toleration { optional string key = 1; optional string operator = 2; optional string value = 3; optional string effect = 4; optional int64 tolerationSeconds = 5; }
    message PodSecurityContext { optional int64 runAsUser = 2; optional bool runAsNonRoot = 3; repeated int64 supplementalGroups = 4; optional int64 fsGroup = 5;
      optional int64 runAsGroup = 6; optional SeccompProfile seccompProfile = 10; }
    message PodSpec { repeated Volume volumes = 1; repeated Container containers = 2; optional string restartPolicy = 3; optional int64 terminationGracePeriodSeconds = 4;
      optional string dnsPolicy = 6; map<string, string> nodeSelector = 7; optional string serviceAccountName = 8; optional string serviceAccount = 9; optional string nodeName = 10;
      optional bool hostNetwork = 11; optional PodSecurityContext securityContext = 14; repeated LocalObjectReference imagePullSecrets = 15; optional string hostname = 16;
      optional string subdomain = 17; optional string schedulerName = 19; repeated Container initContainers = 20; optional bool automountServiceAccountToken = 21;
      repeated Toleration tolerations = 22; optional string priorityClassName = 24; repeated Container ephemeralContainers = 34; }
    message PodTemplateSpec { optional ObjectMeta metadata = 1; optional PodSpec spec = 2; }
    message JobSpec { optional int32 parallelism = 1; optional int32 completions = 2; optional int64 activeDeadlineSeconds = 3; optional LabelSelector selector = 4;
      optional bool manualSelector = 5; optional PodTemplateSpec template = 6; optional int32 backoffLimit = 7; optional int32 ttlSecondsAfterFinished = 8;
      optional string completionMode = 9; optional bool suspend = 10; optional string podReplacementPolicy = 14; }
    message JobStatus { optional int32 active = 4; optional int32 succeeded = 5; optional int32 failed = 6; optional string completedIndexes = 7; }
    message Job { optional ObjectMeta metadata = 1; optional JobSpec spec = 2; optional JobStatus status = 3; }
  `;
  const root = protobuf.parse(PROTO).root;

  /** The JSON Job as protobuf shapes it: Quantities and IntOrStrings are messages, a volume's source and a LocalObjectReference are fields of their own. */
  const q = (v: string) => ({ string: v });
  const qmap = (m: Record<string, string> | undefined) => m && Object.fromEntries(Object.entries(m).map(([k, v]) => [k, q(v)]));
  const ref = ({ name, ...rest }: Any) => ({ localObjectReference: { name }, ...rest });
  const env = (e: Any) => {
    const from = e.valueFrom ?? {};
    if (from.configMapKeyRef) return { ...e, valueFrom: { configMapKeyRef: ref(from.configMapKeyRef) } };
    if (from.secretKeyRef) return { ...e, valueFrom: { secretKeyRef: ref(from.secretKeyRef) } };
    if (from.resourceFieldRef) return { ...e, valueFrom: { resourceFieldRef: { ...from.resourceFieldRef, divisor: q(from.resourceFieldRef.divisor) } } };
    return e;
  };
  const container = (c: Any) => ({
    ...c,
    ...(c.env ? { env: c.env.map(env) } : {}),
    ...(c.resources ? { resources: { limits: qmap(c.resources.limits), requests: qmap(c.resources.requests) } } : {}),
    ...(c.readinessProbe ? { readinessProbe: (({ httpGet, exec, ...rest }: Any) => ({ ...rest, handler: { exec, httpGet: httpGet && { ...httpGet, port: typeof httpGet.port === 'number' ? { type: 0, intVal: httpGet.port } : { type: 1, strVal: httpGet.port } } } }))(c.readinessProbe) } : {}),
  });
  const volume = ({ name, ...s }: Any) => ({
    name,
    volumeSource: {
      ...s,
      ...(s.configMap ? { configMap: ref(s.configMap) } : {}),
      ...(s.emptyDir?.sizeLimit ? { emptyDir: { ...s.emptyDir, sizeLimit: q(s.emptyDir.sizeLimit) } } : {}),
      ...(s.projected ? { projected: { ...s.projected, sources: s.projected.sources.map((p: Any) => (p.configMap ? { configMap: ref(p.configMap) } : p)) } } : {}),
    },
  });
  const toProto = (j: Any): Any => {
    const t = j.spec.template;
    return { ...j, spec: { ...j.spec, template: { ...t, spec: { ...t.spec, containers: t.spec.containers.map(container), initContainers: t.spec.initContainers?.map(container), volumes: t.spec.volumes?.map(volume) } } } };
  };
  const envelope = (job: Any) => {
    const raw = root.lookupType('Job').encode(root.lookupType('Job').fromObject(job)).finish();
    const unknown = root.lookupType('Unknown').encode(root.lookupType('Unknown').fromObject({ typeMeta: { apiVersion: 'batch/v1', kind: 'Job' }, raw })).finish();
    return Buffer.concat([Buffer.from('k8s\0', 'latin1'), unknown]);
  };

  /** A Job using most of what a pod template holds, its zero pointers (backoffLimit: 0, suspend: false) meaning something. */
  const JOB: Any = {
    metadata: { name: 'rich', namespace: 'decom', labels: { team: 'sre' }, annotations: { note: 'x' }, finalizers: ['example.com/keep'] },
    spec: {
      parallelism: 2, completions: 4, activeDeadlineSeconds: 600, backoffLimit: 0, ttlSecondsAfterFinished: 0, completionMode: 'Indexed', suspend: false, manualSelector: true,
      selector: { matchLabels: { app: 'rich' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }] }, podReplacementPolicy: 'Failed',
      template: {
        metadata: { labels: { app: 'rich', tier: 'a' } },
        spec: {
          restartPolicy: 'OnFailure', terminationGracePeriodSeconds: 0, dnsPolicy: 'ClusterFirst', nodeSelector: { 'kubernetes.io/os': 'linux' }, serviceAccountName: 'runner',
          automountServiceAccountToken: false, hostname: 'h', subdomain: 'sub', schedulerName: 'default-scheduler', priorityClassName: 'low', imagePullSecrets: [{ name: 'pull' }],
          securityContext: { runAsUser: 1000, runAsGroup: 0, runAsNonRoot: true, fsGroup: 2000, supplementalGroups: [3000, 3001], seccompProfile: { type: 'RuntimeDefault' } },
          tolerations: [{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 0 }, { operator: 'Exists' }],
          initContainers: [{ name: 'init', image: 'busybox:1.36', command: ['true'], terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', imagePullPolicy: 'IfNotPresent' }],
          containers: [{
            name: 'main', image: 'decom:0.1.0', command: ['/bin/sh', '-c'], args: ['exit 0'], workingDir: '/work',
            ports: [{ name: 'metrics', containerPort: 9100, protocol: 'TCP' }],
            env: [
              { name: 'PLAIN', value: 'v' },
              { name: 'EMPTY' },
              { name: 'NODE', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' } } },
              { name: 'CM', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k', optional: false } } },
              { name: 'SECRET', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
              { name: 'MEM', valueFrom: { resourceFieldRef: { containerName: 'main', resource: 'limits.memory', divisor: '1Mi' } } },
            ],
            resources: { limits: { memory: '512Mi', 'ephemeral-storage': '1Gi' }, requests: { cpu: '100m', memory: '128Mi' } },
            volumeMounts: [{ name: 'inventory', mountPath: '/etc/decom', readOnly: true }, { name: 'scratch', mountPath: '/tmp', subPath: 'tmp' }],
            readinessProbe: { httpGet: { path: '/ready', port: 'metrics', scheme: 'HTTP' }, initialDelaySeconds: 1, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 },
            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false, capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } },
            terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', imagePullPolicy: 'IfNotPresent', stdin: true,
          }],
          volumes: [
            { name: 'inventory', configMap: { name: 'decom-inventory', defaultMode: 420, items: [{ key: 'hosts.yaml', path: 'hosts.yaml', mode: 256 }] } },
            { name: 'ssh', secret: { secretName: 'decom-ssh', defaultMode: 288, optional: false } },
            { name: 'reports', persistentVolumeClaim: { claimName: 'decom-reports' } },
            { name: 'scratch', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } },
            { name: 'host', hostPath: { path: '/var/log', type: '' } },
            { name: 'token', projected: { defaultMode: 420, sources: [
              { serviceAccountToken: { audience: 'vault', expirationSeconds: 3600, path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
            ] } },
          ],
        },
      },
    },
    status: {},
  };

  it('decodes a Job protobufjs encoded from the same field numbers to the JSON it came from', () => {
    expect(decodeProtobuf(envelope(toProto(JOB)))).toEqual({ apiVersion: 'batch/v1', kind: 'Job', ...JOB });
  });

  it("drops the zero values gogo-protobuf writes for plain Go fields, as JSON omits them, and keeps a pointer's zero", () => {
    const p = toProto(JOB);
    const zeros = {
      ...p,
      metadata: { ...p.metadata, generateName: '', selfLink: '', uid: '', resourceVersion: '', generation: 0 },
      spec: { ...p.spec, template: { ...p.spec.template, spec: { ...p.spec.template.spec, serviceAccount: '', nodeName: '', hostNetwork: false, containers: p.spec.template.spec.containers.map((c: Any) => ({ ...c, stdinOnce: false, tty: false, ports: c.ports.map((x: Any) => ({ ...x, hostPort: 0 })) })) } } },
      status: { active: 0, succeeded: 0, failed: 0, completedIndexes: '' },
    };
    const withZeros = envelope(zeros);
    expect(withZeros.length).toBeGreaterThan(envelope(p).length); // they are on the wire…
    const decoded = decodeProtobuf(withZeros);
    expect(decoded).toEqual({ apiVersion: 'batch/v1', kind: 'Job', ...JOB }); // …and not in the object
    expect(decoded.spec.backoffLimit).toBe(0);
    expect(decoded.spec.suspend).toBe(false);
    expect(decoded.spec.template.spec.tolerations[0].tolerationSeconds).toBe(0);
  });

  it('refuses a field it does not know with 415, naming the message and the field number, rather than drop it', () => {
    const p = toProto(JOB);
    const ephemeral = { ...p, spec: { ...p.spec, template: { ...p.spec.template, spec: { ...p.spec.template.spec, ephemeralContainers: [{ name: 'debug', image: 'busybox' }] } } } };
    let err: unknown;
    try {
      decodeProtobuf(envelope(ephemeral));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(415);
    expect((err as ApiError).message).toMatch(/field 34 of PodSpec/);
  });
});

describe('Job defaults and the Job controller', () => {
  it('defaults a Job as kube-apiserver: generated selector, template and Job labels, the spec defaults', () => {
    const store = cluster();
    const j = create(store, 'batch', 'jobs', { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'plain' }, spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } } });
    const uid = j.metadata.uid;
    const labels = { 'batch.kubernetes.io/controller-uid': uid, 'batch.kubernetes.io/job-name': 'plain', 'controller-uid': uid, 'job-name': 'plain' };
    expect(j.metadata.labels).toEqual(labels);
    expect(j.spec).toMatchObject({
      backoffLimit: 6, completionMode: 'NonIndexed', completions: 1, parallelism: 1, manualSelector: false, podReplacementPolicy: 'TerminatingOrFailed', suspend: false,
      selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } },
      template: { metadata: { labels }, spec: { dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler', securityContext: {}, terminationGracePeriodSeconds: 30, containers: [{ imagePullPolicy: 'Always', resources: {}, terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File' }] } },
    });
    expect(j.status).toEqual({});
    expect(() => create(store, 'batch', 'jobs', { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'always' }, spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } } } })).toThrow(
      'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"',
    );
  });

  it("runs the audit CronJob's Indexed Job: a pod per index, retried after a failure, complete with every index", () => {
    const store = cluster();
    const cj = create(store, 'batch', 'cronjobs', AUDIT);
    const j = create(store, 'batch', 'jobs', manualJob(cj, 'manual-1'));
    const t0 = Date.now();
    jobController(store, t0);

    const ps = pods(store, j).sort((a, b) => Number(a.metadata.annotations?.[COMPLETION_INDEX]) - Number(b.metadata.annotations?.[COMPLETION_INDEX]));
    expect(ps.map((p) => p.metadata.generateName)).toEqual(['manual-1-0-', 'manual-1-1-', 'manual-1-2-']);
    ps.forEach((p, i) => {
      expect(p.metadata.name).toMatch(new RegExp(`^manual-1-${i}-[bcdfghjklmnpqrstvwxz2456789]{5}$`));
      expect(p.metadata.annotations).toEqual({ [COMPLETION_INDEX]: String(i) });
      expect(p.metadata.labels).toEqual({ ...(j.spec as Any).template.metadata.labels, [COMPLETION_INDEX]: String(i) });
      expect(p.metadata.finalizers).toEqual([TRACKING_FINALIZER]);
      expect(p.metadata.ownerReferences).toEqual([{ apiVersion: 'batch/v1', kind: 'Job', name: 'manual-1', uid: j.metadata.uid, controller: true, blockOwnerDeletion: true }]);
      expect((p.spec as Any).hostname).toBe(`manual-1-${i}`);
      expect((p.spec as Any).subdomain).toBeUndefined();
      expect((p.spec as Any).nodeName).toBeUndefined(); // the scheduler's to place
      expect((p.spec as Any).containers[0].env).toEqual([
        { name: 'SHARDS', value: '3' },
        { name: 'RUN', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: "metadata.labels['batch.kubernetes.io/job-name']" } } },
        { name: 'JOB_COMPLETION_INDEX', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
      ]);
    });
    expect(st(job(store, 'manual-1'))).toEqual({ startTime: rfc3339(t0), active: 3, terminating: 0, uncountedTerminatedPods: {}, ready: 0 });

    // Index 1 fails: counted (its finalizer goes), and retried only after the 10s back-off.
    end(store, ps[1] as Obj, 'Failed', t0 + 1000);
    jobController(store, t0 + 2000);
    expect(st(job(store, 'manual-1'))).toMatchObject({ active: 2, failed: 1 });
    expect(store.get('pods', 'decom', (ps[1] as Obj).metadata.name, '').metadata.finalizers).toBeUndefined();
    expect(pods(store, j)).toHaveLength(3);
    jobController(store, t0 + 12_000);
    const retry = pods(store, j).find((p) => !ps.some((x) => x.metadata.name === p.metadata.name)) as Obj;
    expect(retry.metadata.generateName).toBe('manual-1-1-');
    expect(st(job(store, 'manual-1'))).toMatchObject({ active: 3, failed: 1 });

    end(store, ps[0] as Obj, 'Succeeded', t0 + 13_000);
    end(store, ps[2] as Obj, 'Succeeded', t0 + 13_000);
    jobController(store, t0 + 14_000);
    expect(st(job(store, 'manual-1'))).toMatchObject({ active: 1, succeeded: 2, failed: 1, completedIndexes: '0,2' });
    end(store, retry, 'Succeeded', t0 + 15_000);
    jobController(store, t0 + 16_000);
    const done = rfc3339(t0 + 16_000);
    expect(st(job(store, 'manual-1'))).toEqual({
      conditions: [
        { type: 'SuccessCriteriaMet', status: 'True', lastProbeTime: done, lastTransitionTime: done, reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods' },
        { type: 'Complete', status: 'True', lastProbeTime: done, lastTransitionTime: done, reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods' },
      ],
      startTime: rfc3339(t0), completionTime: done, succeeded: 3, failed: 1, terminating: 0, completedIndexes: '0-2', uncountedTerminatedPods: {}, ready: 0,
    });
    expect(pods(store, j).every((p) => !p.metadata.finalizers)).toBe(true);
  });

  it('fails a Job past its backoffLimit: FailureTarget, its pods deleted, then Failed once none terminates', () => {
    const store = cluster();
    const j = create(store, 'batch', 'jobs', { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'flaky' }, spec: { backoffLimit: 1, parallelism: 2, completions: 4, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'audit', image: 'busybox' }] } } } });
    const t0 = Date.now();
    jobController(store, t0);
    const [a, b] = pods(store, j) as [Obj, Obj];
    end(store, a, 'Failed', t0);
    jobController(store, t0 + 11_000); // counted, and a replacement after the back-off
    const c = pods(store, j).find((p) => p.metadata.name !== a.metadata.name && p.metadata.name !== b.metadata.name) as Obj;
    // A bound pod goes only when its kubelet has stopped it: it stays Terminating meanwhile.
    store.update('pods', { ...store.get('pods', 'decom', c.metadata.name, ''), spec: { ...(c.spec ?? {}), nodeName: 'node1' } }, '');
    end(store, b, 'Failed', t0 + 12_000);
    jobController(store, t0 + 13_000);
    const target = rfc3339(t0 + 13_000);
    expect(st(job(store, 'flaky')).conditions).toEqual([{ type: 'FailureTarget', status: 'True', lastProbeTime: target, lastTransitionTime: target, reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }]);
    expect(store.get('pods', 'decom', c.metadata.name, '').metadata.deletionTimestamp).toBeDefined();
    jobController(store, t0 + 14_000); // the deleted pod counts as failed (TerminatingOrFailed) but still terminates
    expect(st(job(store, 'flaky'))).toMatchObject({ failed: 3, terminating: 1 });
    expect(jobFailed(store)).toBe(false);
    store.delete('pods', 'decom', c.metadata.name, '', { gracePeriodSeconds: 0 }); // the kubelet finishes the delete
    jobController(store, t0 + 15_000);
    const failedAt = rfc3339(t0 + 15_000);
    expect(st(job(store, 'flaky'))).toEqual({
      conditions: [
        { type: 'FailureTarget', status: 'True', lastProbeTime: target, lastTransitionTime: target, reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' },
        { type: 'Failed', status: 'True', lastProbeTime: failedAt, lastTransitionTime: failedAt, reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' },
      ],
      startTime: rfc3339(t0), failed: 3, terminating: 0, uncountedTerminatedPods: {}, ready: 0,
    });
    function jobFailed(s: Store) {
      return ((st(job(s, 'flaky')).conditions ?? []) as Any[]).some((x) => x.type === 'Failed');
    }
  });

  it('fails an index for good past backoffLimitPerIndex, and the Job once every index has ended (FailedIndexes)', () => {
    const store = cluster();
    const j = create(store, 'batch', 'jobs', { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'per-index' }, spec: { completionMode: 'Indexed', completions: 2, parallelism: 2, backoffLimitPerIndex: 0, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'audit', image: 'busybox' }] } } } });
    expect((j.spec as Any).backoffLimit).toBe(2147483647);
    const t0 = Date.now();
    jobController(store, t0);
    const [a, b] = pods(store, j).sort((x, y) => Number(x.metadata.annotations?.[COMPLETION_INDEX]) - Number(y.metadata.annotations?.[COMPLETION_INDEX])) as [Obj, Obj];
    expect(a.metadata.annotations).toEqual({ [COMPLETION_INDEX]: '0', 'batch.kubernetes.io/job-index-failure-count': '0' });
    expect(st(job(store, 'per-index')).failedIndexes).toBe('');
    end(store, a, 'Failed', t0);
    jobController(store, t0 + 60_000);
    expect(st(job(store, 'per-index'))).toMatchObject({ active: 1, failed: 1, failedIndexes: '0' });
    expect(pods(store, j)).toHaveLength(2); // index 0 is not retried
    end(store, b, 'Succeeded', t0 + 61_000);
    jobController(store, t0 + 62_000);
    expect((st(job(store, 'per-index')).conditions as Any[]).map((c) => [c.type, c.reason, c.message])).toEqual([
      ['FailureTarget', 'FailedIndexes', 'Job has failed indexes'],
      ['Failed', 'FailedIndexes', 'Job has failed indexes'],
    ]);
    expect(st(job(store, 'per-index'))).toMatchObject({ succeeded: 1, failed: 1, completedIndexes: '1', failedIndexes: '0' });
  });

  it('counts an evicted pod as failed while it terminates and replaces it after the back-off (podReplacementPolicy TerminatingOrFailed)', () => {
    const store = cluster();
    const j = create(store, 'batch', 'jobs', { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'evicted' }, spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'audit', image: 'busybox' }] } } } });
    const t0 = Date.now();
    jobController(store, t0);
    const [p] = pods(store, j) as [Obj];
    store.update('pods', { ...p, spec: { ...(p.spec ?? {}), nodeName: 'node1' } }, '');
    store.delete('pods', 'decom', p.metadata.name, ''); // drain's eviction: Terminating on its node
    jobController(store, t0 + 1000);
    expect(st(job(store, 'evicted'))).toMatchObject({ failed: 1, terminating: 1 });
    expect(st(job(store, 'evicted')).active).toBeUndefined();
    expect(store.get('pods', 'decom', p.metadata.name, '').metadata.finalizers).toBeUndefined();
    jobController(store, t0 + 11_000); // its failure dates from the eviction (deletionTimestamp less the grace period)
    expect(st(job(store, 'evicted'))).toMatchObject({ active: 1, failed: 1, terminating: 1 });
  });

  it('deletes a finished Job ttlSecondsAfterFinished after it finished, its pods first (foreground)', () => {
    const store = cluster();
    const j = create(store, 'batch', 'jobs', { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'short' }, spec: { ttlSecondsAfterFinished: 30, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'audit', image: 'busybox' }] } } } });
    const t0 = Date.now();
    jobController(store, t0);
    end(store, pods(store, j)[0] as Obj, 'Succeeded', t0);
    jobController(store, t0 + 1000);
    ttlAfterFinishedController(store, t0 + 30_000);
    expect(job(store, 'short').metadata.deletionTimestamp).toBeUndefined();
    ttlAfterFinishedController(store, t0 + 31_000);
    expect(job(store, 'short').metadata).toMatchObject({ finalizers: ['foregroundDeletion'] });
    expect(job(store, 'short').metadata.deletionTimestamp).toBeDefined();
    batchGarbageCollector(store);
    expect(pods(store, j)).toHaveLength(0);
    batchGarbageCollector(store);
    expect(store.find('jobs', 'decom', 'short')).toBeUndefined();
  });

  it('writes indexes as the completedIndexes field does', () => {
    expect(formatIndexes(new Set([7, 1, 3, 4, 5]))).toBe('1,3-5,7');
    expect(formatIndexes(new Set([0, 1]))).toBe('0,1');
    expect(formatIndexes(new Set([0, 1, 2]))).toBe('0-2');
    expect([...parseIndexes('1,3-5,7')]).toEqual([1, 3, 4, 5, 7]);
  });
});

describe('CronJob schedules', () => {
  const at = (s: string) => Date.parse(s);
  const next = (spec: string, from: string) => new Date(parseSchedule(spec).next(at(from)) as number).toISOString();

  it('reads five fields, ranges, steps, lists, names and descriptors as robfig/cron', () => {
    expect(next('17 * * * *', '2025-03-04T10:17:00Z')).toBe('2025-03-04T11:17:00.000Z');
    expect(next('*/15 9-17 * * MON-FRI', '2025-03-08T12:00:00Z')).toBe('2025-03-10T09:00:00.000Z'); // Saturday → Monday
    expect(next('0 0 1,15 * *', '2025-03-02T00:00:00Z')).toBe('2025-03-15T00:00:00.000Z');
    expect(next('30 2 * jan,jul *', '2025-03-02T00:00:00Z')).toBe('2025-07-01T02:30:00.000Z');
    expect(next('5/20 * * * *', '2025-03-02T00:06:00Z')).toBe('2025-03-02T00:25:00.000Z');
    expect(next('@hourly', '2025-03-02T00:06:00Z')).toBe('2025-03-02T01:00:00.000Z');
    expect(next('@weekly', '2025-03-04T00:00:00Z')).toBe('2025-03-09T00:00:00.000Z');
    expect(next('@every 90m', '2025-03-02T00:06:00Z')).toBe('2025-03-02T01:36:00.000Z');
    // Day of month and day of week both restricted: either matches (cron's OR).
    expect(next('0 0 13 * 5', '2025-03-01T00:00:00Z')).toBe('2025-03-07T00:00:00.000Z');
    expect(() => parseSchedule('17 * * *')).toThrow('expected exactly 5 fields, found 4: [17 * * *]');
    expect(() => parseSchedule('61 * * * *')).toThrow('end of range (61) above maximum (59): 61');
    expect(() => parseSchedule('TZ=UTC 0 * * * *')).toThrow('cannot use TZ or CRON_TZ in schedule, use timeZone field instead');
  });

  it('finds the one most recent missed time, however many were missed', () => {
    const s = parseSchedule('* * * * *');
    expect(new Date(mostRecent(s, at('2024-01-01T00:00:00Z'), at('2025-03-02T10:30:30Z')) as number).toISOString()).toBe('2025-03-02T10:30:00.000Z');
    expect(mostRecent(parseSchedule('17 * * * *'), at('2025-03-02T10:17:00Z'), at('2025-03-02T11:16:59Z'))).toBeUndefined();
  });
});

describe('the CronJob controller', () => {
  /** The CronJob's next :17 after it was made, and the controller run just after it. */
  function scheduled(store: Store, cj: Obj): number {
    return parseSchedule('17 * * * *').next(Date.parse(cj.metadata.creationTimestamp)) as number;
  }

  it('creates the scheduled Job, named by its minute, owned, annotated, listed active; Forbid holds the next run', () => {
    const store = cluster();
    const cj = create(store, 'batch', 'cronjobs', AUDIT);
    const t = scheduled(store, cj);
    cronJobController(store, t - 1000);
    expect(store.list('jobs')).toHaveLength(0);
    cronJobController(store, t + 2000);
    const name = `decom-audit-${Math.floor(t / 60_000)}`;
    const j = job(store, name);
    expect(j.metadata.annotations).toEqual({ [SCHEDULED_TIMESTAMP]: rfc3339(t) });
    expect(j.metadata.ownerReferences).toEqual([{ apiVersion: 'batch/v1', kind: 'CronJob', name: 'decom-audit', uid: cj.metadata.uid, controller: true, blockOwnerDeletion: true }]);
    expect(j.metadata.labels).toEqual((j.spec as Any).template.metadata.labels); // none in the jobTemplate: the template's, as the API shows
    expect((j.spec as Any).completionMode).toBe('Indexed');
    const status = st(store.get('cronjobs', 'decom', 'decom-audit', 'batch'));
    expect(status).toEqual({ active: [{ kind: 'Job', namespace: 'decom', name, uid: j.metadata.uid, apiVersion: 'batch/v1', resourceVersion: j.metadata.resourceVersion }], lastScheduleTime: rfc3339(t) });
    // An hour on, the Job still runs: concurrencyPolicy Forbid skips the run.
    cronJobController(store, t + 3600_000 + 2000);
    expect(store.list('jobs')).toHaveLength(1);
  });

  it('makes one run for all it missed, and counts a finished Job, manual or not, for lastSuccessfulTime and the history limits', () => {
    const store = cluster();
    const cj = create(store, 'batch', 'cronjobs', { ...AUDIT, spec: { ...(AUDIT.spec as Any), concurrencyPolicy: 'Allow', successfulJobsHistoryLimit: 1 } });
    const t = scheduled(store, cj);
    const manual = create(store, 'batch', 'jobs', manualJob(cj, 'manual-1'));
    // A manual Job is the CronJob's (its controller ownerReference) but never in its active list.
    cronJobController(store, t - 60_000);
    expect(st(store.get('cronjobs', 'decom', 'decom-audit', 'batch'))).toEqual({});
    const complete = (name: string, when: number) => {
      const j = job(store, name);
      store.update('jobs', { ...j, status: { startTime: rfc3339(when - 5000), completionTime: rfc3339(when), conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: rfc3339(when) }] } }, 'batch');
    };
    complete('manual-1', t - 30_000);
    // Five hours later: one Job, for the latest :17.
    const later = t + 5 * 3600_000 + 1000;
    cronJobController(store, later);
    const runs = store.list('jobs').filter((j) => j.metadata.name !== 'manual-1');
    expect(runs.map((j) => j.metadata.name)).toEqual([`decom-audit-${Math.floor((t + 5 * 3600_000) / 60_000)}`]);
    expect(st(store.get('cronjobs', 'decom', 'decom-audit', 'batch'))).toMatchObject({ lastScheduleTime: rfc3339(t + 5 * 3600_000), lastSuccessfulTime: rfc3339(t - 30_000) });
    // Its Job completes: it leaves the active list, and the older successful Job (the manual one) goes (history limit 1).
    complete((runs[0] as Obj).metadata.name, later + 60_000);
    cronJobController(store, later + 61_000);
    expect(st(store.get('cronjobs', 'decom', 'decom-audit', 'batch'))).toEqual({ lastScheduleTime: rfc3339(t + 5 * 3600_000), lastSuccessfulTime: rfc3339(later + 60_000) });
    expect(store.find('jobs', 'decom', manual.metadata.name)).toBeUndefined();
    expect(store.list('jobs')).toHaveLength(1);
  });

  it('runs nothing while suspended or past startingDeadlineSeconds; Replace deletes the running Job', () => {
    const store = cluster();
    const suspended = create(store, 'batch', 'cronjobs', { ...AUDIT, metadata: { name: 'paused', namespace: 'decom' }, spec: { ...(AUDIT.spec as Any), suspend: true } });
    const late = create(store, 'batch', 'cronjobs', { ...AUDIT, metadata: { name: 'late', namespace: 'decom' }, spec: { ...(AUDIT.spec as Any), startingDeadlineSeconds: 10 } });
    create(store, 'batch', 'cronjobs', { ...AUDIT, metadata: { name: 'replace', namespace: 'decom' }, spec: { ...(AUDIT.spec as Any), concurrencyPolicy: 'Replace' } });
    const t = scheduled(store, suspended);
    cronJobController(store, t + 30_000);
    expect(store.list('jobs').map((j) => j.metadata.name)).toEqual([`replace-${Math.floor(t / 60_000)}`]);
    // The late one's run is past its startingDeadlineSeconds: none, until its next schedule.
    expect(store.list('jobs').filter((j) => j.metadata.ownerReferences?.[0]?.uid === late.metadata.uid)).toEqual([]);
    cronJobController(store, t + 3600_000 + 1000);
    expect(store.list('jobs').map((j) => j.metadata.name)).toEqual([`late-${Math.floor((t + 3600_000) / 60_000)}`, `replace-${Math.floor((t + 3600_000) / 60_000)}`]);
    expect((st(store.get('cronjobs', 'decom', 'replace', 'batch')).active as Any[]).map((a) => a.name)).toEqual([`replace-${Math.floor((t + 3600_000) / 60_000)}`]);
    // Replace: the first run's Job was deleted for the new one.
    const first = store.find('jobs', 'decom', `replace-${Math.floor(t / 60_000)}`);
    expect(first === undefined || Boolean(first.metadata.deletionTimestamp)).toBe(true);
  });

  it('refuses a time zone other than UTC, and a schedule that does not parse, at create', () => {
    const store = cluster();
    expect(() => create(store, 'batch', 'cronjobs', { ...AUDIT, spec: { ...(AUDIT.spec as Any), timeZone: 'Europe/Paris' } })).toThrow(/spec.timeZone: Invalid value: "Europe\/Paris": the sandbox's CronJob controller schedules in UTC only/);
    expect(() => create(store, 'batch', 'cronjobs', { ...AUDIT, spec: { ...(AUDIT.spec as Any), schedule: 'hourly' } })).toThrow(/spec.schedule: Invalid value: "hourly": expected exactly 5 fields, found 1/);
  });
});

describe('the PersistentVolume binder', () => {
  const pv = (name: string, size: string, modes: string[], extra: Any = {}) => ({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name }, spec: { capacity: { storage: size }, accessModes: modes, hostPath: { path: `/srv/${name}` }, ...extra } });
  const pvc = (name: string, size: string, modes: string[], extra: Any = {}) => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'decom' }, spec: { accessModes: modes, resources: { requests: { storage: size } }, ...extra } });

  it('binds a claim to the smallest Available volume of its class that has its access modes, as the PV controller writes it', () => {
    const store = cluster();
    create(store, '', 'persistentvolumes', pv('rwo-5g', '5Gi', ['ReadWriteOnce']));
    create(store, '', 'persistentvolumes', pv('rwx-10g', '10Gi', ['ReadWriteMany', 'ReadWriteOnce']));
    create(store, '', 'persistentvolumes', pv('rwx-2g', '2Gi', ['ReadWriteMany']));
    create(store, '', 'persistentvolumes', pv('rwx-500m', '500Mi', ['ReadWriteMany']));
    create(store, '', 'persistentvolumes', pv('rwx-fast', '1Gi', ['ReadWriteMany'], { storageClassName: 'fast' }));
    const claim = create(store, '', 'persistentvolumeclaims', pvc('decom-reports', '1Gi', ['ReadWriteMany']));
    expect(claim.status).toEqual({ phase: 'Pending' });
    volumeBinder(store);
    const bound = store.get('persistentvolumeclaims', 'decom', 'decom-reports', '');
    expect(bound.metadata.annotations).toEqual({ 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes' });
    expect((bound.spec as Any).volumeName).toBe('rwx-2g');
    expect(bound.status).toEqual({ phase: 'Bound', accessModes: ['ReadWriteMany'], capacity: { storage: '2Gi' } });
    const vol = store.get('persistentvolumes', undefined, 'rwx-2g', '');
    expect((vol.spec as Any).claimRef).toEqual({ kind: 'PersistentVolumeClaim', namespace: 'decom', name: 'decom-reports', uid: claim.metadata.uid, apiVersion: 'v1', resourceVersion: claim.metadata.resourceVersion });
    expect(vol.metadata.annotations).toEqual({ 'pv.kubernetes.io/bound-by-controller': 'yes' });
    expect(st(vol).phase).toBe('Bound');
    expect(st(store.get('persistentvolumes', undefined, 'rwx-10g', '')).phase).toBe('Available');
  });

  it('gives a pre-bound volume only to its claim, and binds a claim that names its volume', () => {
    const store = cluster();
    create(store, '', 'persistentvolumes', pv('reserved', '1Gi', ['ReadWriteOnce'], { claimRef: { namespace: 'decom', name: 'mine' } }));
    create(store, '', 'persistentvolumeclaims', pvc('other', '1Gi', ['ReadWriteOnce']));
    volumeBinder(store);
    expect(st(store.get('persistentvolumeclaims', 'decom', 'other', ''))).toEqual({ phase: 'Pending' });
    expect(st(store.get('persistentvolumes', undefined, 'reserved', '')).phase).toBe('Available');
    create(store, '', 'persistentvolumes', pv('named', '1Gi', ['ReadWriteOnce']));
    create(store, '', 'persistentvolumeclaims', pvc('mine', '1Gi', ['ReadWriteOnce']));
    create(store, '', 'persistentvolumeclaims', pvc('by-name', '1Gi', ['ReadWriteOnce'], { volumeName: 'named' }));
    volumeBinder(store);
    expect((store.get('persistentvolumeclaims', 'decom', 'mine', '').spec as Any).volumeName).toBe('reserved');
    expect(store.get('persistentvolumes', undefined, 'reserved', '').metadata.annotations).toBeUndefined(); // bound as its claimRef said: not by the controller
    const byName = store.get('persistentvolumeclaims', 'decom', 'by-name', '');
    expect(byName.metadata.annotations).toEqual({ 'pv.kubernetes.io/bind-completed': 'yes' });
    expect(st(byName).phase).toBe('Bound');
  });

  it('leaves a pod whose claim is unbound unscheduled, as kube-scheduler says it, and places it once bound', () => {
    const store = cluster();
    store.create('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node1' } as Obj['metadata'], spec: {}, status: { conditions: [{ type: 'Ready', status: 'True' }] } }, '');
    create(store, '', 'persistentvolumeclaims', pvc('decom-reports', '1Gi', ['ReadWriteMany']));
    create(store, '', 'pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'shard', namespace: 'decom' }, spec: { containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'r', persistentVolumeClaim: { claimName: 'decom-reports' } }] } });
    volumeBinder(store);
    scheduler(store);
    const waiting = store.get('pods', 'decom', 'shard', '');
    expect((waiting.spec as Any).nodeName).toBeUndefined();
    expect(st(waiting).conditions).toEqual([{
      type: 'PodScheduled', status: 'False', lastProbeTime: null, lastTransitionTime: expect.any(String) as string, reason: 'Unschedulable',
      message: '0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.',
    }]);
    create(store, '', 'persistentvolumes', pv('rwx', '1Gi', ['ReadWriteMany']));
    volumeBinder(store);
    scheduler(store);
    expect((store.get('pods', 'decom', 'shard', '').spec as Any).nodeName).toBe('node1');
  });
});

describe("a delete's preconditions", () => {
  it("are refused as kube-apiserver's rest.BeforeDelete refuses them: 409 Conflict naming the kind, and the object stays", () => {
    const store = cluster();
    const lease = create(store, 'coordination.k8s.io', 'leases', { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'n1', namespace: 'decom' } });
    const refused = (opts: { uid?: string; resourceVersion?: string }) => {
      try {
        store.delete('leases', 'decom', 'n1', 'coordination.k8s.io', opts);
      } catch (e) {
        return e as ApiError;
      }
      throw new Error('deleted');
    };
    const uid = refused({ uid: 'stale-uid' });
    expect([uid.code, uid.reason, uid.details?.kind]).toEqual([409, 'Conflict', 'Lease']);
    expect(uid.message).toBe(
      `Operation cannot be fulfilled on Lease.coordination.k8s.io "n1": the UID in the precondition (stale-uid) does not match the UID in record (${lease.metadata.uid}). The object might have been deleted and then recreated`,
    );
    expect(refused({ resourceVersion: '1' }).message).toBe(
      `Operation cannot be fulfilled on Lease.coordination.k8s.io "n1": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (${lease.metadata.resourceVersion}). The object might have been modified`,
    );
    expect(store.get('leases', 'decom', 'n1', 'coordination.k8s.io').metadata.uid).toBe(lease.metadata.uid);
    store.delete('leases', 'decom', 'n1', 'coordination.k8s.io', { uid: lease.metadata.uid });
    expect(store.list('leases', 'decom')).toEqual([]);
  });
});
