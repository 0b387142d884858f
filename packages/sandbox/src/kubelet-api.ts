/**
 * The kubelet stand-in as a cluster member (`--kubeconfig`): what a real kubelet does
 * against the API server, as far as decom, kubectl and the audit depend on it.
 *   - registers its Node when it starts (machine-id, addresses, versions) and renews
 *     its Lease every 10 s; posts Ready again after the node lifecycle controller
 *     marked it Unknown;
 *   - keeps a mirror pod for every static pod (kubectl drain skips them by annotation);
 *   - runs the pods the API binds to its node through containerd's CRI (kubelet-runtime.ts:
 *     the pod network made by the CNI plugins unless hostNetwork), and reports their status;
 *   - on a pod's deletion, stops its containers and network, then finishes the delete.
 * It acts only on deletions it sees (a watch event, a deletionTimestamp): a pod that
 * vanishes from the store without one — an etcd restore — keeps running, a phantom.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { networkInterfaces, release } from 'node:os';
import { ApiClient } from './api/client.js';
import type { PodSandbox } from 'decom/cri';
import { rfc3339 } from './api/store.js';
import { ContainerConfigError, byAttempt, getRuntime, type PodToRun, type Qos } from './kubelet-runtime.js';
import { MountError, VolumeManager, fieldValue, type ReadyVolume } from './kubelet-volumes.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface MirrorSource {
  uid: string;
  name: string;
  namespace: string;
  manifest: Any;
}

export interface Member {
  node: string;
  kubeconfig: string;
  staticPods: () => MirrorSource[];
  log: (msg: string) => void;
}

const KUBELET_VERSION = 'v1.32.4';
const now = () => rfc3339();
const microNow = () => new Date().toISOString().replace(/Z$/, '000Z');
const MERGE = 'application/merge-patch+json';
/** The pod network's conflist (the scenarios' cni_config). */
const CNI_CONFIG = '/etc/cni/net.d/10-containerd-net.conflist';

const readOr = (file: string, fallback: string) => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
};

/** KubeletConfiguration's nodeLeaseDurationSeconds (default 40); the Lease is renewed at a quarter of it. */
const LEASE_SECONDS = Number(/^nodeLeaseDurationSeconds:\s*(\d+)\s*$/m.exec(readOr('/var/lib/kubelet/config.yaml', ''))?.[1] ?? 40);

