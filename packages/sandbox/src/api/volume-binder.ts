/**
 * The PersistentVolume controller's binder for statically made volumes, as
 * kube-controller-manager v1.32 (pkg/controller/volume/persistentvolume: pv_controller.go
 * syncVolume/syncUnboundClaim/bind, index.go findBestMatchForClaim, util.FindMatchingVolume):
 * an unbound volume becomes Available; a claim without spec.volumeName gets the Available
 * volume of its class whose access modes include all it asks for, of its volume mode and
 * its selector, big enough: the one with the fewest access modes, then the smallest (a
 * volume pre-bound by claimRef only to its claim); a claim naming a volume is bound to it.
 * There is no StorageClass and no provisioner: a claim nothing fits stays Pending, and so
 * do its pods (the scheduler's VolumeBinding plugin, unboundClaims below).
 */
import { labelSelectorMatcher } from './query.js';
import { rfc3339, type Obj, type Store } from './store.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
const BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';

/** A claim as created: Filesystem mode, Pending (SetDefaults_PersistentVolumeClaim); a status posted whole is kept. */
export function claimDefaults(o: Obj): Obj {
  return { ...o, spec: { volumeMode: 'Filesystem', ...(o.spec ?? {}) }, status: (o.status as Any)?.phase ? o.status : { phase: 'Pending' } };
}

/** A volume as created: Retain, Filesystem, Pending since now (SetDefaults_PersistentVolume, the strategy's lastPhaseTransitionTime). */
export function volumeDefaults(o: Obj): Obj {
  return {
    ...o,
    spec: { persistentVolumeReclaimPolicy: 'Retain', volumeMode: 'Filesystem', ...(o.spec ?? {}) },
    status: (o.status as Any)?.phase ? o.status : { phase: 'Pending', lastPhaseTransitionTime: rfc3339() },
  };
}

