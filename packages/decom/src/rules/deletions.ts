/**
 * Deletions that do not finish, anywhere in the API: objects of any resource held in
 * deletion by a finalizer no controller removes, APIServices that are not Available
 * (their group cannot be listed, and a namespace being deleted waits on them), and
 * finished pods piling up below kube-controller-manager's garbage collection
 * threshold. Pure: the API's lists in, findings out. Pods and namespaces stuck
 * Terminating are rules/audit.ts's own kinds and are not reported here again.
 */
import type { V1APIService, V1Pod } from '@kubernetes/client-node';
import { apiServiceUnavailable, type ClusterView, type ListedResource, type ObjectMeta, type Placed } from './audit.js';
import { finalizerLine, finalizerRemover } from './finalizers.js';
import { ageSec, span } from './span.js';

/** The finalizer apiextensions-apiserver puts on a CRD being deleted, until every custom resource of it is gone. */
export const CRD_CLEANUP = 'customresourcecleanup.apiextensions.k8s.io';
const CRDS = 'customresourcedefinitions.apiextensions.k8s.io';

/** kube-controller-manager's --terminated-pod-gc-threshold default: finished pods are deleted only past it. */
export const TERMINATED_POD_GC_THRESHOLD = 12500;

export interface DeletionOptions {
  now: number;
  /** An object deleted longer ago than this is stuck. */
  stuckAfterSec: number;
  /** More finished pods than this are a finding. */
  finishedPods: number;
  /** Node name -> inventory host: a stuck Node is its host's finding. */
  hostOfNode: ReadonlyMap<string, string>;
}

