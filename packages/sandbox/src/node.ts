/** One sandbox node: booted in its own namespaces and cgroups with its containerd config, commands run inside it, and stopped. */
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, readFileSync, readdirSync, writeFileSync, writeSync } from 'node:fs';
import { createConnection } from 'node:net';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CGROUP_ROOT, PREFIX_LEN, SHARED_MOUNT, files } from './layout.js';
import { PAUSE_IMAGE } from './image.js';
import { run, runOk, type RunResult } from 'decom/run';
import type { NodeRuntime } from './runtimes.js';

/**
 * The checkout: bound read-only into every node, where the kubelet stand-in runs from
 * this package's dist and finds decom through the workspace's node_modules.
 */
export const CHECKOUT_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** The kubelet stand-in's entry, beside this module. */
export const KUBELET_JS = join(dirname(fileURLToPath(import.meta.url)), 'kubelet.js');
const NODE_INIT = join(dirname(fileURLToPath(import.meta.url)), 'node-init.sh');

export type Init = 'systemd' | 'none';

/**
 * Where a node's containerd keeps its root, state and socket: its defaults, or
 * moved elsewhere by a drop-in its config imports (`--containerd-paths moved`).
 */
export const CONTAINERD_PATHS = ['default', 'moved'] as const;
export type ContainerdPaths = (typeof CONTAINERD_PATHS)[number];
/** A moved node's paths, set in /etc/containerd/conf.d/10-paths.toml. */
export const MOVED_CONTAINERD = {
  root: '/var/lib/containerd-moved',
  state: '/run/containerd-moved',
  address: '/run/containerd-moved/containerd.sock',
} as const;

export interface NodeSpec {
  name: string;
  addr: string;
  init: Init;
  dir: string;
  /** Every node's name and address, for /etc/hosts. */
  peers: { name: string; addr: string }[];
  authorizedKey: string;
  /** The containerd (and CNI plugins) this node runs. */
  runtime: NodeRuntime;
  /** Where that containerd keeps its root, state and socket. */
  containerdPaths: ContainerdPaths;
  /** Its instance's bridge, which its eth0 (a macvlan) hangs off, and the cgroup its processes live below. */
  bridge: string;
  cgroup: string;
}

/** A running node: PID 1 of its namespaces as the host sees it, and that process's start time. */
export interface NodeHandle {
  pid: number;
  starttime: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Field 22 of /proc/PID/stat: tells a node's PID 1 from a later process that reused its PID. */
export function starttimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export const isAlive = (h: NodeHandle): boolean => starttimeOf(h.pid) === h.starttime;

/** Mounted hierarchies; co-mounted ones (cpu,cpuacct) also appear as symlinks (cpu, cpuacct): skip those. */
export const hierarchies = (): string[] =>
  readdirSync(CGROUP_ROOT, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(CGROUP_ROOT, e.name, 'cgroup.procs')))
    .map((e) => e.name);

/** Creates the node's cgroup in every hierarchy (cpuset needs its cpus/mems filled in at each level). */
function makeCgroups(cgroup: string, name: string): string[] {
  const procs: string[] = [];
  for (const h of hierarchies()) {
    let path = join(CGROUP_ROOT, h);
    for (const level of [cgroup, name]) {
      const parent = path;
      path = join(path, level);
      mkdirSync(path, { recursive: true });
      if (h === 'cpuset') {
        for (const f of ['cpuset.cpus', 'cpuset.mems']) {
          if (!readFileSync(join(path, f), 'utf8').trim()) writeFileSync(join(path, f), readFileSync(join(parent, f)));
        }
      }
    }
    procs.push(join(path, 'cgroup.procs'));
  }
  return procs;
}

