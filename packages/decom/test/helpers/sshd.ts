/**
 * Real OpenSSH sshd processes for the transport tests: each on 127.0.0.1 and a
 * free high port, with its own temp dir, config, host keys and authorized_keys.
 * Everything started here is stopped by PID in stopAllSshd(); nothing is
 * killed by name.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { join } from 'node:path';
import { TransportError, type SshTarget } from '../../src/transport/types.js';
import { tempDir } from './temp.js';

export type HostKeyType = 'ed25519' | 'ecdsa' | 'rsa';

export interface Sshd {
  port: number;
  pid: number;
  dir: string;
  /** Public host key files by type, e.g. hostKeys.ed25519 = ".../ssh_host_ed25519_key.pub". */
  hostKeys: Partial<Record<HostKeyType, string>>;
  /** sshd's own log (-e), for failure messages. */
  log(): string;
  stop(): Promise<void>;
}

export interface SshdOptions {
  /** Host key types, in the order sshd is given them. Default ['ed25519']. */
  hostKeyTypes?: HostKeyType[];
  /** Public keys (contents of .pub files) allowed to log in. */
  authorizedKeys: string[];
  /** Extra sshd_config lines (e.g. "AllowTcpForwarding yes"). */
  extraConfig?: string[];
  /** Environment of the sessions (sshd's SetEnv), e.g. { PATH: "..." }. */
  env?: Record<string, string>;
}

const PRIVSEP_DIR = '/run/sshd';
let createdPrivsepDir = false;
const started = new Set<Sshd>();
export { tempDir };

/** Runs a program without a shell and returns its stdout; throws with stderr on failure. */
export function sh(file: string, args: string[], input?: string): string {
  const r = spawnSync(file, args, { encoding: 'utf8', input });
  if (r.status !== 0) throw new Error(`${file} ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** Makes a key pair; returns the private key path (the public key is path + ".pub"). */
export function makeKey(dir: string, name: string, type: HostKeyType = 'ed25519', passphrase = ''): string {
  const path = join(dir, name);
  sh('ssh-keygen', ['-q', '-t', type, ...(type === 'rsa' ? ['-b', '2048'] : []), '-N', passphrase, '-C', name, '-f', path]);
  return path;
}

/** A port nobody listens on right now (the kernel picks it, we release it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** Resolves once something on 127.0.0.1:port sends an SSH banner. */
async function waitForBanner(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`sshd exited ${child.exitCode}: ${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.setTimeout(1000, () => (s.destroy(), resolve(false)));
      s.once('data', (d) => (s.destroy(), resolve(d.toString().startsWith('SSH-2.0-'))));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`sshd on port ${port} did not answer: ${log()}`);
}

export async function startSshd(opts: SshdOptions): Promise<Sshd> {
  if (!existsSync(PRIVSEP_DIR)) {
    mkdirSync(PRIVSEP_DIR, { mode: 0o755 });
    createdPrivsepDir = true;
  }
  const dir = tempDir('decom-sshd-');
  const hostKeys: Partial<Record<HostKeyType, string>> = {};
  // sshd keeps the FIRST value of a keyword: the caller's lines go first to override the defaults below.
  const common: string[] = [...(opts.extraConfig ?? [])];
  // Sessions get the temp dir as HOME, so the login shell does not source this
  // machine's ~/.bashrc (here it runs pyenv, ~100 ms and stderr noise per command).
  // One SetEnv line: sshd ignores any after the first.
  const env = { HOME: dir, ...opts.env };
  common.push(`SetEnv ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  for (const type of opts.hostKeyTypes ?? ['ed25519']) {
    const key = makeKey(dir, `ssh_host_${type}_key`, type);
    hostKeys[type] = `${key}.pub`;
    common.push(`HostKey ${key}`);
  }
  writeFileSync(join(dir, 'authorized_keys'), opts.authorizedKeys.map((k) => k.trim()).join('\n') + '\n');
  common.push(
    `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
    'PidFile none',
    'UsePAM no',
    'PermitRootLogin prohibit-password',
    'StrictModes no',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'LogLevel VERBOSE',
  );
  const config = join(dir, 'sshd_config');

  // The free port may be taken between our probe and sshd's bind: try again then.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    writeFileSync(config, [`ListenAddress 127.0.0.1:${port}`, ...common].join('\n') + '\n');
    const child = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let logText = '';
    child.stderr!.on('data', (b: Buffer) => (logText += b.toString()));
    const log = () => logText;
    try {
      await waitForBanner(port, child, log);
    } catch (e) {
      if (child.exitCode === null) child.kill('SIGKILL');
      if (attempt < 3 && /Address already in use/.test(logText)) continue;
      throw e;
    }
    return track(child, port, dir, hostKeys, log);
  }
}

