/**
 * The transport (src/transport) against real OpenSSH sshd processes on 127.0.0.1 (started
 * here, stopped by PID in afterAll): ssh2 and the system's ssh (the OpenSSH transport),
 * and the local transport, against the same scripts.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectSsh, localTransport, type SshTarget, type Transport } from './index.js';
import { shQuote } from '../util/run.js';
import { unixConnectAddress } from './command.js';
import { connectOpenSsh } from './openssh.js';
import {
  descendants,
  entryFor,
  failure,
  fingerprintOf,
  freePort,
  keyOf,
  knownHostsWith,
  killQuietly,
  makeKey,
  sh,
  startSshd,
  stopAllSshd,
  targetOf,
  tempDir,
  type Sshd,
} from '../../test/helpers/sshd.js';

let dir: string;
let clientKey: string; // authorized on every sshd below
let otherKey: string; // authorized nowhere
let main: Sshd; // plain node: ed25519 host key
let savedEnv: { HOME?: string; SSH_AUTH_SOCK?: string };
const open: Transport[] = [];

beforeAll(async () => {
  dir = tempDir();
  clientKey = makeKey(dir, 'id_client');
  otherKey = makeKey(dir, 'id_other');
  main = await startSshd({ authorizedKeys: [readFileSync(`${clientKey}.pub`, 'utf8')] });
  // Keys and known_hosts of the person running the tests must play no part.
  savedEnv = { HOME: process.env.HOME, SSH_AUTH_SOCK: process.env.SSH_AUTH_SOCK };
  process.env.HOME = tempDir('decom-home-');
  delete process.env.SSH_AUTH_SOCK;
});

afterEach(async () => {
  for (const t of open.splice(0)) await t.close();
});

afterAll(async () => {
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await stopAllSshd();
});

const knownHosts = knownHostsWith;
const targetFor = (s: Sshd, over: Partial<SshTarget> = {}): SshTarget => targetOf(s, clientKey, over);

async function connect(...args: Parameters<typeof connectSsh>): Promise<Transport> {
  const t = await connectSsh(...args);
  open.push(t);
  return t;
}

const since = (t0: number) => (Date.now() - t0) / 1000;

/** Polls until `ok()` holds (10 s at most). */
async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  if (!ok()) throw new Error('condition not reached in 10 s');
}

/** Established TCP connections whose local port is `port` (the sshd's side). */
const establishedTo = (port: number) => sh('ss', ['-Htn', 'state', 'established', `( sport = :${port} )`]).split('\n').filter(Boolean);

/** Same behaviour over SSH and locally: the contract of exec(). */
const transports: Array<[string, () => Promise<Transport>]> = [
  ['ssh', () => connectSsh(targetFor(main))],
  ['openssh', () => connectOpenSsh(targetFor(main))],
  ['local', async () => localTransport('n1')],
];

/** The same, with a cap of 1 MiB on one exec's answer (--max-output 1). */
const capped: Array<[string, () => Promise<Transport>]> = [
  ['ssh', () => connectSsh(targetFor(main), { maxOutputMiB: 1 })],
  ['openssh', () => connectOpenSsh(targetFor(main), { maxOutputMiB: 1 })],
  ['local', async () => localTransport('n1', undefined, 1)],
];

