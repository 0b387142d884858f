/**
 * kube-controller-manager v1.32's batch controllers, one pass each per tick:
 *   - the Job controller (pkg/controller/job/job_controller.go, indexed_job_utils.go):
 *     pods from the template, tracked by the batch.kubernetes.io/job-tracking finalizer
 *     until counted; Indexed jobs' per-index pods, env and hostname; retries with the
 *     10s·2ⁿ back-off up to backoffLimit; the status and the 1.32 terminal conditions
 *     (SuccessCriteriaMet then Complete, FailureTarget then Failed, the second only once
 *     no pod is terminating);
 *   - the TTL-after-finished controller (pkg/controller/ttlafterfinished), deleting a
 *     finished Job in the foreground ttlSecondsAfterFinished after it finished;
 *   - the garbage collector's part for batch objects: a Job's pods and a CronJob's Jobs
 *     go with their owner (there is no general garbage collector in the sandbox);
 *   - the CronJob controller (pkg/controller/cronjob/cronjob_controllerv2.go, utils.go).
 * Every function takes the clock (epoch ms) so a test can set the time.
 */
import { ApiError } from './errors.js';
import { ownedBy, podFor, podReady, validate, withDefaults } from './behaviour.js';
import { mostRecent, parseSchedule } from './cron.js';
import { findResource, type Resource } from './resources.js';
import { rfc3339, type Obj, type Store } from './store.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const TRACKING_FINALIZER = 'batch.kubernetes.io/job-tracking';
export const COMPLETION_INDEX = 'batch.kubernetes.io/job-completion-index';
export const SCHEDULED_TIMESTAMP = 'batch.kubernetes.io/cronjob-scheduled-timestamp';
/** With backoffLimitPerIndex: how often the pod's index failed before it (addIndexFailureCountAnnotation). */
export const INDEX_FAILURE_COUNT = 'batch.kubernetes.io/job-index-failure-count';
const FOREGROUND = 'foregroundDeletion';
/** DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff. */
const BACKOFF_MS = 10_000;
const MAX_BACKOFF_MS = 600_000;
/** names.MaxGeneratedNameLength: a generateName prefix is cut to leave room for the 5 random characters. */
const MAX_GENERATED_NAME = 58;

const spec = (o: Obj) => (o.spec ?? {}) as Any;
const status = (o: Obj) => (o.status ?? {}) as Any;
const phase = (p: Obj) => status(p).phase as string | undefined;
const condition = (o: Obj, type: string) => ((status(o).conditions ?? []) as Any[]).find((c) => c.type === type && c.status === 'True');
/** IsJobFinished: a Complete or Failed condition is True. */
export const jobFinished = (j: Obj): Any | undefined => condition(j, 'Complete') ?? condition(j, 'Failed');
const hasTracking = (p: Obj) => (p.metadata.finalizers ?? []).includes(TRACKING_FINALIZER);
const indexOf = (p: Obj) => {
  const v = p.metadata.annotations?.[COMPLETION_INDEX];
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
};
const resource = (plural: string, group = 'batch') => findResource(group, 'v1', plural) as Resource;

/** "1,3-5,7": indexes ascending, three or more consecutive ones as a range (the completedIndexes format). */
export function formatIndexes(set: Set<number>): string {
  const xs = [...set].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < xs.length; ) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === (xs[j] as number) + 1) j++;
    if (j - i >= 2) out.push(`${xs[i]}-${xs[j]}`);
    else for (let k = i; k <= j; k++) out.push(String(xs[k]));
    i = j + 1;
  }
  return out.join(',');
}

export function parseIndexes(text: string | undefined): Set<number> {
  const set = new Set<number>();
  for (const part of (text ?? '').split(',').filter(Boolean)) {
    const [a, b] = part.split('-').map(Number) as [number, number | undefined];
    for (let i = a; i <= (b ?? a); i++) set.add(i);
  }
  return set;
}

