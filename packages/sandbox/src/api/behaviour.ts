/**
 * What the real control plane does beyond storing objects, as far as decom and kubectl
 * depend on it: defaults and validation on write, evictions judged against
 * PodDisruptionBudgets (the disruption controller's arithmetic), and the controllers,
 * one pass each per tick: namespace (a Terminating namespace empties, custom resources
 * included, then loses its
 * finalizer and goes), node IPAM, node lifecycle (a Node whose Lease is not renewed
 * goes Unknown and is tainted), scheduler, ReplicaSet, and attach/detach
 * (VolumeAttachments and the Node's status.volumesAttached follow the pods).
 * The kubelet's part is the node's own kubelet stand-in (kubelet-api.ts).
 */
import { createHash } from 'node:crypto';
import { cronJobCauses, cronJobDefaults, jobCauses, jobDefaults } from './batch-strategy.js';
import { crdCauses, crdDefaults } from './crds.js';
import { ApiError } from './errors.js';
import { labelMatcher } from './query.js';
import { apiVersionOf, findResource, servedResources, storeKey, type Resource } from './resources.js';
import { generatedName, rfc3339, type Obj, type Store } from './store.js';
import { claimDefaults, unboundClaims, volumeDefaults } from './volume-binder.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const stamp = () => rfc3339();

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The object as the server stores it: apiVersion and kind of the resource, the URL's namespace, the type's defaults. */
export function withDefaults(r: Resource, body: Obj | undefined, ns: string | undefined): Obj {
  if (!body || typeof body !== 'object') throw ApiError.badRequest('the request body is not an object');
  if (body.kind && body.kind !== r.kind) throw ApiError.badRequest(`the API version in the data (${body.apiVersion}) does not match the expected API version (${apiVersionOf(r)})`);
  const meta = { ...(body.metadata ?? {}) } as unknown as Obj['metadata'];
  delete (meta as Partial<Obj['metadata']>).uid; // the server's own (a Job's is given in jobDefaults, as its selector names it)
  if (r.namespaced) {
    if (meta.namespace && ns && meta.namespace !== ns) throw ApiError.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    meta.namespace = ns ?? meta.namespace ?? 'default';
  } else delete meta.namespace;
  let o: Obj = { ...body, apiVersion: apiVersionOf(r), kind: r.kind, metadata: meta };
  if (r.plural === 'pods') {
    const spec = (o.spec ?? {}) as Any;
    o.spec = { restartPolicy: 'Always', terminationGracePeriodSeconds: 30, dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler', ...spec };
    o.status = { phase: 'Pending', ...((o.status ?? {}) as Any) };
  }
  if (r.plural === 'namespaces') {
    o.spec = { finalizers: ['kubernetes'], ...((o.spec ?? {}) as Any) };
    o.status = { phase: 'Active' };
  }
  if (r.plural === 'nodes') o.spec = { ...((o.spec ?? {}) as Any) };
  if (r.plural === 'jobs') o = jobDefaults(o, () => generatedName(meta.generateName ?? ''));
  if (r.plural === 'cronjobs') o = cronJobDefaults(o);
  if (r.plural === 'persistentvolumeclaims') o = claimDefaults(o);
  if (r.plural === 'persistentvolumes') o = volumeDefaults(o);
  if (r.plural === 'customresourcedefinitions' && !r.crd) o = crdDefaults(o);
  return o;
}

/** 422 Invalid with the field paths a real server names; the namespace must exist. */
export function validate(store: Store, r: Resource, o: Obj, ns: string | undefined): Obj {
  const name = o.metadata?.name ?? '';
  const causes: { field: string; message: string }[] = [];
  if (!name && !o.metadata?.generateName) causes.push({ field: 'metadata.name', message: 'Required value: name or generateName is required' });
  else if (name && !(r.plural === 'pods' || r.plural === 'namespaces' ? DNS_LABEL.test(name) || (r.plural === 'pods' && DNS_SUBDOMAIN.test(name)) : DNS_SUBDOMAIN.test(name))) {
    causes.push({ field: 'metadata.name', message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')` });
  }
  if (r.plural === 'pods') {
    const containers = ((o.spec ?? {}) as Any).containers;
    if (!Array.isArray(containers) || !containers.length) causes.push({ field: 'spec.containers', message: 'Required value' });
    else containers.forEach((c: Any, i: number) => {
      if (!c?.name) causes.push({ field: `spec.containers[${i}].name`, message: 'Required value' });
      if (!c?.image) causes.push({ field: `spec.containers[${i}].image`, message: 'Required value' });
    });
  }
  if (r.plural === 'jobs') causes.push(...jobCauses(o));
  if (r.plural === 'cronjobs') causes.push(...cronJobCauses(o));
  if (r.plural === 'customresourcedefinitions' && !r.crd) causes.push(...crdCauses(o));
  if (causes.length) throw ApiError.invalid(r.kind, name, r.group, causes);
  const target = ns ?? o.metadata.namespace;
  if (r.namespaced && target && !store.find('namespaces', undefined, target)) throw ApiError.notFound('namespaces', target);
  if (r.namespaced && target && store.find('namespaces', undefined, target)?.metadata.deletionTimestamp && !store.find(storeKey(r), target, name)) {
    throw new ApiError(403, 'Forbidden', `${r.plural} "${name}" is forbidden: unable to create new content in namespace ${target} because it is being terminated`, {
      name, group: r.group, kind: r.plural, causes: [{ reason: 'NamespaceTerminating', message: `namespace ${target} is being terminated`, field: 'metadata.namespace' }],
    });
  }
  return o;
}

export const podReady = (p: Obj): boolean => ((p.status as Any | undefined)?.conditions ?? []).some((c: Any) => c.type === 'Ready' && c.status === 'True');

/** The disruption controller's arithmetic: expected, healthy and desired pods, and how many may go now. */
export function pdbStatus(store: Store, pdb: Obj): Any {
  const spec = (pdb.spec ?? {}) as Any;
  const sel = spec.selector?.matchLabels ? Object.entries(spec.selector.matchLabels as Record<string, string>).map(([k, v]) => `${k}=${v}`).join(',') : '';
  const matches = labelMatcher(sel);
  const pods = store.list('pods', pdb.metadata.namespace).filter((p) => sel && matches(p.metadata.labels));
  const expected = pods.length;
  const healthy = pods.filter((p) => !p.metadata.deletionTimestamp && podReady(p)).length;
  const amount = (v: unknown) => (typeof v === 'string' && v.endsWith('%') ? Math.ceil((expected * Number(v.slice(0, -1))) / 100) : Number(v));
  const desired = spec.minAvailable !== undefined ? amount(spec.minAvailable) : spec.maxUnavailable !== undefined ? Math.max(0, expected - amount(spec.maxUnavailable)) : expected;
  const allowed = Math.max(0, healthy - desired);
  return {
    observedGeneration: pdb.metadata.generation ?? 1,
    disruptionsAllowed: allowed,
    currentHealthy: healthy,
    desiredHealthy: desired,
    expectedPods: expected,
    conditions: [
      {
        type: 'DisruptionAllowed',
        status: allowed > 0 ? 'True' : 'False',
        reason: allowed > 0 ? 'SufficientPods' : 'InsufficientPods',
        message: '',
        observedGeneration: pdb.metadata.generation ?? 1,
        lastTransitionTime: pdb.metadata.creationTimestamp,
      },
    ],
  };
}

/**
 * POST pods/NAME/eviction, as kube-apiserver answers it: the NamespaceLifecycle
 * admission first (an Eviction is new content: refused in a Terminating namespace,
 * dry runs too); then a pod that is Pending, finished or already deleted simply goes; any
 * other under more than one budget is refused (500), under one is judged by
 * it (429 with the budget's cause), then deleted gracefully.
 */
export function evict(store: Store, ns: string, name: string, body: Any | undefined, dryRun: boolean): Any {
  if (body?.metadata?.name && body.metadata.name !== name) throw ApiError.badRequest(`name in URL does not match name in Eviction object`);
  if (store.find('namespaces', undefined, ns)?.metadata.deletionTimestamp) {
    throw new ApiError(403, 'Forbidden', `pods "${name}" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`, {
      name, kind: 'pods', causes: [{ reason: 'NamespaceTerminating', message: `namespace ${ns} is being terminated`, field: 'metadata.namespace' }],
    });
  }
  const pod = store.get('pods', ns, name, '');
  // As the eviction REST handler: only a Running pod not yet deleted is judged; an unready one (the
  // IfHealthyBudget policy) may go while the application is not disrupted, a ready one while a disruption is allowed.
  // canIgnorePDB: a Pending, Succeeded or Failed pod, or one already deleted, is not judged.
  if (!pod.metadata.deletionTimestamp && !['Pending', 'Succeeded', 'Failed'].includes((pod.status as Any | undefined)?.phase)) {
    const budgets = store.list('poddisruptionbudgets', ns).filter((pdb) => {
      const sel = (pdb.spec as Any | undefined)?.selector?.matchLabels as Record<string, string> | undefined;
      return sel && labelMatcher(Object.entries(sel).map(([k, v]) => `${k}=${v}`).join(','))(pod.metadata.labels);
    });
    if (budgets.length > 1) throw new ApiError(500, '', 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
    const pdb = budgets[0];
    if (pdb) {
      const st = pdbStatus(store, pdb);
      const blocked = podReady(pod) ? st.disruptionsAllowed < 1 : st.currentHealthy < st.desiredHealthy;
      if (blocked) {
        throw new ApiError(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.", {
          causes: [{ reason: 'DisruptionBudget', message: `The disruption budget ${pdb.metadata.name} needs ${st.desiredHealthy} healthy pods and has ${st.currentHealthy} currently` }],
        });
      }
    }
  }
  const grace = body?.deleteOptions?.gracePeriodSeconds;
  if (!dryRun) store.delete('pods', ns, name, '', grace !== undefined ? { gracePeriodSeconds: Number(grace) } : {});
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
}

/** The ConfigMap in kube-system that holds the sandbox's fault switches. */
export const FAULTS = 'decom-sandbox-faults';

/** The fault switch's settings (the FAULTS ConfigMap's data), {} when it is not there. */
export const faults = (store: Store): Record<string, string> => (store.find('configmaps', 'kube-system', FAULTS)?.data as Record<string, string> | undefined) ?? {};

/**
 * The sandbox's fault switches, set by tests through a ConfigMap (kube-system/decom-sandbox-faults):
 * `evictionTooManyRequestsEvery: N` refuses every Nth eviction request as API priority and
 * fairness refuses a request it has no seat for (429, a plain-text body, Retry-After, no Status),
 * counted from when the switch was last set, so a test knows which requests it hits;
 * `namespaceContentDeletionPaused: "true"` holds the namespace controller back from deleting a
 * Terminating namespace's content (see namespaceController);
 * `apiServiceUnavailable: "v1beta1.metrics.k8s.io,…"` (APIService names, comma-separated) makes
 * those of the groups the sandbox serves itself fail their discovery check, as an unreachable
 * metrics-server does (see apiservices.ts);
 * `volumeDetachHeld: "pv-a,…"` (PersistentVolume names, comma-separated) holds the sandbox
 * driver's detach of those volumes, their VolumeAttachments kept by the attacher's finalizer,
 * until the name is taken out (see attachDetachController).
 */
export function faultSwitch(store: Store): () => boolean {
  let seen = '';
  let n = 0;
  return () => {
    const cm = store.find('configmaps', 'kube-system', FAULTS);
    const every = Number((cm?.data as Record<string, string> | undefined)?.evictionTooManyRequestsEvery ?? 0);
    if (cm?.metadata.resourceVersion !== seen) (seen = cm?.metadata.resourceVersion ?? ''), (n = 0);
    return every > 0 && ++n % every === 0;
  };
}

/**
 * The namespace controller, one pass: a Terminating namespace's content is deleted;
 * its conditions say what holds it (content, finalizers, an unavailable APIService);
 * once it is empty the `kubernetes` finalizer goes, and then the namespace.
 */
export function namespaceController(store: Store): void {
  // Every namespaced resource stored (one per custom resource, whatever its served versions).
  const namespaced = [...new Map(servedResources(store).filter((r) => r.namespaced && !r.verbs).map((r) => [storeKey(r), r])).values()];
  // The fault switch (faultSwitch): a namespace controller that has not got to the content yet (a backlog, slow discovery).
  const paused = faults(store).namespaceContentDeletionPaused === 'true';
  for (const ns of store.list('namespaces')) {
    if (!ns.metadata.deletionTimestamp) continue;
    const name = ns.metadata.name;
    const unavailable = store.list('apiservices').filter((a) => ((a.status as Any | undefined)?.conditions ?? []).some((c: Any) => c.type === 'Available' && c.status === 'False'));
    /** What is left, per resource ("pods." or "deployments.apps", as GroupResource prints) and per finalizer. */
    const remaining = new Map<string, number>();
    const finalizers = new Map<string, number>();
    for (const r of namespaced) {
      for (const o of store.list(storeKey(r), name)) {
        const gr = `${r.plural}.${r.group}`;
        remaining.set(gr, (remaining.get(gr) ?? 0) + 1);
        for (const f of o.metadata.finalizers ?? []) finalizers.set(f, (finalizers.get(f) ?? 0) + 1);
        if (!o.metadata.deletionTimestamp && !paused) store.delete(storeKey(r), name, o.metadata.name, r.group);
      }
    }
    const left = remaining.size;
    const counted = (m: Map<string, number>, verb: string) => [...m].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k} ${verb} ${n} resource instances`).join(', ');
    const now = stamp();
    const cond = (type: string, on: boolean, reason: string, message: string) => ({ type, status: on ? 'True' : 'False', lastTransitionTime: now, reason, message });
    const discovery = unavailable.map((a) => `${(a.spec as Any | undefined)?.group}/${(a.spec as Any | undefined)?.version}: the server is currently unable to handle the request`);
    const conditions = [
      cond('NamespaceDeletionDiscoveryFailure', discovery.length > 0, discovery.length ? 'DiscoveryFailed' : 'ResourcesDiscovered', discovery.length ? `Discovery failed for some groups, ${discovery.length} failing: unable to retrieve the complete list of server APIs: ${discovery.join(', ')}` : 'All resources successfully discovered'),
      cond('NamespaceDeletionGroupVersionParsingFailure', false, 'ParsedGroupVersions', 'All legacy kube types successfully parsed'),
      cond('NamespaceDeletionContentFailure', false, 'ContentDeleted', 'All content successfully deleted, may be waiting on finalization'),
      cond('NamespaceContentRemaining', left > 0, left ? 'SomeResourcesRemain' : 'ContentRemoved', left ? `Some resources are remaining: ${counted(remaining, 'has')}` : 'All content successfully removed'),
      cond('NamespaceFinalizersRemaining', finalizers.size > 0, finalizers.size ? 'SomeFinalizersRemain' : 'ContentHasNoFinalizers', finalizers.size ? `Some content in the namespace has finalizers remaining: ${counted(finalizers, 'in')}` : 'All content-preserving finalizers finished'),
    ];
    const st = (ns.status ?? {}) as Any;
    const same = JSON.stringify((st.conditions ?? []).map((c: Any) => [c.type, c.status, c.message])) === JSON.stringify(conditions.map((c) => [c.type, c.status, c.message]));
    const done = left === 0 && discovery.length === 0;
    const specFinalizers = (((ns.spec ?? {}) as Any).finalizers ?? []) as string[];
    if (same && !(done && specFinalizers.includes('kubernetes'))) continue;
    const next: Obj = { ...ns, status: { phase: 'Terminating', conditions: same ? st.conditions : conditions } };
    if (done) next.spec = { ...((ns.spec ?? {}) as Any), finalizers: specFinalizers.filter((f) => f !== 'kubernetes') };
    // Finalized (spec.finalizers empty): the update itself deletes it, unless its own metadata.finalizers still hold it.
    store.update('namespaces', next, '');
  }
}

/** What a new cluster holds before any kubelet registers: its four namespaces. Objects already there are kept. */
export function seed(store: Store): void {
  for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
    if (!store.find('namespaces', undefined, ns)) {
      store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { 'kubernetes.io/metadata.name': ns } } as unknown as Obj['metadata'], spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } }, '');
    }
  }
}

const conditionOf = (o: Obj | undefined, type: string) => (((o?.status as Any | undefined)?.conditions ?? []) as Any[]).find((c) => c.type === type);
const nodeReady = (n: Obj | undefined) => conditionOf(n, 'Ready')?.status === 'True';

/** Node IPAM: each Node gets the next free /24 of 10.244.0.0/16, as kube-controller-manager's range allocator. */
export function nodeIpamController(store: Store): void {
  const nodes = store.list('nodes');
  const used = new Set(nodes.map((n) => (n.spec as Any | undefined)?.podCIDR).filter(Boolean));
  for (const n of nodes) {
    if ((n.spec as Any | undefined)?.podCIDR) continue;
    let i = 0;
    while (used.has(`10.244.${i}.0/24`)) i++;
    const cidr = `10.244.${i}.0/24`;
    used.add(cidr);
    store.update('nodes', { ...n, spec: { ...(n.spec ?? {}), podCIDR: cidr, podCIDRs: [cidr] } }, '');
  }
}

const UNREACHABLE = 'node.kubernetes.io/unreachable';

/**
 * Node lifecycle: a Node whose Lease (or, before its first one, whose registration) is
 * older than the grace period has its conditions set Unknown ("Kubelet stopped posting
 * node status."), the unreachable taints, and its pods marked not Ready; once its kubelet
 * posts Ready again, the taints go.
 */
export function nodeLifecycleController(store: Store, graceSeconds: number): void {
  for (const n of store.list('nodes')) {
    const lease = store.find('leases', 'kube-node-lease', n.metadata.name);
    const renewed = Date.parse(String((lease?.spec as Any | undefined)?.renewTime ?? n.metadata.creationTimestamp));
    const taints = (((n.spec as Any | undefined)?.taints ?? []) as Any[]);
    const tainted = taints.some((t) => t.key === UNREACHABLE);
    const ready = conditionOf(n, 'Ready');
    if (Date.now() - renewed > graceSeconds * 1000) {
      if (ready?.status === 'Unknown') continue;
      const t = stamp();
      const conditions = ready
        ? (((n.status as Any | undefined)?.conditions ?? []) as Any[]).map((c) => ({ ...c, status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.', lastTransitionTime: t }))
        : [{ type: 'Ready', status: 'Unknown', reason: 'NodeStatusNeverUpdated', message: 'Kubelet never posted node status.', lastHeartbeatTime: n.metadata.creationTimestamp, lastTransitionTime: t }];
      store.update('nodes', {
        ...n,
        spec: { ...(n.spec ?? {}), taints: [...taints.filter((x) => x.key !== UNREACHABLE), { key: UNREACHABLE, effect: 'NoSchedule', timeAdded: t }, { key: UNREACHABLE, effect: 'NoExecute', timeAdded: t }] },
        status: { ...(n.status ?? {}), conditions },
      }, '');
      for (const p of store.list('pods').filter((x) => (x.spec as Any | undefined)?.nodeName === n.metadata.name)) {
        const conds = (((p.status as Any | undefined)?.conditions ?? []) as Any[]).map((c) => (c.type === 'Ready' || c.type === 'ContainersReady' ? { ...c, status: 'False', lastTransitionTime: t } : c));
        store.update('pods', { ...p, status: { ...(p.status ?? {}), conditions: conds } }, '');
      }
    } else if (tainted && ready?.status === 'True') {
      store.update('nodes', { ...n, spec: { ...(n.spec ?? {}), taints: taints.filter((x) => x.key !== UNREACHABLE) } }, '');
    }
  }
}

const tolerates = (pod: Obj, taint: Any) =>
  (((pod.spec as Any | undefined)?.tolerations ?? []) as Any[]).some(
    (t) => (t.operator === 'Exists' && (!t.key || t.key === taint.key)) || (t.key === taint.key && (t.value ?? '') === (taint.value ?? '')),
  );

/** Where the scheduler may put a pod: Ready, schedulable, no NoSchedule/NoExecute taint it does not tolerate. */
const schedulable = (n: Obj, pod: Obj) =>
  nodeReady(n) &&
  Object.entries(((pod.spec as Any | undefined)?.nodeSelector ?? {}) as Record<string, string>).every(([k, v]) => n.metadata.labels?.[k] === v) &&
  !(n.spec as Any | undefined)?.unschedulable &&
  (((n.spec as Any | undefined)?.taints ?? []) as Any[]).every((t) => t.effect === 'PreferNoSchedule' || tolerates(pod, t));

/** Where a DaemonSet runs: every node whose taints its pods tolerate (unschedulable or not, as the real one). */
const daemonFits = (n: Obj, pod: Obj) => (((n.spec as Any | undefined)?.taints ?? []) as Any[]).every((t) => t.effect === 'PreferNoSchedule' || tolerates(pod, t));

/** The scheduler: each unbound pod to the feasible node running the fewest pods. */
export function scheduler(store: Store): void {
  const pods = store.list('pods');
  const pending = pods.filter((p) => !(p.spec as Any | undefined)?.nodeName && !p.metadata.deletionTimestamp);
  if (!pending.length) return;
  const load = new Map<string, number>();
  for (const p of pods) {
    const node = (p.spec as Any | undefined)?.nodeName as string | undefined;
    if (node) load.set(node, (load.get(node) ?? 0) + 1);
  }
  const nodes = store.list('nodes');
  for (const p of pending) {
    // VolumeBinding's PreFilter: a claim not yet bound leaves the pod unschedulable, said as kube-scheduler says it.
    const unbound = unboundClaims(store, p);
    if (unbound) {
      const n = nodes.length;
      const message = `0/${n} nodes are available: ${unbound}. preemption: 0/${n} nodes are available: ${n} Preemption is not helpful for scheduling.`;
      const was = (((p.status as Any | undefined)?.conditions ?? []) as Any[]).find((c) => c.type === 'PodScheduled');
      if (was?.message !== message) {
        const cond = { type: 'PodScheduled', status: 'False', lastProbeTime: null, lastTransitionTime: was?.status === 'False' ? was.lastTransitionTime : stamp(), reason: 'Unschedulable', message };
        store.update('pods', { ...p, status: { ...(p.status ?? {}), conditions: [...(((p.status as Any | undefined)?.conditions ?? []) as Any[]).filter((c) => c.type !== 'PodScheduled'), cond] } }, '');
      }
      continue;
    }
    const fit = nodes.filter((n) => schedulable(n, p)).sort((a, b) => (load.get(a.metadata.name) ?? 0) - (load.get(b.metadata.name) ?? 0))[0];
    if (!fit) continue; // stays Pending, as with no feasible node
    load.set(fit.metadata.name, (load.get(fit.metadata.name) ?? 0) + 1);
    store.update('pods', { ...p, spec: { ...(p.spec ?? {}), nodeName: fit.metadata.name }, status: { ...(p.status ?? {}), conditions: [{ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: stamp() }] } }, '');
  }
}

/** Whether `owner` is the object's controller (its ownerReference with controller: true). */
export const ownedBy = (p: Obj, owner: Obj): boolean => (p.metadata.ownerReferences ?? []).some((r) => r.uid === owner.metadata.uid && r.controller);

/** The ReplicaSet controller: as many live pods as replicas (an evicted one is replaced, unbound, for the scheduler), and the status counts. */
export function replicaSetController(store: Store): void {
  const pods = store.list('pods');
  for (const rs of store.list('replicasets')) {
    if (rs.metadata.deletionTimestamp) continue;
    const spec = (rs.spec ?? {}) as Any;
    const want = Number(spec.replicas ?? 1);
    const mine = pods.filter((p) => ownedBy(p, rs) && !p.metadata.deletionTimestamp);
    for (let i = mine.length; i < want; i++) mine.push(store.create('pods', podFor(rs, 'ReplicaSet', {}), ''));
    for (const extra of mine.slice(want)) store.delete('pods', extra.metadata.namespace, extra.metadata.name, '');
    const ready = mine.filter(podReady).length;
    const status = { replicas: Math.min(mine.length, want), fullyLabeledReplicas: Math.min(mine.length, want), readyReplicas: ready, availableReplicas: ready, observedGeneration: rs.metadata.generation ?? 1 };
    if (JSON.stringify(rs.status) !== JSON.stringify(status)) store.update('replicasets', { ...rs, status }, 'apps');
  }
}

/**
 * The Deployment controller, as far as the scenarios need it: its replicas go to the
 * ReplicaSet it owns (one; no rollouts), and its status follows that ReplicaSet's.
 */
export function deploymentController(store: Store): void {
  const sets = store.list('replicasets');
  for (const d of store.list('deployments')) {
    const rs = sets.find((x) => ownedBy(x, d) && !x.metadata.deletionTimestamp);
    if (!rs) continue;
    const want = Number(((d.spec ?? {}) as Any).replicas ?? 1);
    if (Number(((rs.spec ?? {}) as Any).replicas ?? 1) !== want) store.update('replicasets', { ...rs, spec: { ...(rs.spec ?? {}), replicas: want } }, 'apps');
    const r = (rs.status ?? {}) as Any;
    const status = { replicas: r.replicas ?? 0, updatedReplicas: r.replicas ?? 0, readyReplicas: r.readyReplicas ?? 0, availableReplicas: r.availableReplicas ?? 0, observedGeneration: d.metadata.generation ?? 1 };
    if (JSON.stringify(d.status) !== JSON.stringify(status)) store.update('deployments', { ...d, status }, 'apps');
  }
}

/** A pod of a controller's template (GetPodFromTemplate): its labels, annotations, finalizers, spec and ownerReference. */
export function podFor(owner: Obj, kind: string, spec: Any): Obj {
  const tpl = (((owner.spec ?? {}) as Any).template ?? {}) as Any;
  return withDefaults(findResource('', 'v1', 'pods') as Resource, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${owner.metadata.name}-`,
      namespace: owner.metadata.namespace,
      labels: tpl.metadata?.labels ?? {},
      ...(tpl.metadata?.annotations ? { annotations: tpl.metadata.annotations } : {}),
      ...(tpl.metadata?.finalizers ? { finalizers: tpl.metadata.finalizers } : {}),
      ownerReferences: [{ apiVersion: owner.apiVersion, kind, name: owner.metadata.name, uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true }],
    } as unknown as Obj['metadata'],
    spec: { ...(tpl.spec ?? {}), ...spec },
  }, owner.metadata.namespace);
}