function writeRootfs(spec: NodeSpec, hostKey: string): void {
  const root = join(spec.dir, 'rootfs');
  const put = (path: string, content: string, mode = 0o644) => {
    const full = join(root, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content, { mode });
    chmodSync(full, mode);
  };
  put('etc/hostname', `${spec.name}\n`);
  put('etc/machine-id', `${randomBytes(16).toString('hex')}\n`);
  put(
    'etc/hosts',
    ['127.0.0.1 localhost', `127.0.1.1 ${spec.name}`, ...spec.peers.map((p) => `${p.addr} ${p.name}`), ''].join('\n'),
  );
  put('root/.ssh/authorized_keys', spec.authorizedKey, 0o600);
  chmodSync(join(root, 'root', '.ssh'), 0o700);
  chmodSync(join(root, 'root'), 0o700);
  put('etc/ssh/ssh_host_ed25519_key', hostKey, 0o600);
  put(
    'etc/ssh/sshd_config.d/decom-sandbox.conf',
    [
      '# decom sandbox node: key-only root login, cheap key exchange, room for parallel channels',
      'HostKey /etc/ssh/ssh_host_ed25519_key',
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'UseDNS no',
      'PrintMotd no',
      'PrintLastLog no',
      'KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org',
      'MaxStartups 100:30:200',
      '',
    ].join('\n'),
  );
  put('etc/containerd/config.toml', containerdConfig(spec));
  if (spec.containerdPaths === 'moved') put('etc/containerd/conf.d/10-paths.toml', containerdPathsDropIn(spec));
  // As kubespray installs it: Restart=always brings a killed kubelet back after 10 s.
  put(
    'etc/systemd/system/kubelet.service',
    [
      '[Unit]',
      'Description=Kubernetes Kubelet Server (decom sandbox stand-in)',
      'After=containerd.service',
      'Wants=containerd.service',
      '',
      '[Service]',
      // kubeadm's drop-in sets KUBELET_KUBECONFIG_ARGS on a node that joined a cluster; unset, it runs standalone.
      `ExecStart=/usr/bin/node "${KUBELET_JS.replaceAll('%', '%%')}" $KUBELET_KUBECONFIG_ARGS`,
      'Restart=always',
      'RestartSec=10s',
      '',
      '[Install]',
      'WantedBy=multi-user.target',
      '',
    ].join('\n'),
  );
}

/**
 * containerd's config.toml as kubespray writes it for the node's version: `version = 3`
 * with containerd 2's plugin IDs (io.containerd.cri.v1.runtime and .images) for 2.x,
 * `version = 2` with the CRI plugin's single ID (io.containerd.grpc.v1.cri) for 1.x. The
 * values are what a node of this sandbox needs:
 * - the sandbox image: the locally built pause image (nothing is pulled);
 * - restrict_oom_score_adj: the nodes lack CAP_SYS_RESOURCE, and runc cannot lower the
 *   pause container's oom_score_adj without it (every RunPodSandbox would fail);
 * - the CNI plugins where Debian puts them; the pod network's conflist in /etc/cni/net.d;
 * - the kubelet's cgroup driver: systemd on systemd nodes (SystemdCgroup), cgroupfs otherwise;
 * - the metadata GC's pause_threshold: containerd re-checks whether its GC is due every
 *   (last GC time / pause_threshold), ~30 ms at the default 0.02; 50 nodes on two cores
 *   then spend ~0.3 core waking up. Deletions are collected ~1 s later instead.
 *
 * A node whose paths are moved gets, before the first table, `imports = ["conf.d/*.toml"]`
 * (containerd resolves a relative import against the importing file's dir, and globs it)
 * and no top-level root or state: the drop-in sets them (containerdPathsDropIn).
 */
