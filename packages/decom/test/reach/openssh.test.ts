// Every host Ansible reaches, decom reaches, part two (issue 42): passwords, ansible-vault and OpenSSH
// certificates, with Ansible (ansible-core, sshpass) the judge, on a 1-node sandbox. A second sshd on
// node1 (port 2203) takes passwords, trusts a user CA, and shows a host certificate. For each set-up
// (ansible_password over --ssh openssh, the same password !vault-encrypted in group_vars, a vaulted
// group_vars/all/vault.yml holding a sudo password with --vault-id, a user certificate beside its key
// or named by CertificateFile, a host known only through @cert-authority) `ansible -m raw -a true`
// reaches the host and so does `decom verify`; a reset over --ssh openssh leaves a CRI node clean;
// a sampler of ps and /proc/*/environ, here and on the node, sees decom's ssh and askpass helper but
// never a password, vault password or decrypted value, nor does any output or file decom wrote; -k
// under a pty (script); a wrong vault password is one line, exit 2. Runs are in test homes (helpers/home.ts).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ansible, closeControlMasters, decomIn, homes, inHome, shown, write, type Home, type Outcome } from '../helpers/home.js';
import { onTerminal, shellLine, type OnTerminal } from '../helpers/terminal.js';
import { addrOf, CLI, down, ssh, sshArgv, STATE_DIR, up } from '../helpers/sandbox.js';
import { leftovers } from '../helpers/residue.js';
import { tempDir } from '../helpers/temp.js';

const NODE = 'node1';
/** node1's second sshd: passwords, the user CA, a host certificate (its config below). */
const PORT = 2203;
const KEY = join(STATE_DIR, 'id_ed25519');
const KNOWN_HOSTS = join(STATE_DIR, 'known_hosts');
/** Users of node1: a password login (sudo without one), a key login whose sudo asks a password, a certificate login (no authorized_keys). */
const PW_USER = 'pwlogin';
const OPS_USER = 'opsuser';
const CERT_USER = 'certuser';

// The secrets, made anew each run: none may show up anywhere but where the test put them.
const fresh = (what: string) => `${what}-${randomBytes(6).toString('hex')}`;
const SECRETS = {
  'the login password': fresh('Login'),
  'the become password': fresh('Become'),
  'the vault password (--vault-password-file)': fresh('VaultPw'),
  'the vault password (--vault-id)': fresh('VaultId'),
  'the wrong vault password': fresh('WrongVault'),
};
const LOGIN = SECRETS['the login password'];
const BECOME = SECRETS['the become password'];
const secretsIn = (text: string) => Object.entries(SECRETS).filter(([, s]) => text.includes(s)).map(([what]) => what);

/** What each set-up is, in the tests' words; over: the --ssh flag decom is given (none: its own choice). */
const SETUPS = {
  password: { what: 'ansible_password on an sshd that takes passwords, over --ssh openssh (the askpass helper)', over: 'openssh' },
  vaultInline: { what: 'the same password !vault-encrypted inline in group_vars, with --vault-password-file', over: undefined },
  vaultFile: { what: 'a vault-encrypted group_vars/all/vault.yml holding ansible_become_password for a sudo that asks, with --vault-id, over --ssh openssh', over: 'openssh' },
  certBeside: { what: 'a user certificate KEY-cert.pub beside the key, nothing else said', over: undefined },
  certConfig: { what: 'a user certificate named by CertificateFile in ~/.ssh/config', over: undefined },
  hostCa: { what: 'a host known only through @cert-authority in known_hosts', over: undefined },
} as const;
type SetUp = keyof typeof SETUPS;
/** The set-ups whose secrets the sampler watches (with -k). */
const SECRET_SETUPS: SetUp[] = ['password', 'vaultInline', 'vaultFile'];

