/**
 * The OpenSSH transport (transport/openssh.ts) where it differs from ssh2, against real sshd
 * processes on 127.0.0.1: user certificates, host certificates under @cert-authority and
 * @revoked, unknown keys, jump hosts, a lost master, its private folder, and the askpass
 * helper. The exec contract both transports share is in transport.test.ts.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { answerTo, serveAskpass } from './askpass.js';
import { openSshReason } from './connector.js';
import { connectOpenSsh } from './openssh.js';
import { explainMasterFailure, masterArgv } from './openssh-command.js';
import { connectSsh, type SshTarget, type Transport } from './index.js';
import { descendants, entryFor, failure, keyOf, killQuietly, knownHostsWith, makeKey, startSshd, stopAllSshd, targetOf, tempDir, type Sshd } from '../../test/helpers/sshd.js';

let dir: string;
let clientKey: string;
let plain: Sshd;
let savedHome: string | undefined;
const open: Transport[] = [];

/** decom's private folders under this file's own $TMPDIR: none may outlive the connections. */
const controlDirs = () => readdirSync(tmpdir()).filter((f) => f.startsWith('decom-ssh-'));
let savedTmp: string | undefined;

beforeAll(async () => {
  dir = tempDir('decom-openssh-');
  clientKey = makeKey(dir, 'id_client');
  plain = await startSshd({ authorizedKeys: [readFileSync(`${clientKey}.pub`, 'utf8')] });
  savedHome = process.env.HOME;
  process.env.HOME = tempDir('decom-home-');
  savedTmp = process.env.TMPDIR;
  process.env.TMPDIR = tempDir('decom-tmpdir-');
});

afterEach(async () => {
  for (const t of open.splice(0)) await t.close();
});

afterAll(async () => {
  process.env.HOME = savedHome;
  await stopAllSshd();
  expect(controlDirs()).toEqual([]);
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
});

const knownHosts = knownHostsWith;
const targetFor = (s: Sshd, over: Partial<SshTarget> = {}): SshTarget => targetOf(s, clientKey, over);

async function connect(target: SshTarget, opts: Parameters<typeof connectOpenSsh>[1] = {}): Promise<Transport> {
  const t = await connectOpenSsh(target, opts);
  open.push(t);
  return t;
}

/** `ssh-keygen -s CA` over `pub`: its certificate beside it (KEY-cert.pub). */
const sign = (ca: string, pub: string, args: string[]) => execFileSync('ssh-keygen', ['-q', '-s', ca, '-I', 'decom-test', '-V', '+1h', ...args, pub]);

