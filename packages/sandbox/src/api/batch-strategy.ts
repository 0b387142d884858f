/**
 * What kube-apiserver v1.32 does to a Job or CronJob it is given to create, before any
 * controller sees it: the defaults of pkg/apis/batch/v1 and pkg/apis/core/v1 (the pod
 * template's, as `kubectl get -o yaml` shows them), the Job strategy's generated selector
 * and labels (pkg/registry/batch/job/strategy.go generateSelector), and the validation
 * a Job made from deploy/ could trip.
 */
import { randomUUID } from 'node:crypto';
import { parseSchedule } from './cron.js';
import type { Obj } from './store.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const CONTROLLER_UID = 'batch.kubernetes.io/controller-uid';
export const JOB_NAME = 'batch.kubernetes.io/job-name';
/** The unprefixed labels the strategy still adds beside the prefixed ones (since 1.27). */
const LEGACY_CONTROLLER_UID = 'controller-uid';
const LEGACY_JOB_NAME = 'job-name';

/** SetDefaults_Container's pull policy: Always for `:latest` or no tag (and no digest), IfNotPresent otherwise. */
function pullPolicy(image: string): string {
  const last = image.slice(image.lastIndexOf('/') + 1);
  if (last.includes('@')) return 'IfNotPresent';
  const tag = last.includes(':') ? last.slice(last.indexOf(':') + 1) : 'latest';
  return tag === 'latest' ? 'Always' : 'IfNotPresent';
}

const fieldRefDefaults = (r: Any | undefined) => r && { apiVersion: 'v1', ...r };
const resourceRefDefaults = (r: Any | undefined) => r && { divisor: '0', ...r };

function containerDefaults(c: Any): Any {
  return {
    ...c,
    ...(c.env ? { env: (c.env as Any[]).map((e) => (e.valueFrom ? { ...e, valueFrom: { ...e.valueFrom, ...(e.valueFrom.fieldRef ? { fieldRef: fieldRefDefaults(e.valueFrom.fieldRef) } : {}), ...(e.valueFrom.resourceFieldRef ? { resourceFieldRef: resourceRefDefaults(e.valueFrom.resourceFieldRef) } : {}) } } : e)) } : {}),
    ...(c.ports ? { ports: (c.ports as Any[]).map((p) => ({ protocol: 'TCP', ...p })) } : {}),
    resources: c.resources ?? {},
    terminationMessagePath: c.terminationMessagePath ?? '/dev/termination-log',
    terminationMessagePolicy: c.terminationMessagePolicy ?? 'File',
    imagePullPolicy: c.imagePullPolicy ?? pullPolicy(String(c.image ?? '')),
  };
}

const SOURCES = ['hostPath', 'emptyDir', 'secret', 'nfs', 'persistentVolumeClaim', 'downwardAPI', 'configMap', 'projected', 'csi', 'ephemeral', 'image', 'iscsi', 'gitRepo', 'fc', 'cephfs', 'rbd', 'cinder', 'glusterfs', 'flexVolume', 'azureFile', 'azureDisk', 'vsphereVolume', 'quobyte', 'photonPersistentDisk', 'portworxVolume', 'scaleIO', 'storageos', 'flocker', 'gcePersistentDisk', 'awsElasticBlockStore'];
const downwardItems = (items: Any[] | undefined) => items?.map((i) => ({ ...i, ...(i.fieldRef ? { fieldRef: fieldRefDefaults(i.fieldRef) } : {}), ...(i.resourceFieldRef ? { resourceFieldRef: resourceRefDefaults(i.resourceFieldRef) } : {}) }));

/** SetDefaults_Volume and its sources: an empty volume is an emptyDir; file modes 0644 (420); hostPath type "". */
function volumeDefaults(v: Any): Any {
  if (!SOURCES.some((s) => v[s])) return { ...v, emptyDir: {} };
  const out = { ...v };
  if (v.hostPath) out.hostPath = { type: '', ...v.hostPath };
  if (v.secret) out.secret = { defaultMode: 420, ...v.secret };
  if (v.configMap) out.configMap = { defaultMode: 420, ...v.configMap };
  if (v.downwardAPI) out.downwardAPI = { defaultMode: 420, ...v.downwardAPI, ...(v.downwardAPI.items ? { items: downwardItems(v.downwardAPI.items) } : {}) };
  if (v.projected) {
    out.projected = {
      defaultMode: 420,
      ...v.projected,
      sources: ((v.projected.sources ?? []) as Any[]).map((s) => ({
        ...s,
        ...(s.serviceAccountToken ? { serviceAccountToken: { expirationSeconds: 3600, ...s.serviceAccountToken } } : {}),
        ...(s.downwardAPI?.items ? { downwardAPI: { ...s.downwardAPI, items: downwardItems(s.downwardAPI.items) } } : {}),
      })),
    };
  }
  return out;
}

/** SetDefaults_PodSpec and the container and volume defaults, on a pod template. */
export function podTemplateDefaults(tpl: Any | undefined): Any {
  const spec = (tpl?.spec ?? {}) as Any;
  return {
    ...(tpl ?? {}),
    spec: {
      ...spec,
      ...(spec.volumes ? { volumes: (spec.volumes as Any[]).map(volumeDefaults) } : {}),
      ...(spec.initContainers ? { initContainers: (spec.initContainers as Any[]).map(containerDefaults) } : {}),
      containers: ((spec.containers ?? []) as Any[]).map(containerDefaults),
      restartPolicy: spec.restartPolicy ?? 'Always',
      terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds ?? 30,
      dnsPolicy: spec.dnsPolicy ?? 'ClusterFirst',
      securityContext: spec.securityContext ?? {},
      schedulerName: spec.schedulerName ?? 'default-scheduler',
    },
  };
}

