/**
 * Server-side Tables (`Accept: …;as=Table;g=meta.k8s.io`): kubectl prints its columns
 * from the server's answer, so these are the real API server's printers for Nodes,
 * Pods and Namespaces (kubernetes/pkg/printers/internalversion), ages included, and
 * apiextensions-apiserver's for custom resources (their additionalPrinterColumns).
 */
import type { Obj } from './store.js';

interface Column {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}
const col = (name: string, type: string, description: string, priority = 0, format = ''): Column => ({ name, type, format, description, priority });
const NAME = col('Name', 'string', 'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names', 0, 'name');
const AGE = col('Age', 'string', 'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata');

/** k8s.io/apimachinery's duration.HumanDuration: what kubectl shows as AGE. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.floor(hours / 24) % 365;
    return dy === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${dy}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

const age = (o: Obj) => (o.metadata.creationTimestamp ? humanDuration(Date.now() - Date.parse(o.metadata.creationTimestamp)) : '<unknown>');

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function nodeRow(o: Obj): unknown[] {
  const st = (o.status ?? {}) as Any;
  const ready = (st.conditions ?? []).find((c: Any) => c.type === 'Ready');
  // kubectl's printer: Ready when True, NotReady for False and Unknown alike, Unknown only without the condition.
  let status = ready ? (ready.status === 'True' ? 'Ready' : 'NotReady') : 'Unknown';
  if ((o.spec as Any | undefined)?.unschedulable) status += ',SchedulingDisabled';
  const roles = Object.keys(o.metadata.labels ?? {})
    .filter((l) => l.startsWith('node-role.kubernetes.io/'))
    .map((l) => l.slice('node-role.kubernetes.io/'.length))
    .concat(o.metadata.labels?.['kubernetes.io/role'] ? [o.metadata.labels['kubernetes.io/role']] : [])
    .sort();
  const addr = (t: string) => (st.addresses ?? []).find((a: Any) => a.type === t)?.address ?? '<none>';
  const info = st.nodeInfo ?? {};
  return [o.metadata.name, status, roles.length ? roles.join(',') : '<none>', age(o), info.kubeletVersion ?? '', addr('InternalIP'), addr('ExternalIP'), info.osImage ?? '<unknown>', info.kernelVersion ?? '<unknown>', info.containerRuntimeVersion ?? '<unknown>'];
}

/** printPod: READY, STATUS (the reason a container waits or ended, Terminating while deleted), RESTARTS. */
function podRow(o: Obj): unknown[] {
  const spec = (o.spec ?? {}) as Any;
  const st = (o.status ?? {}) as Any;
  const total = (spec.containers ?? []).length;
  let ready = 0;
  let restarts = 0;
  let reason: string = st.reason || st.phase || 'Unknown';
  for (const c of st.containerStatuses ?? []) {
    restarts += c.restartCount ?? 0;
    if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
    else if (c.state?.terminated?.reason) reason = c.state.terminated.reason;
    else if (c.ready && c.state?.running) ready++;
  }
  // A deleted pod whose containers are done shows how they ended (its terminal phase), not Terminating.
  if (o.metadata.deletionTimestamp && st.reason === 'NodeLost') reason = 'Unknown';
  else if (o.metadata.deletionTimestamp && st.phase !== 'Succeeded' && st.phase !== 'Failed') reason = 'Terminating';
  const gates = (spec.readinessGates ?? []).length;
  return [o.metadata.name, `${ready}/${total}`, reason, restarts, age(o), st.podIP || '<none>', spec.nodeName || '<none>', st.nominatedNodeName || '<none>', gates ? `${gates}` : '<none>'];
}

