/**
 * The sandbox's kubelet stand-in. It does what decom depends on the real kubelet
 * doing, with the real kubelet's side effects, through containerd's CRI:
 *   - listens on 10250 (API) and 127.0.0.1:10248 (healthz);
 *   - makes the QoS cgroup tree of its cgroup driver when it starts;
 *   - runs every pod in /etc/kubernetes/manifests (kubelet-runtime.ts);
 *   - restarts a pod's container or sandbox when it dies while the manifest is still
 *     there (kubeadm#2720: killing static pods under a running kubelet achieves nothing);
 *   - stops and removes a static pod when its manifest disappears.
 * With `--kubeconfig FILE` (kubeadm's KUBELET_KUBECONFIG_ARGS) it is also a cluster
 * member: see kubelet-api.ts. Without, it runs standalone, as kubespray's leftovers do.
 * It keeps no state of its own: containerd's sandboxes (their labels and the
 * `kubernetes.io/config.source` annotation) say which pods it runs.
 *
 * `kubelet.js run-pod …` runs one pod through the same code and exits: the scenarios'
 * way to plant the pods a kubelet ran while it was a cluster member.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { parse } from 'yaml';
import { ApiClient } from './api/client.js';
import { joinCluster } from './kubelet-api.js';
import { containerLogs } from './kubelet-logs.js';
import { PodRuntime, dropRuntime, getRuntime, type PodToRun } from './kubelet-runtime.js';

const MANIFESTS = process.env.KUBELET_MANIFESTS ?? '/etc/kubernetes/manifests';
const NODE = hostname();
const TICK_MS = 1000;

/** A static pod: what its manifest asks for, and the manifest as parsed (what its mirror pod shows). */
export interface StaticPod extends PodToRun {
  file: string;
  manifest: Record<string, unknown>;
}

const log = (msg: string): void => {
  process.stdout.write(`kubelet-standin: ${msg}\n`);
};

/** Parses one manifest; the pod UID is the hash of the file, as the kubelet's config.hash is. */
function readManifest(file: string): StaticPod | undefined {
  try {
    const text = readFileSync(file, 'utf8');
    const pod = parse(text) as {
      [k: string]: unknown;
      metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
      spec?: { hostNetwork?: boolean; containers?: PodToRun['containers'] };
    };
    const containers = pod?.spec?.containers ?? [];
    if (!pod?.metadata?.name || !containers.length || !containers.every((c) => c?.name)) throw new Error('no metadata.name or spec.containers[].name');
    const dns1123 = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
    for (const n of [pod.metadata.name, ...containers.map((c) => c.name), pod.metadata.namespace ?? 'kube-system']) {
      if (!dns1123.test(n)) throw new Error(`"${n}" is not a valid Kubernetes name`);
    }
    const uid = createHash('md5').update(text).digest('hex');
    return {
      file,
      uid,
      name: `${pod.metadata.name}-${NODE}`,
      namespace: pod.metadata.namespace ?? 'kube-system',
      hostNetwork: pod.spec?.hostNetwork === true,
      labels: pod.metadata.labels ?? {},
      annotations: { ...pod.metadata.annotations, 'kubernetes.io/config.hash': uid, 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.seen': new Date().toISOString() },
      containers,
      manifest: pod,
    };
  } catch (e) {
    log(`skipping ${file}: ${(e as Error).message}`);
    return undefined;
  }
}

/** Cache by (mtime, size): the loop re-reads a manifest only when it changes. */
const cache = new Map<string, { key: string; pod: StaticPod | undefined }>();
function desired(): Map<string, StaticPod> {
  const out = new Map<string, StaticPod>();
  let names: string[] = [];
  try {
    names = readdirSync(MANIFESTS).filter((n) => /\.(ya?ml|json)$/.test(n) && !n.startsWith('.'));
  } catch {
    /* no manifests dir: no static pods */
  }
  for (const n of names) {
    const file = join(MANIFESTS, n);
    try {
      const st = statSync(file);
      const key = `${st.mtimeMs}:${st.size}`;
      let hit = cache.get(file);
      if (hit?.key !== key) cache.set(file, (hit = { key, pod: readManifest(file) }));
      if (hit.pod) out.set(hit.pod.uid, hit.pod);
    } catch {
      /* removed between readdir and stat */
    }
  }
  return out;
}

/** One pass of the static-pod sync loop: every manifest's pod running, every other file-sourced pod gone. */
let staticPodsSeen = true; // until the first look says otherwise
async function reconcile(): Promise<void> {
  const want = desired();
  // No manifest and no static pod running: nothing to ask the runtime this tick (a worker's common case).
  if (!want.size && !staticPodsSeen) return;
  const rt = await getRuntime();
  const sandboxes = await rt.cri.listPodSandbox();
  staticPodsSeen = sandboxes.some((s) => s.annotations['kubernetes.io/config.source'] === 'file');
  const containers = await rt.cri.listContainers();
  const running = new Set(containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => `${c.podSandboxId}/${c.metadata?.name}`));
  for (const pod of want.values()) {
    const ready = sandboxes.find((s) => s.labels['io.kubernetes.pod.uid'] === pod.uid && s.state === 'SANDBOX_READY');
    if (ready && pod.containers.every((c) => running.has(`${ready.id}/${c.name}`))) continue;
    const did = await rt.sync(pod).catch((e: unknown) => `could not start ${pod.name}: ${(e as Error).message}`);
    if (did) log(did);
  }
  const stale = new Set(
    sandboxes.filter((s) => s.annotations['kubernetes.io/config.source'] === 'file' && !want.has(s.labels['io.kubernetes.pod.uid'] ?? '')).map((s) => s.labels['io.kubernetes.pod.uid'] ?? ''),
  );
  for (const uid of stale) {
    log(`manifest of static pod ${uid} removed: stopping it`);
    await rt.stop(uid);
  }
}

