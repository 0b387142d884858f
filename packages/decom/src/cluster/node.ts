/**
 * The Node object's side of a host: whether it is still registered (verify, the
 * reset), the Node each host maps to (ping), whether it is a control plane, where its
 * pods could go, and its removal with what the API keeps for it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Node, V1Pod, V1Taint } from '@kubernetes/client-node';
import type { Finding } from '../rules/residue.js';
import type { ClusterContext, Kube } from './context.js';
import { codeOf, errorLine, kubeClients, type ApiSource } from './kubeconfig.js';
import { listAll } from './pages.js';

/** Per host name: findings (a Node object still there) and warnings (the API could not be asked). */
export interface NodeCheck {
  findings: Map<string, Finding[]>;
  warnings: Map<string, string[]>;
}


/** Each name's Node as the API has it (a name it has no Node for is absent), the names it could not be asked about, and where it is. */
export interface NodesRead {
  server: string;
  nodes: Map<string, V1Node>;
  errors: Map<string, string>;
}

/** These names' Node objects, asked of the API all at once (a name it could not be asked about is in `errors`). */
export async function readNodes(kube: Kube, names: string[]): Promise<NodesRead> {
  const read: NodesRead = { server: kube.server, nodes: new Map(), errors: new Map() };
  await Promise.all(
    names.map(async (name) => {
      try {
        read.nodes.set(name, await kube.core.readNode({ name }));
      } catch (e) {
        if (codeOf(e) !== 404) read.errors.set(name, (e as Error).message.split('\n')[0] ?? '');
      }
    }),
  );
  return read;
}

/**
 * Which of these names still have a Node object in the API (it re-registers a kubelet,
 * and schedules pods), asked of the source's cluster (its kubeconfig and context).
 * Nothing to load: nothing to say.
 */
export async function registeredNodes(source: ApiSource, names: string[]): Promise<NodeCheck> {
  const findings = new Map<string, Finding[]>();
  const warnings = new Map<string, string[]>();
  let kube: Kube | undefined;
  try {
    kube = await kubeClients(source);
  } catch (e) {
    // A kubeconfig the client cannot use (no current context, a bad file) costs the API check, not the run.
    // (loadKubeConfig's message names the file, or the context.)
    for (const name of names) warnings.set(name, [`could not ask the API for its Node object: ${(e as Error).message.split('\n')[0]}`]);
    return { findings, warnings };
  }
  if (!kube) return { findings, warnings };
  const read = await readNodes(kube, names);
  for (const [name, node] of read.nodes) {
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown';
    findings.set(name, [{ kind: 'node-object', subject: name, detail: `Node still registered at ${read.server} (Ready=${ready})` }]);
  }
  for (const [name, why] of read.errors) warnings.set(name, [`could not ask ${read.server} for its Node object: ${why}`]);
  return { findings, warnings };
}

const CONTROL_PLANE = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];
export const isControlPlane = (n: V1Node) => CONTROL_PLANE.some((l) => l in (n.metadata?.labels ?? {}));
const ready = (n: V1Node) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

/** Reads the Node; undefined when it is not (or no longer) registered. */
export async function readNode(c: ClusterContext): Promise<V1Node | undefined> {
  try {
    return await c.kube.core.readNode({ name: c.nodeName });
  } catch (e) {
    if (codeOf(e) === 404) return undefined;
    throw new Error(`could not read Node ${c.nodeName} from ${c.kube.server}: ${errorLine(e)}`);
  }
}

const tolerates = (p: V1Pod, t: V1Taint) =>
  (p.spec?.tolerations ?? []).some(
    (x) => (!x.effect || x.effect === t.effect) && (x.operator === 'Exists' ? !x.key || x.key === t.key : x.key === t.key && (x.value ?? '') === (t.value ?? '')),
  );

/** Why a Node cannot take a pod, if it cannot: this run removes it, it is not Ready, cordoned, or has a taint the pod does not tolerate. */
export function cannotTake(n: V1Node, p: V1Pod, leaving: ReadonlySet<string>): string | undefined {
  if (leaving.has(n.metadata?.name ?? '')) return 'this run removes it';
  if (!ready(n)) return 'not Ready';
  if (n.spec?.unschedulable) return 'cordoned';
  const t = (n.spec?.taints ?? []).find((x) => (x.effect === 'NoSchedule' || x.effect === 'NoExecute') && !tolerates(p, x));
  return t ? `its taint ${t.key}${t.value ? `=${t.value}` : ''}:${t.effect} is not tolerated` : undefined;
}

/**
 * The pods (of a controller: a bare pod is not recreated) that no other Node could
 * take: none outside this run's targets is Ready, schedulable and has only
 * NoSchedule/NoExecute taints the pod tolerates. The pod's nodeSelector is not asked:
 * its replacement is made from its controller's template, which may say otherwise.
 */