describe.each(capped)('--max-output over %s', (kind, make) => {
  let t: Transport;
  beforeAll(async () => {
    t = await make();
  });
  afterAll(async () => t.close());

  it('stops reading past it: one line, step output, and the command that kept writing is gone; the next exec is served', async () => {
    const pidFile = join(dir, `yes-${kind}.pid`);
    const t0 = Date.now();
    const e = await failure(t.exec(`echo $$ > ${pidFile}; exec yes`, { timeoutSec: 30 }));
    expect(since(t0)).toBeLessThan(5);
    expect(e.step).toBe('output');
    expect(e.message).toMatch(/^n1: output: output of 1\.\d MiB exceeds --max-output 1 MiB; [^\n]*$/);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await until(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    // Up to the cap, stdout and stderr together, the answer is whole.
    const r = await t.exec('head -c 1000000 /dev/zero; head -c 48000 /dev/zero >&2');
    expect([r.stdout.length, r.stderr.length]).toEqual([1_000_000, 48_000]);
    expect((await failure(t.exec('head -c 1000000 /dev/zero; head -c 48577 /dev/zero >&2'))).step).toBe('output');
  });
});

describe.each(transports)('exec over %s', (_kind, make) => {
  let t: Transport;
  beforeAll(async () => {
    t = await make();
  });
  afterAll(async () => t.close());

  it('returns stdout, stderr and the exit code', async () => {
    expect(await t.exec('echo out; echo err >&2; exit 3')).toEqual({ code: 3, stdout: 'out\n', stderr: 'err\n' });
    expect(await t.exec('true')).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('feeds stdin, text or binary', async () => {
    expect((await t.exec('cat', { stdin: 'line 1\nline 2\n' })).stdout).toBe('line 1\nline 2\n');
    const blob = randomBytes(1 << 20);
    const r = await t.exec('sha256sum', { stdin: blob });
    expect(r.stdout).toBe(`${createHash('sha256').update(blob).digest('hex')}  -\n`);
  });

  it('runs the script literally, on /bin/sh (dash): no quoting leaks, no injection', async () => {
    const pwned = join(dir, `pwned-${randomBytes(4).toString('hex')}`);
    const hostile = `n1;touch ${pwned}`;
    const script = [
      `printf '%s\\n' ${shQuote(hostile)}`,
      `echo "it's" 'a "b"'; echo '$(touch ${pwned})' \`echo x\``,
      'a=1; b="x  y"; echo "$a $b"',
      'readlink /proc/$$/exe',
    ].join('\n');
    const r = await t.exec(script);
    expect(r).toEqual({ code: 0, stdout: `${hostile}\nit's a "b"\n$(touch ${pwned}) x\n1 x  y\n/usr/bin/dash\n`, stderr: '' });
    expect(existsSync(pwned)).toBe(false);
  });

  it('decodes UTF-8 only at the end, so characters split across packets survive', async () => {
    const text = `a${'é€😀'.repeat(30_000)}`; // ~270 KB, odd offset: many chunk boundaries fall mid-character
    const r = await t.exec('cat; cat >&2 < /dev/null; printf "%s" "$(printf "\\342\\202\\254")" >&2', { stdin: text });
    expect(r.stdout).toBe(text);
    expect(r.stderr).toBe('€');
  });

  it('enforces the timeout on the node: code 124, and the command is gone', async () => {
    const pidFile = join(dir, `sleep-${_kind}.pid`);
    const t0 = Date.now();
    const r = await t.exec(`echo $$ > ${pidFile}; exec sleep 30`, { timeoutSec: 1 });
    expect(r.code).toBe(124);
    expect(since(t0)).toBeLessThan(5);
    expect(() => process.kill(Number(readFileSync(pidFile, 'utf8')), 0)).toThrow(/ESRCH/);
  });

  it('runs sudo-less when asked for sudo as root already', async () => {
    expect(await t.exec('id -un', { sudo: true })).toEqual({ code: 0, stdout: 'root\n', stderr: '' });
  });

  it('refuses a timeout that is not a positive number', async () => {
    const e = await failure(t.exec('true', { timeoutSec: 0 }));
    expect(e.message).toBe('n1: exec: timeoutSec must be a positive number, got 0');
  });

  it('refuses a socket path that would put socat options into its address, naming the path in one line', async () => {
    // A node's containerd config names the socket: ",fork" or ":…" would be read by socat as options.
    for (const path of ['/run/containerd/containerd.sock,fork', '/run/x.sock:y', 'run/containerd.sock', '/run/../tmp/x.sock', '/run/a b.sock', '/run/x\n.sock']) {
      const e = await failure(t.openUnixSocket(path, { sudo: true }));
      expect(e.message).toBe(`n1: exec: socket path ${JSON.stringify(path)} refused: not an absolute path of letters, digits and ._/- without ..`);
    }
    expect(unixConnectAddress('n1', '/run/containerd/containerd.sock')).toBe('UNIX-CONNECT:/run/containerd/containerd.sock');
  });

  it('reports death by signal as 128 + the signal number', async () => {
    expect((await t.exec('kill -KILL $$')).code).toBe(137);
  });

  it('returns when the script exits even if a background process keeps its stdout open', async () => {
    const t0 = Date.now();
    const r = await t.exec('sleep 20 & echo $!');
    expect(since(t0)).toBeLessThan(5);
    expect(r.code).toBe(0);
    killQuietly(Number(r.stdout.trim()), 'SIGKILL');
  });
});

describe('one connection, a bounded number of channels', () => {
  it('reuses one SSH connection for every exec, negotiated with curve25519', async () => {
    const s = await startSshd({ authorizedKeys: [readFileSync(`${clientKey}.pub`, 'utf8')], extraConfig: ['LogLevel DEBUG1'] });
    const t = await connect(targetFor(s));
    for (let i = 0; i < 10; i++) expect((await t.exec(`echo ${i}`)).stdout).toBe(`${i}\n`);
    await Promise.all(Array.from({ length: 6 }, (_, i) => t.exec(`echo ${i}`)));
    expect(establishedTo(s.port)).toHaveLength(1);
    expect(s.log().match(/Accepted publickey/g)).toHaveLength(1);
    // sshd's session processes write the log themselves: under load the last line can land just after its answer.
    const sessions = () => s.log().match(/Starting session: command/g)?.length ?? 0;
    for (let i = 0; i < 40 && sessions() < 16; i++) await new Promise((r) => setTimeout(r, 50));
    expect(sessions()).toBe(16);
    expect(s.log().match(/kex: algorithm: \S+/g)).toEqual(['kex: algorithm: curve25519-sha256']);
  });

  it.each([4, 2])('never runs more than maxChannels=%i commands at once, and queues the rest', async (max) => {
    const work = tempDir('decom-cap-');
    // Each exec counts itself in under flock (logging the count it saw), waits until
    // `max` are in (or 3 s), then counts itself out. Without the cap, counts pass `max`.
    const script = [
      `cd ${work}`,
      `count() { cat count 2>/dev/null || echo 0; }`,
      `flock lock sh -c 'n=$(( $(cat count 2>/dev/null || echo 0) + 1 )); echo $n > count.new; mv count.new count; echo $n >> seen'`,
      `i=0; while [ "$(count)" -lt ${max} ] && [ $i -lt 60 ]; do sleep 0.05; i=$((i + 1)); done`,
      'sleep 0.2',
      `flock lock sh -c 'echo $(( $(cat count) - 1 )) > count.new; mv count.new count'`,
    ].join('\n');
    const t = await connect(targetFor(main), { maxChannels: max });
    const results = await Promise.all(Array.from({ length: 12 }, () => t.exec(script)));
    expect(results).toEqual(Array(12).fill({ code: 0, stdout: '', stderr: '' }));
    const seen = readFileSync(join(work, 'seen'), 'utf8').trim().split('\n').map(Number);
    expect(seen).toHaveLength(12);
    expect(Math.max(...seen)).toBe(max);
  });

  it('gives up with "timeout" when no exit status comes within timeoutSec + 15 s, and stays usable', async () => {
    const t = await connect(targetFor(main));
    const pids = join(dir, 'stopped.pids');
    // Stop the node-side `timeout` itself (the script's parent), so it can never fire.
    const t0 = Date.now();
    const e = await failure(t.exec(`echo $PPID $$ > ${pids}; kill -STOP $PPID; exec sleep 60`, { timeoutSec: 1 }));
    const took = since(t0);
    for (const pid of readFileSync(pids, 'utf8').trim().split(' ')) killQuietly(Number(pid), 'SIGKILL');
    expect(e.step).toBe('timeout');
    expect(e.message).toBe(
      'n1: timeout: no exit status 16s after the command started (the node-side timeout of 1s did not end it); gave up waiting',
    );
    expect(took).toBeGreaterThanOrEqual(15.9);
    expect(took).toBeLessThan(20);
    expect((await t.exec('echo still here')).stdout).toBe('still here\n');
  }, 30_000);
});

describe('closing', () => {
  it('rejects the commands still running, and any exec after close', async () => {
    const t = await connectSsh(targetFor(main));
    const started = join(dir, 'close-started');
    const running = failure(t.exec(`touch ${started}; sleep 5`));
    await until(() => existsSync(started));
    const t0 = Date.now();
    await t.close();
    const e = await running;
    expect(since(t0)).toBeLessThan(2);
    expect(e.message).toBe(
      `n1: dropped: connection to root@127.0.0.1:${main.port} was lost while a command ran (the transport was closed); what the command did on the node is unknown`,
    );
    expect((await failure(t.exec('true'))).message).toBe('n1: exec: the transport is already closed');
    await t.close(); // twice is fine
  });
});

describe('host keys', () => {
  it('refuses an unknown host key, showing its fingerprint as ssh-keygen does and how to add it', async () => {
    const file = join(tempDir('decom-kh-'), 'known_hosts');
    const e = await failure(connectSsh(targetFor(main, { knownHostsFile: file })));
    const fp = fingerprintOf(main.hostKeys.ed25519!);
    expect(e.step).toBe('host-key');
    expect(e.message).toBe(
      `n1: host-key: unknown host key for [127.0.0.1]:${main.port}: it offered ssh-ed25519 ${fp}, which is not in ${file}; ` +
        `if that is the right key, add it with: ssh-keyscan -p ${main.port} 127.0.0.1 >> ${file} (or record it with decom hosts trust, or rerun with --accept-new-host-keys)`,
    );
    expect(existsSync(file)).toBe(false);
    // The hint works as printed.
    sh('sh', ['-c', `ssh-keyscan -p ${main.port} 127.0.0.1 >> ${file} 2>/dev/null`]);
    await connect(targetFor(main, { knownHostsFile: file }));
  });

  it.each([
    ['acceptNewHostKeys', { strictHostKeyChecking: 'yes' as const }, { acceptNewHostKeys: true }],
    ['StrictHostKeyChecking=accept-new', { strictHostKeyChecking: 'accept-new' as const }, {}],
  ])('records an unknown key with %s, then knows it', async (_label, over, opts) => {
    const file = join(tempDir('decom-kh-'), 'known_hosts');
    const t = await connect(targetFor(main, { knownHostsFile: file, ...over }), opts);
    expect((await t.exec('echo hi')).stdout).toBe('hi\n');
    expect(readFileSync(file, 'utf8')).toBe(`${entryFor(main)}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await connect(targetFor(main, { knownHostsFile: file }));
  });

  it('refuses a CHANGED key even when accepting new keys, naming the recorded line', async () => {
    const impostor = makeKey(tempDir(), 'impostor');
    const line = `[127.0.0.1]:${main.port} ${keyOf(`${impostor}.pub`)}`;
    const file = knownHosts('# pinned by hand', line);
    for (const [over, opts] of [
      [{}, { acceptNewHostKeys: true }],
      [{ strictHostKeyChecking: 'accept-new' as const }, {}],
    ] as const) {
      const e = await failure(connectSsh(targetFor(main, { knownHostsFile: file, ...over }), opts));
      expect(e.step).toBe('host-key');
      expect(e.message).toBe(
        `n1: host-key: HOST KEY CHANGED for [127.0.0.1]:${main.port}: it offered ssh-ed25519 ${fingerprintOf(main.hostKeys.ed25519!)}, ` +
          `but ${file}:2 records ssh-ed25519 ${fingerprintOf(`${impostor}.pub`)} (the machine was reinstalled, or someone is intercepting the connection); ` +
          `if the change is expected, remove the old key with: ssh-keygen -R '[127.0.0.1]:${main.port}' -f ${file}`,
      );
    }
    expect(readFileSync(file, 'utf8')).toBe(`# pinned by hand\n${line}\n`);
  });

  it('accepts a hashed entry (ssh-keygen -H)', async () => {
    const file = knownHosts(entryFor(main));
    sh('ssh-keygen', ['-q', '-H', '-f', file]);
    expect(readFileSync(file, 'utf8')).toMatch(/^\|1\|[^ ]+ ssh-ed25519 /);
    await connect(targetFor(main, { knownHostsFile: file }));
  });

  it('wants the [host]:port form for a non-22 port; wildcards work', async () => {
    const plain = knownHosts(`127.0.0.1 ${keyOf(main.hostKeys.ed25519!)}`);
    expect((await failure(connectSsh(targetFor(main, { knownHostsFile: plain })))).message).toMatch(/unknown host key for \[127\.0\.0\.1\]:/);
    await connect(targetFor(main, { knownHostsFile: knownHosts(`[127.0.0.*]:${main.port} ${keyOf(main.hostKeys.ed25519!)}`) }));
    const negated = knownHosts(`[127.0.0.*]:${main.port},![127.0.0.1]:${main.port} ${keyOf(main.hostKeys.ed25519!)}`);
    expect((await failure(connectSsh(targetFor(main, { knownHostsFile: negated })))).step).toBe('host-key');
  });

  it('refuses a @revoked key, even when accepting new keys', async () => {
    const file = knownHosts(entryFor(main), `@revoked * ${keyOf(main.hostKeys.ed25519!)}`);
    for (const strictHostKeyChecking of ['yes', 'accept-new'] as const) {
      const e = await failure(connectSsh(targetFor(main, { knownHostsFile: file, strictHostKeyChecking })));
      expect(e.message).toBe(
        `n1: host-key: [127.0.0.1]:${main.port} offered host key ssh-ed25519 ${fingerprintOf(main.hostKeys.ed25519!)}, ` +
          `which is marked @revoked at ${file}:2; refusing to connect`,
      );
    }
  });

  it('reads every known_hosts file ssh would (the second user file, the global ones), and knows a HostKeyAlias by its name alone', async () => {
    const empty = knownHosts('# nothing here');
    const more = knownHosts(entryFor(main));
    await connect(targetFor(main, { knownHostsFile: empty, moreKnownHostsFiles: [join(dir, 'missing'), more] }));
    const aliased = knownHosts(`node1.keys ${keyOf(main.hostKeys.ed25519!)}`);
    await connect(targetFor(main, { knownHostsFile: aliased, hostKeyAlias: 'node1.keys' }));
    const e = await failure(connectSsh(targetFor(main, { knownHostsFile: aliased, hostKeyAlias: 'other.keys' })));
    expect(e.message).toMatch(/unknown host key for other\.keys: /);
  });

  it('speaks SSH over a ProxyCommand (its tokens expanded), and names what it said when it fails', async () => {
    const t = await connect(targetFor(main, { proxyCommand: 'socat - TCP:%h:%p', destination: 'n1' }));
    expect((await t.exec('echo through')).stdout).toBe('through\n');
    await t.close();
    const e = await failure(connectSsh(targetFor(main, { proxyCommand: `sh -c 'echo "no route to %n as %r" >&2; exit 3'`, destination: 'n1' })));
    expect(e.step).toBe('connect');
    expect(e.message).toMatch(/the ProxyCommand exited 3: no route to n1 as /);
    const unknown = await failure(connectSsh(targetFor(main, { proxyCommand: 'nc %C' })));
    expect(unknown.message).toMatch(/the ProxyCommand holds %C, a token decom does not expand/);
  });

  it('asks the server for the key type known_hosts has (server with ed25519, ecdsa and rsa keys)', async () => {
    const multi = await startSshd({
      hostKeyTypes: ['ed25519', 'ecdsa', 'rsa'],
      authorizedKeys: [readFileSync(`${clientKey}.pub`, 'utf8')],
    });
    for (const type of ['rsa', 'ecdsa', 'ed25519'] as const) {
      const t = await connect(targetFor(multi, { knownHostsFile: knownHosts(entryFor(multi, type)) }));
      expect((await t.exec('echo ok')).stdout).toBe('ok\n');
    }
    // With nothing known, the preferred type is ed25519, and that is what gets recorded.
    const file = join(tempDir('decom-kh-'), 'known_hosts');
    await connect(targetFor(multi, { knownHostsFile: file }), { acceptNewHostKeys: true });
    expect(readFileSync(file, 'utf8')).toBe(`${entryFor(multi, 'ed25519')}\n`);
  });
});

describe('authentication', () => {
  it('fails with "auth", naming the user and the key files tried, never their contents', async () => {
    const e = await failure(connectSsh(targetFor(main, { privateKeyFile: otherKey })));
    expect(e.step).toBe('auth');
    expect(e.message).toBe(`n1: auth: root@127.0.0.1:${main.port} refused every key offered (tried: ${otherKey})`);
  });

  it('uses a passphrase-protected key, and says why it cannot', async () => {
    const locked = makeKey(tempDir(), 'id_locked', 'ed25519', 'correct horse');
    const s = await startSshd({ authorizedKeys: [readFileSync(`${locked}.pub`, 'utf8')] });
    const t = await connect(targetFor(s, { privateKeyFile: locked, passphrase: 'correct horse' }));
    expect((await t.exec('echo in')).stdout).toBe('in\n');
    const wrong = await failure(connectSsh(targetFor(s, { privateKeyFile: locked, passphrase: 'wrong' })));
    expect(wrong.message).toBe(`n1: auth: cannot use private key ${locked}: OpenSSH key integrity check failed -- bad passphrase?`);
    const none = await failure(connectSsh(targetFor(s, { privateKeyFile: locked })));
    expect(none.message).toBe(`n1: auth: cannot use private key ${locked}: Encrypted private OpenSSH key detected, but no passphrase given`);
    const missing = await failure(connectSsh(targetFor(s, { privateKeyFile: join(dir, 'nope') })));
    expect(missing.message).toBe(`n1: auth: cannot read private key ${join(dir, 'nope')}: ENOENT`);
  });

  it('uses ssh-agent (SSH_AUTH_SOCK) after the key file', async () => {
    const sock = join(tempDir('decom-agent-'), 'agent.sock');
    const agent: ChildProcess = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
    try {
      for (let i = 0; i < 100 && !existsSync(sock); i++) await new Promise((r) => setTimeout(r, 20));
      spawnSync('ssh-add', [clientKey], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: 'ignore' });
      process.env.SSH_AUTH_SOCK = sock;
      const t = await connect(targetFor(main, { privateKeyFile: otherKey }));
      expect((await t.exec('echo via agent')).stdout).toBe('via agent\n');
      expect(main.log()).toContain(`Accepted publickey for root from 127.0.0.1`);
      const noFile = await connect(targetFor(main, { privateKeyFile: undefined }));
      expect((await noFile.exec('echo agent only')).stdout).toBe('agent only\n');
    } finally {
      delete process.env.SSH_AUTH_SOCK;
      agent.kill();
    }
  });

  it('goes on past an ssh-agent that does not answer, and says so if nothing works', async () => {
    process.env.SSH_AUTH_SOCK = join(dir, 'no-agent.sock');
    try {
      const e = await failure(connectSsh(targetFor(main, { privateKeyFile: otherKey })));
      expect(e.message).toBe(
        `n1: auth: root@127.0.0.1:${main.port} refused every key offered (tried: ${otherKey}, ssh-agent (${dir}/no-agent.sock)); ` +
          `ssh-agent failed: Failed to connect to agent`,
      );
    } finally {
      delete process.env.SSH_AUTH_SOCK;
    }
  });

  it('falls back to ~/.ssh/id_ed25519 and ~/.ssh/known_hosts', async () => {
    const home = process.env.HOME!;
    mkdirSync(join(home, '.ssh'), { recursive: true, mode: 0o700 });
    const none = await failure(connectSsh(targetFor(main, { privateKeyFile: undefined, knownHostsFile: undefined })));
    expect(none.message).toBe(
      `n1: auth: no key to offer as root: no private key file given, SSH_AUTH_SOCK is not set, and none of ` +
        `${home}/.ssh/id_ed25519, ${home}/.ssh/id_ecdsa, ${home}/.ssh/id_rsa is usable`,
    );
    copyFileSync(clientKey, join(home, '.ssh', 'id_ed25519'));
    chmodSync(join(home, '.ssh', 'id_ed25519'), 0o600);
    process.env.SSH_AUTH_SOCK = join(dir, 'no-agent.sock'); // tried first, fails, not fatal
    try {
      const t = await connect(targetFor(main, { privateKeyFile: undefined, knownHostsFile: undefined }), { acceptNewHostKeys: true });
      expect((await t.exec('echo default key')).stdout).toBe('default key\n');
    } finally {
      delete process.env.SSH_AUTH_SOCK;
    }
    expect(readFileSync(join(home, '.ssh', 'known_hosts'), 'utf8')).toBe(`${entryFor(main)}\n`);
  });
});

describe('connecting', () => {
  it('fails fast with "connect" when nothing listens', async () => {
    const port = await freePort();
    const t0 = Date.now();
    const e = await failure(connectSsh(targetFor(main, { port })));
    expect(since(t0)).toBeLessThan(2);
    expect(e.message).toBe(`n1: connect: cannot connect to 127.0.0.1:${port}: ECONNREFUSED (connection refused: nothing listens there, or a firewall rejects it)`);
  });

  it('gives up after connectTimeoutSec when the server never speaks SSH', async () => {
    const port = await freePort();
    const held: Socket[] = [];
    const silent: Server = createServer((s) => held.push(s));
    await new Promise<void>((r) => silent.listen(port, '127.0.0.1', r));
    try {
      const t0 = Date.now();
      const e = await failure(connectSsh(targetFor(main, { port, connectTimeoutSec: 1 })));
      expect(since(t0)).toBeGreaterThanOrEqual(0.95);
      expect(since(t0)).toBeLessThan(4);
      expect(e.message).toBe(`n1: connect: 127.0.0.1:${port} accepted the connection but the SSH handshake did not finish within 1s (timeout)`);
    } finally {
      held.forEach((s) => s.destroy());
      silent.close();
    }
  });
});

describe('a dropped connection', () => {
  it('rejects the running command with "dropped" at once, and every later one', async () => {
    const s = await startSshd({ authorizedKeys: [readFileSync(`${clientKey}.pub`, 'utf8')] });
    const t = await connect(targetFor(s));
    const started = join(s.dir, 'started');
    const running = t.exec(`touch ${started}; sleep 10`);
    await until(() => existsSync(started));
    const t0 = Date.now();
    // This connection's sshd processes (and the sleep), not the listener.
    for (const pid of descendants(s.pid)) killQuietly(pid, 'SIGKILL');
    const e = await failure(running);
    expect(since(t0)).toBeLessThan(3);
    expect(e.step).toBe('dropped');
    expect(e.message).toBe(
      `n1: dropped: connection to root@127.0.0.1:${s.port} was lost while a command ran (the remote end closed the connection); what the command did on the node is unknown`,
    );
    const t1 = Date.now();
    const later = await failure(t.exec('true'));
    expect(since(t1)).toBeLessThan(0.5);
    expect(later.message).toBe(`n1: dropped: connection to root@127.0.0.1:${s.port} was lost earlier (the remote end closed the connection); connect again`);
  });

  it('rejects queued commands too when sshd goes away', async () => {
    const s = await startSshd({ authorizedKeys: [readFileSync(`${clientKey}.pub`, 'utf8')] });
    const t = await connect(targetFor(s), { maxChannels: 1 });
    const started = join(s.dir, 'started');
    const all = [t.exec(`touch ${started}; sleep 10`), t.exec('echo queued')].map(failure);
    await until(() => existsSync(started));
    await s.stop();
    const errors = await Promise.all(all);
    expect(errors.map((e) => e.step)).toEqual(['dropped', 'dropped']);
  });
});

const clients = [
  ['ssh2', connectSsh],
  ['openssh', connectOpenSsh],
] as const;

describe.each(clients)('sudo over %s', (_client, connectWith) => {
  const connect = async (target: SshTarget): Promise<Transport> => {
    const t = await connectWith(target);
    open.push(t);
    return t;
  };
  /**
   * sudo is not installed on every test machine, so this sshd puts a stand-in on
   * PATH that follows sudo's command-line contract (-n, -S, -k, -p, -u, --), keeps
   * a policy in a file, logs its argv, and really switches user (setpriv).
   */
  let fake: Sshd;
  let bin: string;
  const policy = (p: string) => writeFileSync(join(bin, 'policy'), p);
  const argvLog = () => (existsSync(join(bin, 'argv.log')) ? readFileSync(join(bin, 'argv.log'), 'utf8') : '');
  const become = (over: Partial<SshTarget> = {}) => targetFor(fake, { become: true, becomeUser: 'nobody', ...over });

  beforeAll(async () => {
    bin = tempDir('decom-fakesudo-');
    writeFileSync(
      join(bin, 'sudo'),
      `#!/bin/sh
printf '%s\\n' "$*" >> ${bin}/argv.log
mode=; user=root
while [ $# -gt 0 ]; do
  case "$1" in
    -n|-S) mode=$1 ;;
    -k) ;;
    -p|-u) [ "$1" = -u ] && user=$2; shift ;;
    --) shift; break ;;
    *) echo "sudo: unknown option $1" >&2; exit 1 ;;
  esac
  shift
done
read -r rule password < ${bin}/policy
if [ "$rule" = password ]; then
  [ "$mode" = -n ] && { echo 'sudo: a password is required' >&2; exit 1; }
  IFS= read -r given || :
  [ "$given" = "$password" ] || { echo 'sudo: 1 incorrect password attempt' >&2; exit 1; }
fi
exec setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups -- "$@"
`,
    );
    chmodSync(join(bin, 'sudo'), 0o755);
    fake = await startSshd({
      authorizedKeys: [readFileSync(`${clientKey}.pub`, 'utf8')],
      env: { PATH: `${bin}:/usr/sbin:/usr/bin:/sbin:/bin` },
    });
  });

  it('runs as the become user with sudo -n when no password is configured', async () => {
    policy('nopasswd');
    const t = await connect(become());
    expect(await t.exec('id -un; echo warn >&2')).toEqual({ code: 0, stdout: 'nobody\n', stderr: 'warn\n' });
    expect(argvLog()).toMatch(/^-n -u nobody -- \/bin\/sh -c /m);
  });

  it('refuses with "sudo" when sudo wants a password and none is configured', async () => {
    policy('password s3cret');
    const t = await connect(become());
    const e = await failure(t.exec('id -un'));
    expect(e.message).toBe('n1: sudo: root@127.0.0.1 could not sudo to nobody: sudo: a password is required');
  });

  it('sends the password on stdin before the script’s own input, never on a command line or in the output', async () => {
    const password = `pw-${randomBytes(6).toString('hex')}`;
    policy(`password ${password}`);
    const t = await connect(become({ becomePassword: password }));
    const r = await t.exec('id -un; cat', { stdin: 'payload\n' });
    expect(r).toEqual({ code: 0, stdout: 'nobody\npayload\n', stderr: '' });
    expect(argvLog()).toMatch(/^-S -k -p {2}-u nobody -- \/bin\/sh -c /m);
    expect(argvLog()).not.toContain(password);
    expect(fake.log()).not.toContain(password);
  });

  it('says a wrong password is refused, without the password', async () => {
    policy('password right-one');
    const t = await connect(become({ becomePassword: 'wrong-one' }));
    const e = await failure(t.exec('id -un'));
    expect(e.message).toBe('n1: sudo: root@127.0.0.1 could not sudo to nobody: sudo: 1 incorrect password attempt');
  });

  it('does not send the password when sudo does not ask for one (NOPASSWD)', async () => {
    policy('nopasswd');
    const t = await connect(become({ becomePassword: 'unused-secret' }));
    expect((await t.exec('cat', { stdin: 'only this\n' })).stdout).toBe('only this\n');
    expect((await t.exec('id -un')).stdout).toBe('nobody\n');
  });

  it('skips sudo when asked not to, or when already the become user', async () => {
    policy('password s3cret');
    const before = argvLog();
    expect((await (await connect(become())).exec('id -un', { sudo: false })).stdout).toBe('root\n');
    expect((await (await connect(become({ becomeUser: 'root' }))).exec('id -un')).stdout).toBe('root\n');
    expect(argvLog()).toBe(before);
  });

  it.runIf(existsSync('/usr/bin/sudo'))('works with the real sudo (root may become anyone without a password)', async () => {
    const t = await connect(targetFor(main, { become: true, becomeUser: 'nobody' }));
    expect(await t.exec('id -un')).toEqual({ code: 0, stdout: 'nobody\n', stderr: '' });
  });
});

describe('ProxyJump', () => {
  let jump: Sshd;
  beforeAll(async () => {
    jump = await startSshd({
      authorizedKeys: [readFileSync(`${clientKey}.pub`, 'utf8')],
      extraConfig: ['AllowTcpForwarding yes', 'PermitOpen any'],
    });
  });

  it('reaches the node through the jump host, checking both host keys', async () => {
    const t = await connect(
      targetFor(main, { proxyJump: [`root@127.0.0.1:${jump.port}`], knownHostsFile: knownHosts(entryFor(main), entryFor(jump)) }),
    );
    const r = await t.exec('echo $SSH_CONNECTION');
    // The node's peer is a socket of the jump host's sshd, not of this process.
    const peerPort = r.stdout.split(' ')[1]!;
    const owner = sh('ss', ['-Htnp', 'state', 'established', `( sport = :${peerPort} )`]);
    const pid = Number(/pid=(\d+)/.exec(owner)?.[1]);
    expect(descendants(jump.pid)).toContain(pid);
  });

  it('refuses an unknown jump host key, saying it is the jump host', async () => {
    const file = knownHosts(entryFor(main));
    const e = await failure(connectSsh(targetFor(main, { proxyJump: [`127.0.0.1:${jump.port}`], knownHostsFile: file })));
    expect(e.message).toBe(
      `n1: host-key: unknown host key for jump host [127.0.0.1]:${jump.port}: it offered ssh-ed25519 ${fingerprintOf(jump.hostKeys.ed25519!)}, ` +
        `which is not in ${file}; if that is the right key, add it with: ssh-keyscan -p ${jump.port} 127.0.0.1 >> ${file} (or record it with decom hosts trust, or rerun with --accept-new-host-keys)`,
    );
  });

  it('hints at ssh -J for an unknown node key behind a jump host', async () => {
    const file = knownHosts(entryFor(jump));
    const e = await failure(connectSsh(targetFor(main, { proxyJump: [`127.0.0.1:${jump.port}`], knownHostsFile: file })));
    expect(e.message).toContain(
      `add it with: ssh -J root@127.0.0.1:${jump.port} -p ${main.port} -o UserKnownHostsFile=${file} root@127.0.0.1 true`,
    );
  });

  it('says when the jump host cannot reach the node', async () => {
    const port = await freePort();
    const e = await failure(
      connectSsh(targetFor(main, { port, proxyJump: [`127.0.0.1:${jump.port}`], knownHostsFile: knownHosts(entryFor(jump)) })),
    );
    expect(e.step).toBe('connect');
    expect(e.message).toBe(`n1: connect: jump host root@127.0.0.1:${jump.port} could not connect to 127.0.0.1:${port}: (SSH) Channel open failure: Connection refused`);
  });
});