/** getFinishedTime: its containers' last finishedAt, else when it went unready, else when it was deleted (the deletion time less its grace), else its creation. */
function finishedAt(p: Obj): number {
  const times = [...((status(p).containerStatuses ?? []) as Any[]), ...((status(p).initContainerStatuses ?? []) as Any[])].map((c) => Date.parse(c.state?.terminated?.finishedAt ?? '')).filter((t) => !Number.isNaN(t));
  if (times.length) return Math.max(...times);
  const unready = ((status(p).conditions ?? []) as Any[]).find((c) => c.type === 'Ready' && c.status === 'False')?.lastTransitionTime;
  if (unready) return Date.parse(unready);
  if (p.metadata.deletionTimestamp) return Date.parse(p.metadata.deletionTimestamp) - (p.metadata.deletionGracePeriodSeconds ?? 0) * 1000;
  return Date.parse(p.metadata.creationTimestamp);
}

/** isPodFailed: Failed, or (TerminatingOrFailed) deleted before it succeeded, so a pod that never ends is counted too. */
const podFailed = (p: Obj, job: Obj) => phase(p) === 'Failed' || (spec(job).podReplacementPolicy !== 'Failed' && Boolean(p.metadata.deletionTimestamp) && phase(p) !== 'Succeeded');
const podDone = (p: Obj, job: Obj) => phase(p) === 'Succeeded' || podFailed(p, job);

/** newCondition: probe and transition at the same time. */
const newCondition = (type: string, reason: string, message: string, now: number) => ({ type, status: 'True', lastProbeTime: rfc3339(now), lastTransitionTime: rfc3339(now), reason, message });

/** A pod for one more run of the Job: the template's, tracked; an Indexed one named, annotated, labelled and given a hostname for its index. */
function jobPod(job: Obj, index: number | undefined, failures = 0): Obj {
  const pod = podFor(job, 'Job', {});
  pod.metadata.finalizers = [...(pod.metadata.finalizers ?? []).filter((f) => f !== TRACKING_FINALIZER), TRACKING_FINALIZER];
  if (index === undefined) return pod;
  const name = job.metadata.name;
  const suffix = `-${index}-`;
  pod.metadata.generateName = `${name}${suffix}`.length > MAX_GENERATED_NAME ? `${name.slice(0, MAX_GENERATED_NAME - suffix.length)}${suffix}` : `${name}${suffix}`;
  const counted: Record<string, string> = spec(job).backoffLimitPerIndex !== undefined ? { [INDEX_FAILURE_COUNT]: String(failures) } : {};
  pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), [COMPLETION_INDEX]: String(index), ...counted };
  pod.metadata.labels = { ...(pod.metadata.labels ?? {}), [COMPLETION_INDEX]: String(index) };
  // addCompletionIndexEnvVariables: every container learns its index from the annotation, unless it sets the variable itself.
  const env = { name: 'JOB_COMPLETION_INDEX', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: `metadata.annotations['${COMPLETION_INDEX}']` } } };
  const withEnv = (cs: Any[] | undefined) => cs?.map((c) => (((c.env ?? []) as Any[]).some((e) => e.name === env.name) ? c : { ...c, env: [...(c.env ?? []), env] }));
  const s = spec(pod);
  pod.spec = { ...s, hostname: `${name}-${index}`, containers: withEnv(s.containers), ...(s.initContainers ? { initContainers: withEnv(s.initContainers) } : {}) };
  return pod;
}

