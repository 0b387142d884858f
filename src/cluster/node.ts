/**
 * The Node object's side of a host: whether it is still registered (verify, the
 * reset), the interlocks that prove the inventory's host is the Node's machine and
 * not the last control plane, and its removal with what the API keeps for it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Node, V1Pod, V1Taint } from '@kubernetes/client-node';
import type { Host, Inventory } from '../inventory/index.js';
import { addressesOf } from './etcd.js';
import type { NodeState } from '../probes/index.js';
import type { Finding } from '../verify/rules.js';
import type { ClusterContext } from './context.js';
import { codeOf, errorLine, kubeClients, type ApiSource } from './kubeconfig.js';

/** Per host name: findings (a Node object still there) and warnings (the API could not be asked). */
export interface NodeCheck {
  findings: Map<string, Finding[]>;
  warnings: Map<string, string[]>;
}


/**
 * Which of these names still have a Node object in the API (it re-registers a kubelet,
 * and schedules pods), asked of the source's cluster (its kubeconfig and context).
 * Nothing to load: nothing to say.
 */
export async function registeredNodes(source: ApiSource, names: string[]): Promise<NodeCheck> {
  const findings = new Map<string, Finding[]>();
  const warnings = new Map<string, string[]>();
  let kube: Awaited<ReturnType<typeof kubeClients>>;
  try {
    kube = await kubeClients(source);
  } catch (e) {
    // A kubeconfig the client cannot use (no current context, a bad file) costs the API check, not the run.
    // (loadKubeConfig's message names the file, or the context.)
    for (const name of names) warnings.set(name, [`could not ask the API for its Node object: ${(e as Error).message.split('\n')[0]}`]);
    return { findings, warnings };
  }
  if (!kube) return { findings, warnings };
  const { core: api, server } = kube;
  await Promise.all(
    names.map(async (name) => {
      try {
        const node = await api.readNode({ name });
        const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown';
        findings.set(name, [{ kind: 'node-object', subject: name, detail: `Node still registered at ${server} (Ready=${ready})` }]);
      } catch (e) {
        if (codeOf(e) === 404) return;
        warnings.set(name, [`could not ask ${server} for its Node object: ${(e as Error).message.split('\n')[0]}`]);
      }
    }),
  );
  return { findings, warnings };
}

/** The Node a host is: decom_node_name, kubespray's kube_override_hostname, else the inventory name. */
export const nodeNameOf = (h: Host): string => String(h.vars.decom_node_name ?? h.vars.kube_override_hostname ?? h.name);

/**
 * The inventory's etcd group as a node's rules see it: its hosts' names and addresses,
 * and whether the host itself is one (NodeState.etcdGroup).
 */
export function etcdGroupOf(inventory: Inventory): (h: Host) => NonNullable<NodeState['etcdGroup']> {
  const members = new Set(inventory.groups.get('etcd') ?? []);
  const addresses = [...members].flatMap((n) => {
    const h = inventory.hosts.get(n);
    return h ? [h.name, nodeNameOf(h), ...addressesOf(h)] : [];
  });
  return (h) => ({ addresses, self: members.has(h.name) });
}

/** Whether the Node's name comes from the inventory's variables (then the hostname need not match it). */
export const nodeNamed = (h: Host): boolean => h.vars.decom_node_name !== undefined || h.vars.kube_override_hostname !== undefined;

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

/**
 * The decommission's interlocks on the cluster side, before anything changes: the
 * host behind the inventory address is the machine the Node is (machine-id; the
 * hostname unless the inventory names the Node), and the Node is not the last
 * control plane. A Node already gone passes: the run finishes what is left.
 */