const sshd2203Config = (n1: string) => `# decom's openssh.test.ts: passwords, a user CA, a host certificate
Port ${PORT}
ListenAddress ${n1}
HostKey /etc/ssh/decom2203_host_ed25519_key
HostCertificate /etc/ssh/decom2203_host_ed25519_key-cert.pub
TrustedUserCAKeys /etc/ssh/decom2203_user_ca.pub
PidFile /run/sshd-decom2203.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
PrintMotd no
PrintLastLog no
KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org
MaxStartups 100:30:200
Subsystem sftp internal-sftp
`;

/** A process as `ps -eo pid,ppid,args` shows it (read where ps reads it) and its environment, if readable. */
interface Proc {
  pid: number;
  ppid: number;
  args: string;
  environ: string;
}
function processes(): Proc[] {
  const out: Proc[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const args = readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      let environ = '';
      try {
        environ = readFileSync(`/proc/${p}/environ`, 'utf8');
      } catch {
        // gone, or not readable: as the brief's "every readable environ"
      }
      out.push({ pid: Number(p), ppid, args, environ });
    } catch {
      // exited between readdir and read
    }
  }
  return out;
}

/**
 * Every 100 ms, every process of this machine and its environment: the secrets found (with the
 * process), and the args of every process descended from `roots` (decom's runs), once seen ours
 * always ours (a master that daemonizes leaves its parent).
 */
interface Samples {
  samples: number;
  /** Each secret found, and where. */
  leaks: string[];
}
function localSampler(roots: Set<number>): { stop(): Samples & { ours: string[] } } {
  const ours = new Set<number>();
  const oursArgs = new Set<string>();
  const leaks = new Set<string>();
  let samples = 0;
  const tick = () => {
    const procs = processes();
    const byPid = new Map(procs.map((p) => [p.pid, p]));
    const isOurs = (p: Proc) => {
      for (let q: Proc | undefined = p, depth = 0; q && depth < 64; q = byPid.get(q.ppid), depth++) if (roots.has(q.pid) || ours.has(q.pid)) return true;
      return false;
    };
    for (const p of procs) {
      if (isOurs(p)) {
        ours.add(p.pid);
        oursArgs.add(p.args.slice(0, 300));
      }
      for (const what of secretsIn(`${p.args}\n${p.environ}`)) leaks.add(`${what} in process ${p.pid} (${p.args.slice(0, 200)})`);
    }
    samples++;
  };
  tick();
  const timer = setInterval(tick, 100);
  return {
    stop: () => {
      clearInterval(timer);
      return { samples, leaks: [...leaks], ours: [...oursArgs] };
    },
  };
}

/** The same on node1, from one long ssh session whose shell loop prints ps and every environ, `---` after each sample. */
function nodeSampler(): { started: Promise<void>; stop(): Promise<Samples & { sessions: string[] }> } {
  const loop = "while :; do ps -eo args; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; echo ---; sleep 0.1; done";
  const child: ChildProcess = spawn('ssh', sshArgv(NODE, loop), { stdio: ['ignore', 'pipe', 'pipe'] });
  const leaks = new Set<string>();
  const sessions = new Set<string>();
  let samples = 0;
  let partial = '';
  let stderr = '';
  let first: () => void = () => undefined;
  const started = new Promise<void>((resolve, reject) => {
    first = resolve;
    child.on('close', (code) => reject(new Error(`the node's sampler ended (exit ${code}): ${stderr}`)));
  });
  started.catch(() => undefined);
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  child.stdout!.setEncoding('utf8').on('data', (s: string) => {
    const lines = (partial + s).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line === '---') {
        if (samples++ === 0) first();
        continue;
      }
      for (const what of secretsIn(line)) leaks.add(`${what} on ${NODE}: ${line.slice(0, 200)}`);
      if (/^sshd: (pwlogin|opsuser|certuser)/.test(line)) sessions.add(line);
    }
  });
  const closed = new Promise<void>((r) => child.on('close', () => r()));
  return {
    started,
    stop: async () => {
      child.kill('SIGTERM');
      await closed;
      return { samples, leaks: [...leaks], sessions: [...sessions] };
    },
  };
}