describe('certificates', () => {
  let userCa: string;
  let hostCa: string;
  let hostKey: string;
  let certified: Sshd;

  beforeAll(async () => {
    userCa = makeKey(dir, 'user_ca');
    hostCa = makeKey(dir, 'host_ca');
    hostKey = makeKey(dir, 'host_key_certified');
    sign(hostCa, `${hostKey}.pub`, ['-h', '-n', '127.0.0.1']);
    // No authorized key: the user certificate is the only way in. The host offers its certificate.
    certified = await startSshd({
      authorizedKeys: [],
      extraConfig: [`TrustedUserCAKeys ${userCa}.pub`, `HostKey ${hostKey}`, `HostCertificate ${hostKey}-cert.pub`],
    });
  });

  it('logs in with the user certificate beside the key (KEY-cert.pub), where ssh2 cannot', async () => {
    const key = makeKey(tempDir('decom-cert-'), 'id_cert');
    sign(userCa, `${key}.pub`, ['-n', 'root']);
    const target = targetFor(certified, { privateKeyFile: key, knownHostsFile: knownHosts(`[127.0.0.1]:${certified.port} ${keyOf(`${hostKey}.pub`)}`) });
    const t = await connect(target);
    expect(await t.exec('echo in')).toEqual({ code: 0, stdout: 'in\n', stderr: '' });
    expect((await failure(connectSsh(target))).step).toBe('auth');
  });

  it('knows a host by its @cert-authority alone: OpenSSH is chosen for it, checks the certificate; ssh2 would find the key unknown', async () => {
    const key = makeKey(tempDir('decom-cert-'), 'id_cert');
    sign(userCa, `${key}.pub`, ['-n', 'root']);
    const file = knownHosts(`@cert-authority [127.0.0.1]:${certified.port} ${keyOf(`${hostCa}.pub`)}`);
    const target = targetFor(certified, { privateKeyFile: key, knownHostsFile: file });
    expect(openSshReason(target, {})).toBe(`its host key is known only through the @cert-authority line at ${file}:1`);
    expect(() => openSshReason(target, { ssh: 'ssh2' })).toThrow(/only the system's OpenSSH client can do that, and --ssh ssh2 was given/);
    const t = await connect(target);
    expect((await t.exec('echo in')).stdout).toBe('in\n');
    // Another CA's line vouches for nothing.
    const other = makeKey(dir, 'other_ca');
    const e = await failure(connectOpenSsh(targetFor(certified, { privateKeyFile: key, knownHostsFile: knownHosts(`@cert-authority [127.0.0.1]:${certified.port} ${keyOf(`${other}.pub`)}`) })));
    expect(e.step).toBe('host-key');
  });

  it('refuses a host key marked @revoked, even with its CA trusted and new keys accepted', async () => {
    const key = makeKey(tempDir('decom-cert-'), 'id_cert');
    sign(userCa, `${key}.pub`, ['-n', 'root']);
    const file = knownHosts(`@cert-authority [127.0.0.1]:${certified.port} ${keyOf(`${hostCa}.pub`)}`, `@revoked [127.0.0.1]:${certified.port} ${keyOf(`${hostKey}.pub`)}`);
    const e = await failure(connectOpenSsh(targetFor(certified, { privateKeyFile: key, knownHostsFile: file }), { acceptNewHostKeys: true }));
    expect(e.step).toBe('host-key');
    expect(e.message).toMatch(/revoked/i);
  });
});

describe('host keys', () => {
  it('refuses an unknown key, naming the file and --accept-new-host-keys; accept-new records it in the first file', async () => {
    const file = knownHosts();
    const e = await failure(connectOpenSsh(targetFor(plain, { knownHostsFile: file })));
    expect(e.step).toBe('host-key');
    expect(e.message).toBe(
      `n1: host-key: root@127.0.0.1:${plain.port} (OpenSSH): No ED25519 host key is known for [127.0.0.1]:${plain.port} and you have requested strict checking; ` +
        `Host key verification failed; if that is the right key, add it to ${file} (or record it with decom hosts trust, or rerun with --accept-new-host-keys)`,
    );
    const t = await connect(targetFor(plain, { knownHostsFile: file }), { acceptNewHostKeys: true });
    expect((await t.exec('true')).code).toBe(0);
    expect(readFileSync(file, 'utf8')).toContain(keyOf(plain.hostKeys.ed25519!));
  });

  it('checks keys as yes whatever the options Ansible gives ssh say (decom\'s options come first: ssh keeps the first)', async () => {
    const file = knownHosts();
    const target = targetFor(plain, { knownHostsFile: file, sshOptions: ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null'] });
    expect((await failure(connectOpenSsh(target))).step).toBe('host-key');
    // ssh -G, the judge, reads the master's command line the same way.
    const argv = masterArgv(target, { controlPath: join(dir, 'x.m'), mode: 'yes', askpass: false, jumps: [], ssh: 'ssh' });
    const g = spawnSync('ssh', ['-G', ...argv.slice(0, -2), 'decom-judge'], { encoding: 'utf8' }).stdout;
    expect(g).toMatch(/^stricthostkeychecking true$/m);
    expect(g).toMatch(new RegExp(`^userknownhostsfile ${file}$`, 'm'));
    expect(g).toMatch(/^batchmode yes$/m);
    expect(g).toMatch(/^forwardagent no$/m);
  });
});

describe('a jump host', () => {
  let jump: Sshd;
  beforeAll(async () => {
    jump = await startSshd({ authorizedKeys: [readFileSync(`${clientKey}.pub`, 'utf8')], extraConfig: ['AllowTcpForwarding yes', 'PermitOpen any'] });
  });

  it('reaches the node through it, both keys checked, each against its own files', async () => {
    const jumpFile = knownHosts(entryFor(jump));
    const t = await connect(targetFor(plain, { proxyJump: [`root@127.0.0.1:${jump.port}`], jumpKnownHostsFiles: [[jumpFile]] }));
    const peerPort = (await t.exec('echo $SSH_CONNECTION')).stdout.split(' ')[1]!;
    const owner = execFileSync('ss', ['-Htnp', 'state', 'established', `( sport = :${peerPort} )`], { encoding: 'utf8' });
    expect(descendants(jump.pid)).toContain(Number(/pid=(\d+)/.exec(owner)?.[1]));
  });

  it("gives the master a ProxyCommand of its own for the hop, over any ProxyJump of the config (ssh -G the judge)", () => {
    const target = targetFor(plain, { proxyJump: [`root@127.0.0.1:${jump.port}`], sshOptions: ['-o', 'ProxyJump=elsewhere:2222'] });
    const argv = masterArgv(target, { controlPath: join(dir, 'x.m'), mode: 'yes', askpass: false, jumps: [{ user: 'root', address: '127.0.0.1', port: jump.port, isJump: true }], ssh: 'ssh' });
    const g = spawnSync('ssh', ['-G', ...argv.slice(0, -2), 'decom-judge'], { encoding: 'utf8' }).stdout;
    expect(g).toMatch(new RegExp(`^proxycommand 'ssh' .*'BatchMode=yes'.* '-W' '127\\.0\\.0\\.1:${plain.port}' '-l' 'root' '-p' '${jump.port}' '127\\.0\\.0\\.1'$`, 'm'));
    expect(g).not.toMatch(/^proxyjump /m);
  });

  it("refuses an unknown jump host key: the hop's own ssh runs in batch mode and checks it", async () => {
    const e = await failure(connectOpenSsh(targetFor(plain, { proxyJump: [`root@127.0.0.1:${jump.port}`], jumpKnownHostsFiles: [[knownHosts()]] })));
    expect(e.step).toBe('host-key');
    expect(e.message).toContain(`[127.0.0.1]:${jump.port}`);
  });
});

describe('the master', () => {
  it('a lost master: the running command and every later one are "dropped"', async () => {
    const s = await startSshd({ authorizedKeys: [readFileSync(`${clientKey}.pub`, 'utf8')] });
    const t = await connect(targetFor(s));
    const started = join(s.dir, 'started');
    const running = failure(t.exec(`touch ${started}; sleep 10`));
    for (let i = 0; i < 200 && !existsSync(started); i++) await new Promise((r) => setTimeout(r, 25));
    for (const pid of descendants(s.pid)) killQuietly(pid, 'SIGKILL');
    const e = await running;
    expect(e.step).toBe('dropped');
    expect(e.message).toMatch(new RegExp(`^n1: dropped: connection to root@127\\.0\\.0\\.1:${s.port} was lost while a command ran \\(ssh exited 255`));
    expect((await failure(t.exec('true'))).message).toMatch(/was lost earlier .*; connect again$/);
  });

  it('says there is no ssh client, and what needed it', async () => {
    const e = await failure(connectOpenSsh({ ...targetFor(plain), needsOpenSsh: 'CertificateFile in ~/.ssh/config' }, { ssh: join(dir, 'no-such-ssh') }));
    expect(e.message).toBe(`n1: connect: no ssh client (${join(dir, 'no-such-ssh')}) on this machine: CertificateFile in ~/.ssh/config needs it; install OpenSSH's client`);
  });

  it('reads ssh\'s failures into steps: auth, connect', () => {
    const t = targetFor(plain);
    expect(explainMasterFailure('root@127.0.0.1: Permission denied (publickey,password).\r\n', 255, t)).toEqual({ step: 'auth', message: `root@127.0.0.1:${plain.port} (OpenSSH): root@127.0.0.1: Permission denied (publickey,password)` });
    expect(explainMasterFailure('ssh: connect to host 127.0.0.1 port 1: Connection refused\r\n', 255, t).step).toBe('connect');
  });
});

describe('the askpass helper', () => {
  const answers = { password: 'pw-secret', passphrase: 'key-secret', login: 'ops@10.0.0.5', keyFiles: ['/keys/id_ops'] };

  it("answers only the node's own prompts: its password prompts (password, keyboard-interactive) and the passphrase of decom's key", () => {
    expect(answerTo("ops@10.0.0.5's password: ", answers)).toBe('pw-secret');
    expect(answerTo('(ops@10.0.0.5) Password: ', answers)).toBe('pw-secret');
    expect(answerTo("Enter passphrase for key '/keys/id_ops': ", answers)).toBe('key-secret');
    // A jump host's or a ProxyCommand's own ssh, another key, a PIN, a host key question, a server's text: nothing.
    for (const prompt of ["ops@10.0.0.1's password: ", '(ops@bastion) Password: ', 'Password: ', "Enter passphrase for key '/other/id': ", 'Enter PIN for ECDSA-SK key /keys/id_ops_sk: ', 'Are you sure you want to continue connecting (yes/no/[fingerprint])? ', 'Your passphrase expires soon; type your password: ']) {
      expect(answerTo(prompt, answers), prompt).toBeUndefined();
    }
  });

  it('runs as ssh runs it, and asks decom over its socket: the secret in no file and no environment', async () => {
    const folder = tempDir('decom-askpass-');
    const served = await serveAskpass(join(folder, '1.a'), answers);
    try {
      // As ssh runs it: a child of this process, whose server answers while it waits.
      const ask = (prompt: string) =>
        new Promise<{ status: number | null; stdout: string }>((resolve) => {
          const child = spawn(served.env.SSH_ASKPASS!, [prompt], { env: { ...process.env, ...served.env }, stdio: ['ignore', 'pipe', 'inherit'] });
          let stdout = '';
          child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
          child.on('close', (status) => resolve({ status, stdout }));
        });
      expect(await ask("ops@10.0.0.5's password: ")).toEqual({ status: 0, stdout: 'pw-secret\n' });
      expect(await ask("ops@10.0.0.1's password: ")).toEqual({ status: 1, stdout: '' });
      for (const f of readdirSync(folder)) if (!f.endsWith('.a')) expect(readFileSync(join(folder, f), 'utf8')).not.toContain('secret');
      expect(JSON.stringify(served.env)).not.toContain('secret');
    } finally {
      served.close();
    }
  });
});
