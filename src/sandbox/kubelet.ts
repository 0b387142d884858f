/**
 * The sandbox's kubelet stand-in. It does only what decom depends on the real
 * kubelet doing, with the real kubelet's side effects:
 *   - listens on 10250 (API) and 127.0.0.1:10248 (healthz);
 *   - runs every pod in /etc/kubernetes/manifests in containerd (k8s.io), via pod.sh;
 *   - restarts a pod's container when it is killed while the manifest is still there
 *     (kubeadm#2720: killing static pods under a running kubelet achieves nothing);
 *   - stops and removes a pod when its manifest disappears.
 * With `--kubeconfig FILE` (kubeadm's KUBELET_KUBECONFIG_ARGS) it is also a cluster
 * member: see kubelet-api.ts. Without, it runs standalone, as kubespray's leftovers do.
 * It runs on the node itself: no state outside containerd and /var/lib/kubelet.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { joinCluster } from './kubelet-api.js';

const MANIFESTS = process.env.KUBELET_MANIFESTS ?? '/etc/kubernetes/manifests';
const POD_SH = join(dirname(fileURLToPath(import.meta.url)), 'pod.sh');
const NODE = hostname();
const TICK_MS = 1000;

interface StaticPod {
  file: string;
  uid: string;
  name: string;
  namespace: string;
  container: string;
  command: string[];
  /** The manifest as parsed: what its mirror pod shows. */
  manifest: Record<string, unknown>;
}

process.title = 'kubelet'; // seen as the kubelet by ps, pgrep -x and /proc/PID/comm, like the real one

const log = (msg: string): void => {
  process.stdout.write(`kubelet-standin: ${msg}\n`);
};

const exec = (file: string, args: string[]): Promise<{ ok: boolean; out: string }> =>
  new Promise((resolve) =>
    execFile(file, args, { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ ok: !err, out: err ? String(stderr || err.message).trim() : stdout }),
    ),
  );

