// The sandbox as the tests drive it: the built decom CLI, `sandbox up` and `down` of the test
// worker's own instance, SSH to a node with the sandbox's key and pinned host key, listening
// ports and mount targets parsed, and a snapshot of what the sandbox could leave on the host.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { RANGE_PREFIX, RUN_ROOT, instance } from '../../../sandbox/src/layout.js';

/** decom's package (its dist, deploy, inventory, test fixtures), and the checkout holding both packages. */
export const ROOT = join(import.meta.dirname, '..', '..');
export const CHECKOUT = join(ROOT, '..', '..');
export const CLI = join(ROOT, 'dist', 'cli.js');

// Each test file has a sandbox instance of its own, named by its vitest worker: w1, w2, …, so
// two files can run side by side. VITEST_WORKER_ID, which vitest numbers anew for every
// file's worker: VITEST_POOL_ID is 1 in both workers of the node project whenever the unit
// project (four workers) runs in the same vitest run (vitest 4.1, seen in this suite), so
// two files took the same sandbox. Whatever the shell exported is overridden, for the same
// reason. Set here, it reaches every decom and decom-sandbox command the test starts.
// DECOM_TEST_INSTANCE_PREFIX (a few letters) sets two test runs of one machine apart: a, b…
// give aw1, bw1… (docs/development.md).
const prefix = process.env.DECOM_TEST_INSTANCE_PREFIX ?? '';
if (!/^[a-z]{0,3}$/.test(prefix)) throw new Error(`DECOM_TEST_INSTANCE_PREFIX ${JSON.stringify(prefix)}: up to three lower-case letters`);
if (process.env.VITEST_WORKER_ID) process.env.DECOM_SANDBOX_INSTANCE = `${prefix}w${process.env.VITEST_WORKER_ID}`;
/** The test worker's sandbox: its name, state dir and host-side names (packages/sandbox/src/layout.ts). */
export const INSTANCE = instance();
export const STATE_DIR = INSTANCE.dir;

/**
 * Runs `fn` against another instance: the helpers below (nodes, ssh) and the decom
 * commands it starts then act on that one. For the tests of instances side by side.
 */
export function inInstance<T>(name: string, fn: () => T): T {
  const saved = process.env.DECOM_SANDBOX_INSTANCE;
  process.env.DECOM_SANDBOX_INSTANCE = name;
  try {
    return fn();
  } finally {
    if (saved === undefined) delete process.env.DECOM_SANDBOX_INSTANCE;
    else process.env.DECOM_SANDBOX_INSTANCE = saved;
  }
}
/** The state dir of the instance the helpers act on now (the worker's own, unless inInstance). */
const stateDirNow = (): string => instance().dir;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the built `decom` binary, as a user would. Bad input (exit 2) must say so in one
 * line on stderr, whatever the test checks besides: every exit-2 case of every test holds
 * decom to it.
 */
