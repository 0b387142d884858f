// The command line's connection settings (src/inventory/command-line-settings.ts): -e values
// read as Ansible reads them (key=value words, @FILE, a JSON/YAML mapping), only connection and
// decom variables taken, a secret only from a file (a vault-encrypted one opened), each error one
// line naming where; each setting against its inventory variable, in an Ansible and a decom/v1
// inventory, kubespray's Node name and addresses included. Where the settings sit among
// ansible.cfg and the OpenSSH config: reach.test.ts.
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { inputRefusal } from '../../test/helpers/refusal.js';
import { fileTree, tempDir } from '../../test/helpers/temp.js';
import { addressesOf, connectionOverridesOf, loadInventory, nodeNamed, nodeNameOf, parseExtraVars, type ConnectionOverrides, type Host } from './index.js';

const VAULT_FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test', 'fixtures', 'vault');
const TMP = tempDir('decom-command-line-test-');
afterAll(() => rmSync(TMP, { recursive: true, force: true }));
afterEach(() => vi.unstubAllEnvs());

let n = 0;
const tree = (files: Record<string, string>): string => {
  const dir = fileTree(join(TMP, `case${++n}`), files);
  vi.stubEnv('ANSIBLE_CONFIG', join(dir, 'no-ansible.cfg'));
  return dir;
};

/** Host node1 of an inventory file, read with these command-line settings. */
async function node1(file: string, content: string, overrides: ConnectionOverrides = {}, more: Record<string, string> = {}): Promise<Host> {
  const dir = tree({ [file]: content, ...more });
  const inv = await loadInventory(join(dir, file), { defaultUser: 'ops', overrides });
  return inv.hosts.get('node1')!;
}

/** What of a host the connection is. */
const connection = (h: Host) => ({ address: h.address, port: h.port, user: h.user, become: h.become, becomeUser: h.becomeUser, becomePassword: h.becomePassword, privateKeyFile: h.privateKeyFile });