function track(child: ChildProcess, port: number, dir: string, hostKeys: Sshd['hostKeys'], log: () => string): Sshd {
  const sshd: Sshd = {
    port,
    pid: child.pid!,
    dir,
    hostKeys,
    log,
    stop: async () => {
      started.delete(sshd);
      // Per-connection sshd processes (and their commands) first, so the listener
      // reaps them; then the listener itself.
      for (const pid of descendants(child.pid!)) killQuietly(pid, 'SIGKILL');
      for (let i = 0; i < 40 && child.exitCode === null && descendants(child.pid!).length > 0; i++) {
        await new Promise((r) => setTimeout(r, 25));
      }
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
  started.add(sshd);
  return sshd;
}

/** PIDs of every process below `pid` (children, grandchildren, ...). */
export function descendants(pid: number): number[] {
  const table = sh('ps', ['-e', '-o', 'pid=,ppid='])
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number) as [number, number]);
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [c, pp] of table) if (pp === p) (out.push(c), walk(c));
  };
  walk(pid);
  return out;
}

export function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** The "SHA256:..." field of `ssh-keygen -lf FILE -E sha256`. */
export function fingerprintOf(pubFile: string): string {
  return sh('ssh-keygen', ['-lf', pubFile, '-E', 'sha256']).split(' ')[1]!;
}

/** "type base64" of a .pub file (without the comment). */
export function keyOf(pubFile: string): string {
  return readFileSync(pubFile, 'utf8').trim().split(' ').slice(0, 2).join(' ');
}

export async function stopAllSshd(): Promise<void> {
  for (const s of [...started]) await s.stop();
  // Only if this run made it, and no other sshd of this mount namespace (say, a
  // second test run) still needs it for its next connection.
  if (createdPrivsepDir && !otherSshdRunning()) rmSync(PRIVSEP_DIR, { recursive: true, force: true });
  createdPrivsepDir = false;
}

function otherSshdRunning(): boolean {
  const myMounts = readlinkSync('/proc/self/ns/mnt');
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .some((p) => {
      try {
        return readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'sshd' && readlinkSync(`/proc/${p}/ns/mnt`) === myMounts;
      } catch {
        return false; // gone meanwhile
      }
    });
}

/** A known_hosts file holding exactly these lines. */
export function knownHostsWith(...lines: string[]): string {
  const file = join(tempDir('decom-kh-'), 'known_hosts');
  writeFileSync(file, lines.map((l) => `${l}\n`).join(''));
  return file;
}

/** The known_hosts line of an sshd's host key of `type`. */
export const entryFor = (s: Sshd, type: HostKeyType = 'ed25519') => `[127.0.0.1]:${s.port} ${keyOf(s.hostKeys[type]!)}`;

/** The target of an sshd: root with `key`, its key known (a known_hosts of its own), strict, 5 s to connect. */
export function targetOf(s: Sshd, key: string, over: Partial<SshTarget> = {}): SshTarget {
  return {
    name: 'n1',
    address: '127.0.0.1',
    port: s.port,
    user: 'root',
    privateKeyFile: key,
    become: false,
    becomeUser: 'root',
    knownHostsFile: knownHostsWith(entryFor(s)),
    strictHostKeyChecking: 'yes',
    proxyJump: [],
    connectTimeoutSec: 5,
    ...over,
  };
}

/** The TransportError a promise rejects with (fails the test if it resolves). */
export async function failure(p: Promise<unknown>): Promise<TransportError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof TransportError)) throw new Error(`expected a TransportError, got ${String(e)}`);
  return e;
}