export function decom(args: string[], opts: { wrap?: string[]; env?: NodeJS.ProcessEnv; cwd?: string } = {}): CliResult {
  const [file, ...rest] = [...(opts.wrap ?? []), process.execPath, CLI, ...args];
  const r = spawnSync(file as string, rest, { encoding: 'utf8', env: { ...process.env, ...opts.env }, timeout: 280_000, ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  if (r.status === 2 && r.stderr.trimEnd().split('\n').length !== 1) {
    throw new Error(`decom ${args.join(' ')}: exit 2 must be one line on stderr, got:\n${r.stderr}`);
  }
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export function up(args: string[]): void {
  const r = decom(['sandbox', 'up', ...args]);
  if (r.code !== 0) throw new Error(`sandbox up ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
}

export function down(): void {
  const r = decom(['sandbox', 'down']);
  if (r.code !== 0) throw new Error(`sandbox down failed (${r.code}): ${r.stderr}`);
}

interface StateNode {
  name: string;
  addr: string;
  pid: number;
  roles: string[];
  init: 'systemd' | 'none';
  /** The scenario planted on it. */
  scenario?: string;
}
export const nodes = (): StateNode[] => JSON.parse(readFileSync(join(stateDirNow(), 'state.json'), 'utf8')).nodes;

/** A node's address in the worker's instance, from its state.json. */
export function addrOf(node: string): string {
  const n = nodes().find((x) => x.name === node);
  if (!n) throw new Error(`no node ${node}`);
  return n.addr;
}

/** An address of the instance's subnet by its host part: one no node holds, for a gone host or a route's gateway. */
export const subnetAddr = (host: number): string => `${addrOf('node1').replace(/\.\d+$/, '')}.${host}`;

/** ssh's arguments for a command on a node: the sandbox's key and pinned host key, as root. */
export function sshArgv(node: string, command: string): string[] {
  const n = nodes().find((x) => x.name === node);
  if (!n) throw new Error(`no node ${node}`);
  return ['-i', join(stateDirNow(), 'id_ed25519'), '-o', `UserKnownHostsFile=${join(stateDirNow(), 'known_hosts')}`, '-o', 'StrictHostKeyChecking=yes', '-o', 'BatchMode=yes', `root@${n.addr}`, command];
}

/** Runs a command on a node over its real sshd, with the sandbox's key and pinned host key. */
export function ssh(node: string, command: string): string {
  const r = spawnSync('ssh', sshArgv(node, command), { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`ssh ${node} ${command}: exit ${r.status}: ${r.stderr}`);
  return r.stdout;
}

const sh = (cmd: string): string => execFileSync('sh', ['-c', cmd], { encoding: 'utf8' });

/** Listening TCP sockets as "addr:port", from `ss`. */
export const listening = (out: string): string[] =>
  out.split('\n').filter(Boolean).map((l) => l.trim().split(/\s+/)[3] ?? '');
export const ports = (out: string): number[] => [...new Set(listening(out).map((a) => Number(a.slice(a.lastIndexOf(':') + 1))))];

/** Mount targets from a mountinfo text, octal escapes decoded. */
export const mountTargets = (mountinfo: string): string[] =>
  mountinfo
    .split('\n')
    .filter(Boolean)
    .map((l) => (l.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));

function cgroupDirs(): string[] {
  const out: string[] = [];
  const walk = (d: string, depth: number) => {
    out.push(d);
    if (depth === 0) return;
    for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(join(d, e.name), depth - 1);
  };
  for (const h of readdirSync('/sys/fs/cgroup')) walk(join('/sys/fs/cgroup', h), 3);
  return out.sort();
}

const SANDBOX_PROGRAMS = /^(sshd|containerd|containerd-shim|containerd-shim-runc-v2|runc|etcd|dockerd|tini|httpd|systemd|systemd-journal|dbus-daemon|node-init\.sh)$/;

/** What the sandbox could leave on the host: compared before `up` and after `down`. */
export function hostSnapshot() {
  const procs = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map((p) => {
      try {
        return `${readFileSync(`/proc/${p}/comm`, 'utf8').trim()}`;
      } catch {
        return '';
      }
    })
    .filter((c) => SANDBOX_PROGRAMS.test(c))
    .sort();
  return {
    links: sh("ip -o link | awk -F': ' '{print $2}' | sed 's/@.*//'").split('\n').filter(Boolean).sort(),
    netns: sh('ip netns list').split('\n').filter(Boolean).sort(),
    mounts: mountTargets(readFileSync('/proc/self/mountinfo', 'utf8')).sort(),
    cgroups: cgroupDirs(),
    iptablesNft: sh("iptables-save 2>/dev/null | grep -v '^#' || true"),
    iptablesLegacy: sh("iptables-legacy-save 2>/dev/null | grep -v '^#' || true"),
    nft: sh('nft list ruleset 2>/dev/null || true'),
    listening: ports(sh('ss -Hltn')).sort(),
    neighbours: sh(`ip neigh show | grep '^${RANGE_PREFIX.replaceAll('.', '\\.')}' || true`),
    processes: procs,
    stateDir: existsSync(RUN_ROOT),
    inotifyInstances: readFileSync('/proc/sys/fs/inotify/max_user_instances', 'utf8').trim(),
  };
}
