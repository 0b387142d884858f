/** Where the sandbox keeps its state, and the names and addresses of the host objects it owns (bridge, links, subnet, cgroup). */
import { join } from 'node:path';
import { inputError } from 'decom/errors';

/**
 * Where a sandbox keeps its state and which host objects it owns. Everything the
 * sandbox makes on the host is named here, so `down` can find it again by name even
 * when state.json was lost.
 */
export const DEFAULT_STATE_DIR = '/run/decom/sandbox';

/**
 * `down` removes this folder, so it must be one decom can own: absolute, not /,
 * and plain characters only (it ends up in overlay mount options and ssh args).
 */
export function stateDir(): string {
  const dir = process.env.DECOM_SANDBOX_DIR || DEFAULT_STATE_DIR;
  if (!/^\/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$/.test(dir) || dir.split('/').includes('..')) {
    throw inputError(`DECOM_SANDBOX_DIR must be an absolute path of letters, digits, ".", "_", "-" and "/" (not "/"), got "${dir}"`);
  }
  return dir;
}

export const files = (dir = stateDir()) => ({
  dir,
  state: join(dir, 'state.json'),
  key: join(dir, 'id_ed25519'),
  knownHosts: join(dir, 'known_hosts'),
  inventory: join(dir, 'hosts.yaml'),
  image: join(dir, 'busybox-oci.tar'),
  node: (name: string) => join(dir, 'nodes', name),
  shared: join(dir, 'shared'),
});

/**
 * One directory of this machine bind-mounted into every node at the same path, as an
 * NFS export is mounted on every node of a cluster: the storage behind the sandbox's
 * ReadWriteMany PersistentVolumes (hostPath volumes below it), so pods on different
 * nodes see the same files. World-writable with the sticky bit, as a scratch export is.
 */
export const SHARED_MOUNT = '/srv/sandbox-shared';

/** Host side of the sandbox network: a port-less bridge carrying only macvlans. */
export const BRIDGE = 'decom-sb0';
export const HOST_LINK = 'decom-sbh';
/** RFC 2544 benchmarking range: never routed, and it never leaves this machine. */
export const SUBNET_PREFIX = '198.18.0.';
export const PREFIX_LEN = 24;
export const HOST_ADDR = `${SUBNET_PREFIX}1`;
export const MAX_NODES = 200;
export const nodeAddr = (index: number): string => `${SUBNET_PREFIX}${10 + index}`;

/** Every node's processes live below this cgroup, in every hierarchy. */
export const CGROUP = 'decom-sandbox';
export const CGROUP_ROOT = '/sys/fs/cgroup';