/** The Job controller's sync of one Job. */
function syncJob(store: Store, job: Obj, now: number): void {
  const s = spec(job);
  const pods = store.list('pods', job.metadata.namespace).filter((p) => ownedBy(p, job));
  const uncount = (ps: Obj[]) => {
    for (const p of ps.filter(hasTracking)) store.update('pods', { ...p, metadata: { ...p.metadata, finalizers: (p.metadata.finalizers ?? []).filter((f) => f !== TRACKING_FINALIZER) } }, '');
  };
  if (jobFinished(job)) return; // its pods are let go as orphans (jobController)

  const indexed = s.completionMode === 'Indexed';
  const completions = s.completions as number | undefined;
  const parallelism = Number(s.parallelism ?? 1);
  const old = status(job);
  const st: Any = { ...old };
  // Count the pods that ended and are not counted yet (they still hold the finalizer).
  const ended = pods.filter((p) => hasTracking(p) && podDone(p, job));
  const done = parseIndexes(old.completedIndexes);
  let succeeded = Number(old.succeeded ?? 0);
  let failed = Number(old.failed ?? 0);
  for (const p of ended) {
    if (podFailed(p, job)) failed++;
    else if (!indexed) succeeded++;
    else if ((indexOf(p) ?? -1) >= 0 && (indexOf(p) as number) < (completions ?? 0)) done.add(indexOf(p) as number);
  }
  if (indexed) succeeded = done.size;
  // backoffLimitPerIndex: an index failed more often than that is failed for good (failedIndexes) and not retried.
  const perIndex = indexed && s.backoffLimitPerIndex !== undefined;
  const failuresOf = (i: number) => pods.filter((p) => indexOf(p) === i && podFailed(p, job));
  const failedIndexes = parseIndexes(old.failedIndexes);
  if (perIndex) for (let i = 0; i < (completions ?? 0); i++) if (!done.has(i) && failuresOf(i).length > Number(s.backoffLimitPerIndex)) failedIndexes.add(i);

  let active = pods.filter((p) => !p.metadata.deletionTimestamp && !podDone(p, job));
  // Read from the store, not the snapshot: the pods deleted in this pass are terminating already.
  const terminating = () => store.list('pods', job.metadata.namespace).filter((p) => ownedBy(p, job) && p.metadata.deletionTimestamp && phase(p) !== 'Succeeded' && phase(p) !== 'Failed');
  const conditions = [...((old.conditions ?? []) as Any[])];
  const has = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  const deleteActive = () => {
    for (const p of active) store.delete('pods', p.metadata.namespace, p.metadata.name, '');
    active = [];
  };

  // Suspended: no pods run; the condition says so, and the clock of activeDeadlineSeconds stops.
  const suspendedNow = Boolean(s.suspend);
  const at = conditions.findIndex((c) => c.type === 'Suspended');
  if (suspendedNow && conditions[at]?.status !== 'True') {
    conditions.splice(at < 0 ? conditions.length : at, 1, newCondition('Suspended', 'JobSuspended', 'Job suspended', now));
    delete st.startTime;
  } else if (!suspendedNow && conditions[at]?.status === 'True') {
    conditions.splice(at, 1, { ...newCondition('Suspended', 'JobResumed', 'Job resumed', now), status: 'False' });
  }
  if (suspendedNow) deleteActive();
  else st.startTime ??= rfc3339(now);

  // The terminal state: first the target (FailureTarget or SuccessCriteriaMet, the pods left are deleted), then, once none terminates, Failed or Complete.
  if (!has('FailureTarget') && !has('SuccessCriteriaMet') && !suspendedNow) {
    const deadline = s.activeDeadlineSeconds !== undefined && st.startTime && Date.parse(st.startTime) + Number(s.activeDeadlineSeconds) * 1000 <= now;
    if (failed > Number(s.backoffLimit ?? 6)) conditions.push(newCondition('FailureTarget', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit', now));
    else if (perIndex && s.maxFailedIndexes !== undefined && failedIndexes.size > Number(s.maxFailedIndexes)) {
      conditions.push(newCondition('FailureTarget', 'MaxFailedIndexesExceeded', 'Job has exceeded the specified maximal number of failed indexes', now));
    } else if (perIndex && failedIndexes.size && done.size + failedIndexes.size >= (completions ?? 0)) conditions.push(newCondition('FailureTarget', 'FailedIndexes', 'Job has failed indexes', now));
    else if (deadline) conditions.push(newCondition('FailureTarget', 'DeadlineExceeded', 'Job was active longer than specified deadline', now));
    else if (indexed ? succeeded >= (completions ?? 0) : completions !== undefined ? succeeded >= completions : succeeded > 0 && active.length === 0) {
      conditions.push(newCondition('SuccessCriteriaMet', 'CompletionsReached', 'Reached expected number of succeeded pods', now));
    }
  }
  const target = has('FailureTarget') ?? has('SuccessCriteriaMet');
  if (target) deleteActive();
  else if (!suspendedNow) {
    // manageJob: as many active pods as parallelism allows and the completions left need, after the back-off of recent failures.
    const left = completions === undefined ? (succeeded > 0 ? active.length : parallelism) : Math.max(0, Math.min(parallelism, completions - succeeded));
    const busy = active.length + (s.podReplacementPolicy === 'Failed' ? terminating().length : 0);
    // The back-off: 10s·2ⁿ⁻¹ after the last of n failures since the last success (of the Job, or of the index with backoffLimitPerIndex).
    const backoff = (ps: Obj[]) => {
      const lastSuccess = Math.max(0, ...ps.filter((p) => phase(p) === 'Succeeded').map(finishedAt));
      const failures = ps.filter((p) => podFailed(p, job) && finishedAt(p) > lastSuccess).map(finishedAt);
      return failures.length ? Math.max(...failures) + Math.min(BACKOFF_MS * 2 ** (failures.length - 1), MAX_BACKOFF_MS) - now : 0;
    };
    if (busy < left && (perIndex || backoff(pods) <= 0)) {
      if (!indexed) for (let i = busy; i < left; i++) active.push(store.create('pods', jobPod(job, undefined), ''));
      else {
        const taken = new Set([...active, ...(s.podReplacementPolicy === 'Failed' ? terminating() : [])].map(indexOf));
        const pending = Array.from({ length: completions ?? 0 }, (_, i) => i).filter((i) => !done.has(i) && !failedIndexes.has(i) && !taken.has(i));
        const ready = perIndex ? pending.filter((i) => backoff(pods.filter((p) => indexOf(p) === i)) <= 0) : pending;
        for (const i of ready.slice(0, left - busy)) active.push(store.create('pods', jobPod(job, i, failuresOf(i).length), ''));
      }
    } else if (busy > left && !indexed) {
      for (const p of active.splice(left)) store.delete('pods', p.metadata.namespace, p.metadata.name, '');
    }
  }
  const stillTerminating = terminating().length;
  if (target && stillTerminating === 0 && !has('Failed') && !has('Complete')) {
    const final = newCondition(target.type === 'FailureTarget' ? 'Failed' : 'Complete', target.reason, target.message, now);
    conditions.push(final);
    if (final.type === 'Complete') st.completionTime = final.lastTransitionTime;
  }

  // JobStatus in its JSON order; active, succeeded and failed are omitted at zero, terminating and ready are not.
  const next: Any = {
    ...(conditions.length ? { conditions } : {}),
    ...(st.startTime ? { startTime: st.startTime } : {}),
    ...(st.completionTime ? { completionTime: st.completionTime } : {}),
    ...(active.length ? { active: active.length } : {}),
    ...(succeeded ? { succeeded } : {}),
    ...(failed ? { failed } : {}),
    terminating: stillTerminating,
    ...(indexed && done.size ? { completedIndexes: formatIndexes(done) } : {}),
    ...(perIndex ? { failedIndexes: formatIndexes(failedIndexes) } : {}),
    uncountedTerminatedPods: {},
    ready: active.filter(podReady).length,
  };
  // The counts first, then the finalizers: a pod is never uncounted before its Job says it was counted.
  if (JSON.stringify(next) !== JSON.stringify(old)) store.update('jobs', { ...job, status: next }, 'batch');
  uncount(ended);
}

/** The Job controller: every Job's pods and status. */
export function jobController(store: Store, now = Date.now()): void {
  for (const job of store.list('jobs')) {
    const managedBy = spec(job).managedBy as string | undefined;
    if (job.metadata.deletionTimestamp || (managedBy && managedBy !== 'kubernetes.io/job-controller')) continue;
    syncJob(store, job, now);
  }
  // syncOrphanPod: a tracked pod whose Job is gone or finished is let go.
  const jobs = new Map(store.list('jobs').map((j) => [j.metadata.uid, j]));
  for (const p of store.list('pods')) {
    const ref = (p.metadata.ownerReferences ?? []).find((r) => r.controller && r.kind === 'Job');
    const job = ref ? jobs.get(ref.uid) : undefined;
    if (!hasTracking(p) || (job && !jobFinished(job))) continue;
    store.update('pods', { ...p, metadata: { ...p.metadata, finalizers: (p.metadata.finalizers ?? []).filter((f) => f !== TRACKING_FINALIZER) } }, '');
  }
}

/** Deletes in the foreground: the object stays, Terminating, until the garbage collector has deleted what it owns. */
function deleteForeground(store: Store, plural: string, o: Obj, group: string): void {
  const held = store.update(plural, { ...o, metadata: { ...o.metadata, finalizers: [...(o.metadata.finalizers ?? []).filter((f) => f !== FOREGROUND), FOREGROUND] } }, group);
  store.delete(plural, held.metadata.namespace, held.metadata.name, group);
}

/** The TTL-after-finished controller: a finished Job with ttlSecondsAfterFinished goes that long after its Complete or Failed condition. */
export function ttlAfterFinishedController(store: Store, now = Date.now()): void {
  for (const job of store.list('jobs')) {
    const ttl = spec(job).ttlSecondsAfterFinished;
    const fin = jobFinished(job);
    if (ttl === undefined || !fin || job.metadata.deletionTimestamp) continue;
    if (Date.parse(fin.lastTransitionTime) + Number(ttl) * 1000 <= now) deleteForeground(store, 'jobs', job, 'batch');
  }
}

/**
 * The garbage collector, for batch objects only: a pod whose Job is gone (or is going in the
 * foreground) is deleted, so is a Job whose CronJob is gone; a Job deleted in the foreground
 * goes once its pods have. Only objects all of whose owners are Jobs or CronJobs are collected.
 */
export function batchGarbageCollector(store: Store): void {
  const owners = new Map([...store.list('jobs'), ...store.list('cronjobs')].map((o) => [o.metadata.uid, o]));
  const collect = (plural: string, group: string, kinds: string[]) => {
    for (const o of store.list(plural)) {
      const refs = o.metadata.ownerReferences ?? [];
      if (!refs.length || !refs.every((r) => kinds.includes(r.kind)) || o.metadata.deletionTimestamp) continue;
      const live = refs.map((r) => owners.get(r.uid)).filter((x): x is Obj => Boolean(x));
      const goingFirst = live.length && live.every((x) => x.metadata.deletionTimestamp && (x.metadata.finalizers ?? []).includes(FOREGROUND));
      if (live.length && !goingFirst) continue;
      try {
        store.delete(plural, o.metadata.namespace, o.metadata.name, group);
      } catch (e) {
        if (!(e instanceof ApiError && e.code === 404)) throw e;
      }
    }
  };
  collect('jobs', 'batch', ['CronJob']);
  collect('pods', '', ['Job']);
  // A foreground deletion completes when nothing it owns is left.
  const pods = store.list('pods');
  const jobs = store.list('jobs');
  for (const o of [...jobs, ...store.list('cronjobs')]) {
    if (!o.metadata.deletionTimestamp || !(o.metadata.finalizers ?? []).includes(FOREGROUND)) continue;
    if ([...pods, ...jobs].some((d) => (d.metadata.ownerReferences ?? []).some((r) => r.uid === o.metadata.uid))) continue;
    store.update(o.kind === 'Job' ? 'jobs' : 'cronjobs', { ...o, metadata: { ...o.metadata, finalizers: (o.metadata.finalizers ?? []).filter((f) => f !== FOREGROUND) } }, 'batch');
  }
}

/** byJobStartTime: the oldest first, Jobs not started last, then by name. */
const byStartTime = (a: Obj, b: Obj) => {
  const x = status(a).startTime as string | undefined;
  const y = status(b).startTime as string | undefined;
  if (!x !== !y) return x ? -1 : 1;
  return x === y ? a.metadata.name.localeCompare(b.metadata.name) : Date.parse(x as string) - Date.parse(y as string);
};

/** getRef: the ObjectReference CronJob status lists a Job by. */
const refOf = (j: Obj) => ({ kind: 'Job', namespace: j.metadata.namespace, name: j.metadata.name, uid: j.metadata.uid, apiVersion: 'batch/v1', resourceVersion: j.metadata.resourceVersion });

/** getJobFromTemplate2: the Job of one scheduled run, named by the scheduled minute. */
function jobFor(cj: Obj, scheduled: number): Obj {
  const tpl = (spec(cj).jobTemplate ?? {}) as Any;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: `${cj.metadata.name}-${Math.floor(scheduled / 60_000)}`,
      namespace: cj.metadata.namespace,
      ...(tpl.metadata?.labels ? { labels: { ...tpl.metadata.labels } } : {}),
      annotations: { ...(tpl.metadata?.annotations ?? {}), [SCHEDULED_TIMESTAMP]: rfc3339(scheduled) },
      ownerReferences: [{ apiVersion: 'batch/v1', kind: 'CronJob', name: cj.metadata.name, uid: cj.metadata.uid, controller: true, blockOwnerDeletion: true }],
    } as unknown as Obj['metadata'],
    spec: structuredClone(tpl.spec ?? {}),
  };
}

