/**
 * CustomResourceDefinitions as apiextensions-apiserver handles them: defaults and the
 * name's validation on create, the status its naming and establishing controllers set
 * (acceptedNames, NamesAccepted, Established, storedVersions), the resources an
 * established CRD serves (each served version; objects stored once, under PLURAL.GROUP),
 * and deletion: the CRD REST's Delete adds the cleanup finalizer and the Terminating
 * condition; the finalizer controller deletes every custom resource, then the finalizer.
 */
import { type Condition, conditionTrue, setCondition } from './conditions.js';
import { ApiError } from './errors.js';
import type { Resource } from './resources.js';
import type { Obj, Store } from './store.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const CRD_GROUP = 'apiextensions.k8s.io';
export const CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';
/** The finalizer controller's wait for the instances to go (wait.PollImmediate's one minute), after which it says it could not confirm. */
const CHECK_SECONDS = 60;

interface Names {
  kind: string;
  plural: string;
  singular?: string;
  listKind?: string;
  shortNames?: string[];
  categories?: string[];
}

const spec = (crd: Obj) => (crd.spec ?? {}) as Any;
const conditionsOf = (crd: Obj) => (((crd.status ?? {}) as Any).conditions ?? []) as Condition[];
const storageVersion = (crd: Obj): string | undefined => ((spec(crd).versions ?? []) as Any[]).find((v) => v.storage)?.name ?? spec(crd).versions?.[0]?.name;
const namesOf = (crd: Obj): Names => (((crd.status ?? {}) as Any).acceptedNames?.plural ? (crd.status as Any).acceptedNames : spec(crd).names ?? {}) as Names;

/** The store's key for a CRD's objects: PLURAL.GROUP, which no built-in plural can be. */
export const customResourceKey = (crd: Obj): string => `${namesOf(crd).plural}.${spec(crd).group}`;

/** SetDefaults_CustomResourceDefinitionSpec: singular and listKind from the kind, conversion None. */
const defaultedNames = (names: Any): Names =>
  ({
    ...names,
    ...(names.singular ? {} : { singular: String(names.kind ?? '').toLowerCase() }),
    ...(names.listKind || !names.kind ? {} : { listKind: `${names.kind}List` }),
  }) as Names;