export function homeless(pods: V1Pod[], nodes: V1Node[], leaving: ReadonlySet<string>): V1Pod[] {
  return pods.filter((p) => p.metadata?.ownerReferences?.some((o) => o.controller) && nodes.every((n) => cannotTake(n, p, leaving) !== undefined));
}

/** The Nodes (every page), for homeless() and the last-control-plane interlock. */
export const listNodes = (c: ClusterContext): Promise<V1Node[]> => listAll((p) => c.kube.core.listNode(p));

/** One API change the cluster steps made (or would make): what, and the request. */
export interface ApiAction {
  what: string;
  request: string;
}

/** Why the Node the API has now is left: it is not the one this run's interlocks checked. One line. */
const notTheCheckedNode = (name: string, checked: string | undefined, why: string) =>
  `Node ${name} is not the Node this run checked (${checked ? `UID ${checked}` : 'none was registered then'}): ${why}; left in place, with what the API holds for it (run again to check it)`;

/**
 * Deletes the Node (last, so its kubelet cannot register it again), only the one the
 * interlocks checked (its UID as the delete's precondition), and waits until the API
 * no longer has it; then what the API still holds for it that is provably
 * stale with the Node gone: its VolumeAttachments, CSINode, Lease and the kubelet's
 * CertificateSigningRequests. With `check`, says what it would delete.
 */
export async function removeNode(c: ClusterContext, apply: boolean): Promise<ApiAction[]> {
  const k = c.kube;
  const name = c.nodeName;
  const actions: ApiAction[] = [];
  const gone = async (what: string, request: string, del: () => Promise<unknown>, conflict?: (e: unknown) => string) => {
    if (apply) {
      try {
        await del();
      } catch (e) {
        if (conflict && codeOf(e) === 409) throw new Error(conflict(e));
        if (codeOf(e) !== 404) throw new Error(`${what}: ${errorLine(e)}`);
      }
    }
    actions.push({ what, request });
  };
  const current = await readNode(c);
  if (current) {
    // Only the Node the interlocks checked goes (its machine, not the last control plane): one deleted and
    // registered again since is another Node, and what the API holds under its name is its own.
    const checked = c.node?.metadata?.uid;
    const uid = current.metadata?.uid;
    if (!checked || uid !== checked) throw new Error(notTheCheckedNode(name, checked, `it was registered${checked ? ' again' : ''} since, as UID ${uid}`));
    // The UID precondition holds even if it is replaced between this read and the delete.
    await gone(`delete Node ${name}`, `DELETE /api/v1/nodes/${name} (precondition: uid ${uid})`, () => k.core.deleteNode({ name, body: { preconditions: { uid } } }), (e) =>
      notTheCheckedNode(name, checked, `the API refused its delete: ${errorLine(e)}`),
    );
    for (let i = 0; apply; i++) {
      const still = await readNode(c);
      if (still?.metadata?.uid !== uid) break;
      if (i >= 60) throw new Error(`Node ${name} is still registered 30 s after its deletion`);
      await sleep(500);
    }
  }
  for (const va of (await listAll((p) => k.storage.listVolumeAttachment(p))).filter((v) => v.spec?.nodeName === name)) {
    const n = va.metadata?.name as string;
    await gone(`delete VolumeAttachment ${n} (of the deleted Node${apply ? '' : ', if still there then'})`, `DELETE /apis/storage.k8s.io/v1/volumeattachments/${n}`, () => k.storage.deleteVolumeAttachment({ name: n }));
  }
  const exists = (read: () => Promise<unknown>) => read().then(() => true, (e: unknown) => (codeOf(e) === 404 ? false : Promise.reject(new Error(errorLine(e)))));
  if (await exists(() => k.storage.readCSINode({ name }))) {
    await gone(`delete CSINode ${name}`, `DELETE /apis/storage.k8s.io/v1/csinodes/${name}`, () => k.storage.deleteCSINode({ name }));
  }
  if (await exists(() => k.coordination.readNamespacedLease({ name, namespace: 'kube-node-lease' }))) {
    await gone(`delete Lease kube-node-lease/${name}`, `DELETE /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`, () => k.coordination.deleteNamespacedLease({ name, namespace: 'kube-node-lease' }));
  }
  for (const csr of (await listAll((p) => k.certificates.listCertificateSigningRequest(p))).filter((x) => x.spec?.username === `system:node:${name}`)) {
    const n = csr.metadata?.name as string;
    await gone(`delete CertificateSigningRequest ${n} (the kubelet's of ${name})`, `DELETE /apis/certificates.k8s.io/v1/certificatesigningrequests/${n}`, () => k.certificates.deleteCertificateSigningRequest({ name: n }));
  }
  return actions;
}