function nodeAddress(): string {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

const conditions = (ready: boolean) => {
  const t = now();
  const c = (type: string, status: string, reason: string, message: string) => ({ type, status, lastHeartbeatTime: t, lastTransitionTime: t, reason, message });
  return [
    c('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
    c('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
    c('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
    c('Ready', ready ? 'True' : 'False', ready ? 'KubeletReady' : 'KubeletNotReady', ready ? 'kubelet is posting ready status' : 'container runtime is down'),
  ];
};

const QOS_CLASS = { guaranteed: 'Guaranteed', burstable: 'Burstable', besteffort: 'BestEffort' } as const;
const podKey = (p: Any) => `${p.metadata.namespace}/${p.metadata.name}`;
const isMirror = (p: Any) => Boolean(p.metadata?.annotations?.['kubernetes.io/config.mirror']);

/** The pod's QoS class, as the API computes status.qosClass from its containers' resources. */
function qosOf(pod: Any): Qos {
  const rs = (pod.spec?.containers ?? []).map((c: Any) => c.resources ?? {});
  if (rs.every((r: Any) => !Object.keys(r.requests ?? {}).length && !Object.keys(r.limits ?? {}).length)) return 'besteffort';
  const full = (r: Any) => ['cpu', 'memory'].every((k) => r.limits?.[k] && (r.requests?.[k] ?? r.limits[k]) === r.limits[k]);
  return rs.every(full) ? 'guaranteed' : 'burstable';
}

/** `$(VAR)` as the kubelet expands it in env values, command and args (`$$` is a literal `$`; an unknown name stays). */
export function expand(text: string, vars: Map<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (all, name: string | undefined) => (name === undefined ? '$' : (vars.get(name) ?? all)));
}

/**
 * The variables the kubelet gives every container for the `kubernetes` Service
 * (enableServiceLinks). There is no Service proxy in the sandbox: they name the API
 * server itself, from the kubelet's kubeconfig.
 */
export function serviceEnv(server: URL): { name: string; value: string }[] {
  const host = server.hostname;
  const port = server.port || '443';
  const url = `tcp://${host}:${port}`;
  return [
    ['KUBERNETES_SERVICE_HOST', host], ['KUBERNETES_SERVICE_PORT', port], ['KUBERNETES_SERVICE_PORT_HTTPS', port], ['KUBERNETES_PORT', url],
    [`KUBERNETES_PORT_${port}_TCP`, url], [`KUBERNETES_PORT_${port}_TCP_PROTO`, 'tcp'], [`KUBERNETES_PORT_${port}_TCP_PORT`, port], [`KUBERNETES_PORT_${port}_TCP_ADDR`, host],
  ].map(([name, value]) => ({ name: name as string, value: value as string }));
}

const POLICIES = new Set(['Always', 'OnFailure', 'Never']);

/**
 * An API pod as the kubelet hands it to its runtime: its volumes made ready, each
 * container's environment resolved (the Service variables, then its own in order,
 * fieldRef, configMapKeyRef and secretKeyRef read now; status.podIP once the sandbox
 * has it), `$(VAR)` expanded in command and args.
 */
async function toRun(api: ApiClient, volumes: VolumeManager, pod: Any, hostIP: string, ready: ReadyVolume[]): Promise<PodToRun> {
  // What the stand-in does not do is refused by name, never dropped: the pod would run other than asked.
  const unsupported = [
    ...(pod.spec.initContainers?.length ? ['initContainers'] : []),
    ...((pod.spec.containers ?? []) as Any[]).flatMap((c) => [
      ...(c.envFrom?.length ? [`${c.name}: envFrom`] : []),
      ...((c.volumeMounts ?? []) as Any[]).filter((m) => m.subPathExpr).map((m) => `${c.name}: subPathExpr of ${m.name}`),
    ]),
  ];
  if (unsupported.length) throw new ContainerConfigError(`not supported by the sandbox's kubelet: ${unsupported.join(', ')}`);
  const containers = [];
  for (const c of (pod.spec.containers ?? []) as Any[]) {
    const vars = new Map<string, string>();
    const env: NonNullable<PodToRun['containers'][number]['env']> = [];
    const set = (name: string, value: string) => {
      vars.set(name, value);
      env.push({ name, value });
    };
    // The `kubernetes` Service's variables are given whatever enableServiceLinks says.
    for (const e of serviceEnv(api.server)) set(e.name, e.value);
    for (const e of (c.env ?? []) as Any[]) {
      const from = e.valueFrom;
      if (!from) set(e.name, expand(e.value ?? '', vars));
      else if (from.fieldRef?.fieldPath === 'status.podIP' || from.fieldRef?.fieldPath === 'status.podIPs') {
        if (pod.spec.hostNetwork) set(e.name, hostIP);
        else env.push({ name: e.name, podIP: true });
      } else if (from.fieldRef) set(e.name, fieldValue(pod, from.fieldRef.fieldPath, hostIP));
      else if (from.configMapKeyRef || from.secretKeyRef) {
        const v = await volumes.keyOf(from.secretKeyRef ? 'secrets' : 'configmaps', pod.metadata.namespace, from.secretKeyRef ?? from.configMapKeyRef);
        if (v !== undefined) set(e.name, v.toString('utf8'));
      } else throw new ContainerConfigError(`env ${e.name}: valueFrom ${Object.keys(from).join(', ')} is not supported by the sandbox's kubelet`);
    }
    containers.push({
      name: c.name, image: c.image, workingDir: c.workingDir,
      command: ((c.command ?? []) as string[]).map((x) => expand(x, vars)), args: ((c.args ?? []) as string[]).map((x) => expand(x, vars)),
      env, ports: c.ports ?? [], volumeMounts: c.volumeMounts ?? [], securityContext: c.securityContext,
    });
  }
  return {
    uid: pod.metadata.uid,
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    hostNetwork: pod.spec.hostNetwork === true,
    hostPID: pod.spec.hostPID === true,
    qos: qosOf(pod),
    labels: pod.metadata.labels ?? {},
    annotations: { ...pod.metadata.annotations, 'kubernetes.io/config.source': 'api', 'kubernetes.io/config.seen': now() },
    securityContext: pod.spec.securityContext,
    ...(POLICIES.has(pod.spec.restartPolicy) ? { restartPolicy: pod.spec.restartPolicy } : {}),
    containers,
    volumes: ready,
  };
}

export function joinCluster(m: Member): void {
  const api = ApiClient.fromKubeconfig(m.kubeconfig);
  const { node, log } = m;
  const addr = nodeAddress();
  let nodeUid = '';
  /** False once the Node is found deleted: no mirror pods for a Node that is gone. */
  let registered = true;
  /** Pods this kubelet runs or stops, one operation at a time per pod. */
  const busy = new Map<string, Promise<void>>();
  const serial = (key: string, fn: () => Promise<void>) => {
    const next = (busy.get(key) ?? Promise.resolve()).then(fn).catch((e: unknown) => log(`${key}: ${(e as Error).message}`));
    busy.set(key, next);
    void next.then(() => busy.get(key) === next && busy.delete(key));
    return next;
  };
  /** Pods whose deletion this kubelet finished: a finalizer may keep them in the API, but there is nothing left to stop. */
  const finished = new Set<string>();

  async function register(): Promise<void> {
    // As the kubelet reports it: the runtime's own answer to CRI Version (Debian's 1.6.20~ds1 is 1.6.20).
    const runtime = (await getRuntime()).cri.runtime.version.replace(/[~+].*$/, '');
    const osImage = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readOr('/etc/os-release', ''))?.[1] ?? 'Linux';
    const machineID = readOr('/etc/machine-id', '').trim();
    const status = {
      capacity: { cpu: '2', memory: '2Gi', pods: '110', 'ephemeral-storage': '10Gi' },
      allocatable: { cpu: '2', memory: '2Gi', pods: '110', 'ephemeral-storage': '10Gi' },
      conditions: conditions(true),
      addresses: [{ type: 'InternalIP', address: addr }, { type: 'Hostname', address: node }],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID, systemUUID: machineID, bootID: readOr('/proc/sys/kernel/random/boot_id', '').trim(), kernelVersion: release(), osImage,
        containerRuntimeVersion: `containerd://${runtime.replace(/^v/, '')}`, kubeletVersion: KUBELET_VERSION, kubeProxyVersion: KUBELET_VERSION, operatingSystem: 'linux', architecture: 'amd64',
      },
    };
    const body = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: node,
        labels: { 'beta.kubernetes.io/arch': 'amd64', 'beta.kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': node, 'kubernetes.io/os': 'linux' },
        annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
      },
      spec: {},
      status,
    };
    const r = await api.request('POST', '/api/v1/nodes', body);
    if (r.code === 201) nodeUid = r.body.metadata.uid;
    else if (r.code === 409) {
      // Registered before (a restarted kubelet): post its status again.
      nodeUid = (await api.must('PATCH', `/api/v1/nodes/${node}/status`, { status }, MERGE)).metadata.uid;
    } else throw new Error(`registering Node ${node}: ${r.code} ${r.body.message ?? ''}`);
    log(`registered Node ${node} (${addr}, machine-id ${machineID})`);
  }

  /** The heartbeat: the Lease renewed; Ready posted again when the node controller marked it otherwise. */
  async function heartbeat(): Promise<void> {
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node}`;
    const spec = { holderIdentity: node, leaseDurationSeconds: LEASE_SECONDS, renewTime: microNow() };
    const r = await api.request('PATCH', path, { spec }, MERGE);
    if (r.code === 404) {
      await api.must('POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
        apiVersion: 'coordination.k8s.io/v1', kind: 'Lease',
        metadata: { name: node, namespace: 'kube-node-lease', ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: nodeUid }] },
        spec,
      });
    }
    const n = await api.request('GET', `/api/v1/nodes/${node}`);
    // Deleted under a running kubelet: like the real one, it registers only when it starts again
    // (which is why a decommission disables the kubelet before it deletes the Node).
    registered = n.code !== 404;
    if (!registered) return log(`node "${node}" not found`);
    const ready = (n.body.status?.conditions ?? []).find((c: Any) => c.type === 'Ready');
    if (ready?.status === 'True') return;
    await api.must('PATCH', `/api/v1/nodes/${node}/status`, { status: { conditions: conditions(true) } }, MERGE);
    // Back after the node controller marked its pods not Ready: post the status of those still running.
    for (const p of (await api.must('GET', `/api/v1/pods?fieldSelector=spec.nodeName=${node}`)).items as Any[]) {
      const podReady = (p.status?.conditions ?? []).some((c: Any) => c.type === 'Ready' && c.status === 'True');
      if (p.metadata.deletionTimestamp || p.status?.phase !== 'Running' || podReady) continue;
      // The pod workers post the others again from the runtime; mirror pods' status is posted here.
      if (isMirror(p)) await reportRunning(p, addr, p.status.podIP ?? addr, p.status.containerStatuses?.[0]?.containerID ?? '');
      else posted.delete(p.metadata.uid);
    }
  }

  /** Mirror pods: one per static pod, owned by the Node; a stale or missing one is replaced. */
  async function mirrors(): Promise<void> {
    if (!registered) return;
    const want = new Map(m.staticPods().map((s) => [`${s.namespace}/${s.name}`, s]));
    const have = (await api.must('GET', `/api/v1/pods?fieldSelector=spec.nodeName=${node}`)).items.filter(isMirror) as Any[];
    for (const p of have) {
      const s = want.get(podKey(p));
      if (s && p.metadata.annotations['kubernetes.io/config.mirror'] === s.uid && !p.metadata.deletionTimestamp) {
        want.delete(podKey(p));
        continue;
      }
      await api.request('DELETE', `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}?gracePeriodSeconds=0`);
    }
    for (const s of want.values()) {
      const spec = { ...(s.manifest.spec ?? {}), nodeName: node };
      const annotations = { ...(s.manifest.metadata?.annotations ?? {}), 'kubernetes.io/config.hash': s.uid, 'kubernetes.io/config.mirror': s.uid, 'kubernetes.io/config.seen': now(), 'kubernetes.io/config.source': 'file' };
      const r = await api.request('POST', `/api/v1/namespaces/${s.namespace}/pods`, {
        apiVersion: 'v1', kind: 'Pod',
        metadata: { name: s.name, namespace: s.namespace, labels: s.manifest.metadata?.labels ?? {}, annotations, ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: nodeUid, controller: true }] },
        spec,
      });
      if (r.code === 201) await reportRunning(r.body, addr, addr, `containerd://${s.uid}`); // static pods run on the host network
    }
  }

  async function reportRunning(pod: Any, hostIP: string, podIP: string, containerID: string): Promise<void> {
    const t = now();
    const cond = (type: string) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: t });
    const status = {
      phase: 'Running',
      conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(cond),
      hostIP, hostIPs: [{ ip: hostIP }], podIP, podIPs: [{ ip: podIP }], startTime: t, qosClass: 'BestEffort',
      containerStatuses: (pod.spec.containers ?? []).map((c: Any, i: number) => ({
        name: c.name, image: c.image, imageID: '', containerID: i === 0 ? containerID : '', ready: i === 0, started: i === 0, restartCount: 0,
        state: i === 0 ? { running: { startedAt: t } } : { waiting: { reason: 'ContainerCreating' } },
      })),
    };
    await api.request('PATCH', `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/status`, { status }, MERGE);
  }

  /**
   * The pod network's subnet is the podCIDR node IPAM gave this Node, as flannel writes
   * it for the bridge it delegates to (read now: it may have come after registration).
   * containerd reloads the conflist when it changes.
   */
  async function podNetworkOnCidr(): Promise<void> {
    const cidr = (await api.must('GET', `/api/v1/nodes/${node}`)).spec?.podCIDR as string | undefined;
    const text = readOr(CNI_CONFIG, '');
    if (!cidr || !text || text.includes(`"subnet":"${cidr}"`)) return;
    writeFileSync(CNI_CONFIG, text.replace(/"subnet":"[^"]*"/, `"subnet":"${cidr}"`));
    log(`pod network on ${cidr}`);
    await new Promise((r) => setTimeout(r, 500));
  }

  /** API pods bound here, as the watch last showed them (not the deleted ones): what the status worker keeps in sync. */
  const bound = new Map<string, Any>();
  /** The status this kubelet last posted per pod (times left out): a PATCH only when something changed. */
  const posted = new Map<string, string>();
  /** Pods this kubelet saw finish (Succeeded, Failed): never run again, whatever a late watch event says. */
  const terminal = new Set<string>();
  /**
   * Back-off per pod, as the kubelet's: a crashing container is restarted after 10 s,
   * then twice as long each time up to 5 min; a pod whose volumes or config are not
   * ready is tried again after 1 s, doubling up to 1 min.
   */
  const backoff = new Map<string, { at: number; delayMs: number }>();
  const waitOut = (uid: string) => (backoff.get(uid)?.at ?? 0) > Date.now();
  const backOff = (uid: string, firstMs: number, maxMs: number) => {
    const delayMs = Math.min(maxMs, backoff.has(uid) ? (backoff.get(uid) as { delayMs: number }).delayMs * 2 : firstMs);
    backoff.set(uid, { at: Date.now() + delayMs, delayMs });
  };
  const volumes = new VolumeManager(api, addr);

  /** A pod whose config or volumes are not ready: Pending, its reason and message in the container's waiting state. */
  async function notReady(pod: Any, e: unknown): Promise<void> {
    if (!(e instanceof MountError || e instanceof ContainerConfigError)) throw e;
    backOff(pod.metadata.uid, 1000, 60_000);
    await postStatus(pod, { phase: 'Pending', waiting: { reason: e instanceof MountError ? 'ContainerCreating' : 'CreateContainerConfigError', message: e.message } });
  }

  /**
   * Starts a bound pod (a relist of a running pod changes nothing); then its status.
   * A pod that finished is not run again, nor one whose containers ran under
   * restartPolicy Never (its sandbox is there, stopped).
   */
  async function start(pod: Any): Promise<void> {
    const uid = pod.metadata.uid as string;
    if (terminal.has(uid)) return;
    const rt = await getRuntime();
    const sandboxes = await rt.sandboxesOf(uid);
    const ready = sandboxes.some((s) => s.state === 'SANDBOX_READY');
    if (!ready && !(sandboxes.length && pod.spec.restartPolicy === 'Never')) {
      if (!pod.spec.hostNetwork) await podNetworkOnCidr();
      try {
        await rt.start(await toRun(api, volumes, pod, addr, await volumes.prepare(pod)));
      } catch (e) {
        return notReady(pod, e);
      }
      backoff.delete(uid);
      log(`started pod ${podKey(pod)} (${uid})`);
    }
    await syncStatus(pod);
  }

  /**
   * The pod's status from the runtime, as the kubelet's status manager computes it
   * (getPhase): each container's state, restart count and exit code; Succeeded or
   * Failed once every container has ended for good under its restartPolicy. A pod that
   * ended has its sandbox stopped before that status is posted, then its volumes
   * unmounted, as the kubelet does.
   */
  async function syncStatus(pod: Any, newest?: PodSandbox): Promise<void> {
    const rt = await getRuntime();
    const uid = pod.metadata.uid as string;
    const sandbox = newest ?? (await rt.sandboxesOf(uid)).pop();
    const all = sandbox ? await rt.cri.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } }) : [];
    const policy = pod.spec.restartPolicy ?? 'Always';
    const nanos = (n: number) => rfc3339(n / 1e6);
    const containers: Any[] = [];
    for (const c of (pod.spec.containers ?? []) as Any[]) {
      const last = byAttempt(all.filter((x) => x.metadata?.name === c.name)).pop();
      const st = last ? (await rt.cri.containerStatus(last.id)).status : undefined;
      const base = { name: c.name, image: c.image, imageID: st?.imageRef ?? '', containerID: st ? `containerd://${st.id}` : undefined, restartCount: last?.metadata?.attempt ?? 0 };
      if (st?.state === 'CONTAINER_RUNNING') containers.push({ ...base, ready: true, started: true, state: { running: { startedAt: nanos(st.startedAt) } } });
      else if (st?.state === 'CONTAINER_EXITED') {
        const reason = st.reason && st.reason !== 'Completed' && st.reason !== 'Error' ? st.reason : st.exitCode === 0 ? 'Completed' : 'Error';
        containers.push({ ...base, ready: false, started: false, state: { terminated: { exitCode: st.exitCode, reason, startedAt: nanos(st.startedAt), finishedAt: nanos(st.finishedAt), containerID: `containerd://${st.id}` } } });
      } else containers.push({ ...base, ready: false, started: false, state: { waiting: { reason: 'ContainerCreating' } } });
    }
    const ended = containers.filter((c) => c.state.terminated);
    const failed = ended.filter((c) => c.state.terminated.exitCode !== 0);
    let phase = 'Pending';
    if (containers.length && ended.length === containers.length && (policy === 'Never' || (policy === 'OnFailure' && !failed.length))) phase = failed.length ? 'Failed' : 'Succeeded';
    else if (containers.some((c) => c.state.running || c.state.terminated)) phase = 'Running';
    const ip = pod.spec.hostNetwork ? addr : sandbox ? (await rt.cri.podSandboxStatus(sandbox.id)).status.network?.ip || undefined : undefined;
    const terminalPhase = phase === 'Succeeded' || phase === 'Failed';
    // As the kubelet: a pod is reported terminal only once its sandbox is stopped (what
    // the kubelet owns, the pod's network among it, is released first), so a Job seen
    // complete leaves no network behind for an audit to find; volumes come after.
    const stopping = terminalPhase && sandbox?.state === 'SANDBOX_READY';
    if (stopping) await rt.cri.stopPodSandbox(sandbox.id);
    await postStatus(pod, { phase, containers, ...(ip ? { podIP: ip } : {}), ...(sandbox ? { startTime: nanos(sandbox.createdAt) } : {}) });
    if (terminalPhase) terminal.add(uid);
    if (stopping) {
      await rt.releaseVolumes(uid);
      log(`pod ${podKey(pod)} ${phase.toLowerCase()}: its sandbox stopped, then its status posted`);
    }
  }

  async function postStatus(pod: Any, s: { phase: string; containers?: Any[]; waiting?: Any; podIP?: string; startTime?: string }): Promise<void> {
    const uid = pod.metadata.uid as string;
    const containerStatuses = s.containers ?? (pod.spec.containers as Any[]).map((c) => ({ name: c.name, image: c.image, imageID: '', ready: false, started: false, restartCount: 0, state: { waiting: s.waiting } }));
    const allReady = s.phase === 'Running' && containerStatuses.every((c) => c.ready);
    const done = s.phase === 'Succeeded' || s.phase === 'Failed';
    const condition = (type: string, ok: boolean, reason?: string) => ({ type, status: ok ? 'True' : 'False', ...(reason ? { reason } : {}) });
    const podConditions = [
      condition('PodReadyToStartContainers', s.phase === 'Running'),
      condition('Initialized', true),
      condition('Ready', allReady, done ? 'PodCompleted' : allReady ? undefined : 'ContainersNotReady'),
      condition('ContainersReady', allReady, done ? 'PodCompleted' : allReady ? undefined : 'ContainersNotReady'),
      condition('PodScheduled', true),
    ];
    const status = { phase: s.phase, hostIP: addr, hostIPs: [{ ip: addr }], ...(s.podIP ? { podIP: s.podIP, podIPs: [{ ip: s.podIP }] } : {}), qosClass: QOS_CLASS[qosOf(pod)], containerStatuses, conditions: podConditions };
    const digest = JSON.stringify(status);
    if (posted.get(uid) === digest) return;
    const t = now();
    // A condition keeps the time it last changed; the pod keeps the time the kubelet first took it.
    const before = new Map(((pod.status?.conditions ?? []) as Any[]).map((c) => [c.type, c]));
    const r = await api.request('PATCH', `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/status`, {
      status: {
        ...status,
        startTime: pod.status?.startTime ?? s.startTime ?? t,
        conditions: podConditions.map((c) => ({ ...c, lastProbeTime: null, lastTransitionTime: before.get(c.type)?.status === c.status ? (before.get(c.type)?.lastTransitionTime ?? t) : t })),
      },
    }, MERGE);
    // Gone from the API without a delete this kubelet saw (an etcd restore): it keeps running, a phantom no status goes to.
    if (r.code === 404) bound.delete(uid);
    else if (r.code === 200 && bound.has(uid)) posted.set(uid, digest);
  }

  /**
   * The kubelet's pod workers and PLEG in one loop: every bound pod's containers are
   * restarted as its restartPolicy says (with back-off), a sandbox that died is
   * replaced, and the status follows what the runtime holds.
   */
  async function workPods(): Promise<void> {
    const rt = await getRuntime();
    for (const pod of bound.values()) {
      const uid = pod.metadata.uid as string;
      if (busy.has(uid) || terminal.has(uid) || ['Succeeded', 'Failed'].includes(pod.status?.phase)) continue;
      void serial(uid, async () => {
        const ready = (await rt.sandboxesOf(uid)).filter((s) => s.state === 'SANDBOX_READY').pop();
        if (!ready) return waitOut(uid) ? undefined : start(pod);
        const names = (pod.spec.containers as Any[]).map((c) => c.name as string);
        if (!waitOut(uid) && (await rt.toRestart(ready.id, names, pod.spec.restartPolicy)).length) {
          // Only now are the pod's config and volumes made again (a token requested, keys read).
          try {
            const did = await rt.sync(await toRun(api, volumes, pod, addr, await volumes.prepare(pod)));
            if (did) log(did);
            backOff(uid, 10_000, 300_000);
          } catch (e) {
            return notReady(pod, e);
          }
        }
        await syncStatus(pod, ready);
      });
    }
  }

  /** Stops a pod: containers, network, pod dir; then, for a graceful delete, finishes it. */
  async function stop(pod: Any, finish: boolean): Promise<void> {
    const uid = pod.metadata.uid as string;
    await (await getRuntime()).stop(uid, qosOf(pod));
    log(`stopped pod ${podKey(pod)} (${uid})`);
    if (finish) {
      // The terminal status first (killed: exit 137), as the kubelet posts it before the delete; a pod that had
      // finished keeps the status it finished with.
      if (!['Succeeded', 'Failed'].includes(pod.status?.phase)) await postKilled(pod);
      const r = await api.request('DELETE', `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`, {
        apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid },
      });
      if (r.code !== 200 && r.code !== 404 && r.code !== 409) throw new Error(`finishing the delete: ${r.code} ${r.body.message ?? ''}`);
    }
  }

  /** The status of a pod whose containers the kubelet killed (exit 137). */
  async function postKilled(pod: Any): Promise<void> {
    const t = now();
    const cond = (type: string, status: string) => ({ type, status, lastProbeTime: null, lastTransitionTime: t });
    await api.request('PATCH', `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/status`, {
      status: {
        phase: 'Failed',
        conditions: [cond('PodReadyToStartContainers', 'False'), cond('Initialized', 'True'), cond('Ready', 'False'), cond('ContainersReady', 'False'), cond('PodScheduled', 'True')],
        containerStatuses: (pod.spec.containers ?? []).map((c: Any) => ({
          name: c.name, image: c.image, imageID: '', ready: false, started: false, restartCount: 0,
          state: { terminated: { exitCode: 137, reason: 'Error', startedAt: pod.status?.startTime ?? t, finishedAt: t } },
        })),
      },
    }, MERGE);
  }

  const handle = (type: string, pod: Any) => {
    if (!pod?.metadata?.uid || isMirror(pod)) return;
    const key = pod.metadata.uid as string;
    if (type === 'DELETED' || pod.metadata.deletionTimestamp) {
      bound.delete(key);
      posted.delete(key);
      backoff.delete(key);
      if (type === 'DELETED') terminal.delete(key);
    } else bound.set(key, pod);
    if (type === 'DELETED') {
      if (!finished.delete(key)) void serial(key, () => stop(pod, false)); // deleted outright (grace 0, pod GC)
    } else if (pod.metadata.deletionTimestamp) {
      if (finished.has(key)) return;
      finished.add(key);
      // A failed stop (the API away) is tried again at the next event or relist.
      void serial(key, () => stop(pod, true).catch((e: unknown) => {
        finished.delete(key);
        throw e;
      }));
    }
    // A pod to run; on a (re)list also one the API says runs: a kubelet that starts again runs what is bound to it
    // (start() does nothing where the runtime has its sandbox ready).
    else if (!pod.status?.phase || pod.status.phase === 'Pending' || (type === 'ADDED' && pod.status.phase === 'Running')) void serial(key, () => start(pod));
  };

  /** List, then watch from the list's version; on any end, again (pods the list no longer has are left as they run). */
  async function syncPods(): Promise<void> {
    for (;;) {
      try {
        const list = await api.must('GET', `/api/v1/pods?fieldSelector=spec.nodeName=${node}`);
        for (const p of list.items) handle('ADDED', p);
        const w = api.watch(`/api/v1/pods?watch=true&fieldSelector=spec.nodeName=${node}&resourceVersion=${list.metadata.resourceVersion}&timeoutSeconds=300`, handle);
        await w.done;
      } catch (e) {
        log(`pod sync: ${(e as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  void (async () => {
    for (;;) {
      try {
        await register();
        break;
      } catch (e) {
        log(`${(e as Error).message}; retrying`);
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
    const every = (what: string, fn: () => Promise<void>, ms: number) => {
      let running = false;
      const tick = async () => {
        if (running) return;
        running = true;
        await fn().catch((e: unknown) => log(`${what}: ${(e as Error).message}`));
        running = false;
      };
      void tick();
      setInterval(() => void tick(), ms);
    };
    every('heartbeat', heartbeat, (LEASE_SECONDS * 1000) / 4);
    every('mirror pods', mirrors, 2000);
    every('pod workers', workPods, 2000);
    await syncPods();
  })();
}