/**
 * A new Job as the API stores it: SetDefaults_Job (parallelism and completions 1 when both are
 * unset, backoffLimit 6, NonIndexed, not suspended, TerminatingOrFailed, manualSelector false),
 * its uid and name given first (as BeforeCreate does, the selector names the uid), then the
 * strategy's generated selector and template labels; a Job without labels shows its
 * template's, as the defaults apply them on every read.
 */
export function jobDefaults(job: Obj, name: () => string): Obj {
  const spec = { ...((job.spec ?? {}) as Any) };
  if (spec.completions === undefined && spec.parallelism === undefined) spec.completions = 1;
  spec.parallelism ??= 1;
  spec.backoffLimit ??= spec.backoffLimitPerIndex !== undefined ? 2147483647 : 6;
  spec.completionMode ??= 'NonIndexed';
  spec.suspend ??= false;
  spec.podReplacementPolicy ??= spec.podFailurePolicy ? 'Failed' : 'TerminatingOrFailed';
  spec.manualSelector ??= false;
  const meta = { ...job.metadata, uid: randomUUID() };
  if (!meta.name && meta.generateName) meta.name = name();
  const tpl = podTemplateDefaults(spec.template);
  if (!spec.manualSelector) {
    const labels = { ...(tpl.metadata?.labels ?? {}) } as Record<string, string>;
    for (const k of [LEGACY_JOB_NAME, JOB_NAME]) labels[k] ??= meta.name;
    for (const k of [LEGACY_CONTROLLER_UID, CONTROLLER_UID]) labels[k] ??= meta.uid;
    tpl.metadata = { ...(tpl.metadata ?? {}), labels };
    spec.selector = { ...(spec.selector ?? {}), matchLabels: { [CONTROLLER_UID]: meta.uid, ...(spec.selector?.matchLabels ?? {}) } };
  }
  spec.template = tpl;
  if (!Object.keys(meta.labels ?? {}).length && tpl.metadata?.labels) meta.labels = { ...tpl.metadata.labels };
  return { ...job, metadata: meta, spec, status: {} };
}

/** SetDefaults_CronJob (Allow, not suspended, keep 3 successful and 1 failed Job) and the template's pod defaults. */
export function cronJobDefaults(cj: Obj): Obj {
  const spec = { ...((cj.spec ?? {}) as Any) };
  spec.concurrencyPolicy ||= 'Allow';
  spec.suspend ??= false;
  spec.successfulJobsHistoryLimit ??= 3;
  spec.failedJobsHistoryLimit ??= 1;
  const jt = (spec.jobTemplate ?? {}) as Any;
  spec.jobTemplate = { ...jt, spec: { ...(jt.spec ?? {}), template: podTemplateDefaults(jt.spec?.template) } };
  return { ...cj, spec, status: {} };
}

/** The causes ValidateJobSpec gives for a pod template and completion mode (the few a Job from deploy/ could trip). */
function jobSpecCauses(spec: Any, path: string): { field: string; message: string }[] {
  const causes: { field: string; message: string }[] = [];
  const restart = spec.template?.spec?.restartPolicy;
  if (restart !== 'OnFailure' && restart !== 'Never') causes.push({ field: `${path}.template.spec.restartPolicy`, message: `Unsupported value: "${restart ?? ''}": supported values: "OnFailure", "Never"` });
  if (!spec.template?.spec?.containers?.length) causes.push({ field: `${path}.template.spec.containers`, message: 'Required value' });
  if (spec.completionMode === 'Indexed' && spec.completions === undefined) causes.push({ field: `${path}.completions`, message: 'Required value: when completion mode is Indexed' });
  if (spec.completionMode && !['Indexed', 'NonIndexed'].includes(spec.completionMode)) causes.push({ field: `${path}.completionMode`, message: `Unsupported value: "${spec.completionMode}": supported values: "NonIndexed", "Indexed"` });
  return causes;
}

export const jobCauses = (job: Obj): { field: string; message: string }[] => jobSpecCauses((job.spec ?? {}) as Any, 'spec');

/** A CronJob's schedule must parse; its time zone, if any, must be UTC: the sandbox's controller schedules in UTC only. */
export function cronJobCauses(cj: Obj): { field: string; message: string }[] {
  const spec = (cj.spec ?? {}) as Any;
  const causes = jobSpecCauses(spec.jobTemplate?.spec ?? {}, 'spec.jobTemplate.spec');
  if (!spec.schedule) causes.push({ field: 'spec.schedule', message: 'Required value' });
  else {
    try {
      parseSchedule(String(spec.schedule));
    } catch (e) {
      causes.push({ field: 'spec.schedule', message: `Invalid value: "${spec.schedule}": ${(e as Error).message}` });
    }
  }
  if (spec.timeZone !== undefined && !['UTC', 'Etc/UTC'].includes(spec.timeZone)) {
    causes.push({ field: 'spec.timeZone', message: `Invalid value: "${spec.timeZone}": the sandbox's CronJob controller schedules in UTC only (its clock's zone); set timeZone: UTC or leave it unset` });
  }
  if (spec.concurrencyPolicy && !['Allow', 'Forbid', 'Replace'].includes(spec.concurrencyPolicy)) {
    causes.push({ field: 'spec.concurrencyPolicy', message: `Unsupported value: "${spec.concurrencyPolicy}": supported values: "Allow", "Forbid", "Replace"` });
  }
  return causes;
}