const SUFFIXES: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60, n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/** A resource.Quantity's value ("1Gi", "500M", "1e9", "100m"); NaN when it is not one. */
export function quantity(q: unknown): number {
  const m = /^([+-]?\d*\.?\d+)(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/.exec(String(q ?? '').trim());
  if (!m) return NaN;
  return Number(`${m[1]}${m[2] ?? ''}`) * (SUFFIXES[m[3] ?? ''] ?? 1);
}

const classOf = (o: Obj) => (o.metadata.annotations?.['volume.beta.kubernetes.io/storage-class'] ?? ((o.spec as Any)?.storageClassName as string | undefined)) ?? '';
const modeOf = (o: Obj) => ((o.spec as Any)?.volumeMode as string | undefined) ?? 'Filesystem';
const phaseOf = (o: Obj) => ((o.status as Any)?.phase as string | undefined) ?? '';

/** IsVolumeBoundToClaim: the volume's claimRef names this claim (a uid, if any, its own). */
function boundTo(pv: Obj, pvc: Obj): boolean {
  const ref = (pv.spec as Any)?.claimRef;
  return Boolean(ref) && ref.name === pvc.metadata.name && ref.namespace === pvc.metadata.namespace && (!ref.uid || ref.uid === pvc.metadata.uid);
}

/** findBestMatchForClaim: the pre-bound volume, else the Available one with the fewest access modes, then the smallest. */
function bestVolume(pvs: Obj[], pvc: Obj): Obj | undefined {
  const spec = (pvc.spec ?? {}) as Any;
  const wanted = (spec.accessModes ?? []) as string[];
  const request = quantity(spec.resources?.requests?.storage ?? 0);
  const selector = spec.selector ? labelSelectorMatcher(spec.selector) : () => true;
  const fits = pvs.filter((pv) => {
    const modes = ((pv.spec as Any)?.accessModes ?? []) as string[];
    return !pv.metadata.deletionTimestamp && modeOf(pv) === modeOf(pvc) && wanted.every((m) => modes.includes(m));
  });
  const prebound = fits.find((pv) => boundTo(pv, pvc));
  if (prebound) return prebound;
  return fits
    .filter((pv) => phaseOf(pv) === 'Available' && !(pv.spec as Any)?.claimRef && selector(pv.metadata.labels) && classOf(pv) === classOf(pvc))
    .filter((pv) => quantity((pv.spec as Any)?.capacity?.storage) >= request)
    .sort((a, b) => ((a.spec as Any).accessModes ?? []).length - ((b.spec as Any).accessModes ?? []).length || quantity((a.spec as Any).capacity?.storage) - quantity((b.spec as Any).capacity?.storage))[0];
}

/** pv_controller.bind: the volume's claimRef and phase, then the claim's volumeName, annotations and status. */
function bind(store: Store, pv: Obj, pvc: Obj): void {
  const now = rfc3339();
  const pvAnnotations = { ...(pv.metadata.annotations ?? {}), ...(boundTo(pv, pvc) ? {} : { [BOUND_BY_CONTROLLER]: 'yes' }) };
  const claimRef = { kind: 'PersistentVolumeClaim', namespace: pvc.metadata.namespace, name: pvc.metadata.name, uid: pvc.metadata.uid, apiVersion: 'v1', resourceVersion: pvc.metadata.resourceVersion };
  const status = phaseOf(pv) === 'Bound' ? pv.status : { ...(pv.status ?? {}), phase: 'Bound', lastPhaseTransitionTime: now };
  const meta = { ...pv.metadata, ...(Object.keys(pvAnnotations).length ? { annotations: pvAnnotations } : {}) };
  const bound = store.update('persistentvolumes', { ...pv, metadata: meta, spec: { ...(pv.spec ?? {}), claimRef }, status }, '');
  const chosen = !(pvc.spec as Any)?.volumeName;
  const annotations = { ...(pvc.metadata.annotations ?? {}), ...(chosen ? { [BOUND_BY_CONTROLLER]: 'yes' } : {}), [BIND_COMPLETED]: 'yes' };
  const pvSpec = bound.spec as Any;
  store.update('persistentvolumeclaims', {
    ...pvc,
    metadata: { ...pvc.metadata, annotations },
    spec: { ...(pvc.spec ?? {}), volumeName: pv.metadata.name },
    status: { ...(pvc.status ?? {}), phase: 'Bound', accessModes: pvSpec.accessModes ?? [], capacity: pvSpec.capacity ?? {} },
  }, '');
}

/** One pass of the binder over every volume and claim. */
export function volumeBinder(store: Store): void {
  // syncVolume: a volume no claim holds yet (none, or only pre-bound by name) is Available.
  for (const pv of store.list('persistentvolumes')) {
    const ref = (pv.spec as Any)?.claimRef;
    if (pv.metadata.deletionTimestamp || (phaseOf(pv) !== '' && phaseOf(pv) !== 'Pending') || ref?.uid) continue;
    store.update('persistentvolumes', { ...pv, status: { ...(pv.status ?? {}), phase: 'Available', lastPhaseTransitionTime: rfc3339() } }, '');
  }
  for (const pvc of store.list('persistentvolumeclaims')) {
    if (pvc.metadata.deletionTimestamp || phaseOf(pvc) === 'Bound' || phaseOf(pvc) === 'Lost') continue;
    const pvs = store.list('persistentvolumes');
    const named = (pvc.spec as Any)?.volumeName as string | undefined;
    // syncBoundClaim for a claim that names its volume: bound to it when it is free (or already its).
    const pv = named ? pvs.find((v) => v.metadata.name === named && (!(v.spec as Any)?.claimRef || boundTo(v, pvc))) : bestVolume(pvs, pvc);
    if (pv) bind(store, pv, pvc);
    else if (!phaseOf(pvc)) store.update('persistentvolumeclaims', { ...pvc, status: { ...(pvc.status ?? {}), phase: 'Pending' } }, '');
  }
}

/**
 * The scheduler's VolumeBinding PreFilter: why a pod cannot be placed while a claim it
 * mounts is missing, being deleted or not Bound (no StorageClass here binds it on first
 * consumer: every claim is Immediate); undefined when all are bound.
 */
export function unboundClaims(store: Store, pod: Obj): string | undefined {
  let unbound = false;
  for (const v of ((pod.spec as Any)?.volumes ?? []) as Any[]) {
    const name = v.persistentVolumeClaim?.claimName as string | undefined;
    if (!name) continue;
    const pvc = store.find('persistentvolumeclaims', pod.metadata.namespace, name);
    if (!pvc) return `persistentvolumeclaim "${name}" not found`;
    if (pvc.metadata.deletionTimestamp) return `persistentvolumeclaim "${name}" is being deleted`;
    if (phaseOf(pvc) !== 'Bound') unbound = true;
  }
  return unbound ? 'pod has unbound immediate PersistentVolumeClaims' : undefined;
}