/** `run-pod NAME NAMESPACE CONTAINER [--host-network] [--host-port PORT] [--memory-volume NAME:PATH] [--label K=V] -- CMD...` */
async function runPod(args: string[]): Promise<void> {
  const dash = args.indexOf('--');
  const [name, namespace, container, ...flags] = dash < 0 ? args : args.slice(0, dash);
  const command = dash < 0 ? ['/bin/sleep', '2147483647'] : args.slice(dash + 1);
  if (!name || !namespace || !container) throw new Error('usage: run-pod NAME NAMESPACE CONTAINER [--host-network] [--host-port PORT] [--memory-volume NAME:PATH] [--label K=V] -- CMD...');
  const opt = (f: string) => flags.flatMap((x, i) => (x === f && flags[i + 1] ? [flags[i + 1] as string] : []));
  const volumes = opt('--memory-volume').map((v) => v.split(':') as [string, string]);
  const hostPorts = opt('--host-port').map(Number);
  const pod: PodToRun = {
    uid: randomUUID(),
    name,
    namespace,
    hostNetwork: flags.includes('--host-network'),
    labels: Object.fromEntries(opt('--label').map((l) => l.split('=', 2) as [string, string])),
    annotations: { 'kubernetes.io/config.source': 'api', 'kubernetes.io/config.seen': new Date().toISOString() },
    volumes: volumes.map(([n]) => ({ name: n, emptyDir: { medium: 'Memory' } })),
    containers: [
      {
        name: container,
        image: 'registry.k8s.io/busybox:sandbox',
        command,
        ports: hostPorts.map((p) => ({ containerPort: p, hostPort: p })),
        volumeMounts: volumes.map(([n, path]) => ({ name: n, mountPath: path })),
      },
    ],
  };
  const rt = await PodRuntime.connect();
  try {
    await rt.ensureQosTree();
    const s = await rt.start(pod);
    // What the scenarios read: uid, sandbox id, netns name (or "host"), pod IP (or "-").
    process.stdout.write(`${pod.uid} ${s.sandboxId} ${s.netns ? s.netns.slice(s.netns.lastIndexOf('/') + 1) : 'host'} ${s.podIP ?? '-'}\n`);
  } finally {
    await rt.close();
  }
}

function serve(): void {
  process.title = 'kubelet'; // seen as the kubelet by ps, pgrep -x and /proc/PID/comm, like the real one
  const args = process.argv.slice(2);
  const flag = args.findIndex((a) => a === '--kubeconfig' || a.startsWith('--kubeconfig='));
  const kubeconfig = flag < 0 ? undefined : (args[flag] as string).includes('=') ? (args[flag] as string).slice('--kubeconfig='.length) : args[flag + 1];
  // The API server reads container logs here with the cluster's token (the kubelet's own, in the sandbox).
  const client = kubeconfig ? ApiClient.fromKubeconfig(kubeconfig) : undefined;
  createServer((req, res) => {
    containerLogs(req, res, (header) => client?.authorizes(header) ?? false)
      .then((served) => served || res.writeHead(401).end('Unauthorized'))
      .catch((e: unknown) => res.writeHead(500).end((e as Error).message));
  }).listen(10250, '0.0.0.0');
  createServer((req, res) => {
    res.writeHead(req.url === '/healthz' ? 200 : 404).end(req.url === '/healthz' ? 'ok' : '');
  }).listen(10248, '127.0.0.1');

  let busy = false;
  let down = false;
  setInterval(() => {
    if (busy) return;
    busy = true;
    reconcile()
      .then(() => {
        if (down) log('container runtime is answering again');
        down = false;
      })
      .catch((e: unknown) => {
        // containerd stopped or restarted: a new connection next time.
        dropRuntime();
        if (!down) log(`container runtime: ${(e as Error).message}; retrying`);
        down = true;
      })
      .finally(() => (busy = false));
  }, TICK_MS);
  log(`watching ${MANIFESTS} on ${NODE}`);

  if (kubeconfig) joinCluster({ node: NODE, kubeconfig, log, staticPods: () => [...desired().values()] });
}

if (process.argv[2] === 'run-pod') {
  runPod(process.argv.slice(3)).catch((e: unknown) => {
    process.stderr.write(`run-pod: ${(e as Error).message}\n`);
    process.exit(1);
  });
} else {
  serve();
}