/** Every regular file under `dir`, with the secrets it holds. */
function secretsUnder(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && statSync(p).size < 64 << 20) for (const what of secretsIn(readFileSync(p, 'latin1'))) found.push(`${what} in ${p}`);
    }
  };
  walk(dir);
  return found;
}

describe('every host Ansible reaches, decom reaches: passwords, ansible-vault, user and host certificates through OpenSSH', () => {
  const dir = tempDir('decom-openssh-');
  const { make: makeHome, all: allHomes } = homes(dir, () => readFileSync(KNOWN_HOSTS, 'utf8'));
  const reach = new Map<SetUp, { ansible: Promise<Outcome>; verify: Promise<Outcome> }>();
  let askPass: Promise<OnTerminal>;
  let wrongVault: Promise<Outcome>;
  let bareKey: Promise<Outcome>;
  let reset: Promise<Outcome>;
  type Sampled = { local: Samples & { ours: string[] }; node: Samples & { sessions: string[] } };
  let sampled: Promise<Sampled>;
  /** Stops both samplers (again: nothing more), whenever beforeAll got that far. */
  let stopSamplers: () => Promise<Sampled | undefined> = async () => undefined;
  /** Homes whose runs held secrets: searched for them once the runs are done. */
  const secretHomes: Home[] = [];
  const started: Promise<unknown>[] = [];
  const track = <T>(p: Promise<T>): Promise<T> => {
    started.push(p);
    p.catch(() => undefined); // awaited by its test; a rejection is that test's failure, not an unhandled one
    return p;
  };

  beforeAll(async () => {
    up(['--nodes', '1', '--scenario', 'kubespray-leftovers']);
    const n1 = addrOf(NODE);
    const keygen = (...args: string[]) => execFileSync('ssh-keygen', ['-q', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    const newKey = (name: string) => {
      keygen('-t', 'ed25519', '-N', '', '-C', name, '-f', join(dir, name));
      return join(dir, name);
    };
    // The CAs, the 2203 sshd's host key signed by the host CA, the user keys signed by the user CA.
    const hostCa = newKey('host_ca');
    const userCa = newKey('user_ca');
    const hostKey = newKey('decom2203_host_ed25519_key');
    keygen('-s', hostCa, '-I', `${NODE}-${PORT}`, '-h', '-n', `${n1},${NODE}`, '-V', '+1h', `${hostKey}.pub`);
    const certKey = newKey('cert_ed25519'); // its certificate beside it: cert_ed25519-cert.pub
    keygen('-s', userCa, '-I', `${CERT_USER}-beside`, '-n', CERT_USER, '-V', '+1h', `${certKey}.pub`);
    const configKey = newKey('config_ed25519'); // its certificate elsewhere, named by CertificateFile
    keygen('-s', userCa, '-I', `${CERT_USER}-config`, '-n', CERT_USER, '-V', '+1h', `${configKey}.pub`);
    const configCert = join(dir, 'certuser.cert.pub');
    renameSync(`${configKey}-cert.pub`, configCert);

    const file = (path: string, text: string, mode: string) => `cat > ${path} <<'DECOM_EOF'\n${text.trimEnd()}\nDECOM_EOF\nchmod ${mode} ${path}\n`;
    const sudoer = (user: string, rule: string) => `echo '${user} ${rule}' > /etc/sudoers.d/${user} && chmod 0440 /etc/sudoers.d/${user}\n`;
    ssh(
      NODE,
      'set -e\n' +
        `useradd -m -s /bin/sh ${PW_USER} && echo '${PW_USER}:${LOGIN}' | chpasswd\n${sudoer(PW_USER, 'ALL=(ALL) NOPASSWD: ALL')}` +
        `useradd -m -s /bin/sh ${OPS_USER} && echo '${OPS_USER}:${BECOME}' | chpasswd && install -d -m 700 -o ${OPS_USER} -g ${OPS_USER} /home/${OPS_USER}/.ssh` +
        ` && install -m 600 -o ${OPS_USER} -g ${OPS_USER} /root/.ssh/authorized_keys /home/${OPS_USER}/.ssh/\n${sudoer(OPS_USER, 'ALL=(ALL) ALL')}` +
        // '*', not locked: without PAM sshd refuses a locked account even a certificate
        `useradd -m -s /bin/sh ${CERT_USER} && usermod -p '*' ${CERT_USER}\n${sudoer(CERT_USER, 'ALL=(ALL) NOPASSWD: ALL')}` +
        file('/etc/ssh/decom2203_host_ed25519_key', readFileSync(hostKey, 'utf8'), '600') +
        file('/etc/ssh/decom2203_host_ed25519_key-cert.pub', readFileSync(`${hostKey}-cert.pub`, 'utf8'), '644') +
        file('/etc/ssh/decom2203_user_ca.pub', readFileSync(`${userCa}.pub`, 'utf8'), '644') +
        file('/etc/ssh/sshd_decom2203_config', sshd2203Config(n1), '644') +
        '/usr/sbin/sshd -f /etc/ssh/sshd_decom2203_config -E /var/log/sshd-decom2203.log\n',
    );

    // ansible-vault in a temp home of its own (it writes ~/.ansible), the secret on stdin, not in its argv.
    const vaultEnv = { ...process.env, HOME: join(dir, 'vault-home'), ANSIBLE_CONFIG: join(dir, 'none') };
    mkdirSync(vaultEnv.HOME, { mode: 0o700 });
    const vault = (args: string[], input?: string) => execFileSync('ansible-vault', args, { encoding: 'utf8', input, env: vaultEnv, stdio: ['pipe', 'pipe', 'pipe'] });

    // known_hosts: the 2203 sshd's plain host key, or only its host CA.
    const sandboxKnown = readFileSync(KNOWN_HOSTS, 'utf8').trimEnd();
    const hostPub = readFileSync(`${hostKey}.pub`, 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');
    const plainKnown = `${sandboxKnown}\n[${n1}]:${PORT} ${hostPub}\n`;
    const caKnown = `${sandboxKnown}\n@cert-authority [${n1}]:${PORT} ${readFileSync(`${hostCa}.pub`, 'utf8').trim()}\n`;
    const at2203 = `ansible_host=${n1} ansible_port=${PORT}`;

    const inventories: Record<SetUp, { home: Home; inventory: string; host: string; flags: string[] }> = {} as never;
    {
      const home = makeHome('password', {}, plainKnown);
      inventories.password = { home, inventory: write(home, 'hosts.ini', `${NODE} ${at2203} ansible_user=${PW_USER} ansible_password=${LOGIN} ansible_become=true\n`), host: NODE, flags: [] };
    }
    {
      const home = makeHome('vault-inline', {}, plainKnown);
      const pw = write(home, 'vault-pass', `${SECRETS['the vault password (--vault-password-file)']}\n`);
      write(home, 'group_vars/all.yml', `${vault(['encrypt_string', '--vault-password-file', pw, '--stdin-name', 'ansible_password'], LOGIN).trimEnd()}\n`);
      inventories.vaultInline = { home, inventory: write(home, 'hosts.ini', `${NODE} ${at2203} ansible_user=${PW_USER} ansible_become=true\n`), host: NODE, flags: ['--vault-password-file', pw] };
    }
    {
      const home = makeHome('vault-file', {}, plainKnown);
      const pw = write(home, 'vault-id-pass', `${SECRETS['the vault password (--vault-id)']}\n`);
      const vars = write(home, 'group_vars/all/vault.yml', `ansible_become_password: ${BECOME}\n`);
      vault(['encrypt', '--vault-id', `ops@${pw}`, vars]);
      inventories.vaultFile = { home, inventory: write(home, 'hosts.ini', `${NODE} ${at2203} ansible_user=${OPS_USER} ansible_ssh_private_key_file=${KEY} ansible_become=true\n`), host: NODE, flags: ['--vault-id', `ops@${pw}`] };
    }
    {
      const home = makeHome('cert-beside', {}, plainKnown);
      inventories.certBeside = { home, inventory: write(home, 'hosts.ini', `${NODE} ${at2203} ansible_user=${CERT_USER} ansible_ssh_private_key_file=${certKey} ansible_become=true\n`), host: NODE, flags: [] };
    }
    {
      const home = makeHome('cert-config', { config: `Host cert-config\n  HostName ${n1}\n  Port ${PORT}\n  User ${CERT_USER}\n  IdentityFile ${configKey}\n  CertificateFile ${configCert}\n` }, plainKnown);
      inventories.certConfig = { home, inventory: write(home, 'hosts.ini', 'cert-config ansible_become=true\n'), host: 'cert-config', flags: [] };
    }
    {
      const home = makeHome('host-ca', {}, caKnown);
      inventories.hostCa = { home, inventory: write(home, 'hosts.ini', `${NODE} ${at2203} ansible_user=root ansible_ssh_private_key_file=${KEY}\n`), host: NODE, flags: [] };
    }
    const askHome = makeHome('ask-pass', {}, plainKnown);
    const askInventory = write(askHome, 'hosts.ini', `${NODE} ${at2203} ansible_user=${PW_USER} ansible_become=true\n`);
    const wrongPw = write(inventories.vaultFile.home, 'wrong-vault-pass', `${SECRETS['the wrong vault password']}\n`);
    secretHomes.push(...SECRET_SETUPS.map((s) => inventories[s].home), askHome);

    // The samplers, before any run starts; decom's runs are their roots here.
    const roots = new Set<number>();
    const local = localSampler(roots);
    const node = nodeSampler();
    stopSamplers = async () => ({ local: local.stop(), node: await node.stop() });
    await node.started;
    const asRoot = { onSpawn: (c: ChildProcess) => void roots.add(c.pid!) };

    for (const [s, { home, inventory, host, flags }] of Object.entries(inventories) as [SetUp, (typeof inventories)[SetUp]][]) {
      const over = SETUPS[s].over ? ['--ssh', SETUPS[s].over] : [];
      reach.set(s, { ansible: track(ansible(home, inventory, host, flags)), verify: track(decomIn(home, ['verify', inventory, host, ...flags, ...over], asRoot)) });
    }
    // -k under a pty: the password typed once decom asks for it.
    askPass = track(
      onTerminal(shellLine([process.execPath, CLI, 'verify', askInventory, NODE, '--ssh', 'openssh', '-k']), {
        home: askHome,
        answers: [{ after: 'SSH password:', type: `${LOGIN}\n` }],
        ...asRoot,
      }),
    );
    // The certificate user's key alone, its certificate not given: refused, so the certificate is what logs in.
    bareKey = track(inHome(inventories.certConfig.home, ['ssh', '-F', 'none', '-i', configKey, '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-p', String(PORT), `${CERT_USER}@${n1}`, 'true']));
    wrongVault = track(decomIn(inventories.vaultFile.home, ['verify', inventories.vaultFile.inventory, NODE, '--vault-id', `ops@${wrongPw}`]));

    // Once every run is done: the samplers stop, then the reset (a probe mid-reset would judge a half-done node).
    const runs = Promise.allSettled([...started]);
    sampled = track(runs.then(async () => (await stopSamplers())!));
    reset = track(
      sampled.then(() => {
        const h = makeHome('reset');
        const inventory = write(h, 'hosts.ini', `${NODE} ansible_host=${n1} ansible_user=root ansible_ssh_private_key_file=${KEY}\n`);
        return decomIn(h, ['run', inventory, NODE, '--playbook', 'reset', '--ssh', 'openssh', '--yes', '--output', 'json', '--state-dir', join(h.dir, 'state')]);
      }),
    );
  });

  afterAll(async () => {
    await Promise.allSettled(started);
    await stopSamplers();
    try {
      for (const h of allHomes) await closeControlMasters(h.home);
    } finally {
      down();
    }
  });

  for (const [s, { what }] of Object.entries(SETUPS) as [SetUp, (typeof SETUPS)[SetUp]][]) {
    it(`${what}: Ansible reaches it`, async () => {
      const o = await reach.get(s)!.ansible;
      expect(o.code, shown(o)).toBe(0);
    });
    it(`${what}: decom verify reaches it (exit 0 or 1, not 2 or 3)`, async () => {
      const o = await reach.get(s)!.verify;
      expect([0, 1], shown(o)).toContain(o.code);
    });
  }

  it("the certificate user's key without its certificate is refused (no authorized_keys): the certificate is what logs in", async () => {
    const o = await bareKey;
    expect(o.code, shown(o)).toBe(255);
    expect(o.stderr).toMatch(/Permission denied/);
  });

  it('-k under a pty (script): decom asks "SSH password:", the password typed, verify over --ssh openssh reaches the host (exit 0 or 1)', async () => {
    const o = await askPass;
    expect(o.answered, `no "SSH password:" prompt: exit ${o.code}\n${o.out}`).toEqual(['SSH password:']);
    expect([0, 1], `exit ${o.code}\n${o.out}`).toContain(o.code);
  });

  it('a wrong vault password: exit 2, one line on stderr, no secret in it', async () => {
    const o = await wrongVault;
    expect(o.code, shown(o)).toBe(2);
    expect(o.stderr.trimEnd().split('\n'), shown(o)).toHaveLength(1);
    expect(secretsIn(`${o.stdout}${o.stderr}`)).toEqual([]);
  });

  it('a reset over --ssh openssh leaves a CRI node clean, the independent checker agreeing', async () => {
    const o = await reset;
    expect(o.code, shown(o)).toBe(0);
    const report = JSON.parse(o.stdout) as { journal: string; hosts: { host: string; clean: boolean }[] };
    expect(report.hosts.map((x) => [x.host, x.clean])).toEqual([[NODE, true]]);
    // The pods went through containerd's own socket, forwarded by the master, as over ssh2 (no crictl on the node).
    const journal = readFileSync(report.journal, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { event: string; step?: string; output?: string });
    const teardown = journal.find((e) => e.event === 'action' && e.step === 'containers');
    expect(teardown?.output).toMatch(/^CRI v1 StopPodSandbox, RemovePodSandbox [0-9a-f]{13} \(kube-system\/coredns-/m);
    expect(leftovers(NODE)).toEqual([]);
  });

  it("the sampler saw decom's children on this machine: ssh with a control socket, and the askpass helper", async () => {
    const { local } = await sampled;
    expect(local.samples, 'samples taken').toBeGreaterThan(5);
    const masters = local.ours.filter((a) => /^(\S*\/)?ssh\s/.test(a) && /ControlPath|\s-S\s?\S/.test(a));
    expect(masters, `decom's processes seen:\n${local.ours.join('\n')}`).not.toEqual([]);
    expect(local.ours.filter((a) => /askpass/i.test(a)), `decom's processes seen:\n${local.ours.join('\n')}`).not.toEqual([]);
  });

  it('no password, vault password or decrypted value in any process list or environment, here or on the node', async () => {
    const { local, node } = await sampled;
    expect(node.samples, "the node's samples").toBeGreaterThan(5);
    expect(node.sessions, 'the sampler on the node watched the password and sudo users log in').not.toEqual([]);
    expect(local.leaks).toEqual([]);
    expect(node.leaks).toEqual([]);
  });

  it('no secret in any output of decom, nor in any file its runs wrote (their homes: state, journals)', async () => {
    const outputs = [...SECRET_SETUPS.map((s) => reach.get(s)!.verify), wrongVault];
    for (const o of await Promise.all(outputs)) expect(secretsIn(`${o.stdout}${o.stderr}`), shown(o)).toEqual([]);
    // The terminal's echo of what was typed is output too: decom must turn it off before it prompts, or a password typed ahead shows.
    const k = await askPass;
    expect(secretsIn(k.out), `-k, the pty's output: exit ${k.code}\n${k.out}`).toEqual([]);
    await sampled; // every run of those homes, Ansible's too, has ended
    expect(secretHomes.flatMap((h) => secretsUnder(h.home))).toEqual([]);
  });
});
