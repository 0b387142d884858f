import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ssh, STATE_DIR } from './sandbox.js';

/** The sandbox API's kubeconfig, as `up` writes it. */
export const KUBECONFIG = join(STATE_DIR, 'kubeconfig');

/** Real kubectl against the sandbox API. */
export function kubectl(...args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync('kubectl', args, { encoding: 'utf8', env: { ...process.env, KUBECONFIG }, timeout: 60_000 });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

/** kubectl that must succeed: its stdout. */
export function ok(...args: string[]): string {
  const r = kubectl(...args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: exit ${r.code}: ${r.err}`);
  return r.out;
}

/** Fails the test file at once, saying why, when real kubectl is not on PATH. */
export function requireKubectl(): void {
  if (spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status !== 0) {
    throw new Error('these tests need real kubectl (v1.32) on PATH: it is on the project machine image, and cannot be installed from the reachable registries');
  }
}

/** Blocks for `seconds` (the tests are synchronous; kubectl is a child process). */
export const sleep = (seconds: number): void => void spawnSync('sleep', [String(seconds)]);

/** The pods whose containers exist on a node, one name per container, read over SSH with ctr (never from the API). */
export const containersOn = (node: string): string[] =>
  ssh(node, `for id in $(ctr -n k8s.io c ls -q 'labels."io.cri-containerd.kind"==container'); do ctr -n k8s.io c info "$id" | sed -n 's/.*"io.kubernetes.pod.name": "\\([^"]*\\)".*/\\1/p' | head -1; done`)
    .split('\n')
    .filter(Boolean)
    .sort();
/** DaemonSet pods (the scenarios' calico-node and kube-proxy) left out. */
export const notDaemonSet = (names: string[]) => names.filter((n) => !/^(calico-node|kube-proxy)-/.test(n));
/** The workloads whose containers exist on a node: containersOn without the DaemonSet pods. */
export const workloadsOn = (node: string): string[] => notDaemonSet(containersOn(node));