export async function nodeInterlock(c: ClusterContext, s: NodeState | undefined): Promise<string | undefined> {
  const node = await readNode(c);
  c.node = node;
  if (!node) {
    // Gone already (a second run) passes; but a host whose kubelet runs, or is configured, under another Node name does not.
    const kubelet = s && ([...s.processes.values()].some((p) => p.name === 'kubelet') || s.kubeconfigs.some((k) => k.path === '/etc/kubernetes/kubelet.conf'));
    return kubelet
      ? `${c.host.name} has a kubelet, but the API at ${c.kube.server} has no Node ${c.nodeName}: it is registered under another name (set decom_node_name in the inventory), or already deleted (then reset the node alone: --playbook reset)`
      : undefined;
  }
  if (s) {
    const other = otherMachine(c.host, c.nodeName, node, s);
    if (other) return `${other}; refusing to drain and delete it`;
    const short = (n: string) => n.toLowerCase().split('.')[0];
    if (!c.nodeNamed && short(s.hostname) !== short(c.nodeName)) {
      return `${c.host.name} (${c.host.address}) says its hostname is "${s.hostname}", not the Node's name "${c.nodeName}": refusing (set decom_node_name or kube_override_hostname in the inventory when the Node is named otherwise)`;
    }
  }
  if (isControlPlane(node) && !c.options.allowLastControlPlane) {
    const nodes = (await c.kube.core.listNode()).items;
    const others = nodes.filter((n) => isControlPlane(n) && !c.leaving.has(n.metadata?.name ?? ''));
    if (!others.length) {
      return `Node ${c.nodeName} is the cluster's last control-plane node${c.leaving.size > 1 ? ' (the others are removed by this run too)' : ''}: removing it ends the cluster; pass --allow-last-control-plane if that is the intent`;
    }
  }
  return undefined;
}

/** Why the host behind the inventory address is not the machine the Node is, if it is not: their machine-ids differ. */
export function otherMachine(host: Host, nodeName: string, node: V1Node | undefined, s: NodeState): string | undefined {
  const id = node?.status?.nodeInfo?.machineID;
  if (!id || !s.machineId || id === s.machineId) return undefined;
  return `${host.name} (${host.address}) has machine-id ${s.machineId}, but Node ${nodeName} reports ${id}: the inventory address is another machine than the Node`;
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

/** The Nodes, for homeless(). */
export const listNodes = async (c: ClusterContext): Promise<V1Node[]> => (await c.kube.core.listNode()).items;

/** One API change the cluster steps made (or would make): what, and the request. */
export interface ApiAction {
  what: string;
  request: string;
}

/**
 * Deletes the Node (last, so its kubelet cannot register it again) and waits until
 * the API no longer has it; then what the API still holds for it that is provably
 * stale with the Node gone: its VolumeAttachments, CSINode, Lease and the kubelet's
 * CertificateSigningRequests. With `check`, says what it would delete.
 */
export async function removeNode(c: ClusterContext, apply: boolean): Promise<ApiAction[]> {
  const k = c.kube;
  const name = c.nodeName;
  const actions: ApiAction[] = [];
  const gone = async (what: string, request: string, del: () => Promise<unknown>) => {
    if (apply) {
      try {
        await del();
      } catch (e) {
        if (codeOf(e) !== 404) throw new Error(`${what}: ${errorLine(e)}`);
      }
    }
    actions.push({ what, request });
  };
  if (await readNode(c)) {
    await gone(`delete Node ${name}`, `DELETE /api/v1/nodes/${name}`, () => k.core.deleteNode({ name }));
    for (let i = 0; apply && (await readNode(c)); i++) {
      if (i >= 60) throw new Error(`Node ${name} is still registered 30 s after its deletion`);
      await sleep(500);
    }
  }
  for (const va of (await k.storage.listVolumeAttachment()).items.filter((v) => v.spec?.nodeName === name)) {
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
  for (const csr of (await k.certificates.listCertificateSigningRequest()).items.filter((x) => x.spec?.username === `system:node:${name}`)) {
    const n = csr.metadata?.name as string;
    await gone(`delete CertificateSigningRequest ${n} (the kubelet's of ${name})`, `DELETE /apis/certificates.k8s.io/v1/certificatesigningrequests/${n}`, () => k.certificates.deleteCertificateSigningRequest({ name: n }));
  }
  return actions;
}