/** The DaemonSet controller: one pod on every node it fits, bound there; the status counts. */
export function daemonSetController(store: Store): void {
  const pods = store.list('pods');
  const nodes = store.list('nodes');
  for (const ds of store.list('daemonsets')) {
    if (ds.metadata.deletionTimestamp) continue;
    const mine = pods.filter((p) => ownedBy(p, ds) && !p.metadata.deletionTimestamp);
    const probe = podFor(ds, 'DaemonSet', {});
    const targets = nodes.filter((n) => daemonFits(n, probe));
    for (const n of targets) {
      if (!mine.some((p) => (p.spec as Any).nodeName === n.metadata.name)) mine.push(store.create('pods', podFor(ds, 'DaemonSet', { nodeName: n.metadata.name }), ''));
    }
    const ready = mine.filter(podReady).length;
    const status = { currentNumberScheduled: mine.length, numberMisscheduled: 0, desiredNumberScheduled: targets.length, numberReady: ready, numberAvailable: ready, updatedNumberScheduled: mine.length, observedGeneration: ds.metadata.generation ?? 1 };
    if (JSON.stringify(ds.status) !== JSON.stringify(status)) store.update('daemonsets', { ...ds, status }, 'apps');
  }
}

const OUT_OF_SERVICE = 'node.kubernetes.io/out-of-service';