export function containerdConfig(spec: Pick<NodeSpec, 'init' | 'runtime' | 'containerdPaths'>): string {
  const systemd = spec.init === 'systemd';
  const moved = spec.containerdPaths === 'moved';
  const imports = moved ? ['imports = ["conf.d/*.toml"]'] : [];
  const common = [
    '  [plugins."io.containerd.internal.v1.opt"]',
    '    path = "/var/lib/containerd/opt"',
    '  [plugins."io.containerd.gc.v1.scheduler"]',
    '    pause_threshold = 0.0005',
    '',
  ];
  if (spec.runtime.family === '2') {
    const rt = 'plugins."io.containerd.cri.v1.runtime"';
    const img = 'plugins."io.containerd.cri.v1.images"';
    return [
      'version = 3',
      ...(moved ? imports : ['root = "/var/lib/containerd"', 'state = "/run/containerd"']),
      '',
      '[plugins]',
      `  [${rt}]`,
      '    restrict_oom_score_adj = true',
      `    [${rt}.containerd]`,
      '      default_runtime_name = "runc"',
      `      [${rt}.containerd.runtimes.runc]`,
      '        runtime_type = "io.containerd.runc.v2"',
      `        [${rt}.containerd.runtimes.runc.options]`,
      `          SystemdCgroup = ${systemd}`,
      `    [${rt}.cni]`,
      // bin_dirs since 2.1; 2.0 reads only bin_dir.
      /^2\.0\./.test(spec.runtime.containerd) ? '      bin_dir = "/usr/lib/cni"' : '      bin_dirs = ["/usr/lib/cni"]',
      '      conf_dir = "/etc/cni/net.d"',
      `  [${img}]`,
      '    snapshotter = "overlayfs"',
      `    [${img}.pinned_images]`,
      `      sandbox = "${PAUSE_IMAGE}"`,
      ...common,
    ].join('\n');
  }
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return [
    'version = 2',
    ...imports,
    '',
    '[plugins]',
    `  [${cri}]`,
    `    sandbox_image = "${PAUSE_IMAGE}"`,
    '    restrict_oom_score_adj = true',
    `    [${cri}.cni]`,
    '      bin_dir = "/usr/lib/cni"',
    '      conf_dir = "/etc/cni/net.d"',
    `    [${cri}.containerd.runtimes.runc]`,
    '      runtime_type = "io.containerd.runc.v2"',
    `      [${cri}.containerd.runtimes.runc.options]`,
    `        SystemdCgroup = ${systemd}`,
    ...common,
  ].join('\n');
}

/**
 * A moved node's drop-in, in its config's schema version: containerd's root, state and
 * gRPC socket away from their defaults, as an administrator moves them to another disk.
 */
export function containerdPathsDropIn(spec: Pick<NodeSpec, 'runtime'>): string {
  return [
    `version = ${spec.runtime.family === '2' ? 3 : 2}`,
    `root = "${MOVED_CONTAINERD.root}"`,
    `state = "${MOVED_CONTAINERD.state}"`,
    '',
    '[grpc]',
    `  address = "${MOVED_CONTAINERD.address}"`,
    '',
  ].join('\n');
}

/** Runs a shell script inside the node (all its namespaces), as root. */
export function nodeExec(
  h: NodeHandle,
  script: string,
  opts: { env?: Record<string, string>; timeoutMs?: number; input?: string | Buffer } = {},
): Promise<RunResult> {
  const env = Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`);
  const timeoutMs = opts.timeoutMs ?? 120_000;
  return run(
    'nsenter',
    // nsenter forks for -p and does not pass signals on: the time limit is enforced inside the node.
    ['-t', String(h.pid), '-m', '-u', '-i', '-n', '-p', '-C', '--', 'timeout', '-k', '5', String(Math.ceil(timeoutMs / 1000)),
      'env', '-i', 'PATH=/usr/sbin:/usr/bin:/sbin:/bin', 'HOME=/root', ...env, 'sh', '-c', script, 'decom-node'],
    { timeoutMs: timeoutMs + 15_000, input: opts.input },
  );
}

/** Polls `probe` until it gives a value, or fails naming `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined> | T | undefined, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(intervalMs);
  }
}

const tcpOpen = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createConnection({ host, port, timeout: 500 });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
    s.once('timeout', () => (s.destroy(), resolve(false)));
  });

/**
 * Boots one node: namespaces via unshare, PID 1 = node-init.sh (then systemd or
 * tini), a macvlan made straight inside its netns, and waits until sshd answers
 * (and, with systemd, until the system is `running`).
 */