/** cleanupFinishedJobs: only the newest successfulJobsHistoryLimit Complete and failedJobsHistoryLimit Failed Jobs are kept. */
function cleanup(store: Store, cj: Obj, jobs: Obj[]): void {
  const s = spec(cj);
  for (const [type, limit] of [['Complete', s.successfulJobsHistoryLimit], ['Failed', s.failedJobsHistoryLimit]] as const) {
    if (limit === undefined) continue;
    const finished = jobs.filter((j) => jobFinished(j)?.type === type && !j.metadata.deletionTimestamp).sort(byStartTime);
    for (const j of finished.slice(0, Math.max(0, finished.length - Number(limit)))) store.delete('jobs', j.metadata.namespace, j.metadata.name, 'batch');
  }
}

/** The CronJob controller's sync of one CronJob. */
function syncCronJob(store: Store, cj: Obj, now: number): void {
  const s = spec(cj);
  const old = status(cj);
  const jobs = store.list('jobs', cj.metadata.namespace).filter((j) => ownedBy(j, cj));
  let active = [...((old.active ?? []) as Any[])];
  let lastSuccessfulTime = old.lastSuccessfulTime as string | undefined;
  let lastScheduleTime = old.lastScheduleTime as string | undefined;
  for (const j of jobs) {
    // A finished Job leaves the active list and dates the last success; one not listed (`create job --from`) is not adopted.
    if (!jobFinished(j)) continue;
    active = active.filter((a) => a.uid !== j.metadata.uid);
    const done = status(j).completionTime as string | undefined;
    if (done && (!lastSuccessfulTime || Date.parse(done) > Date.parse(lastSuccessfulTime))) lastSuccessfulTime = done;
  }
  // An active Job that no longer exists is dropped (MissingJob).
  active = active.filter((a) => jobs.some((j) => j.metadata.uid === a.uid));

  const schedule = (() => {
    try {
      return parseSchedule(String(s.schedule ?? ''));
    } catch {
      return undefined; // UnparseableSchedule: the API refuses one on create; nothing is run
    }
  })();
  const utc = s.timeZone === undefined || s.timeZone === 'UTC' || s.timeZone === 'Etc/UTC';
  if (!s.suspend && schedule && utc) {
    // mostRecentScheduleTime: from the last run (or the CronJob's creation), no earlier than the starting deadline; one run for all missed.
    let earliest = Date.parse(lastScheduleTime ?? cj.metadata.creationTimestamp);
    if (s.startingDeadlineSeconds !== undefined) earliest = Math.max(earliest, now - Number(s.startingDeadlineSeconds) * 1000);
    const scheduled = mostRecent(schedule, earliest, now);
    const tooLate = scheduled !== undefined && s.startingDeadlineSeconds !== undefined && scheduled + Number(s.startingDeadlineSeconds) * 1000 < now;
    const name = scheduled !== undefined ? `${cj.metadata.name}-${Math.floor(scheduled / 60_000)}` : '';
    const seen = scheduled !== undefined && (active.some((a) => a.name === name) || (lastScheduleTime !== undefined && Date.parse(lastScheduleTime) === scheduled));
    const forbidden = s.concurrencyPolicy === 'Forbid' && active.length > 0;
    if (scheduled !== undefined && !tooLate && !seen && !forbidden) {
      if (s.concurrencyPolicy === 'Replace') {
        for (const a of active) if (store.find('jobs', a.namespace, a.name)) store.delete('jobs', a.namespace, a.name, 'batch');
        active = [];
      }
      try {
        const r = resource('jobs');
        const job = store.create('jobs', validate(store, r, withDefaults(r, jobFor(cj, scheduled), cj.metadata.namespace), cj.metadata.namespace), 'batch');
        active.push(refOf(job));
        lastScheduleTime = rfc3339(scheduled);
      } catch (e) {
        // AlreadyExists: another actor made it; a Terminating namespace refuses new Jobs.
        if (!(e instanceof ApiError)) throw e;
      }
    }
  }
  const next = {
    ...(active.length ? { active } : {}),
    ...(lastScheduleTime ? { lastScheduleTime } : {}),
    ...(lastSuccessfulTime ? { lastSuccessfulTime } : {}),
  };
  if (JSON.stringify(next) !== JSON.stringify(old)) store.update('cronjobs', { ...cj, status: next }, 'batch');
  cleanup(store, cj, jobs);
}

/** The CronJob controller: every CronJob's runs, status and history. */
export function cronJobController(store: Store, now = Date.now()): void {
  for (const cj of store.list('cronjobs')) if (!cj.metadata.deletionTimestamp) syncCronJob(store, cj, now);
}