/** The status the naming and establishing controllers come to for a CRD not being deleted (no name conflicts in the sandbox). */
function settledStatus(crd: Obj): Any {
  const st = (crd.status ?? {}) as Any;
  let conditions = setCondition(conditionsOf(crd), { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found' });
  conditions = setCondition(conditions, { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' });
  const stored = (st.storedVersions ?? []) as string[];
  const storage = storageVersion(crd);
  return { ...st, conditions, acceptedNames: defaultedNames(spec(crd).names ?? {}), storedVersions: storage && !stored.includes(storage) ? [...stored, storage] : stored };
}

/** A new CRD as the server stores it: the spec's defaults, then the status its controllers set at once. */
export function crdDefaults(o: Obj): Obj {
  const s = spec(o);
  const next: Obj = { ...o, spec: { ...s, names: defaultedNames(s.names ?? {}), conversion: s.conversion ?? { strategy: 'None' } }, status: { storedVersions: [] } };
  return { ...next, status: settledStatus(next) };
}

/** ValidateCustomResourceDefinition, the part the sandbox keeps: the name is PLURAL.GROUP. */
export function crdCauses(o: Obj): { field: string; message: string }[] {
  const s = spec(o);
  const want = `${s.names?.plural ?? ''}.${s.group ?? ''}`;
  return o.metadata.name && o.metadata.name !== want ? [{ field: 'metadata.name', message: `Invalid value: "${o.metadata.name}": must be spec.names.plural+"."+spec.group` }] : [];
}

/** What the CRD REST's Delete does first: the cleanup finalizer and the Terminating condition, pending until the finalizer controller begins. */
export function crdMarkedForDeletion(crd: Obj): Obj {
  const finalizers = crd.metadata.finalizers ?? [];
  const conditions = setCondition(conditionsOf(crd), { type: 'Terminating', status: 'True', reason: 'InstanceDeletionPending', message: 'CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon' });
  return {
    ...crd,
    metadata: { ...crd.metadata, finalizers: finalizers.includes(CLEANUP_FINALIZER) ? finalizers : [...finalizers, CLEANUP_FINALIZER] },
    status: { ...((crd.status ?? {}) as Any), conditions },
  };
}

/** The resources an established CRD serves: one per served version, its objects under one key. */
export function crdResources(crd: Obj): Resource[] {
  const s = spec(crd);
  if (!conditionTrue(conditionsOf(crd), 'Established') || !s.group) return [];
  const n = namesOf(crd);
  const terminating = Boolean(crd.metadata.deletionTimestamp) || conditionTrue(conditionsOf(crd), 'Terminating');
  return ((s.versions ?? []) as Any[])
    .filter((v) => v.served)
    .map((v) => ({
      group: s.group,
      version: v.name,
      kind: n.kind,
      plural: n.plural,
      singular: n.singular ?? n.kind.toLowerCase(),
      namespaced: s.scope === 'Namespaced',
      ...(n.shortNames?.length ? { shortNames: n.shortNames } : {}),
      ...(n.categories?.length ? { categories: n.categories } : {}),
      ...(v.subresources?.status ? { subresources: [{ name: 'status', kind: n.kind, verbs: ['get', 'patch', 'update'] }] } : {}),
      store: customResourceKey(crd),
      crd: { name: crd.metadata.name, terminating, printerColumns: v.additionalPrinterColumns ?? [] },
    }));
}

/** The crdHandler's answer to a create while the CRD is terminating (NewMethodNotSupported, its message replaced). */
export const terminatingCreate = (r: Resource): ApiError =>
  new ApiError(405, 'MethodNotAllowed', 'create not allowed while custom resource definition is terminating', { group: r.group, kind: r.plural });

/**
 * The naming, establishing and finalizer controllers, one pass: a CRD's status follows
 * its names; one being deleted has its custom resources deleted, says so in its
 * Terminating condition while any remain, and loses its finalizer once none do.
 */
export function crdController(store: Store): void {
  for (const crd of store.list('customresourcedefinitions')) {
    if (!crd.metadata.deletionTimestamp) {
      const status = settledStatus(crd);
      if (JSON.stringify(status) !== JSON.stringify(crd.status)) store.update('customresourcedefinitions', { ...crd, status }, CRD_GROUP);
      continue;
    }
    if (!(crd.metadata.finalizers ?? []).includes(CLEANUP_FINALIZER)) continue;
    const key = customResourceKey(crd);
    const group = spec(crd).group as string;
    for (const o of store.list(key)) if (!o.metadata.deletionTimestamp) store.delete(key, o.metadata.namespace, o.metadata.name, group);
    const left = store.list(key).length;
    const overdue = Date.now() - Date.parse(crd.metadata.deletionTimestamp) > CHECK_SECONDS * 1000;
    const cond: Condition = left
      ? overdue
        ? { type: 'Terminating', status: 'True', reason: 'InstanceDeletionCheck', message: 'could not confirm zero CustomResources remaining: timed out waiting for the condition' }
        : { type: 'Terminating', status: 'True', reason: 'InstanceDeletionInProgress', message: 'CustomResource deletion is in progress' }
      : { type: 'Terminating', status: 'False', reason: 'InstanceDeletionCompleted', message: 'removed all instances' };
    const conditions = setCondition(conditionsOf(crd), cond);
    const finalizers = left ? crd.metadata.finalizers : (crd.metadata.finalizers ?? []).filter((f) => f !== CLEANUP_FINALIZER);
    const next = { ...crd, metadata: { ...crd.metadata, finalizers }, status: { ...((crd.status ?? {}) as Any), conditions } };
    if (JSON.stringify(next) !== JSON.stringify(crd)) store.update('customresourcedefinitions', next, CRD_GROUP);
  }
}