describe('-e values, read as Ansible reads them', () => {
  it('key=value words (quoted as a shell quotes), a JSON mapping, a YAML mapping, @FILE; a later one wins', async () => {
    const dir = tree({ 'vars.yml': 'ansible_port: 2202\ndecom_kubeconfig: /etc/k.conf\n', 'vars.json': '{"ansible_port": 2203}\n' });
    const vars = await parseExtraVars([
      `ansible_user=deploy 'ansible_ssh_common_args=-o ServerAliveInterval=5' ansible_become=yes`,
      '{"ansible_become_user": "ops", "ansible_timeout": 7}',
      '{ansible_host: 10.0.0.9}',
      `@${join(dir, 'vars.yml')}`,
      `@${join(dir, 'vars.json')}`,
    ]);
    expect(Object.fromEntries([...vars].map(([k, v]) => [k, v.value]))).toEqual({
      ansible_user: 'deploy',
      ansible_ssh_common_args: '-o ServerAliveInterval=5',
      ansible_become: 'yes',
      ansible_become_user: 'ops',
      ansible_timeout: 7,
      ansible_host: '10.0.0.9',
      ansible_port: 2203,
      decom_kubeconfig: '/etc/k.conf',
    });
    expect(vars.get('decom_kubeconfig')!.where).toEqual({ file: join(dir, 'vars.yml'), line: 2, col: 19 });
  });

  it('a variable decom does not read is refused by name, with where it came from, what -e takes and the nearest name', async () => {
    expect(await inputRefusal(parseExtraVars(['ansible_user=x kube_version=v1.29.0']))).toBe(
      "-e: kube_version: decom does not read this variable: -e takes only the ansible_* connection variables decom reads (ansible_user, ansible_become, ...), decom_kubeconfig, decom_node_name, decom_expected_hostname and kubespray's kube_override_hostname, ip, access_ip, etcd_address",
    );
    const dir = tree({ 'vars.yml': '# mine\nansible_user: x\ndecom_node_nam: n1\n' });
    expect(await inputRefusal(parseExtraVars([`@${join(dir, 'vars.yml')}`]))).toMatch(new RegExp(`^${join(dir, 'vars.yml')}:3:17: decom_node_nam: decom does not read this variable: .*; did you mean decom_node_name\\?$`));
  });

  it('a secret inline is refused, naming why and what to write; from a file it is taken', async () => {
    for (const value of ['ansible_password=hunter2', 'ansible_user=x ansible_become_pass=hunter2', '{"ansible_ssh_pass": "hunter2"}']) {
      const message = await inputRefusal(parseExtraVars([value]));
      expect(message).toMatch(/ is a secret: given inline it would show in ps and in audit --print-systemd-timer's unit; put it in a YAML file \(ansible-vault encrypted if you like\) and give -e @FILE$/);
      expect(message).not.toContain('hunter2');
    }
    const dir = tree({ 'secret.yml': 'ansible_become_password: hunter2\n' });
    expect((await parseExtraVars([`@${join(dir, 'secret.yml')}`])).get('ansible_become_password')!.value).toBe('hunter2');
  });

  it("@FILE's errors name the file and line; other malformed values say what to write", async () => {
    const dir = tree({ 'bad.yml': '# vars\nansible_user: x\nansible_user: y\n', 'list.yml': '- ansible_user: x\n', 'empty.yml': '# nothing\n' });
    expect(await inputRefusal(parseExtraVars([`@${join(dir, 'bad.yml')}`]))).toBe(`${join(dir, 'bad.yml')}:3:1: invalid YAML: duplicate key "ansible_user"`);
    expect(await inputRefusal(parseExtraVars([`@${join(dir, 'list.yml')}`]))).toBe(`${join(dir, 'list.yml')}:1:1: (top level): expected a mapping of variable names to values, got a list`);
    expect(await inputRefusal(parseExtraVars([`@${join(dir, 'empty.yml')}`]))).toBe(`${join(dir, 'empty.yml')}: holds no variables: write a mapping, e.g. {"ansible_user": "admin"}`);
    expect(await inputRefusal(parseExtraVars([`@${join(dir, 'missing.yml')}`]))).toBe(`-e file not found: ${join(dir, 'missing.yml')}`);
    expect(await inputRefusal(parseExtraVars(['./vars.yml']))).toBe('-e "./vars.yml": a file is given with an @: -e @./vars.yml');
    expect(await inputRefusal(parseExtraVars(['ansible_user=x hunter2']))).toBe(`-e: word 2 is not key=value: write -e key=value (quote values with spaces), -e @FILE, or -e '{"key": "value"}'`);
    expect(await inputRefusal(parseExtraVars(["ansible_user='x"]))).toBe("-e: unterminated ' quote at character 14");
    expect(await inputRefusal(parseExtraVars(['[1, 2]']))).toBe('-e:1:1: (top level): expected a mapping of variable names to values, got a list');
  });

  it('a vault-encrypted @FILE, and a !vault value in one, are opened with the vault passwords, as the inventory is', async () => {
    const whole = readFileSync(join(VAULT_FIXTURES, 'whole-1.2-ops.yml'), 'utf8');
    const inline = readFileSync(join(VAULT_FIXTURES, 'inline-1.1.yml'), 'utf8').replace(/^[^:]+:/, 'ansible_become_password:');
    const dir = tree({ 'hosts.ini': '[k]\nnode1 ansible_become=true\n', 'whole.yml': whole, 'inline.yml': inline, ops: 'battery staple\n', pw: 'correct horse\n' });
    const vault = { vaultIds: [`ops@${join(dir, 'ops')}`] };
    const fromWhole = await loadInventory(join(dir, 'hosts.ini'), { vault, overrides: { extraVars: [`@${join(dir, 'whole.yml')}`] } });
    expect(fromWhole.hosts.get('node1')).toMatchObject({ user: 'deploy', becomePassword: 'vaulted become' });
    const fromValue = await loadInventory(join(dir, 'hosts.ini'), { vault: { passwordFiles: [join(dir, 'pw')] }, overrides: { extraVars: [`@${join(dir, 'inline.yml')}`] } });
    expect(fromValue.hosts.get('node1')!.becomePassword).toBe('S3cr3t pass');
    expect(await inputRefusal(loadInventory(join(dir, 'hosts.ini'), { overrides: { extraVars: [`@${join(dir, 'whole.yml')}`] } }))).toBe(
      `${join(dir, 'whole.yml')}: is encrypted with ansible-vault and no vault password was given (--vault-password-file, --vault-id, --ask-vault-pass)`,
    );
  });
});

describe('each setting against its inventory variable', () => {
  const plain = '[k]\nnode1 ansible_host=10.0.0.1\n';

  it('-e ansible_user=x gives the connection ansible_user: x gives; -e wins over the inventory and over -u', async () => {
    const viaE = await node1('hosts.ini', plain, { extraVars: ['ansible_user=x ansible_port=2201'] });
    const viaInventory = await node1('hosts.yaml', 'all: {hosts: {node1: {ansible_host: 10.0.0.1, ansible_user: x, ansible_port: 2201}}}\n');
    expect(connection(viaE)).toEqual(connection(viaInventory));
    const over = await node1('hosts.ini', '[k]\nnode1 ansible_user=own\n', { user: 'flag', extraVars: ['ansible_ssh_user=from-e'] });
    expect(over.user).toBe('from-e');
  });

  it('-u and --private-key serve where the inventory is silent, and lose to its variables', async () => {
    const flags = { user: 'u1', privateKey: '/keys/id_u1' };
    expect(connection(await node1('hosts.ini', plain, flags))).toEqual(connection(await node1('hosts.ini', '[k]\nnode1 ansible_host=10.0.0.1 ansible_user=u1 ansible_ssh_private_key_file=/keys/id_u1\n')));
    expect(await node1('hosts.ini', '[k]\nnode1\n', flags, { 'group_vars/all.yml': 'ansible_user: own\nansible_private_key_file: /keys/own\n' })).toMatchObject({ user: 'own', privateKeyFile: '/keys/own' });
  });

  it('-b equals ansible_become: true where the inventory is silent; --become-user and -K likewise; the inventory wins', async () => {
    const flags = { become: true, becomeUser: 'admin', becomePassword: 'typed' };
    expect(connection(await node1('hosts.ini', plain, flags))).toEqual(
      connection(await node1('hosts.ini', '[k]\nnode1 ansible_host=10.0.0.1 ansible_become=true ansible_become_user=admin ansible_become_password=typed\n')),
    );
    expect(await node1('hosts.ini', '[k]\nnode1\n[k:vars]\nansible_become=no\nansible_become_user=own\n', flags)).toMatchObject({ become: false, becomeUser: 'own', becomePassword: 'typed' });
  });

  it("-e kube_override_hostname, ip, access_ip, etcd_address: the Node and the addresses the inventory's give, -e over the inventory's", async () => {
    const kubespray = 'kube_override_hostname=k8s-1 ip=10.1.0.1 access_ip=10.2.0.1 etcd_address=10.3.0.1';
    const viaE = await node1('hosts.ini', '[k]\nnode1 ansible_host=10.0.0.1\n', { extraVars: [kubespray] });
    const viaInventory = await node1('hosts.ini', `[k]\nnode1 ansible_host=10.0.0.1 ${kubespray}\n`);
    for (const h of [viaE, viaInventory]) {
      expect(nodeNameOf(h)).toBe('k8s-1');
      expect(nodeNamed(h)).toBe(true);
      expect([...addressesOf(h)]).toEqual(['10.0.0.1', '10.1.0.1', '10.2.0.1', '10.3.0.1']);
    }
    const over = await node1('hosts.yaml', 'all: {hosts: {node1: {kube_override_hostname: own, ip: 10.9.0.1}}}\n', { extraVars: ['{"kube_override_hostname": "from-e", "ip": "10.1.0.1"}'] });
    expect([nodeNameOf(over), ...addressesOf(over)]).toEqual(['from-e', 'node1', '10.1.0.1']);
    const decom = await node1('hosts.yaml', 'apiVersion: decom/v1\nhosts:\n  node1: {address: 10.0.0.1, vars: {kube_override_hostname: own}}\n', { extraVars: ['kube_override_hostname=from-e'] });
    expect(nodeNameOf(decom)).toBe('from-e');
  });

  it("decom's own format: the flags under its fields (a host's or its defaults'), -e over them", async () => {
    const decom = 'apiVersion: decom/v1\ndefaults: {user: from-defaults}\nhosts:\n  node1: {address: 10.0.0.1}\n';
    expect(await node1('hosts.yaml', decom, { user: 'flag', become: true })).toMatchObject({ user: 'from-defaults', become: true });
    const over = await node1('hosts.yaml', decom, { extraVars: ['ansible_user=from-e decom_node_name=k8s-1'] });
    expect(over).toMatchObject({ user: 'from-e', vars: { decom_node_name: 'k8s-1' } });
  });

  it('a bad flag is refused once, naming it; an inline -e is checked before -K asks anything', async () => {
    expect(await inputRefusal(connectionOverridesOf({ user: '-oProxyCommand=x' }))).toBe('--user "-oProxyCommand=x": expected a user name (one word, not starting with -)');
    expect(await inputRefusal(connectionOverridesOf({ becomeUser: 'two words' }))).toBe('--become-user "two words": expected a user name (one word, not starting with -)');
    expect(await inputRefusal(connectionOverridesOf({ askBecomePass: true, extraVars: ['ansible_become_password=x'] }))).toMatch(/^-e: ansible_become_password is a secret/);
    expect(await connectionOverridesOf({ user: 'u', privateKey: '~/k', become: true, extraVars: ['ansible_port=22'] })).toEqual({ user: 'u', privateKey: '~/k', become: true, extraVars: ['ansible_port=22'] });
  });
});
