// Real kubectl against the sandbox API for the tests (its kubeconfig as `up` writes it, the
// tests' own kubectl and the machine image's), and the pods whose containers are on a node,
// read over SSH with ctr.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, ssh, STATE_DIR } from './sandbox.js';

/** The sandbox API's kubeconfig, as `up` writes it. */
export const KUBECONFIG = join(STATE_DIR, 'kubeconfig');

/**
 * The tests' kubectl: the newest Debian ships (1.36), unpacked into the runtime cache by
 * scripts/setup; the sandbox says where (`decom sandbox versions --which kubectl`).
 */
export const KUBECTL: string = (() => {
  const r = spawnSync(process.execPath, [CLI, 'sandbox', 'versions', '--which', 'kubectl'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : '';
})();
/** The kubectl the machine image has (1.32): the sandbox API must keep serving it too. */
export const MACHINE_KUBECTL = '/usr/bin/kubectl';

/** Real kubectl against the sandbox API (`bin`: another kubectl than the tests' own). */
export function kubectlWith(bin: string, ...args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(bin, args, { encoding: 'utf8', env: { ...process.env, KUBECONFIG }, timeout: 60_000 });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}
export const kubectl = (...args: string[]) => kubectlWith(KUBECTL, ...args);

/** kubectl that must succeed: its stdout. */
export function ok(...args: string[]): string {
  const r = kubectl(...args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: exit ${r.code}: ${r.err}`);
  return r.out;
}

/** Fails the test file at once, saying why, when the tests' kubectl was not fetched. */
export function requireKubectl(): void {
  if (!KUBECTL || spawnSync(KUBECTL, ['version', '--client'], { encoding: 'utf8' }).status !== 0) {
    throw new Error('these tests need kubectl from Debian testing in the runtime cache: run ./scripts/setup (it fetches it)');
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

/** `kubectl apply` of a YAML text, written as NAME.yaml into `dir` first (kubectl reads a file): a test's own `apply`. */
export const applyIn = (dir: string) => (name: string, yaml: string): string => {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, yaml);
  return ok('apply', '-f', file);
};
