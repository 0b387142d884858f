/**
 * The kubelet's /containerLogs endpoint, which the API server's `pods/log` reads for
 * `kubectl logs`: the container's CRI log file (/var/log/pods/NS_POD_UID/NAME/N.log,
 * N the restart count), its lines in the CRI format `TIME STREAM P|F TEXT` given back
 * as the text the container wrote (`timestamps` keeps the time; P is a partial line).
 */
import { readFileSync, readdirSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRuntime } from './kubelet-runtime.js';

/** CRI log lines as the container wrote them. */
export function criLogText(file: string, opts: { timestamps?: boolean; tailLines?: number } = {}): string {
  const lines: string[] = [];
  let partial = '';
  for (const raw of file.split('\n')) {
    const m = /^(\S+) (stdout|stderr) ([PF]) ?(.*)$/.exec(raw);
    if (!m) continue;
    const text = partial + (m[4] ?? '');
    if (m[3] === 'P') {
      partial = text;
      continue;
    }
    partial = '';
    lines.push(opts.timestamps ? `${m[1]} ${text}` : text);
  }
  const kept = opts.tailLines !== undefined && opts.tailLines >= 0 ? lines.slice(Math.max(0, lines.length - opts.tailLines)) : lines;
  return kept.map((l) => `${l}\n`).join('');
}

/** Serves GET /containerLogs/NS/POD/CONTAINER to a caller `authorized` admits; false for any other path. */
export async function containerLogs(req: IncomingMessage, res: ServerResponse, authorized: (header: string | undefined) => boolean): Promise<boolean> {
  const url = new URL(req.url ?? '/', 'http://kubelet');
  const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
  if (!m) return false;
  if (!authorized(req.headers.authorization)) {
    res.writeHead(401).end('Unauthorized');
    return true;
  }
  const [ns, pod, container] = m.slice(1).map(decodeURIComponent) as [string, string, string];
  const sandboxes = await (await getRuntime()).cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.name': pod, 'io.kubernetes.pod.namespace': ns } });
  const uid = sandboxes.sort((a, b) => a.createdAt - b.createdAt).pop()?.labels['io.kubernetes.pod.uid'];
  const dir = `/var/log/pods/${ns}_${pod}_${uid}/${container}`;
  let attempts: number[] = [];
  try {
    attempts = readdirSync(dir).map((n) => /^(\d+)\.log$/.exec(n)?.[1]).filter((n): n is string => n !== undefined).map(Number).sort((a, b) => a - b);
  } catch {
    /* no such pod or container here */
  }
  const previous = url.searchParams.get('previous') === 'true';
  const attempt = attempts[attempts.length - (previous ? 2 : 1)];
  if (!uid || attempt === undefined) {
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end(previous ? `previous terminated container "${container}" in pod "${pod}" not found` : `container "${container}" in pod "${pod}" is waiting to start: ContainerCreating`);
    return true;
  }
  const tail = url.searchParams.get('tailLines');
  const text = criLogText(readFileSync(`${dir}/${attempt}.log`, 'utf8'), { timestamps: url.searchParams.get('timestamps') === 'true', ...(tail !== null ? { tailLines: Number(tail) } : {}) });
  res.writeHead(200, { 'Content-Type': 'text/plain' }).end(text);
  return true;
}