export async function startNode(spec: NodeSpec): Promise<NodeHandle & { state: string }> {
  mkdirSync(spec.dir, { recursive: true });
  const keyPath = join(spec.dir, 'host_key');
  if (!existsSync(keyPath)) await runOk('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', spec.name, '-f', keyPath]);
  writeRootfs(spec, readFileSync(keyPath, 'utf8'));
  const fifo = join(spec.dir, 'go.fifo');
  if (!existsSync(fifo)) await runOk('mkfifo', ['-m', '0600', fifo]);
  // The sandbox's shared storage (layout.ts SHARED_MOUNT), in the state dir the node's own dir is in (<state>/nodes/NAME).
  const sharedDir = files(dirname(dirname(spec.dir))).shared;
  mkdirSync(sharedDir, { recursive: true });
  chmodSync(sharedDir, 0o1777);

  const procs = makeCgroups(spec.cgroup, spec.name);
  const log = openSync(join(spec.dir, 'console.log'), 'w');
  // The wrapper joins the node's cgroups first, so the new cgroup namespace is rooted there.
  const child = spawn(
    '/bin/sh',
    [
      '-c',
      'for f in "$@"; do echo $$ > "$f"; done; exec unshare --net --mount --uts --ipc --pid --cgroup --fork --propagation private /bin/sh "$NODE_INIT_SCRIPT"',
      'decom-node',
      ...procs,
    ],
    {
      detached: true,
      stdio: ['ignore', log, log],
      env: {
        PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
        NODE_INIT_SCRIPT: NODE_INIT,
        NODE_NAME: spec.name,
        NODE_ADDR: `${spec.addr}/${PREFIX_LEN}`,
        NODE_INIT: spec.init,
        NODE_FILES: spec.dir,
        NODE_GO: fifo,
        CHECKOUT_DIR,
        NODE_BINDS: spec.runtime.binds.map((b) => `${b.source}|${b.target}`).join('\n'),
        // containerd's snapshotter cannot sit on the overlay: its moved root gets a tmpfs too.
        NODE_TMPFS: spec.containerdPaths === 'moved' ? MOVED_CONTAINERD.root : '',
        SHARED_DIR: sharedDir,
        SHARED_MOUNT,
      },
    },
  );
  child.unref();
  closeSync(log);
  const unsharePid = child.pid;
  if (!unsharePid) throw new Error(`${spec.name}: could not start unshare`);

  const pid = await waitFor(`${spec.name} to fork its PID 1`, 10_000, () => {
    if (starttimeOf(unsharePid) === undefined) throw new Error(`${spec.name}: unshare exited: ${consoleTail(spec)}`);
    try {
      const kids = readFileSync(`/proc/${unsharePid}/task/${unsharePid}/children`, 'utf8').trim();
      return kids ? Number(kids.split(' ')[0]) : undefined;
    } catch {
      return undefined;
    }
  });
  const handle = { pid, starttime: starttimeOf(pid) ?? '' };
  // The host-side unshare must not sit in the node's cgroup: systemd would adopt it.
  for (const h of hierarchies()) writeFileSync(join(CGROUP_ROOT, h, 'cgroup.procs'), String(unsharePid));
  await runOk('ip', ['link', 'add', 'name', 'eth0', 'link', spec.bridge, 'netns', String(pid), 'type', 'macvlan', 'mode', 'bridge']);
  await waitFor(`${spec.name} to take the go signal`, 10_000, () => {
    if (!isAlive(handle)) throw new Error(`${spec.name}: PID 1 exited before it started: ${consoleTail(spec)}`);
    try {
      // Non-blocking: ENXIO until node-init has the fifo open for reading.
      const fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      writeSync(fd, 'go\n');
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENXIO') return undefined;
      throw e;
    }
  });

  await waitFor(`sshd on ${spec.name} (${spec.addr}:22)`, 30_000, async () => {
    if (!isAlive(handle)) throw new Error(`${spec.name}: PID 1 exited during boot: ${consoleTail(spec)}`);
    return (await tcpOpen(spec.addr, 22)) ? true : undefined;
  });
  let state = 'running';
  if (spec.init === 'systemd') {
    const r = await nodeExec(handle, 'systemctl is-system-running --wait', { timeoutMs: 60_000 });
    state = r.stdout.trim() || 'unknown';
  }
  return { ...handle, state };
}

function consoleTail(spec: NodeSpec): string {
  try {
    return readFileSync(join(spec.dir, 'console.log'), 'utf8').trim().split('\n').slice(-3).join(' | ') || '(no output)';
  } catch {
    return '(no console log)';
  }
}

/** Kills a node's PID 1 (the kernel then kills its whole PID namespace) and waits for it. */
export async function stopNode(h: NodeHandle): Promise<void> {
  if (!isAlive(h)) return;
  process.kill(h.pid, 'SIGKILL');
  await waitFor(`PID ${h.pid} to exit`, 10_000, () => (isAlive(h) ? undefined : true));
}