/** Parses one manifest; the pod UID is the hash of the file, as the kubelet's config.hash is. */
function readManifest(file: string): StaticPod | undefined {
  try {
    const text = readFileSync(file, 'utf8');
    const pod = parse(text) as {
      [k: string]: unknown;
      metadata?: { name?: string; namespace?: string };
      spec?: { containers?: { name?: string; command?: string[]; args?: string[] }[] };
    };
    const c = pod?.spec?.containers?.[0];
    if (!pod?.metadata?.name || !c?.name) throw new Error('no metadata.name or spec.containers[0].name');
    const dns1123 = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
    for (const n of [pod.metadata.name, c.name, pod.metadata.namespace ?? 'kube-system']) {
      if (!dns1123.test(n)) throw new Error(`"${n}" is not a valid Kubernetes name`);
    }
    const command = [...(c.command ?? []), ...(c.args ?? [])];
    return {
      file,
      uid: createHash('md5').update(text).digest('hex'),
      name: `${pod.metadata.name}-${NODE}`,
      namespace: pod.metadata.namespace ?? 'kube-system',
      container: c.name,
      command: command.length ? command : ['/bin/sleep', '2147483647'],
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

/** task id -> pid, as containerd reports it (PIDs are in this node's PID namespace). */
async function tasks(): Promise<Map<string, { pid: number; status: string }> | undefined> {
  const r = await exec('ctr', ['-n', 'k8s.io', 'task', 'ls']);
  if (!r.ok) return undefined;
  const m = new Map<string, { pid: number; status: string }>();
  for (const line of r.out.split('\n').slice(1)) {
    const [id, pid, status] = line.trim().split(/\s+/);
    if (id && pid) m.set(id, { pid: Number(pid), status: status ?? '' });
  }
  return m;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return pid > 0;
  } catch {
    return false;
  }
};

/** Pods this process started: uid -> the pids of its sandbox and container. */
const running = new Map<string, { pod: StaticPod; pids: number[] }>();

async function ids(pod: StaticPod): Promise<[string, string]> {
  const r = await exec('sh', [POD_SH, 'ids', pod.uid, pod.container]);
  const [sid = '', cid = ''] = r.out.trim().split(' ');
  return [sid, cid];
}

async function reconcile(): Promise<void> {
  const want = desired();
  const healthy = [...want.values()].every((p) => running.get(p.uid)?.pids.every(alive));
  const gone = [...running.keys()].some((uid) => !want.has(uid));
  if (healthy && !gone) return; // the common tick: no ctr call at all

  const t = await tasks();
  if (!t) {
    log('containerd is not answering; retrying');
    return;
  }
  for (const [uid, { pod }] of running) {
    if (want.has(uid)) continue;
    log(`manifest ${pod.file} removed: stopping ${pod.name}`);
    await exec('sh', [POD_SH, 'rm', uid, pod.container]);
    running.delete(uid);
  }
  for (const pod of want.values()) {
    const [sid, cid] = await ids(pod);
    const have = [t.get(sid), t.get(cid)];
    if (have.every((x) => x && x.status === 'RUNNING' && alive(x.pid))) {
      running.set(pod.uid, { pod, pids: have.map((x) => x!.pid) });
      continue;
    }
    if (!have[0] && !have[1]) {
      const containers = await exec('ctr', ['-n', 'k8s.io', 'container', 'ls', '-q']);
      if (containers.out.split('\n').includes(cid)) {
        await exec('sh', [POD_SH, 'rm', pod.uid, pod.container]); // stale containers from an earlier run
      }
      log(`starting static pod ${pod.name} (${pod.file})`);
      const r = await exec('sh', [POD_SH, 'run', pod.name, pod.namespace, pod.uid, 'host', pod.container, ...pod.command]);
      if (!r.ok) log(`could not start ${pod.name}: ${r.out}`);
    } else {
      // The sandbox or the container died under us: restart it, as the kubelet does.
      for (const [id, x] of [[sid, have[0]], [cid, have[1]]] as const) {
        if (x && x.status === 'RUNNING' && alive(x.pid)) continue;
        log(`restarting ${id === sid ? 'sandbox' : 'container'} of ${pod.name}`);
        await exec('ctr', ['-n', 'k8s.io', 'task', 'rm', '-f', id]);
        const r = await exec('ctr', ['-n', 'k8s.io', 'task', 'start', '-d', id]);
        if (!r.ok) log(`could not restart ${id}: ${r.out}`);
      }
    }
    mkdirSync(`/var/lib/kubelet/pods/${pod.uid}/containers/${pod.container}`, { recursive: true });
    const after = await tasks();
    const pids = [after?.get(sid)?.pid ?? 0, after?.get(cid)?.pid ?? 0];
    running.set(pod.uid, { pod, pids });
  }
}

createServer((_, res) => {
  res.writeHead(401).end('Unauthorized');
}).listen(10250, '0.0.0.0');
createServer((req, res) => {
  res.writeHead(req.url === '/healthz' ? 200 : 404).end(req.url === '/healthz' ? 'ok' : '');
}).listen(10248, '127.0.0.1');

let busy = false;
setInterval(() => {
  if (busy) return;
  busy = true;
  reconcile()
    .catch((e) => log(`reconcile failed: ${(e as Error).message}`))
    .finally(() => (busy = false));
}, TICK_MS);
log(`watching ${MANIFESTS} on ${NODE}`);

const args = process.argv.slice(2);
const flag = args.findIndex((a) => a === '--kubeconfig' || a.startsWith('--kubeconfig='));
const kubeconfig = flag < 0 ? undefined : (args[flag] as string).includes('=') ? (args[flag] as string).slice('--kubeconfig='.length) : args[flag + 1];
if (kubeconfig) {
  joinCluster({ node: NODE, kubeconfig, podSh: POD_SH, log, staticPods: () => [...desired().values()] });
}