const time = (t: Date | string | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

/** The lists read in full (Nodes, VolumeAttachments, PersistentVolumes, Leases, APIServices) as metadata, beside the metadata-only ones. */
function fullLists(v: ClusterView): ListedResource[] {
  const of = (resource: string, kind: string, items: { metadata?: { name?: string; uid?: string; deletionTimestamp?: Date; finalizers?: string[]; namespace?: string } }[], namespaced = false): ListedResource => ({
    resource,
    kind,
    namespaced,
    count: items.length,
    deleting: items.flatMap((o) => {
      const m = o.metadata;
      if (!m?.deletionTimestamp) return [];
      return [{ name: m.name ?? '', ...(m.namespace ? { namespace: m.namespace } : {}), ...(m.uid ? { uid: m.uid } : {}), deletionTimestamp: time(m.deletionTimestamp) as string, ...(m.finalizers ? { finalizers: m.finalizers } : {}) }];
    }),
  });
  const nodeNames = new Set(v.nodes.map((n) => n.metadata?.name));
  // An attachment to a deleted Node is stale-volume-attachment's, whether it is being deleted or not
  // (with the Nodes refused, no Node is known deleted: every attachment is judged here).
  const attachments = v.refused?.nodes ? v.volumeAttachments : v.volumeAttachments.filter((a) => !a.spec?.nodeName || nodeNames.has(a.spec.nodeName));
  return [
    of('nodes', 'Node', v.nodes),
    of('volumeattachments.storage.k8s.io', 'VolumeAttachment', attachments),
    of('persistentvolumes', 'PersistentVolume', v.persistentVolumes),
    of('leases.coordination.k8s.io', 'Lease', v.leases, true),
    of('apiservices.apiregistration.k8s.io', 'APIService', v.apiServices),
  ];
}

const subjectOf = (r: ListedResource, o: ObjectMeta) => `${r.resource}/${o.namespace ? `${o.namespace}/` : ''}${o.name}`;

/** A CRD being deleted: the custom resources that still hold it, as their own list shows them. */
function crdHolders(v: ClusterView, crd: string): { detail: string; evidence: string[] } {
  const listed = v.objects.find((r) => r.resource === crd);
  if (!listed) {
    const why = v.unlisted?.[crd];
    return { detail: why ? `its custom resources could not be listed: ${why}` : 'discovery no longer serves its custom resources', evidence: [] };
  }
  if (!listed.count) return { detail: 'no custom resource of it is left: the CRD finalizer controller has not finished', evidence: [] };
  const shown = listed.deleting.slice(0, 10).map((o) => `custom resource ${o.namespace ? `${o.namespace}/` : ''}${o.name} held by ${(o.finalizers ?? []).join(', ') || 'no finalizer'}`);
  const more = listed.count > shown.length ? [`… ${listed.count - shown.length} more custom resource${listed.count - shown.length === 1 ? '' : 's'} of ${crd}`] : [];
  return { detail: `${listed.count} custom resource${listed.count === 1 ? '' : 's'} of it still exist${listed.count === 1 ? 's' : ''} (${crd})`, evidence: [...shown, ...more] };
}

/** Objects of every listed resource, pods and namespaces aside, deleted longer ago than --stuck-after. */
export function stuckObjects(v: ClusterView, o: DeletionOptions): Placed[] {
  const out: Placed[] = [];
  for (const r of [...fullLists(v), ...v.objects]) {
    for (const m of r.deleting) {
      const age = ageSec(m.deletionTimestamp, o.now);
      if (age < o.stuckAfterSec) continue;
      const finalizers = m.finalizers ?? [];
      const held = finalizers.length ? `held by ${finalizers.join(', ')}` : 'no finalizer holds it: the API server should have removed it';
      const crd = r.resource === CRDS && finalizers.includes(CRD_CLEANUP) ? crdHolders(v, m.name) : undefined;
      const guesses = finalizers.filter((f) => finalizerRemover(f).guess);
      const host = r.resource === 'nodes' ? o.hostOfNode.get(m.name) : undefined;
      out.push({
        kind: 'stuck-deleting-object',
        subject: subjectOf(r, m),
        detail: `${r.kind} deleted ${span(age)} ago, ${held}${crd ? `; ${crd.detail}` : ''}${guesses.length && !crd ? ` (${guesses.length === finalizers.length ? 'no' : 'not every'} finalizer of it is one decom knows)` : ''}`,
        evidence: [...finalizers.map(finalizerLine), ...(crd?.evidence ?? []), `deletionTimestamp ${m.deletionTimestamp}`],
        target: { resource: r.resource, namespace: m.namespace ?? '', name: m.name, uid: m.uid ?? '', finalizers },
        ...(host ? { host } : {}),
      });
    }
  }
  return out;
}

/** An APIService's group version: its spec's ("v1" for the core group), else from its name, VERSION.GROUP. */
function groupVersionOf(a: V1APIService): string {
  if (a.spec?.version) return a.spec.group ? `${a.spec.group}/${a.spec.version}` : a.spec.version;
  const name = a.metadata?.name ?? '';
  const dot = name.indexOf('.');
  return dot < 0 ? name : name.slice(dot + 1) ? `${name.slice(dot + 1)}/${name.slice(0, dot)}` : name.slice(0, dot);
}

/** Every APIService that is not Available: its group cannot be discovered or listed, and namespaces being deleted wait on it. */
export function unavailableApiServices(v: ClusterView, o: Pick<DeletionOptions, 'now'>): Placed[] {
  return v.apiServices.flatMap((a): Placed[] => {
    if (!apiServiceUnavailable(a)) return [];
    const c = a.status?.conditions?.find((x) => x.type === 'Available');
    const name = a.metadata?.name ?? '';
    const gv = groupVersionOf(a);
    const svc = a.spec?.service;
    const since = c?.lastTransitionTime ? ` for ${span(ageSec(c.lastTransitionTime, o.now))}` : '';
    return [{
      kind: 'unavailable-apiservice',
      subject: name || gv,
      detail: `${c ? `Available=${c.status}${c.reason ? ` (${c.reason})` : ''}${since}${c.message ? `: ${c.message}` : ''}` : 'no Available condition reported'}; ${gv} cannot be discovered or listed, and a namespace being deleted waits on it`,
      evidence: [
        svc ? `service ${svc.namespace}/${svc.name}:${svc.port ?? 443}` : 'served by kube-apiserver itself (no service)',
        ...(c ? [`condition Available=${c.status} ${c.reason ?? ''} since ${c.lastTransitionTime ? new Date(c.lastTransitionTime).toISOString() : '?'}`.replace(/ +/g, ' ')] : []),
      ],
      target: { name, groupVersion: gv },
    }];
  });
}

/** A finished pod's share: a Job's pod is the Job's history; any other by the reason its status gives (Evicted, …), else its phase. */
const shareOf = (p: V1Pod) => (p.metadata?.ownerReferences?.some((r) => r.kind === 'Job') ? 'Job history' : p.status?.reason || p.status?.phase || 'finished');

/** "200 (Evicted 150, Job history 50)", the largest share first. */
function counted(pods: V1Pod[]): string {
  const shares = new Map<string, number>();
  for (const p of pods) {
    const share = shareOf(p);
    shares.set(share, (shares.get(share) ?? 0) + 1);
  }
  const parts = [...shares].sort(([a, x], [b, y]) => y - x || a.localeCompare(b)).map(([s, n]) => `${s} ${n}`);
  return `${pods.length} (${parts.join(', ')})`;
}

/** Up to `max` groups, largest first, and a line for the rest. */
function grouped(pods: V1Pod[], key: (p: V1Pod) => string, label: string, max = 20): string[] {
  const groups = new Map<string, V1Pod[]>();
  for (const p of pods) {
    const k = key(p);
    const group = groups.get(k);
    if (group) group.push(p);
    else groups.set(k, [p]);
  }
  const sorted = [...groups].sort(([a, x], [b, y]) => y.length - x.length || a.localeCompare(b));
  const lines = sorted.slice(0, max).map(([k, ps]) => `${label} ${k}: ${counted(ps)}`);
  return sorted.length > max ? [...lines, `… ${sorted.length - max} more ${label}s`] : lines;
}

/** Succeeded and Failed pods above the threshold: one finding, with their counts per namespace and per node. */
export function finishedPods(v: ClusterView, o: Pick<DeletionOptions, 'finishedPods'>): Placed[] {
  const finished = v.pods.filter((p) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed');
  if (finished.length <= o.finishedPods) return [];
  return [{
    kind: 'finished-pods',
    subject: 'finished pods',
    detail: `${counted(finished)} Succeeded and Failed pods kept, more than --finished-pods ${o.finishedPods}: kube-controller-manager deletes finished pods only past --terminated-pod-gc-threshold (${TERMINATED_POD_GC_THRESHOLD} by default)`,
    evidence: [...grouped(finished, (p) => p.metadata?.namespace ?? '', 'namespace'), ...grouped(finished, (p) => p.spec?.nodeName || '(unscheduled)', 'node')],
    target: { count: String(finished.length), threshold: String(o.finishedPods) },
  }];
}
