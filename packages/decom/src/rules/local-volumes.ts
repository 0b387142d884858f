/**
 * Local PersistentVolumes: whose data lives on one node's disk and leaves the cluster
 * with it. A PV is a local one when its source is `local` or `hostPath`, or its
 * required node affinity pins it by hostname (kubernetes.io/hostname In …), and
 * that affinity is what says where it lives: evaluated against every Node
 * (rules/node-affinity.ts), never matched by name. Each Node is given with its name,
 * so a matchFields term on metadata.name counts: Kubernetes' volume binder gives a
 * Node's labels alone, and there such a term constrains nothing, but a volume its
 * author pinned by name is taken as pinned. The decommission refuses a node
 * that is the only Node a local PV's affinity selects (steps/cluster.ts); the audit
 * names one whose affinity selects no Node left (stale-local-pv). Pure.
 */
import type { V1Node, V1PersistentVolume, V1Pod } from '@kubernetes/client-node';
import { nodesSelected, type NodeSelector } from './node-affinity.js';

const HOSTNAME = 'kubernetes.io/hostname';

/** A local PV as the decommission and the audit name it. */
export interface LocalVolume {
  name: string;
  /** Where its data is: "local /mnt/disks/ssd1", "hostPath /opt/local-path-provisioner/pvc-…", "csi topolvm.io vol-1". */
  source: string;
  /** "namespace/name" of the claim its claimRef names; undefined: none. */
  claim?: string;
  phase: string;
  reclaimPolicy: string;
  /** Its required node affinity, one line: "kubernetes.io/hostname In (node2)". */
  affinity: string;
  /** The Nodes the affinity selects now. */
  selects: string[];
  /** "namespace/name" of the pods (of the list given) that use it through its claim. */
  pods: string[];
}

/** The PV's source, one line: its kind and where its data is. */
export function sourceOf(pv: V1PersistentVolume): string {
  const s = pv.spec ?? {};
  if (s.local) return `local ${s.local.path}`;
  if (s.hostPath) return `hostPath ${s.hostPath.path}`;
  if (s.csi) return `csi ${s.csi.driver} ${s.csi.volumeHandle}`;
  const kind = Object.keys(s).find((k) => !['accessModes', 'capacity', 'claimRef', 'mountOptions', 'nodeAffinity', 'persistentVolumeReclaimPolicy', 'storageClassName', 'volumeAttributesClassName', 'volumeMode'].includes(k));
  return kind ?? 'no source';
}

const requiredOf = (pv: V1PersistentVolume): NodeSelector | undefined => pv.spec?.nodeAffinity?.required as NodeSelector | undefined;

/** A required affinity with a term that asks something (an empty term selects nothing, and pins nothing either). */
const hasRequired = (pv: V1PersistentVolume) => (requiredOf(pv)?.nodeSelectorTerms ?? []).some((t) => t.matchExpressions?.length || t.matchFields?.length);

/** Pinned by hostname: a term asks kubernetes.io/hostname In some values. */
const pinnedByHostname = (pv: V1PersistentVolume) =>
  (requiredOf(pv)?.nodeSelectorTerms ?? []).some((t) => (t.matchExpressions ?? []).some((e) => e.key === HOSTNAME && e.operator === 'In'));

/** Whether the PV is of a local kind (its source, or a hostname pin) with a required affinity that says where. */
export const localKind = (pv: V1PersistentVolume): boolean => hasRequired(pv) && !!(pv.spec?.local || pv.spec?.hostPath || pinnedByHostname(pv));

/** The affinity, one line: its terms ORed, each term's requirements ANDed. */
export function affinityLine(pv: V1PersistentVolume): string {
  const req = (r: { key: string; operator: string; values?: string[] }) => `${r.key} ${r.operator}${r.values?.length ? ` (${r.values.join(', ')})` : ''}`;
  const terms = (requiredOf(pv)?.nodeSelectorTerms ?? []).map((t) => [...(t.matchExpressions ?? []).map(req), ...(t.matchFields ?? []).map((f) => `field ${req(f)}`)].join(' and '));
  return terms.filter(Boolean).join(' or ');
}

/** The claim a PV names, "namespace/name". */
const claimOf = (pv: V1PersistentVolume) => (pv.spec?.claimRef?.name ? `${pv.spec.claimRef.namespace ?? ''}/${pv.spec.claimRef.name}` : undefined);

/** The claims a pod uses: its persistentVolumeClaim volumes, and its ephemeral volumes' claims (named POD-VOLUME). */
export const claimsOfPod = (p: V1Pod): string[] =>
  (p.spec?.volumes ?? []).flatMap((v) => {
    const ns = p.metadata?.namespace ?? '';
    if (v.persistentVolumeClaim) return [`${ns}/${v.persistentVolumeClaim.claimName}`];
    if (v.ephemeral) return [`${ns}/${p.metadata?.name}-${v.name}`];
    return [];
  });

function describeVolume(pv: V1PersistentVolume, selects: string[], pods: readonly V1Pod[]): LocalVolume {
  const claim = claimOf(pv);
  return {
    name: pv.metadata?.name ?? '',
    source: sourceOf(pv),
    ...(claim ? { claim } : {}),
    phase: pv.status?.phase ?? 'unknown',
    reclaimPolicy: pv.spec?.persistentVolumeReclaimPolicy ?? 'Retain',
    affinity: affinityLine(pv),
    selects,
    pods: claim ? pods.filter((p) => claimsOfPod(p).includes(claim)).map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).sort() : [],
  };
}

/** The PVs whose data is on this Node alone: of a local kind, their affinity selecting this Node and no other of `nodes`. `pods`: the Node's. */
export function localVolumesOf(node: string, pvs: readonly V1PersistentVolume[], nodes: readonly V1Node[], pods: readonly V1Pod[]): LocalVolume[] {
  return pvs
    .filter(localKind)
    .map((pv) => ({ pv, selects: nodesSelected(requiredOf(pv), nodes) }))
    .filter((x) => x.selects.length === 1 && x.selects[0] === node)
    .map((x) => describeVolume(x.pv, x.selects, pods))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The PVs of a local kind whose affinity selects no Node of `nodes`: their node is gone, and their data with it. */
export function strandedVolumes(pvs: readonly V1PersistentVolume[], nodes: readonly V1Node[]): LocalVolume[] {
  return pvs
    .filter((pv) => localKind(pv) && !nodesSelected(requiredOf(pv), nodes).length)
    .map((pv) => describeVolume(pv, [], []))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** A local PV in one line: "PersistentVolume data-a (local /mnt/disks/a; claim default/data-a, Bound; used by pods default/app)". */
export const volumeLine = (v: LocalVolume): string =>
  `PersistentVolume ${v.name} (${v.source}; ${v.claim ? `claim ${v.claim}` : 'no claim'}, ${v.phase}; ${v.pods.length ? `used by pod${v.pods.length === 1 ? '' : 's'} ${v.pods.join(', ')}` : 'no pod on the node uses it'})`;
