// Test homes for the reach tests (test/reach/): ssh, Ansible and decom run as the operator
// would, but with a home of the test's own. ssh reads ~/.ssh from the passwd home, not $HOME, so
// each run gets a mount namespace of its own where the test home is bound over the passwd home,
// HOME is the test home, and no agent or ANSIBLE_* of the caller's is seen. Ansible's ssh control
// masters are closed by their sockets when the test ends. `collected` gathers a spawned child's
// output for these runs and for the terminal's (terminal.ts).
import { spawn, spawnSync, type ChildProcess, type ChildProcessByStdio } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { CHECKOUT, CLI } from './sandbox.js';

export interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}
export const shown = (o: Outcome) => `exit ${o.code}\nstdout: ${o.stdout}\nstderr: ${o.stderr}`;

/** A test home: `home` holds .ssh (known_hosts and the set-up's files); `dir`, its parent, the set-up's own files and the runs' cwd. */
export interface Home {
  dir: string;
  home: string;
}

/** The home ssh reads ~/.ssh from (getpwuid's, whatever $HOME says): each run's namespace binds the test home over it. */
const PASSWD_HOME = userInfo().homedir;
const under = (path: string, dir: string) => resolve(path).startsWith(`${resolve(dir).replace(/\/$/, '')}/`);

export interface InHomeOptions {
  /** Called with the child once it is spawned: its pid is the program's own (unshare and sh exec it). */
  onSpawn?: (child: ChildProcess) => void;
  /** Leave the child's stdin open, for the caller to write (it ends it). Default: ended at once. */
  keepStdin?: boolean;
  /** Each chunk the program prints on stdout, as it comes. */
  onStdout?: (chunk: string) => void;
  /** Killed (SIGTERM) after this long. Default 200 s. */
  timeoutMs?: number;
}

/**
 * Runs `argv` with `h` as the home of ssh, Ansible and decom: in a private mount namespace where
 * h.home is bound over the passwd home, HOME=h.home (Ansible's ~/.ansible, decom's ~/.ssh, ~/.kube,
 * ~/.local/state), no agent, no ANSIBLE_* or KUBECONFIG of the caller's. Never rejects.
 */
export function inHome(h: Home, argv: string[], opts: InHomeOptions = {}): Promise<Outcome> {
  if (under(h.dir, PASSWD_HOME)) throw new Error(`${h.dir} is under ${PASSWD_HOME}, which the test home hides in each run: make it elsewhere`);
  // What the bind hides but the run needs (the checkout, node itself, when under the passwd
  // home: a clone in /root) is seen again at its own path, bound back from a view of the real home.
  const keep = [CHECKOUT, dirname(process.execPath)].filter((p) => under(p, PASSWD_HOME)).map((p) => relative(PASSWD_HOME, p));
  const view = join(h.dir, '.passwd-home');
  mkdirSync(view, { recursive: true });
  const script =
    'home=$1 passwd=$2 view=$3 n=$4; shift 4; mount --bind "$passwd" "$view" && mount --bind "$home" "$passwd" || exit 125; ' +
    'while [ "$n" -gt 0 ]; do mkdir -p "$passwd/$1" && mount --bind "$view/$1" "$passwd/$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"';
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: h.home };
  for (const k of Object.keys(env)) if (/^(ANSIBLE_|SSH_AUTH_SOCK$|SSH_AGENT_PID$|KUBECONFIG$)/.test(k)) delete env[k];
  const child = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', h.home, PASSWD_HOME, view, String(keep.length), ...keep, ...argv], {
    cwd: h.dir,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return collected(child, opts);
}

/** What a child spawned with three pipes prints, until it ends: its stdout and stderr, `opts` as inHome's. Never rejects. */
export function collected(child: ChildProcessByStdio<Writable, Readable, Readable>, opts: InHomeOptions = {}): Promise<Outcome> {
  return new Promise((done) => {
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      stdout += s;
      opts.onStdout?.(s);
    });
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.stdin.on('error', () => undefined); // a program that exits before reading it
    const timer = setTimeout(() => child.kill('SIGTERM'), opts.timeoutMs ?? 200_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      done({ code: -1, stdout, stderr: `${stderr}${e.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code: code ?? -1, stdout, stderr: signal ? `${stderr}killed by ${signal}` : stderr });
    });
    opts.onSpawn?.(child);
    if (!opts.keepStdin) child.stdin.end();
  });
}

/** `ansible -i INVENTORY HOST -m raw -a true` in the home: Ansible's judgement of whether the host is reached. */
export const ansible = (h: Home, inventory: string, host: string, extra: string[] = []) => inHome(h, ['ansible', '-i', inventory, host, '-m', 'raw', '-a', 'true', ...extra]);
/** The built decom CLI in the home. */
export const decomIn = (h: Home, args: string[], opts: InHomeOptions = {}) => inHome(h, [process.execPath, CLI, ...args], opts);

/**
 * The test homes of a file, under `dir`: make(name) writes dir/name/home/.ssh with known_hosts
 * (the given text) and `files` (mode 600, folders made); `all` lists every home made, for
 * closeControlMasters at the end.
 */
export function homes(dir: string, defaultKnownHosts: () => string) {
  const all: Home[] = [];
  const make = (name: string, files: Record<string, string> = {}, knownHosts = defaultKnownHosts()): Home => {
    const h = { dir: join(dir, name), home: join(dir, name, 'home') };
    mkdirSync(join(h.home, '.ssh'), { recursive: true, mode: 0o700 });
    writeFileSync(join(h.home, '.ssh', 'known_hosts'), knownHosts, { mode: 0o600 });
    for (const [f, text] of Object.entries(files)) {
      mkdirSync(join(h.home, '.ssh', f, '..'), { recursive: true, mode: 0o700 });
      writeFileSync(join(h.home, '.ssh', f), text, { mode: 0o600 });
    }
    all.push(h);
    return h;
  };
  return { make, all };
}

/** Writes a set-up's file beside its home (dir/name, folders made); returns its path. */
export function write(h: Home, name: string, text: string): string {
  mkdirSync(join(h.dir, name, '..'), { recursive: true });
  writeFileSync(join(h.dir, name), text);
  return join(h.dir, name);
}

/**
 * Closes the ssh control masters (Ansible's ControlPersist) left under a home's ~/.ansible/cp, each
 * by its socket, and waits until none answers: a master exits, and removes its socket, a moment
 * after `-O exit` returns.
 */
export async function closeControlMasters(home: string): Promise<void> {
  const cp = join(home, '.ansible', 'cp');
  if (!existsSync(cp)) return;
  const control = (sock: string, command: 'exit' | 'check') =>
    spawnSync('ssh', ['-o', `ControlPath=${join(cp, sock)}`, '-O', command, '127.0.0.1'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
  for (const sock of readdirSync(cp)) control(sock, 'exit');
  for (let waited = 0; waited < 5_000; waited += 100) {
    if (!readdirSync(cp).some((sock) => existsSync(join(cp, sock)) && control(sock, 'check'))) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`ssh control masters still listening in ${cp}: ${readdirSync(cp).join(', ')}`);
}