/**
 * Pod GC: a pod bound to a Node that no longer exists is deleted at once (its kubelet,
 * if any, sees the delete). On a Node tainted out-of-service (the node is confirmed
 * off), as the taint eviction controller and PodGC do since 1.28: pods that do not
 * tolerate the taint are deleted, and once the Node is not Ready, those Terminating
 * on it are force-deleted, so their volumes can detach.
 */
export function podGarbageCollector(store: Store): void {
  const nodes = new Map(store.list('nodes').map((n) => [n.metadata.name, n]));
  for (const p of store.list('pods')) {
    const name = (p.spec as Any | undefined)?.nodeName as string | undefined;
    if (!name) continue;
    const node = nodes.get(name);
    if (!node) {
      store.delete('pods', p.metadata.namespace, p.metadata.name, '', { gracePeriodSeconds: 0 });
      continue;
    }
    const taint = (((node.spec as Any | undefined)?.taints ?? []) as Any[]).find((t) => t.key === OUT_OF_SERVICE && t.effect === 'NoExecute');
    if (!taint || tolerates(p, taint)) continue;
    if (!p.metadata.deletionTimestamp) store.delete('pods', p.metadata.namespace, p.metadata.name, '');
    else if (!nodeReady(node)) store.delete('pods', p.metadata.namespace, p.metadata.name, '', { gracePeriodSeconds: 0 });
  }
}

