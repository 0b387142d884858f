// Every host Ansible reaches, decom reaches (issue 41), with Ansible (ansible-core) the judge, on a
// 2-node sandbox: node1 is the bastion, node2's sshd answers node1 alone. For each set-up (a plain
// inventory, hosts named only in ~/.ssh/config, -F FILE, Match and Include, kubespray's bastion, a
// ProxyCommand, ansible.cfg's remote_user and private_key_file, ansible_connection=local, a login
// password as SSH's password method and through PAM's keyboard-interactive, never shown)
// `ansible -m raw -a true` reaches the host and so does `decom verify`; a reset through the bastion
// leaves node2 clean (the independent checker after); an unknown host key is refused whatever
// kubespray's ansible.cfg and the bastion turn off, each setting named; ansible_connection=docker
// is refused by name. ssh reads ~/.ssh from the passwd home, not $HOME: every ansible and decom
// runs in a mount namespace of its own where the test home is bound over that home (helpers/home.ts).
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ansible, closeControlMasters, decomIn, homes, shown, write, type Home, type Outcome } from '../helpers/home.js';
import { addrOf, down, ssh, sshArgv, STATE_DIR, up } from '../helpers/sandbox.js';
import { leftovers } from '../helpers/residue.js';
import { tempDir } from '../helpers/temp.js';

const execFileAsync = promisify(execFile);

const BASTION_NODE = 'node1';
/** A user of node1 who logs in with a password, on sshd's of its own (ports below). */
const PASSWORD_USER = 'pwlogin';
const LOGIN_PASSWORD = 'Login-pa55-reach';
const PASSWORD_PORT = 2201;
const KBD_PORT = 2202;
const FIREWALLED = 'node2';
const KEY = join(STATE_DIR, 'id_ed25519');
const KNOWN_HOSTS = join(STATE_DIR, 'known_hosts');

/** The sandbox's login options (key, pinned host keys, no prompt), as the test helpers log in. */
const PINNED = ['-i', KEY, '-o', `UserKnownHostsFile=${KNOWN_HOSTS}`, '-o', 'StrictHostKeyChecking=yes', '-o', 'BatchMode=yes'];

// kubespray's roles/kubespray_defaults/defaults/main/main.yml, as its playbooks give it to every
// host: a ProxyCommand through the host named bastion when there is one. Ansible renders it itself.
const KUBESPRAY_BASTION_ARGS = `ansible_ssh_common_args: "{% if 'bastion' in groups['all'] %} -o ProxyCommand='ssh -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -W %h:%p -p {{ hostvars['bastion']['ansible_port'] | default(22) }} {{ hostvars['bastion']['ansible_user'] }}@{{ hostvars['bastion']['ansible_host'] }} {% if ansible_ssh_private_key_file is defined %}-i {{ ansible_ssh_private_key_file }}{% endif %} ' {% endif %}"\n`;

// kubespray's ansible.cfg, the lines that turn host keys off (and the rest of its ssh_args).
const KUBESPRAY_ANSIBLE_CFG = `[ssh_connection]
pipelining=True
ssh_args = -o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100 -o UserKnownHostsFile=/dev/null
[defaults]
host_key_checking=False
`;

/** The sandbox's known_hosts without the lines of `addr`: that host's key unknown. */
function knownHostsWithout(addr: string): string {
  const lines = readFileSync(KNOWN_HOSTS, 'utf8').split('\n');
  const kept = lines.filter((l) => !(l.split(/\s+/)[0] ?? '').split(',').some((name) => name === addr || name === `[${addr}]:22`));
  if (kept.length === lines.length) throw new Error(`no line of ${KNOWN_HOSTS} names ${addr}: its format changed?`);
  return kept.join('\n');
}

/** What each reach set-up is, in the tests' words. */
const SETUPS = {
  plain: 'a plain inventory (ansible_host, ansible_user, ansible_ssh_private_key_file)',
  sshConfig: 'hosts named only in ~/.ssh/config (HostName, User, IdentityFile, Port there)',
  dashF: '-F FILE in ansible_ssh_common_args',
  matchInclude: 'a Match host block and an Include in ~/.ssh/config',
  bastion: "kubespray's bastion host (Ansible given kubespray's ProxyCommand, decom the inventory alone)",
  proxyCommand: 'a ProxyCommand in ansible_ssh_common_args',
  ansibleCfg: "ansible.cfg's remote_user and private_key_file, run from its dir, the inventory setting neither",
  local: 'ansible_connection=local for this machine (verify only)',
  password: 'ansible_password, on an sshd that takes passwords (SSH password login)',
  keyboardInteractive: "ansible_ssh_pass, on an sshd that asks through PAM (keyboard-interactive)",
} as const;
type SetUp = keyof typeof SETUPS;

