/** Scripts run inside a sandbox node after lib.sh: how scenarios (and etcd and Services) are planted on a node. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KUBELET_JS, MOVED_CONTAINERD, nodeExec } from '../node.js';
import { subnetPrefix } from '../layout.js';
import type { SandboxNode, SandboxState } from '../types.js';
import { needsApi, type ScenarioName } from './catalog.js';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Runs `body` inside a node after lib.sh, with the node's facts in the environment:
 * the one way the sandbox changes what is on a node (scenarios, etcd, Services).
 * A node whose containerd paths are moved gets them too: ctr honours CONTAINERD_ADDRESS,
 * and lib.sh's wipes and configs read the three. Only this shell and what it starts
 * see them: never sshd or a login, where decom must find the paths in containerd's config.
 */
export async function runNodeScript(
  node: SandboxNode,
  state: SandboxState,
  what: string,
  body: string,
  input?: Buffer,
  extraEnv: Record<string, string> = {},
): Promise<string> {
  const script = `${readFileSync(join(here, 'lib.sh'), 'utf8')}\n${body}`;
  const r = await nodeExec(node, script, {
    input,
    timeoutMs: 180_000,
    env: {
      NODE_NAME: node.name,
      NODE_ADDR: node.addr,
      // Its instance's /24, "198.18.S.": the gateways of the routes scenarios plant sit in it.
      SUBNET_PREFIX: subnetPrefix(state.subnet ?? 0),
      NODE_INDEX: String(state.nodes.indexOf(node) + 1),
      ROLES: node.roles.join(','),
      INIT: node.init,
      REAL_ETCD: state.etcd && node.roles.includes('etcd') ? '1' : '0',
      KUBELET_JS,
      ...(node.containerdPaths === 'moved'
        ? { CONTAINERD_ADDRESS: MOVED_CONTAINERD.address, CONTAINERD_ROOT: MOVED_CONTAINERD.root, CONTAINERD_STATE: MOVED_CONTAINERD.state }
        : {}),
      ...extraEnv,
    },
  });
  if (r.code !== 0) {
    const why = r.stderr.trim().split('\n').slice(-4).join(' | ');
    throw new Error(`${node.name}: ${what} failed (exit ${r.code}): ${why}`);
  }
  return r.stdout;
}

/**
 * `image` is the busybox image tar, fed to the node on stdin (lib.sh imports it).
 * `member`: what a node that joins the sandbox's API needs (every node of an API
 * scenario; with no scenario named, a node that only joins).
 */
export async function plantScenario(name: ScenarioName | null, node: SandboxNode, state: SandboxState, image: Buffer, member?: Join): Promise<void> {
  const file = name === null || needsApi(name) ? 'cluster' : name;
  const body = readFileSync(join(here, `${file}.sh`), 'utf8');
  const env: Record<string, string> = member ? { API_KUBECONFIG: Buffer.from(member.kubeconfig).toString('base64'), NODE_LEASE_SECONDS: String(member.leaseSeconds) } : {};
  await runNodeScript(node, state, name ? `planting scenario ${name}` : 'joining the cluster', body, image, env);
}

export interface Join {
  /** The kubelet's kubeconfig for the sandbox's API. */
  kubeconfig: string;
  /** The kubelet's nodeLeaseDurationSeconds: it renews at a quarter of it. */
  leaseSeconds: number;
}