/** How long the sandbox's CSI driver takes to detach a volume (ControllerUnpublishVolume). */
export const DETACH_SECONDS = 3;
/** The CSI driver the sandbox runs (its attacher is the attach/detach controller here). */
export const SANDBOX_DRIVER = 'csi.sandbox.decom.io';
/**
 * A second CSI driver whose controller is down: its volumes attach (no CSIDriver object says
 * otherwise, so attaching is required, as csi_plugin.go's skipAttach decides), but nothing
 * runs its external-attacher, so a detach never ends: the finalizer stays.
 */
export const STRANDED_DRIVER = 'stranded.csi.sandbox.decom.io';

/** The unique volume name the attach/detach controller and the kubelet give a CSI volume (csi_plugin.go GetVolumeName under the plugin's name). */
export const csiVolumeName = (driver: string, handle: string): string => `kubernetes.io/csi/${driver}^${handle}`;

/**
 * The attach/detach controller with a CSI attacher that always succeeds: every pod on a
 * node whose PVC is bound to a CSI PersistentVolume has a VolumeAttachment there and
 * the volume in the Node's status.volumesAttached. When the last such pod is gone from
 * the node the VolumeAttachment is deleted, and, as the external-attacher does, held
 * by its finalizer until the detach is done (DETACH_SECONDS, or longer while the fault
 * switch's volumeDetachHeld names its volume); the Node's status.volumesAttached lists
 * the volume until then. Any other driver's detach (STRANDED_DRIVER's) never ends.
 * DaemonSet pods' volumes attach as any pod's.
 */
