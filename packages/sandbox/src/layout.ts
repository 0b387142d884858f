/**
 * Where a sandbox keeps its state, and the names and addresses of the host objects it
 * owns (bridge, links, subnet, cgroup): one set per instance, so several sandboxes can
 * run side by side on one machine.
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, rmdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { inputError } from 'decom/errors';

/** Everything every instance keeps on the host sits below this folder. */
export const RUN_ROOT = '/run/decom';
export const DEFAULT_STATE_DIR = join(RUN_ROOT, 'sandbox');

/**
 * An instance's name: lower-case letters and digits, at most 7, so its host-side link
 * names stay within the kernel's 15 characters (`decom-h-NAME`).
 */
const INSTANCE_NAME = /^[a-z0-9]{1,7}$/;

/**
 * The instance asked for: `--instance NAME`, else DECOM_SANDBOX_INSTANCE, else the
 * default instance (null), which keeps the names and paths of a single sandbox.
 */
export function instanceName(flag?: string): string | null {
  const name = flag ?? process.env.DECOM_SANDBOX_INSTANCE ?? '';
  if (name === '' || name === 'default') return null;
  if (!INSTANCE_NAME.test(name)) {
    const from = flag !== undefined ? '--instance' : 'DECOM_SANDBOX_INSTANCE';
    throw inputError(`${from} must be 1 to 7 lower-case letters or digits (or "default"), got "${name}"`);
  }
  return name;
}

/** The host objects one instance owns, all found again by name when its state.json is lost. */
export interface Instance {
  /** null for the default instance. */
  name: string | null;
  /** Its state: /run/decom/sandbox (default) or /run/decom/sandbox-NAME; DECOM_SANDBOX_DIR (-NAME) moves it. */
  dir: string;
  /** Host side of its network: a port-less bridge carrying only macvlans, and the host's own macvlan on it. */
  bridge: string;
  hostLink: string;
  /** Every node's processes live below this cgroup, in every hierarchy. */
  cgroup: string;
}

export function instance(name: string | null = instanceName()): Instance {
  const dir = stateDir(name);
  if (name === null) return { name, dir, bridge: 'decom-sb0', hostLink: 'decom-sbh', cgroup: 'decom-sandbox' };
  return { name, dir, bridge: `decom-b-${name}`, hostLink: `decom-h-${name}`, cgroup: `decom-sandbox-${name}` };
}

/**
 * `down` removes this folder, so it must be one decom can own: absolute, not /,
 * and plain characters only (it ends up in overlay mount options and ssh args).
 */
export function stateDir(name: string | null = instanceName()): string {
  const base = process.env.DECOM_SANDBOX_DIR || DEFAULT_STATE_DIR;
  const dir = name === null ? base : `${base}-${name}`;
  if (!/^\/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$/.test(dir) || dir.split('/').includes('..')) {
    throw inputError(`DECOM_SANDBOX_DIR must be an absolute path of letters, digits, ".", "_", "-" and "/" (not "/"), got "${base}"`);
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

/**
 * RFC 2544 benchmarking range: never routed, and it never leaves this machine. Each
 * instance has a /24 of it, 198.18.S.0: S is 0 for the default instance, and a slot
 * from 1 to 254 claimed by a named one (claimSubnet).
 */
export const RANGE_PREFIX = '198.18.';
export const PREFIX_LEN = 24;
export const subnetPrefix = (slot: number): string => `${RANGE_PREFIX}${slot}.`;
export const hostAddr = (slot: number): string => `${subnetPrefix(slot)}1`;
export const MAX_NODES = 200;
export const nodeAddr = (slot: number, index: number): string => `${subnetPrefix(slot)}${10 + index}`;

/**
 * Which named instance holds which subnet: one file per slot, made with O_EXCL so two
 * `up`s started at the same moment never take the same one.
 */
const SUBNETS = join(RUN_ROOT, 'subnets');
const MAX_SLOT = 254;

/** The subnet slot of an instance: 0 for the default one; a named one keeps its slot, or claims the lowest free. */
export function claimSubnet(name: string | null): number {
  if (name === null) return 0;
  const held = subnetSlotOf(name);
  if (held !== undefined) return held;
  for (let slot = 1; slot <= MAX_SLOT; slot++) {
    let fd: number | undefined;
    // The folder goes with the last slot released: another instance's `down` may remove it between our mkdir and open.
    for (let attempt = 0; fd === undefined; attempt++) {
      mkdirSync(SUBNETS, { recursive: true, mode: 0o700 });
      try {
        fd = openSync(join(SUBNETS, String(slot)), 'wx', 0o600);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') break;
        if (code !== 'ENOENT' || attempt >= 5) throw e;
      }
    }
    if (fd === undefined) continue;
    writeSync(fd, `${name}\n`);
    closeSync(fd);
    return slot;
  }
  throw inputError(`every sandbox subnet (198.18.1.0/24 to 198.18.${MAX_SLOT}.0/24) is held by an instance: \`decom sandbox down --all\` frees them`);
}

/** The slots and the instances holding them. */
export function subnetSlots(): { slot: number; name: string }[] {
  if (!existsSync(SUBNETS)) return [];
  return readdirSync(SUBNETS)
    .filter((f) => /^\d+$/.test(f))
    .map((f) => {
      let name = '';
      try {
        name = readFileSync(join(SUBNETS, f), 'utf8').trim();
      } catch {
        /* released meanwhile */
      }
      return { slot: Number(f), name };
    })
    .filter((s) => s.name !== '');
}

export const subnetSlotOf = (name: string): number | undefined => subnetSlots().find((s) => s.name === name)?.slot;

/** `down --all`, every instance down: every slot file, even one a crash left without its name. */
export function releaseAllSubnets(): void {
  rmSync(SUBNETS, { recursive: true, force: true });
}

/** Gives an instance's slot back; the folder and /run/decom go with the last one. */
export function releaseSubnet(name: string | null): void {
  if (name === null) return;
  for (const s of subnetSlots()) if (s.name === name) rmSync(join(SUBNETS, String(s.slot)), { force: true });
  removeIfEmpty(SUBNETS);
}

/** Removes a folder only when nothing is left in it (another instance's files keep it). */
export function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    /* not empty, or already gone */
  }
}

export const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * Every named instance anything of is left on the host: state dirs, subnet slots,
 * host links and cgroups, so `down --all` finds one whose state.json is gone.
 */
export function instancesOnHost(links: string[]): string[] {
  const names = new Set<string>();
  const add = (n: string | undefined) => n && INSTANCE_NAME.test(n) && names.add(n);
  if (existsSync(RUN_ROOT)) for (const d of readdirSync(RUN_ROOT)) add(/^sandbox-(.+)$/.exec(d)?.[1]);
  for (const s of subnetSlots()) add(s.name);
  for (const l of links) add(/^decom-[bh]-(.+)$/.exec(l)?.[1]);
  if (existsSync(CGROUP_ROOT)) {
    for (const h of readdirSync(CGROUP_ROOT)) {
      try {
        for (const d of readdirSync(join(CGROUP_ROOT, h))) add(/^decom-sandbox-(.+)$/.exec(d)?.[1]);
      } catch {
        /* a co-mounted hierarchy's symlink, or not a folder */
      }
    }
  }
  return [...names].sort();
}