describe('every host Ansible reaches, decom reaches: ssh config, ProxyCommand, kubespray bastion, ansible.cfg, ansible_connection', () => {
  const dir = tempDir('decom-reach-');
  const { make: makeHome, all: allHomes } = homes(dir, () => readFileSync(KNOWN_HOSTS, 'utf8'));
  let n1 = '';
  let n2 = '';
  const reach = new Map<SetUp, { ansible: Promise<Outcome>; verify: Promise<Outcome> }>();
  let direct: Promise<Outcome>;
  let reset: Promise<Outcome>;
  let unknownKey: Record<'bastion' | 'node', { ansible: Promise<Outcome>; verify: Promise<Outcome> }>;
  let docker: Promise<Outcome>;
  const started: Promise<unknown>[] = [];
  const track = <T>(p: Promise<T>): Promise<T> => {
    started.push(p);
    p.catch(() => undefined); // awaited by its test; a rejection is that test's failure, not an unhandled one
    return p;
  };

  beforeAll(() => {
    up(['--nodes', '2', '--scenario', 'clean,kubespray-leftovers']);
    n1 = addrOf(BASTION_NODE);
    n2 = addrOf(FIREWALLED);
    // node2's sshd: open to the bastion, new connections from anyone else reset (quick to fail).
    ssh(FIREWALLED, `iptables -w -I INPUT 1 -p tcp --dport 22 -s ${n1} -j ACCEPT && iptables -w -I INPUT 2 -p tcp --dport 22 --syn -j REJECT --reject-with tcp-reset`);
    // ansible.cfg's user on node1: a deploy user with a key of its own (root does not take it), sudo without a password.
    const deployKey = join(dir, 'deploy_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'reach-deploy', '-f', deployKey]);
    ssh(
      BASTION_NODE,
      `useradd -m -s /bin/sh deploy && usermod -p '*' deploy && install -d -m 700 -o deploy -g deploy /home/deploy/.ssh && echo '${readFileSync(`${deployKey}.pub`, 'utf8').trim()}' > /home/deploy/.ssh/authorized_keys && chown deploy: /home/deploy/.ssh/authorized_keys && echo 'deploy ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/deploy && chmod 0440 /etc/sudoers.d/deploy`,
    );

    // Two more sshd on node1 for a user who logs in with a password: one takes it as SSH's password method,
    // the other asks for it through PAM (keyboard-interactive). Same host key; no key of the user's is accepted.
    ssh(
      BASTION_NODE,
      `useradd -m -s /bin/sh ${PASSWORD_USER} && echo '${PASSWORD_USER}:${LOGIN_PASSWORD}' | chpasswd && echo '${PASSWORD_USER} ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/${PASSWORD_USER} && chmod 0440 /etc/sudoers.d/${PASSWORD_USER}` +
        ` && /usr/sbin/sshd -p ${PASSWORD_PORT} -o PasswordAuthentication=yes -o KbdInteractiveAuthentication=no -o UsePAM=no -o PubkeyAuthentication=no -o PidFile=/run/sshd-password.pid` +
        ` && /usr/sbin/sshd -p ${KBD_PORT} -o PasswordAuthentication=no -o KbdInteractiveAuthentication=yes -o UsePAM=yes -o PubkeyAuthentication=no -o PidFile=/run/sshd-kbd.pid`,
    );
    const withPorts = (known: string) => `${known}\n${[PASSWORD_PORT, KBD_PORT].map((p) => known.split('\n').filter((l) => l.split(/\s+/)[0] === n1).map((l) => l.replace(n1, `[${n1}]:${p}`))).flat().join('\n')}\n`;

    direct = track(execFileAsync('ssh', ['-o', 'ConnectTimeout=10', ...sshArgv(FIREWALLED, 'true')], { encoding: 'utf8' }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
    ));

    const start = (s: SetUp, h: Home, inventory: string, host: string, ansibleExtra: string[] = []) =>
      reach.set(s, { ansible: track(ansible(h, inventory, host, ansibleExtra)), verify: track(decomIn(h, ['verify', inventory, host])) });

    {
      const h = makeHome('plain');
      start('plain', h, write(h, 'hosts.yaml', `all:\n  hosts:\n    node1: {ansible_host: ${n1}, ansible_user: root, ansible_ssh_private_key_file: ${KEY}}\n`), 'node1');
    }
    {
      const h = makeHome('ssh-config', { config: `Host reach-alias\n  HostName ${n1}\n  User root\n  IdentityFile ${KEY}\n  Port 22\n` });
      start('sshConfig', h, write(h, 'hosts.ini', 'reach-alias\n'), 'reach-alias');
    }
    {
      const h = makeHome('dash-f');
      const file = write(h, 'ssh-reach.conf', `Host reach-f\n  HostName ${n1}\n  User root\n  IdentityFile ${KEY}\n`);
      start('dashF', h, write(h, 'hosts.yaml', `all:\n  hosts:\n    reach-f: {ansible_ssh_common_args: "-F ${file}"}\n`), 'reach-f');
    }
    {
      // The alias's HostName comes from the included file; Match host then sees that address.
      const h = makeHome('match-include', {
        config: `Include config.d/*.conf\n\nMatch host ${n1}\n  User root\n  IdentityFile ${KEY}\n`,
        'config.d/reach.conf': `Host reach-match\n  HostName ${n1}\n`,
      });
      start('matchInclude', h, write(h, 'hosts.ini', 'reach-match\n'), 'reach-match');
    }
    // kubespray's inventory.ini with its bastion section, as its sample writes it.
    const bastionInventory = (h: Home) =>
      write(h, 'inventory.ini', `[all]\nnode2 ansible_host=${n2} ip=${n2}\n\n# ## configure a bastion host if your nodes are not directly reachable\n[bastion]\nbastion ansible_host=${n1} ansible_user=root\n\n[kube_node]\nnode2\n\n[k8s_cluster:children]\nkube_node\n\n[all:vars]\nansible_user=root\nansible_ssh_private_key_file=${KEY}\n`);
    // kubespray's bastion arguments, for Ansible alone (-e): decom is given the inventory and nothing else.
    const kubesprayVars = join(dir, 'kubespray-defaults.yml');
    writeFileSync(kubesprayVars, `# kubespray's bastion default (roles/kubespray_defaults)\n${KUBESPRAY_BASTION_ARGS}`);
    {
      const h = makeHome('bastion');
      start('bastion', h, bastionInventory(h), FIREWALLED, ['-e', `@${kubesprayVars}`]);
    }
    {
      const h = makeHome('proxycommand');
      const proxy = `ssh -W %h:%p ${PINNED.join(' ')} root@${n1}`;
      start('proxyCommand', h, write(h, 'hosts.yaml', `all:\n  hosts:\n    node2:\n      ansible_host: ${n2}\n      ansible_user: root\n      ansible_ssh_private_key_file: ${KEY}\n      ansible_ssh_common_args: ${JSON.stringify(`-o ProxyCommand="${proxy}"`)}\n`), FIREWALLED);
    }
    {
      const h = makeHome('ansible-cfg');
      write(h, 'ansible.cfg', `[defaults]\nremote_user = deploy\nprivate_key_file = ${deployKey}\n`);
      start('ansibleCfg', h, write(h, 'hosts.ini', `reach-cfg ansible_host=${n1} ansible_become=true\n`), 'reach-cfg');
    }
    {
      const h = makeHome('password', {}, withPorts(readFileSync(KNOWN_HOSTS, 'utf8')));
      start('password', h, write(h, 'hosts.ini', `node1 ansible_host=${n1} ansible_port=${PASSWORD_PORT} ansible_user=${PASSWORD_USER} ansible_password=${LOGIN_PASSWORD} ansible_become=true\n`), 'node1');
    }
    {
      const h = makeHome('keyboard-interactive', {}, withPorts(readFileSync(KNOWN_HOSTS, 'utf8')));
      start('keyboardInteractive', h, write(h, 'hosts.ini', `node1 ansible_host=${n1} ansible_port=${KBD_PORT} ansible_user=${PASSWORD_USER} ansible_ssh_pass=${LOGIN_PASSWORD} ansible_become=true\n`), 'node1');
    }
    {
      const h = makeHome('local');
      start('local', h, write(h, 'hosts.ini', `${hostname()} ansible_connection=local\n`), hostname());
    }

    // Host keys turned off by kubespray's ansible.cfg and by the bastion's own StrictHostKeyChecking=no,
    // with one key unknown: the bastion's, or the node's. Ansible (kubespray's ProxyCommand) reaches node2 anyway.
    const hostKeysOff = (name: string, unknown: string) => {
      const h = makeHome(name, {}, knownHostsWithout(unknown));
      write(h, 'ansible.cfg', KUBESPRAY_ANSIBLE_CFG);
      const inventory = write(
        h,
        'hosts.yaml',
        `all:\n  hosts:\n    bastion: {ansible_host: ${n1}, ansible_user: root, ansible_ssh_common_args: "-o StrictHostKeyChecking=no"}\n    node2: {ansible_host: ${n2}, ansible_user: root}\n  vars:\n    ansible_ssh_private_key_file: ${KEY}\n`,
      );
      return { ansible: track(ansible(h, inventory, FIREWALLED, ['-e', `@${kubesprayVars}`])), verify: track(decomIn(h, ['verify', inventory, FIREWALLED])) };
    };
    unknownKey = { bastion: hostKeysOff('unknown-bastion-key', n1), node: hostKeysOff('unknown-node-key', n2) };

    {
      const h = makeHome('docker');
      docker = track(decomIn(h, ['verify', write(h, 'hosts.ini', `node1 ansible_host=${n1} ansible_user=root ansible_ssh_private_key_file=${KEY} ansible_connection=docker\n`), 'node1']));
    }

    // The reset through the bastion, once everything that reaches node2 has ended (a probe mid-reset would judge a half-done node).
    const node2Reach = [reach.get('bastion')!, reach.get('proxyCommand')!, unknownKey.bastion, unknownKey.node].flatMap((r) => [r.ansible, r.verify]);
    reset = track(
      Promise.allSettled(node2Reach).then(() => {
        const h = makeHome('reset');
        return decomIn(h, ['run', bastionInventory(h), FIREWALLED, '--playbook', 'reset', '--yes', '--output', 'json', '--state-dir', join(h.dir, 'state')]);
      }),
    );
  });

  afterAll(async () => {
    await Promise.allSettled(started);
    try {
      for (const h of allHomes) await closeControlMasters(h.home);
    } finally {
      down();
    }
  });

  it('node2 is firewalled: a direct ssh from this machine is refused', async () => {
    const o = await direct;
    expect(o.code, shown(o)).toBe(255);
    expect(o.stderr).toMatch(/Connection refused/);
  });

  for (const [s, what] of Object.entries(SETUPS) as [SetUp, string][]) {
    it(`${what}: Ansible reaches it`, async () => {
      const o = await reach.get(s)!.ansible;
      expect(o.code, shown(o)).toBe(0);
    });
    it(`${what}: decom verify reaches it (exit 0 or 1, not 3)`, async () => {
      const o = await reach.get(s)!.verify;
      expect([0, 1], shown(o)).toContain(o.code);
    });
  }

  it('the login password is never shown: not in any output of decom', async () => {
    for (const s of ['password', 'keyboardInteractive'] as const) {
      const o = await reach.get(s)!.verify;
      expect(`${o.stdout}${o.stderr}`).not.toContain(LOGIN_PASSWORD);
    }
  });

  it("a reset through kubespray's bastion leaves node2 clean, the independent checker agreeing", async () => {
    const o = await reset;
    expect(o.code, shown(o)).toBe(0);
    const report = JSON.parse(o.stdout) as { hosts: { host: string; clean: boolean }[] };
    expect(report.hosts.map((x) => [x.host, x.clean])).toEqual([[FIREWALLED, true]]);
    // The checker logs in directly: the firewall (the user's own rules, which the reset keeps) is lifted through the bastion.
    const throughBastion = (command: string) => execFileSync('ssh', [...PINNED, '-o', `ProxyCommand=ssh -W %h:%p ${PINNED.join(' ')} root@${n1}`, `root@${n2}`, command], { encoding: 'utf8' });
    const rules = [`-A INPUT -s ${n1}/32 -p tcp -m tcp --dport 22 -j ACCEPT`, '-A INPUT -p tcp -m tcp --dport 22 --tcp-flags FIN,SYN,RST,ACK SYN -j REJECT --reject-with tcp-reset'];
    expect(throughBastion('iptables -w -S INPUT').split('\n'), 'the firewall survives the reset').toEqual(expect.arrayContaining(rules));
    throughBastion(rules.map((r) => `iptables -w ${r.replace('-A', '-D')}`).join(' && '));
    expect(leftovers(FIREWALLED)).toEqual([]);
  });

  for (const [which, whose] of [['bastion', "the bastion's"], ['node', "node2's"]] as const) {
    it(`kubespray's ansible.cfg and the bastion's StrictHostKeyChecking=no, ${whose} key unknown: Ansible reaches node2, decom refuses (exit 3) naming each setting and --accept-new-host-keys`, async () => {
      const a = await unknownKey[which].ansible;
      expect(a.code, `Ansible, its host keys off: ${shown(a)}`).toBe(0);
      const o = await unknownKey[which].verify;
      expect(o.code, shown(o)).toBe(3);
      expect(o.stderr).toMatch(/unknown host key|host-key/i);
      for (const setting of ['host_key_checking', 'StrictHostKeyChecking', 'UserKnownHostsFile', '--accept-new-host-keys']) expect(o.stderr, setting).toContain(setting);
    });
  }

  it('ansible_connection=docker is refused by name (exit 2)', async () => {
    const o = await docker;
    expect(o.code, shown(o)).toBe(2);
    expect(o.stderr).toContain('ansible_connection');
    expect(o.stderr).toContain('docker');
  });
});