const TABLES: Record<string, { columns: Column[]; row: (o: Obj) => unknown[] }> = {
  nodes: {
    columns: [
      NAME,
      col('Status', 'string', 'The status of the node'),
      col('Roles', 'string', 'The roles of the node'),
      AGE,
      col('Version', 'string', 'Kubelet Version reported by the node.'),
      col('Internal-IP', 'string', 'List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node\'s address in its own status or consumers of the downward API (status.hostIP).', 1),
      col('External-IP', 'string', 'List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node\'s address in its own status or consumers of the downward API (status.hostIP).', 1),
      col('OS-Image', 'string', 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).', 1),
      col('Kernel-Version', 'string', "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
      col('Container-Runtime', 'string', 'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).', 1),
    ],
    row: nodeRow,
  },
  pods: {
    columns: [
      NAME,
      col('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'),
      col('Status', 'string', 'The aggregate status of the containers in this pod.'),
      col('Restarts', 'string', 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.'),
      AGE,
      col('IP', 'string', 'IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.', 1),
      col('Node', 'string', 'NodeName is a request to schedule this pod onto a specific node. If it is non-empty, the scheduler simply schedules this pod onto that node, assuming that it fits resource requirements.', 1),
      col('Nominated Node', 'string', 'nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.', 1),
      col('Readiness Gates', 'string', 'If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to "True" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates', 1),
    ],
    row: podRow,
  },
  namespaces: {
    columns: [NAME, col('Status', 'string', 'The status of the namespace'), AGE],
    row: (o) => [o.metadata.name, ((o.status ?? {}) as Any).phase ?? 'Active', age(o)],
  },
  apiservices: {
    columns: [NAME, col('Service', 'string', 'The reference to the service that hosts this API endpoint.'), col('Available', 'string', 'Whether this service is available.'), AGE],
    row: (o) => {
      const svc = ((o.spec ?? {}) as Any).service;
      const av = (((o.status ?? {}) as Any).conditions ?? []).find((c: Any) => c.type === 'Available');
      return [o.metadata.name, svc ? `${svc.namespace}/${svc.name}` : 'Local', av ? (av.status === 'True' ? 'True' : `${av.status} (${av.reason})`) : 'Unknown', age(o)];
    },
  },
};

const DEFAULT = { columns: [NAME, AGE], row: (o: Obj) => [o.metadata.name, age(o)] };

export interface Printer {
  columns: Column[];
  row: (o: Obj) => unknown[];
}

/** A CRD version's additionalPrinterColumns (an array of them). */
export type PrinterColumns = { name: string; type: string; format?: string; description?: string; priority?: number; jsonPath: string }[];

/** The value at a simple JSONPath (`.spec.replicas`, `.status.conditions[0].type`), as the CRD printer allows only those. */
function at(o: unknown, path: string): unknown {
  let cur = o;
  for (const seg of path.replace(/^\./, '').split(/\.|(?=\[)/).filter(Boolean)) {
    const i = /^\[(\d+)\]$/.exec(seg);
    cur = cur === null || typeof cur !== 'object' ? undefined : i ? (cur as unknown[])[Number(i[1])] : (cur as Any)[seg];
  }
  return cur;
}

/**
 * apiextensions' table convertor: NAME, then each column (without any, its logical
 * default: Age, a date of .metadata.creationTimestamp); a date shown as an age, a
 * string as printed, other types as JSON values, a missing value as null.
 */
export function customResourcePrinter(printerColumns: PrinterColumns): Printer {
  const cols = printerColumns.length ? printerColumns : [{ name: 'Age', type: 'date', description: AGE.description, jsonPath: '.metadata.creationTimestamp' }];
  return {
    columns: [NAME, ...cols.map((c) => col(c.name, c.type, c.description || `Custom resource definition column (in JSONPath format): ${c.jsonPath}`, c.priority ?? 0, c.format ?? ''))],
    row: (o) => [
      o.metadata.name,
      ...cols.map((c) => {
        const v = at(o, c.jsonPath);
        if (v === undefined || v === null) return null;
        if (c.type === 'date') return typeof v === 'string' ? (Number.isNaN(Date.parse(v)) ? '<invalid>' : humanDuration(Date.now() - Date.parse(v))) : null;
        if (c.type === 'string') return typeof v === 'string' ? v : JSON.stringify(v);
        if (c.type === 'integer') return typeof v === 'number' ? Math.trunc(v) : null;
        if (c.type === 'number') return typeof v === 'number' ? v : null;
        if (c.type === 'boolean') return typeof v === 'boolean' ? v : null;
        return null;
      }),
    ],
  };
}

/** A Table of the objects (by the resource's printer, or the one given), each row carrying the object's metadata (includeObject=Metadata, the default). */
export function toTable(printer: string | Printer, objects: Obj[], list: { resourceVersion: string; continue?: string }, includeObject = 'Metadata', withColumns = true): Record<string, unknown> {
  const t = typeof printer === 'string' ? (TABLES[printer] ?? DEFAULT) : printer;
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: list.resourceVersion, ...(list.continue ? { continue: list.continue } : {}) },
    columnDefinitions: withColumns ? t.columns : [],
    rows: objects.map((o) => ({
      cells: t.row(o),
      object:
        includeObject === 'None'
          ? undefined
          : includeObject === 'Object'
            ? o
            : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
    })),
  };
}