export function attachDetachController(store: Store): void {
  const desired = new Map<string, { node: string; pv: string; driver: string; handle: string }>();
  for (const p of store.list('pods')) {
    const node = (p.spec as Any | undefined)?.nodeName as string | undefined;
    if (!node) continue;
    for (const v of ((p.spec as Any).volumes ?? []) as Any[]) {
      const claim = v.persistentVolumeClaim?.claimName && store.find('persistentvolumeclaims', p.metadata.namespace, v.persistentVolumeClaim.claimName);
      const pvName = (claim?.spec as Any | undefined)?.volumeName;
      const csi = pvName && ((store.find('persistentvolumes', undefined, pvName)?.spec as Any | undefined)?.csi as Any | undefined);
      if (!csi?.driver) continue;
      const name = `csi-${createHash('sha256').update(`${csi.volumeHandle}${csi.driver}${node}`).digest('hex')}`;
      desired.set(name, { node, pv: pvName, driver: csi.driver, handle: csi.volumeHandle });
    }
  }
  const attached = new Map<string, Set<string>>();
  const held = new Set((faults(store).volumeDetachHeld ?? '').split(',').map((x) => x.trim()).filter(Boolean));
  for (const va of store.list('volumeattachments')) {
    if (desired.has(va.metadata.name)) continue;
    const since = va.metadata.deletionTimestamp;
    if (!since) store.delete('volumeattachments', undefined, va.metadata.name, 'storage.k8s.io');
    // Only a driver this cluster runs detaches: another's attacher is not here, so its finalizer stays (a stale attachment).
    else if (va.spec && (va.spec as Any).attacher === SANDBOX_DRIVER && !held.has((va.spec as Any).source?.persistentVolumeName) && Date.now() - Date.parse(since) >= DETACH_SECONDS * 1000) {
      store.update('volumeattachments', { ...va, metadata: { ...va.metadata, finalizers: (va.metadata.finalizers ?? []).filter((f) => !f.startsWith('external-attacher/')) } }, 'storage.k8s.io');
    }
  }
  for (const [name, d] of desired) {
    if (!store.find('volumeattachments', undefined, name)) {
      store.create('volumeattachments', {
        apiVersion: 'storage.k8s.io/v1', kind: 'VolumeAttachment',
        metadata: { name, finalizers: [`external-attacher/${d.driver.replace(/\./g, '-')}`] } as unknown as Obj['metadata'],
        spec: { attacher: d.driver, nodeName: d.node, source: { persistentVolumeName: d.pv } }, status: { attached: true },
      }, 'storage.k8s.io');
    }
  }
  // A volume is attached to a node while its VolumeAttachment exists (detaching included).
  for (const va of store.list('volumeattachments')) {
    const spec = va.spec as Any;
    const pv = store.find('persistentvolumes', undefined, spec?.source?.persistentVolumeName)?.spec as Any | undefined;
    if (!spec?.nodeName || !pv?.csi) continue;
    const set = attached.get(spec.nodeName) ?? new Set<string>();
    set.add(csiVolumeName(pv.csi.driver, pv.csi.volumeHandle));
    attached.set(spec.nodeName, set);
  }
  for (const n of store.list('nodes')) {
    const want = [...(attached.get(n.metadata.name) ?? [])].sort().map((name) => ({ name, devicePath: '' }));
    const have = ((n.status as Any | undefined)?.volumesAttached ?? []) as Any[];
    if (JSON.stringify(have) === JSON.stringify(want)) continue;
    const status = { ...(n.status ?? {}) } as Any;
    if (want.length) status.volumesAttached = want;
    else delete status.volumesAttached;
    store.update('nodes', { ...n, status }, '');
  }
}
