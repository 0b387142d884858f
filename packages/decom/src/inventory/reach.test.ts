// Reaching a host as Ansible does (src/inventory/reach.ts, openssh-config.ts, ansible-cfg.ts):
// every row of docs/inventory.md's table has a case here, and every case a row. The inventory,
// ansible.cfg and an OpenSSH config written to a temporary folder, read with the real `ssh -G`;
// the SshTarget decom would connect with, the warnings and the refusals asserted. No network.
import { readFileSync, rmSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { UserError } from '../util/errors.js';
import { fileTree, tempDir } from '../../test/helpers/temp.js';
import { optionsForMaster } from './connection.js';
import { loadInventory, reachHosts, redact, type ConnectionOverrides, type Host } from './index.js';

const DOCS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', 'docs', 'inventory.md');
const TMP = tempDir('decom-reach-test-');
afterAll(() => rmSync(TMP, { recursive: true, force: true }));
afterEach(() => vi.unstubAllEnvs());

let n = 0;
/** Files (relative path -> content) in a fresh folder; returns the folder. */
const tree = (files: Record<string, string>): string => fileTree(join(TMP, `case${++n}`), files);

/**
 * The hosts of an inventory (hosts.ini or hosts.yaml of `files`) as decom reaches them;
 * ansible.cfg from the folder when it holds one (ANSIBLE_CONFIG), else none; the command
 * line's settings (`overrides`, DIR in them the folder).
 */
async function reach(files: Record<string, string>, only?: string, overrides: ConnectionOverrides = {}): Promise<{ hosts: Map<string, Host>; warnings: string[] }> {
  const dir = tree(files);
  vi.stubEnv('ANSIBLE_CONFIG', files['ansible.cfg'] !== undefined ? join(dir, 'ansible.cfg') : join(dir, 'no-ansible.cfg'));
  const inDir = (v: string) => v.replaceAll('DIR', dir);
  const flags: ConnectionOverrides = JSON.parse(inDir(JSON.stringify(overrides)));
  const inv = await loadInventory(join(dir, files['hosts.ini'] !== undefined ? 'hosts.ini' : 'hosts.yaml'), { defaultUser: 'ops-default', overrides: flags });
  const warnings: string[] = [];
  const targets = [...inv.hosts.values()].filter((h) => !only || h.name === only);
  const hosts = await reachHosts(targets, { warn: (l) => warnings.push(l) });
  return { hosts: new Map(hosts.map((h) => [h.name, h])), warnings };
}

async function refusal(files: Record<string, string>): Promise<string> {
  const e = await reach(files).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(UserError);
  expect((e as UserError).exitCode).toBe(2);
  return (e as UserError).message;
}

const ini = (line: string, more: Record<string, string> = {}) => ({ 'hosts.ini': `[kube_node]\n${line}\n`, ...more });
/** An OpenSSH config given with -F, so nothing of this machine's own is read. */
const withConfig = (config: string, line = 'node1 ansible_ssh_common_args="-F DIR/ssh_config"') => ini(line, { ssh_config: config });

const HOME = userInfo().homedir;

/** One case per row of the table, by the row's first cell. */
const CASES: Record<string, () => Promise<void>> = {
  '`ansible_host`, `ansible_ssh_host`': async () => {
    const { hosts } = await reach(ini('node1 ansible_host=198.51.100.7\nnode2 ansible_ssh_host=198.51.100.8'));
    expect(hosts.get('node1')).toMatchObject({ address: '198.51.100.7', destination: '198.51.100.7' });
    expect(hosts.get('node2')).toMatchObject({ address: '198.51.100.8' });
  },
  '`ansible_port`, `ansible_ssh_port`': async () => {
    const { hosts } = await reach(ini('node1 ansible_port=2201\nnode2 ansible_ssh_port=2202'));
    expect([hosts.get('node1')!.port, hosts.get('node2')!.port]).toEqual([2201, 2202]);
  },
  '`ansible_user`, `ansible_ssh_user`': async () => {
    const { hosts } = await reach(ini('node1 ansible_user=deploy\nnode2 ansible_ssh_user=admin'));
    expect([hosts.get('node1')!.user, hosts.get('node2')!.user]).toEqual(['deploy', 'admin']);
  },
  '`ansible_ssh_private_key_file`, `ansible_private_key_file`': async () => {
    const { hosts } = await reach(ini('node1 ansible_ssh_private_key_file=DIR/k1\nnode2 ansible_private_key_file=DIR/k2'));
    const dir = join(TMP, `case${n}`);
    expect(hosts.get('node1')!.privateKeyFile).toBe(join(dir, 'k1'));
    expect(hosts.get('node2')!.privateKeyFile).toBe(join(dir, 'k2'));
    expect(hosts.get('node1')!.identityFiles).not.toContain(join(dir, 'k1'));
  },
  '`ansible_ssh_timeout`, `ansible_timeout`': async () => {
    const { hosts } = await reach(ini('node1 ansible_ssh_timeout=7\nnode2 ansible_timeout=8\nnode3'));
    expect([1, 2, 3].map((i) => hosts.get(`node${i}`)!.connectTimeoutSec)).toEqual([7, 8, 10]);
  },
  '`ansible_ssh_args`': async () => {
    const cfg = { 'ansible.cfg': '[ssh_connection]\nssh_args = -o User=from-cfg\n' };
    const { hosts } = await reach(ini(`node1 'ansible_ssh_args=-o User=from-var' ansible_user=own`, cfg));
    expect(hosts.get('node1')!.user).toBe('from-var');
  },
  '`ansible_ssh_common_args`, `ansible_ssh_extra_args`': async () => {
    // Ansible's order: the port variable before the args, so it wins; the common args before the extra args.
    const { hosts } = await reach(ini(`node1 ansible_port=2201 'ansible_ssh_common_args=-p 2999 -o User=first' 'ansible_ssh_extra_args=-o User=second -o HostKeyAlias=n1'`));
    expect(hosts.get('node1')).toMatchObject({ port: 2201, user: 'first', hostKeyAlias: 'n1' });
  },
  '`ansible_connection` `ssh`, `smart`, `paramiko` (and as `ansible.builtin.*`)': async () => {
    const { hosts } = await reach(
      ini('node1 ansible_connection=ssh ansible_host=198.51.100.1\nnode2 ansible_connection=smart\nnode3 ansible_connection=paramiko\nnode4 ansible_connection=ansible.builtin.ssh'),
    );
    for (const h of hosts.values()) expect(h.connection).toBeUndefined();
    expect(hosts.get('node1')!.address).toBe('198.51.100.1');
  },
  '`ansible_connection` `local`': async () => {
    const { hosts } = await reach(ini(`${hostname()} ansible_connection=local ansible_host=198.51.100.1`));
    const h = hosts.get(hostname())!;
    expect(h.connection).toBe('local');
    expect(h.identityFiles).toBeUndefined(); // no ssh -G: nothing of SSH is asked for it
  },
  '`ansible_connection` any other (`docker`, `kubectl`, `winrm`, ...)': async () => {
    for (const other of ['docker', 'kubectl', 'winrm', 'community.general.lxd']) {
      expect(await refusal(ini(`node1 ansible_connection=${other}`))).toMatch(new RegExp(`hosts\\.ini:2:\\d+: .*ansible_connection.*"${other.replaceAll('.', '\\.')}"`));
    }
    // Refused when that host is reached, not when another one of the inventory is.
    const { hosts } = await reach(ini('node1\nwin1 ansible_connection=winrm'), 'node1');
    expect([...hosts.keys()]).toEqual(['node1']);
  },
  '`ansible_become`, `ansible_become_user`, `ansible_become_password`': async () => {
    const { hosts } = await reach(ini('node1 ansible_become=true ansible_become_user=admin ansible_become_password=pw1'));
    expect(hosts.get('node1')).toMatchObject({ become: true, becomeUser: 'admin', becomePassword: 'pw1' });
  },
  '`ansible_become_method` `sudo`': async () => {
    const { hosts } = await reach(ini('node1 ansible_become=yes ansible_become_method=sudo'));
    expect(hosts.get('node1')!.become).toBe(true);
  },
  '`-u`, `--private-key`': async () => {
    // Below the inventory's own (a host's, a group's), over ansible.cfg's and the OpenSSH config's, as Ansible's -u and --private-key.
    const cfg = { 'ansible.cfg': '[defaults]\nremote_user = cfg-user\nprivate_key_file = DIR/cfg_key\n', ssh_config: 'Host *\n  User config-user\n  IdentityFile DIR/config_key\n' };
    const args = `'ansible_ssh_common_args=-F DIR/ssh_config'`;
    const flags = { user: 'cli-user', privateKey: 'DIR/cli_key' };
    const { hosts } = await reach(ini(`node1 ${args}\nnode2 ${args} ansible_user=own ansible_ssh_private_key_file=DIR/own_key`, cfg), undefined, flags);
    const dir = join(TMP, `case${n}`);
    expect(hosts.get('node1')).toMatchObject({ user: 'cli-user', privateKeyFile: join(dir, 'cli_key'), identityFiles: [join(dir, 'config_key')] });
    expect(hosts.get('node2')).toMatchObject({ user: 'own', privateKeyFile: join(dir, 'own_key') });
    const group = await reach(ini('node1', { 'group_vars/kube_node.yml': 'ansible_user: from-group\n' }), undefined, flags);
    expect(group.hosts.get('node1')!.user).toBe('from-group');
    // Where the variable's -o User= and -o IdentityFile= go on Ansible's command line.
    const asVariable = await reach(ini(`node1 ${args} ansible_user=cli-user ansible_ssh_private_key_file=DIR/cli_key`, cfg));
    const options = (h: Host) => h.reach!.options.map((o) => o.replace(/\/tmp\/\S+\/case\d+/, 'DIR'));
    expect(options(hosts.get('node1')!)).toEqual(options(asVariable.hosts.get('node1')!));
  },
  '`-b`, `--become-user`, `-K`': async () => {
    const flags = { become: true, becomeUser: 'cli-admin', becomePassword: 'typed-pw' };
    const { hosts } = await reach(ini('node1\nnode2 ansible_become=false ansible_become_user=own ansible_become_password=own-pw'), undefined, flags);
    const asVariables = await reach(ini('node1 ansible_become=true ansible_become_user=cli-admin ansible_become_password=typed-pw'));
    expect(hosts.get('node1')).toMatchObject({ become: true, becomeUser: 'cli-admin', becomePassword: 'typed-pw' });
    expect(hosts.get('node1')).toMatchObject(Object.fromEntries(['become', 'becomeUser', 'becomePassword', 'user'].map((k) => [k, asVariables.hosts.get('node1')![k as keyof Host]])));
    expect(hosts.get('node2')).toMatchObject({ become: false, becomeUser: 'own', becomePassword: 'own-pw' });
    // -K's password is a secret as the inventory's is: never in what is printed of a host.
    expect(JSON.stringify(redact(hosts.get('node1')!))).not.toContain('typed-pw');
  },
  '`-e` with connection variables or `decom_*` ones (`key=value`, `@FILE`, JSON)': async () => {
    const inventory = ini('node1 ansible_user=own ansible_become=false', { 'more.yml': 'ansible_port: 2202\ndecom_node_name: k8s-node1\n' });
    const extraVars = ['ansible_user=from-e ansible_become=yes', '@DIR/more.yml', '{"ansible_become_user": "ops"}'];
    const { hosts } = await reach(inventory, undefined, { user: 'cli-user', become: false, extraVars });
    expect(hosts.get('node1')).toMatchObject({ user: 'from-e', become: true, becomeUser: 'ops', port: 2202, vars: expect.objectContaining({ decom_node_name: 'k8s-node1' }) });
    // The same target as the inventory's variables give.
    const asVariables = await reach(ini('node1 ansible_user=from-e ansible_become=yes ansible_become_user=ops ansible_port=2202'));
    for (const k of ['user', 'become', 'becomeUser', 'port', 'address'] as const) expect(hosts.get('node1')![k], k).toEqual(asVariables.hosts.get('node1')![k]);
  },
  '`-e` with any other variable, or a secret (`ansible_password`, `ansible_become_password`...) inline': async () => {
    const error = (extraVars: string[]) => reach(ini('node1'), undefined, { extraVars }).then(() => '', (e: UserError) => e.message);
    expect(await error(['ansible_become_password=hunter2'])).toBe(
      "-e: ansible_become_password is a secret: given inline it would show in ps and in audit --print-systemd-timer's unit; put it in a YAML file (ansible-vault encrypted if you like) and give -e @FILE",
    );
    expect(await error(['{"ansible_ssh_pass": "hunter2"}'])).toMatch(/^-e:1:22: ansible_ssh_pass is a secret/);
    expect(await error(['ansible_usr=x'])).toBe(
      "-e: ansible_usr: decom does not read this variable: -e takes only the ansible_* connection variables decom reads (ansible_user, ansible_become, ...), decom_kubeconfig, decom_node_name, decom_expected_hostname and kubespray's kube_override_hostname, ip, access_ip, etcd_address; did you mean ansible_user?",
    );
  },
  '`ansible_become_method` any other (`su`, `doas`, ...)': async () => {
    expect(await refusal(ini('node1 ansible_become=yes ansible_become_method=su'))).toMatch(/ansible_become_method: decom becomes root with sudo only, got "su"/);
  },
  '`ansible_password`, `ansible_ssh_pass` (and `-k`)': async () => {
    const { hosts } = await reach(ini('node1 ansible_password=hunter2\nnode2 ansible_ssh_pass=hunter3\nnode3'));
    expect([1, 2, 3].map((i) => hosts.get(`node${i}`)!.password)).toEqual(['hunter2', 'hunter3', undefined]);
    // -k: the hosts whose inventory gives none.
    const dir = tree({ 'hosts.ini': '[k]\nnode1 ansible_password=own\nnode2\n' });
    vi.stubEnv('ANSIBLE_CONFIG', join(dir, 'none'));
    const inv = await loadInventory(join(dir, 'hosts.ini'));
    const asked = await reachHosts([...inv.hosts.values()], { password: 'typed', warn: () => {} });
    expect(asked.map((h) => h.password)).toEqual(['own', 'typed']);
    expect(JSON.stringify(redact(asked[0]!))).not.toContain('own"');
  },
  'a `!vault` value or a vault-encrypted vars file': async () => {
    const vault = '!vault |\n        $ANSIBLE_VAULT;1.1;AES256\n        6162\n';
    // Opened with a vault password (vault.test.ts); without one, named.
    expect(await refusal({ 'hosts.yaml': `all:\n  hosts:\n    node1:\n      ansible_user: ${vault}` })).toMatch(/ansible_user: is encrypted with ansible-vault and no vault password was given/);
    expect(await refusal(ini('node1', { 'group_vars/all.yml': '$ANSIBLE_VAULT;1.1;AES256\n6162\n' }))).toMatch(/all\.yml: is encrypted with ansible-vault and no vault password/);
  },
  '`ansible_python_interpreter`': async () => {
    const { warnings } = await reach(ini('node1\nnode2\n[kube_node:vars]\nansible_python_interpreter=/usr/bin/python3'));
    expect(warnings).toEqual([expect.stringMatching(/^decom: warning \(every host\): \S*ansible_python_interpreter \(.*hosts\.ini:5:\d+\) is ignored: decom runs POSIX sh/)]);
  },
  '`ansible_pipelining`, `pipelining` (`ansible.cfg`)': async () => {
    const { warnings } = await reach(ini('node1 ansible_pipelining=true', { 'ansible.cfg': '[ssh_connection]\npipelining = True\n' }));
    expect(warnings).toEqual([
      expect.stringMatching(/ansible_pipelining .* is ignored: decom sends each phase/),
      expect.stringMatching(/\[ssh_connection\] pipelining \(.*ansible\.cfg:2\) is ignored/),
    ]);
  },
  '`host_key_checking = False` (`ansible.cfg`, `ANSIBLE_HOST_KEY_CHECKING`, `ansible_host_key_checking`)': async () => {
    const fromCfg = await reach(ini('node1', { 'ansible.cfg': '[defaults]\nhost_key_checking = False\n' }));
    expect(fromCfg.warnings).toEqual([expect.stringMatching(/\[defaults\] host_key_checking \(.*ansible\.cfg:2\) = False is not honoured: host keys are always checked .*--accept-new-host-keys/)]);
    expect(fromCfg.hosts.get('node1')!.strictHostKeyChecking).toBe('yes');
    vi.stubEnv('ANSIBLE_HOST_KEY_CHECKING', 'False');
    const fromEnv = await reach(ini('node1 ansible_host_key_checking=false'));
    expect(fromEnv.warnings.join('\n')).toMatch(/ansible_host_key_checking .* = false is not honoured[\s\S]*environment variable ANSIBLE_HOST_KEY_CHECKING\) = False is not honoured/);
  },
  '`ssh_args` (`ansible.cfg`)': async () => {
    // First on the command line: over the inventory's user, as in Ansible.
    const { hosts } = await reach(ini('node1 ansible_user=deploy', { 'ansible.cfg': '[ssh_connection]\nssh_args = -o User=from-cfg -o ServerAliveInterval=5 ; a comment\n' }));
    expect(hosts.get('node1')).toMatchObject({ user: 'from-cfg', serverAliveIntervalSec: 5 });
  },
  '`remote_user`, `remote_port`, `private_key_file`, `timeout` (`ansible.cfg`)': async () => {
    const cfg = { 'ansible.cfg': '[defaults]\nremote_user = cfg-user\nremote_port = 2299\nprivate_key_file = DIR/cfg_key\ntimeout = 33\n' };
    const { hosts } = await reach(ini('node1\nnode2 ansible_user=own ansible_port=2201', cfg));
    const dir = join(TMP, `case${n}`);
    expect(hosts.get('node1')).toMatchObject({ user: 'cfg-user', port: 2299, privateKeyFile: join(dir, 'cfg_key'), connectTimeoutSec: 33 });
    expect(hosts.get('node2')).toMatchObject({ user: 'own', port: 2201 });
  },
  '`ssh_common_args`, `ssh_extra_args` (`ansible.cfg`)': async () => {
    const cfg = { 'ansible.cfg': '[ssh_connection]\nssh_common_args = -o HostKeyAlias=from-cfg\nssh_extra_args = -o ServerAliveInterval=9\n' };
    const { hosts } = await reach(ini(`node1\nnode2 'ansible_ssh_common_args=-o HostKeyAlias=own'\nnode3 'ansible_ssh_extra_args=-o ServerAliveInterval=3'`, cfg));
    expect(hosts.get('node1')).toMatchObject({ hostKeyAlias: 'from-cfg', serverAliveIntervalSec: 9 });
    // Each setting on its own: the host's common args over ansible.cfg's, ansible.cfg's extra args kept, and the reverse.
    expect(hosts.get('node2')).toMatchObject({ hostKeyAlias: 'own', serverAliveIntervalSec: 9 });
    expect(hosts.get('node3')).toMatchObject({ hostKeyAlias: 'from-cfg', serverAliveIntervalSec: 3 });
  },
  '`control_path` (`ansible.cfg`), `ansible_control_path`': async () => {
    const { warnings } = await reach(ini('node1', { 'ansible.cfg': '[ssh_connection]\ncontrol_path = %(directory)s/%%h-%%r\n' }));
    expect(warnings).toEqual([expect.stringMatching(/\[ssh_connection\] control_path .* is ignored: decom keeps one connection per host/)]);
    const own = await reach(ini('node1 ansible_control_path=/tmp/cp'));
    expect(own.warnings).toEqual([expect.stringMatching(/ansible_control_path .* is ignored/)]);
  },
  'a host named `bastion`': async () => {
    const { hosts, warnings } = await reach({
      'hosts.yaml': `all:
  hosts:
    bastion: {ansible_host: 203.0.113.10, ansible_user: jump, ansible_port: 2022, ansible_ssh_common_args: -o StrictHostKeyChecking=no}
    node1: {ansible_host: 10.0.0.1, ansible_ssh_private_key_file: DIR/node_key}
    node2: {ansible_host: 10.0.0.2, ansible_ssh_common_args: -o ProxyJump=none}
    node3: {ansible_host: 10.0.0.3, ansible_ssh_extra_args: -o ServerAliveInterval=5}
`,
    });
    expect(hosts.get('node1')).toMatchObject({ address: '10.0.0.1', proxyJump: ['jump@203.0.113.10:2022'], privateKeyFile: expect.stringMatching(/node_key$/) });
    expect(hosts.get('bastion')!.proxyJump).toEqual([]);
    expect(hosts.get('node2')!.proxyJump).toEqual([]); // its own common args: kubespray's default does not apply
    expect(hosts.get('node3')!.proxyJump).toEqual(['jump@203.0.113.10:2022']); // extra args leave it
    // The bastion's own StrictHostKeyChecking=no: named once, for it and the hosts reached through it; its key is checked.
    expect(warnings).toEqual([expect.stringMatching(/^decom: warning \(bastion, node1, node3\): StrictHostKeyChecking=no in all\.hosts\.bastion\.ansible_ssh_common_args .* is not honoured/)]);
  },
  '`HostName`, `Port`, `User`': async () => {
    const { hosts } = await reach(withConfig('Host node1\n  HostName 198.51.100.9\n  Port 2022\n  User cfg\n'));
    expect(hosts.get('node1')).toMatchObject({ address: '198.51.100.9', port: 2022, user: 'cfg', destination: 'node1' });
  },
  '`IdentityFile`, `IdentitiesOnly`': async () => {
    const { hosts } = await reach(withConfig('Host node1\n  IdentityFile %d/.ssh/id_%r_%h\n  IdentityFile DIR/second\n  IdentitiesOnly yes\n  User u1\n'));
    expect(hosts.get('node1')).toMatchObject({ identityFiles: [join(HOME, '.ssh/id_u1_node1'), join(TMP, `case${n}`, 'second')], identitiesOnly: true });
    const defaults = await reach(ini('node1'));
    expect(defaults.hosts.get('node1')!.identityFiles).toContain(join(HOME, '.ssh/id_ed25519'));
    expect(defaults.hosts.get('node1')!.identitiesOnly).toBe(false);
  },
  '`ProxyJump` (`-J`)': async () => {
    const { hosts } = await reach(
      ini(`node1 'ansible_ssh_common_args=-J a@jump1:2200,jump2'\nnode2 'ansible_ssh_common_args=-F DIR/ssh_config'`, {
        ssh_config: 'Host node2\n  ProxyJump j3\nHost j3\n  HostName 203.0.113.3\n  User hopper\n  Port 2203\n  UserKnownHostsFile DIR/hop_known\n',
      }),
    );
    const me = userInfo().username;
    // Each hop as ssh reaches it: its own user (not the node's), port and known_hosts files.
    expect(hosts.get('node1')!.proxyJump).toEqual(['a@jump1:2200', `${me}@jump2:22`]);
    expect(hosts.get('node2')).toMatchObject({ proxyJump: ['hopper@203.0.113.3:2203'], jumpKnownHostsFiles: [[join(TMP, `case${n}`, 'hop_known'), '/etc/ssh/ssh_known_hosts', '/etc/ssh/ssh_known_hosts2']] });
  },
  '`ProxyCommand`': async () => {
    const { hosts, warnings } = await reach(ini(`node1 'ansible_ssh_common_args=-o ProxyCommand="nc -q0 %h %p"'`));
    expect(hosts.get('node1')!.proxyCommand).toBe('nc -q0 %h %p');
    expect(warnings).toEqual([]);
  },
  '`UserKnownHostsFile`, `GlobalKnownHostsFile`': async () => {
    const { hosts } = await reach(withConfig('Host node1\n  UserKnownHostsFile DIR/kh1 DIR/kh2\n  GlobalKnownHostsFile DIR/global\n'));
    const dir = join(TMP, `case${n}`);
    expect(hosts.get('node1')).toMatchObject({ knownHostsFile: join(dir, 'kh1'), moreKnownHostsFiles: [join(dir, 'kh2'), join(dir, 'global')] });
  },
  '`StrictHostKeyChecking` `yes`, `ask`, `accept-new`': async () => {
    const { hosts, warnings } = await reach(
      ini(`node1 'ansible_ssh_common_args=-o StrictHostKeyChecking=yes'\nnode2 'ansible_ssh_common_args=-o StrictHostKeyChecking=ask'\nnode3 'ansible_ssh_common_args=-o StrictHostKeyChecking=accept-new'`),
    );
    expect([1, 2, 3].map((i) => hosts.get(`node${i}`)!.strictHostKeyChecking)).toEqual(['yes', 'yes', 'accept-new']);
    expect(warnings).toEqual([]);
  },
  '`HostKeyAlias`': async () => {
    const { hosts } = await reach(withConfig('Host node1\n  HostKeyAlias node1.keys\n'));
    expect(hosts.get('node1')!.hostKeyAlias).toBe('node1.keys');
  },
  '`ConnectTimeout`, `ServerAliveInterval`, `ServerAliveCountMax`': async () => {
    // ansible_ssh_timeout is not set: Ansible's own -o ConnectTimeout=10 comes first and wins, as for Ansible.
    const { hosts } = await reach(withConfig('Host node1\n  ConnectTimeout 3\n  ServerAliveInterval 4\n  ServerAliveCountMax 6\n'));
    expect(hosts.get('node1')).toMatchObject({ connectTimeoutSec: 10, serverAliveIntervalSec: 4, serverAliveCountMax: 6 });
    const own = await reach(withConfig('Host node1\n  ConnectTimeout 3\n', `node1 ansible_ssh_timeout=5 'ansible_ssh_common_args=-F DIR/ssh_config'`));
    expect(own.hosts.get('node1')!.connectTimeoutSec).toBe(5);
  },
  '`-F FILE`, `Include`, `Host`, `Match`': async () => {
    const { hosts } = await reach(
      ini(`node1 'ansible_ssh_common_args=-F DIR/ssh_config'\nnode2 'ansible_ssh_common_args=-F DIR/ssh_config'`, {
        ssh_config: 'Include DIR/included\nMatch host n1.example\n  Port 2023\nHost node*\n  User star\n',
        included: 'Host node1\n  HostName n1.example\n',
      }),
    );
    expect(hosts.get('node1')).toMatchObject({ port: 2023, user: 'star', address: 'n1.example' });
    expect(hosts.get('node2')).toMatchObject({ port: 22, user: 'star', address: 'node2' });
  },
  '`StrictHostKeyChecking no` (anywhere, decom\'s `strictHostKeyChecking: no` too)': async () => {
    const args = await reach(ini(`node1 'ansible_ssh_common_args=-o StrictHostKeyChecking=no'\nnode2 'ansible_ssh_common_args=-o StrictHostKeyChecking=no'`));
    expect(args.warnings).toHaveLength(2); // one per place it is written, each naming it
    expect(args.warnings[0]).toMatch(/StrictHostKeyChecking=no in \S*ansible_ssh_common_args \(.*hosts\.ini:2:\d+\) is not honoured/);
    expect([...args.hosts.values()].map((h) => h.strictHostKeyChecking)).toEqual(['yes', 'yes']);
    const config = await reach(withConfig('Host *\n  StrictHostKeyChecking no\n'));
    expect(config.warnings).toEqual([expect.stringMatching(/^decom: warning \(node1\): StrictHostKeyChecking no in the OpenSSH config \(ssh -G\) is not honoured/)]);
    const decom = await reach({ 'hosts.yaml': 'apiVersion: decom/v1\ndefaults: {strictHostKeyChecking: no}\nhosts: {node1: {}, node2: {}}\n' });
    expect(decom.warnings).toEqual([expect.stringMatching(/^decom: warning \(every host\): defaults\.strictHostKeyChecking \(.*hosts\.yaml:2:\d+\): no is not honoured/)]);
    expect(decom.hosts.get('node1')!.strictHostKeyChecking).toBe('yes');
  },
  '`UserKnownHostsFile /dev/null` (or `none`)': async () => {
    const { hosts, warnings } = await reach(ini(`node1 'ansible_ssh_extra_args=-o UserKnownHostsFile=/dev/null'`));
    expect(warnings).toEqual([expect.stringMatching(/UserKnownHostsFile=\/dev\/null in \S*ansible_ssh_extra_args .* is not honoured/)]);
    expect(hosts.get('node1')!.knownHostsFile).toBe(join(HOME, '.ssh/known_hosts'));
    // In the OpenSSH config, named there even when ansible.cfg turns host_key_checking off too.
    const none = await reach({ ...withConfig('Host node1\n  UserKnownHostsFile none\n'), 'ansible.cfg': '[defaults]\nhost_key_checking = False\n' });
    expect(none.hosts.get('node1')).toMatchObject({ knownHostsFile: join(HOME, '.ssh/known_hosts'), moreKnownHostsFiles: expect.arrayContaining([join(HOME, '.ssh/known_hosts2')]) });
    expect(none.warnings).toEqual([expect.stringMatching(/host_key_checking/), expect.stringMatching(/UserKnownHostsFile none in the OpenSSH config \(ssh -G\) is not honoured/)]);
  },
  'a ProxyCommand whose own `ssh` turns host keys off': async () => {
    // kubespray's bastion ProxyCommand, as copied into group_vars.
    const proxy = `-o ProxyCommand='ssh -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -W %h:%p -p 22 admin@203.0.113.10 -i DIR/key'`;
    const { hosts, warnings } = await reach(ini('node1', { 'group_vars/all.yml': `ansible_ssh_common_args: "${proxy}"\n` }));
    expect(hosts.get('node1')!.proxyCommand).toMatch(/^ssh -o UserKnownHostsFile=\/dev\/null/);
    expect(hosts.get('node1')!.knownHostsFile).toBe(join(HOME, '.ssh/known_hosts')); // the node's own key is still checked
    expect(warnings).toEqual([expect.stringMatching(/the ProxyCommand in \S*ansible_ssh_common_args \(.*all\.yml:1:\d+\) runs an ssh that does not check its hop's host key.*ProxyJump/)]);
  },
  '`ControlMaster`, `ControlPersist`, `ControlPath`': async () => {
    const cfg = { 'ansible.cfg': '[ssh_connection]\nssh_args = -C -o ControlMaster=auto -o ControlPersist=30m\n' };
    const { warnings } = await reach(ini(`node1 'ansible_ssh_common_args=-o ControlPath=/tmp/cm-%r'`, cfg));
    expect(warnings).toEqual([
      expect.stringMatching(/^decom: warning \(node1\): ControlMaster auto in \[ssh_connection\] ssh_args \(.*ansible\.cfg:2\) is ignored/),
      expect.stringMatching(/ControlPersist 1800 in \[ssh_connection\] ssh_args .* is ignored/),
      expect.stringMatching(new RegExp(`ControlPath /tmp/cm-${userInfo().username} in \\S*ansible_ssh_common_args .* is ignored`)),
    ]);
  },
  '`ForwardAgent`': async () => {
    const { warnings } = await reach(withConfig('Host node1\n  ForwardAgent yes\n'));
    expect(warnings).toEqual([expect.stringMatching(/ForwardAgent yes in the OpenSSH config \(ssh -G\) is ignored: decom never forwards the agent/)]);
  },
  '`CertificateFile`, `PKCS11Provider`, `SecurityKeyProvider`, a `KEY-cert.pub` beside a key, a hardware key (`sk-`), `GSSAPIAuthentication` with a Kerberos ticket': async () => {
    for (const line of ['CertificateFile DIR/cert.pub', 'PKCS11Provider /usr/lib/opensc-pkcs11.so', 'SecurityKeyProvider /usr/lib/sk.so']) {
      const setting = line.split(' ')[0]!;
      const { hosts } = await reach(withConfig(`Host node1\n  ${line}\n`));
      expect(hosts.get('node1')!.needsOpenSsh, setting).toBe(`${setting} in the OpenSSH config (ssh -G)`);
    }
    // ssh offers KEY-cert.pub with KEY; an sk- key needs the FIDO token: files beside the key say which.
    const pub = 'AAAAC3NzaC1lZDI1NTE5AAAAIGm7pQ2rZ6bVZ6v1mU6bS2xq0Jr2w4iX0lYqJ9m3sQ0k';
    const cert = await reach(ini('node1 ansible_ssh_private_key_file=DIR/id_cert', { id_cert: 'key\n', 'id_cert-cert.pub': `ssh-ed25519-cert-v01@openssh.com ${pub}\n` }));
    expect(cert.hosts.get('node1')!.needsOpenSsh).toMatch(/^the certificate beside \S+\/id_cert \(\S+\/id_cert-cert\.pub\)$/);
    const sk = await reach(ini('node1 ansible_ssh_private_key_file=DIR/id_sk', { id_sk: 'key\n', 'id_sk.pub': `sk-ssh-ed25519@openssh.com ${pub}\n` }));
    expect(sk.hosts.get('node1')!.needsOpenSsh).toMatch(/^the hardware key \S+\/id_sk \(sk-ssh-ed25519@openssh\.com\)$/);
    // Debian's ssh_config turns GSSAPI on for every host: without a ticket it is not a reason.
    vi.stubEnv('KRB5CCNAME', '');
    const plainKey = await reach(withConfig('Host node1\n  GSSAPIAuthentication yes\n'));
    expect(plainKey.hosts.get('node1')!.needsOpenSsh).toBeUndefined();
    vi.stubEnv('KRB5CCNAME', 'FILE:/tmp/krb5cc_test');
    const kerberos = await reach(withConfig('Host node1\n  GSSAPIAuthentication yes\n'));
    expect(kerberos.hosts.get('node1')!.needsOpenSsh).toBe('GSSAPIAuthentication in the OpenSSH config (ssh -G), with a Kerberos ticket');
  },
};

describe('reaching a host as Ansible does: docs/inventory.md, row by row', () => {
  const doc = readFileSync(DOCS, 'utf8');
  const table = doc.slice(doc.indexOf('| setting | honoured | warned and ignored | refused by name |'));
  const rows = table
    .split('\n')
    .slice(2)
    .filter((l) => l.startsWith('|'))
    .map((l) => l.split(' | ').map((c) => c.replace(/^\| ?| ?\|$/g, '').trim()));

  it('every row is in exactly one column, and has a case; every case is a row', () => {
    for (const cells of rows) expect(cells.slice(1).filter(Boolean), cells[0]).toHaveLength(1);
    expect(rows.map((r) => r[0]).sort()).toEqual(Object.keys(CASES).sort());
  });

  for (const [row, run] of Object.entries(CASES)) it(row, run);
});

describe("the OpenSSH transport's master", () => {
  it("is given Ansible's options, each a word of its own, without those that change what the connection does (-J: decom's own hops)", () => {
    expect(optionsForMaster(['-C', '-o', 'ControlPersist=30m', '-J', 'bastion', '-AN', '-p22', '-i', 'k', '-vT', '-S', '/tmp/s', '-F', 'cfg', '-L', '1:h:2'])).toEqual(['-C', '-o', 'ControlPersist=30m', '-p', '22', '-i', 'k', '-v', '-F', 'cfg']);
  });
});

describe('ssh -G and ansible.cfg', () => {
  it('a broken OpenSSH config is bad input naming the host and what ssh said', async () => {
    expect(await refusal(withConfig('Host node1\n  NoSuchOption 1\n'))).toMatch(/^node1: ssh -G node1 \(the OpenSSH config for this host\) failed: .*NoSuchOption/i);
  });

  it('without an ssh client: the inventory alone, and one warning naming the config not read', async () => {
    const dir = tree({ 'hosts.ini': '[k]\nnode1 ansible_port=2201\nnode2\n', ssh_config: 'Host *\n  Port 1\n' });
    vi.stubEnv('ANSIBLE_CONFIG', join(dir, 'none'));
    const inv = await loadInventory(join(dir, 'hosts.ini'), { defaultUser: 'ops-default' });
    const warnings: string[] = [];
    const hosts = await reachHosts([...inv.hosts.values()], { ssh: join(dir, 'no-ssh-here'), warn: (l) => warnings.push(l) });
    expect(hosts.map((h) => [h.port, h.user])).toEqual([
      [2201, 'ops-default'],
      [22, 'ops-default'],
    ]);
    expect(warnings.every((w) => /no ssh client found: .* not read/.test(w))).toBe(true);
  });

  it('ansible.cfg is found as Ansible finds it: ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg', async () => {
    const { findAnsibleConfig } = await import('./ansible-cfg.js');
    const dir = tree({ 'a/ansible.cfg': '', 'cwd/ansible.cfg': '', 'home/.ansible.cfg': '' });
    expect(findAnsibleConfig({ ANSIBLE_CONFIG: join(dir, 'a'), HOME: join(dir, 'home') }, join(dir, 'cwd'))).toBe(join(dir, 'a/ansible.cfg'));
    expect(findAnsibleConfig({ HOME: join(dir, 'home') }, join(dir, 'cwd'))).toBe(join(dir, 'cwd/ansible.cfg'));
    expect(findAnsibleConfig({ HOME: join(dir, 'home') }, join(dir, 'a-missing'))).toBe(join(dir, 'home/.ansible.cfg'));
  });
});
