// The inventory (src/inventory): kubespray YAML with group_vars/ and host_vars/, Ansible INI,
// decom/v1, the example inventories, connection variables, errors naming file, line, column and
// field, passwords never shown, and resolveTargets. Plain unit tests: the example inventories
// users copy, fixture files for odd cases, or inventories written to a temporary folder. No
// root, no network.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadInventory, redact, resolveTargets, type Host, type Inventory } from './index.js';
import { decomInventoryJsonSchema } from './decom-format.js';
import { parseSshArgs, SshArgsError } from './connection.js';
import { UserError } from '../util/errors.js';
import { tempDir } from '../../test/helpers/temp.js';

const EXAMPLES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'inventory');
const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test', 'fixtures', 'inventory');
const TMP = tempDir('decom-inventory-test-');
afterAll(() => rmSync(TMP, { recursive: true, force: true }));

let cases = 0;
/** Writes files (path -> content) into a fresh folder; returns the folder. */
function writeTree(files: Record<string, string>): string {
  const dir = join(TMP, `case${++cases}`);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

/** An inventory file with this content; returns its path. */
function inventoryFile(name: string, content: string, more: Record<string, string> = {}): string {
  return join(writeTree({ [name]: content, ...more }), name);
}

const load = (path: string) => loadInventory(path, { defaultUser: 'ops-default' });

/** The UserError loading fails with; it must be one line with exit code 2. */
async function loadError(path: string): Promise<string> {
  let error: unknown;
  try {
    await load(path);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(UserError);
  const e = error as UserError;
  expect(e.exitCode).toBe(2);
  expect(e.message).not.toContain('\n');
  return e.message;
}

function targetError(inv: Inventory, targets: string[], limit?: string): string {
  try {
    resolveTargets(inv, targets, limit);
  } catch (e) {
    expect(e).toBeInstanceOf(UserError);
    return (e as UserError).message;
  }
  throw new Error('expected resolveTargets to fail');
}

/** A host as the inventory alone gives it (its ssh command line, for ssh -G, is reach.test.ts's). */
const host = (inv: Inventory, name: string): Host => {
  const h = inv.hosts.get(name);
  if (!h) throw new Error(`no host ${name} in ${[...inv.hosts.keys()].join(', ')}`);
  const { reach: _reach, ...rest } = h;
  return rest;
};
const names = (hosts: Host[]) => hosts.map((h) => h.name);
const home = (p: string) => join(homedir(), p);

describe('kubespray YAML with group_vars/ and host_vars/', () => {
  const file = join(FIXTURES, 'kubespray/hosts.yaml');

  it('reads hosts in file order, nested children to any depth, a host in several groups', async () => {
    const inv = await load(file);
    expect(inv.file).toBe(file);
    expect([...inv.hosts.keys()]).toEqual(['node1', 'node2', 'node3']);
    expect(Object.fromEntries(inv.groups)).toEqual({
      all: ['node1', 'node2', 'node3'],
      ungrouped: [],
      kube_control_plane: ['node1'],
      kube_node: ['node2', 'node3'],
      etcd: ['node1'],
      calico_rr: ['node1'],
      k8s_cluster: ['node1', 'node2', 'node3'],
      // datacenter > k8s_cluster > kube_node: membership goes through two levels
      datacenter: ['node1', 'node2', 'node3'],
    });
    // all first, then by depth (datacenter 1, k8s_cluster 2, kube_control_plane 3), same depth by name
    expect(host(inv, 'node1').groups).toEqual(['all', 'calico_rr', 'datacenter', 'etcd', 'k8s_cluster', 'kube_control_plane']);
    expect(host(inv, 'node3').groups).toEqual(['all', 'datacenter', 'k8s_cluster', 'kube_node']);
  });

  it('merges variables in Ansible precedence order', async () => {
    const inv = await load(file);
    const [n1, n2, n3] = ['node1', 'node2', 'node3'].map((n) => host(inv, n).vars);
    // group_vars/all beats the inventory's own all.vars
    expect(n1!.v1).toBe('group_vars-all');
    // group_vars/all beats even a deeper group's vars written in the inventory
    expect(n1!.v2).toBe('group_vars-all');
    // group_vars/k8s_cluster beats group_vars/all
    expect(n1!.v3).toBe('group_vars-k8s_cluster');
    // the deeper group wins: kube_node (depth 3) over k8s_cluster (depth 2); node1 is not in kube_node
    expect(n2!.v4).toBe('group_vars-kube_node');
    expect(n1!.v4).toBe('group_vars-k8s_cluster');
    // same depth: the later name wins (etcd over calico_rr)
    expect(n1!.v5).toBe('group_vars-etcd');
    expect(n2!.v5).toBeUndefined();
    // host vars in the inventory beat group_vars files; host_vars files beat both
    expect(n2!.v6).toBe('node2-inline');
    expect(n3!.v6).toBe('group_vars-kube_node');
    expect(n2!.v7).toBe('host_vars-node2');
    // a directory's files merge by name: 10-override after 00-base, b.yml after a.yml
    expect(n1!.v8).toBe('all-10');
    expect(n3!.v8).toBe('node3-b');
    // in the inventory itself, the deeper group's vars beat all.vars
    expect(n1!.v9).toBe('k8s_cluster-inline');
  });

  it('turns the merged variables into the SSH target', async () => {
    const inv = await load(file);
    expect(host(inv, 'node2')).toEqual({
      name: 'node2',
      address: '10.0.0.2',
      port: 2222, // host_vars/node2.yml
      user: 'deploy', // group_vars/all/00-base.yml
      privateKeyFile: home('.ssh/deploy_ed25519'),
      become: true, // group_vars/k8s_cluster.yml
      becomeUser: 'root',
      strictHostKeyChecking: 'yes',
      proxyJump: [],
      connectTimeoutSec: 10,
      groups: ['all', 'datacenter', 'k8s_cluster', 'kube_node'],
      vars: {
        ansible_host: '10.0.0.2',
        ansible_port: 2222,
        ansible_user: 'deploy',
        ansible_ssh_private_key_file: '~/.ssh/deploy_ed25519',
        ansible_become: true,
        v1: 'group_vars-all',
        v2: 'group_vars-all',
        v3: 'group_vars-k8s_cluster',
        v4: 'group_vars-kube_node',
        v6: 'node2-inline',
        v7: 'host_vars-node2',
        v8: 'all-10',
        v9: 'k8s_cluster-inline',
      },
    });
    expect(host(inv, 'node3').user).toBe('node3user'); // host_vars/node3/b.yml
    expect(host(inv, 'node1').port).toBe(22);
  });

  it('reads the inventory the sandbox writes (null hosts, ssh args with known_hosts)', async () => {
    const path = inventoryFile(
      'hosts.yaml',
      [
        'all:',
        '  hosts:',
        '    node1: {ansible_host: 198.18.0.11, ip: 198.18.0.11, ansible_user: root, ansible_ssh_private_key_file: /run/sb/id_ed25519,',
        '      ansible_ssh_common_args: "-o UserKnownHostsFile=/run/sb/known_hosts -o StrictHostKeyChecking=yes"}',
        '  children:',
        '    kube_control_plane: {hosts: {node1: null}}',
        '    etcd: {hosts: {node1: }}',
        '    kube_node: {hosts: {}}',
        '    k8s_cluster: {children: {kube_control_plane: null, kube_node: null}}',
        '',
      ].join('\n'),
    );
    const h = host(await load(path), 'node1');
    expect(h).toMatchObject({
      address: '198.18.0.11',
      user: 'root',
      privateKeyFile: '/run/sb/id_ed25519',
      knownHostsFile: '/run/sb/known_hosts',
      strictHostKeyChecking: 'yes',
      groups: ['all', 'etcd', 'k8s_cluster', 'kube_control_plane'],
    });
  });

  it('expands host ranges in YAML host names and honours merge keys in vars', async () => {
    const path = inventoryFile(
      'hosts.yml',
      ['all:', '  vars:', '    common: &common {ansible_user: core, ansible_port: 2200}', '  hosts:', '    "web[1:2]": {<<: *common, ansible_port: 2201}', ''].join('\n'),
    );
    const inv = await load(path);
    expect([...inv.hosts.keys()]).toEqual(['web1', 'web2']);
    expect(host(inv, 'web2')).toMatchObject({ user: 'core', port: 2201 });
  });
});

describe('Ansible INI', () => {
  const file = join(FIXTURES, 'ini/hosts.ini');

  it('expands ranges (with zero padding), puts hosts before any section in ungrouped, reads :children', async () => {
    const inv = await load(file);
    expect([...inv.hosts.keys()]).toEqual(['bastion', 'node1', 'node2', 'worker01', 'worker02', 'worker03', 'node3', 'node4']);
    expect(Object.fromEntries(inv.groups)).toEqual({
      all: ['bastion', 'node1', 'node2', 'worker01', 'worker02', 'worker03', 'node3', 'node4'],
      ungrouped: ['bastion'],
      kube_control_plane: ['node1', 'node2'],
      etcd: ['node1'],
      kube_node: ['worker01', 'worker02', 'worker03', 'node3', 'node4'],
      k8s_cluster: ['node1', 'node2', 'worker01', 'worker02', 'worker03', 'node3', 'node4'],
    });
    expect(host(inv, 'bastion').groups).toEqual(['all', 'ungrouped']);
    expect(host(inv, 'node1').groups).toEqual(['all', 'etcd', 'k8s_cluster', 'kube_control_plane']);
  });

  it('reads quoted values, [group:vars], inline comments; values stay strings', async () => {
    const inv = await load(file);
    expect(host(inv, 'worker02').vars).toEqual({
      ansible_port: '2201',
      ansible_ssh_common_args: '-o StrictHostKeyChecking=no -o ConnectTimeout=5',
      flavour: 'quoted value',
    });
    expect(host(inv, 'node4').vars).toEqual({
      ansible_port: '2200',
      ansible_become: 'yes',
      ansible_become_user: 'ops',
      ansible_become_password: 's3cr3t pass',
      ansible_ssh_common_args: '-o UserKnownHostsFile=/etc/decom/known_hosts -o ProxyJump=jump@192.0.2.1',
      flavour: 'quoted value',
    });
  });

  it('turns connection variables into SSH targets', async () => {
    const inv = await load(file);
    // the host's own ansible_ssh_common_args replaces the group's
    expect(host(inv, 'worker01')).toEqual({
      name: 'worker01',
      address: 'worker01',
      port: 2201,
      user: 'ops-default',
      become: false,
      becomeUser: 'root',
      strictHostKeyChecking: 'yes', // its args say no: never honoured (reach.test.ts names the warning)
      proxyJump: [],
      connectTimeoutSec: 10, // its args' ConnectTimeout=5 comes after Ansible's own -o ConnectTimeout=10, which wins, as in ssh
      groups: ['all', 'k8s_cluster', 'kube_node'],
      vars: host(inv, 'worker01').vars,
    });
    // group common args (known_hosts, jump host) plus the host's extra args (-p, -i)
    expect(host(inv, 'node3')).toMatchObject({
      address: '10.0.0.3',
      port: 2022,
      privateKeyFile: home('.ssh/node3_key'),
      knownHostsFile: '/etc/decom/known_hosts',
      proxyJump: ['jump@192.0.2.1'],
      strictHostKeyChecking: 'yes',
    });
    // node4:2200 gives the port; the quoted password keeps its space
    expect(host(inv, 'node4')).toMatchObject({ port: 2200, become: true, becomeUser: 'ops', becomePassword: 's3cr3t pass' });
    expect(host(inv, 'bastion')).toMatchObject({ address: '192.0.2.1', user: 'jump', port: 22 });
  });

  it('ends a host line at an unquoted #, as Ansible (shlex) does', async () => {
    const path = inventoryFile('hosts.ini', `node1 ansible_host=10.0.0.1#old ansible_port=2200\nnode2 'ansible_user=a#b' # comment\n`);
    const inv = await load(path);
    expect(host(inv, 'node1').vars).toEqual({ ansible_host: '10.0.0.1' });
    expect(host(inv, 'node2').user).toBe('a#b');
  });

  it('reads a classic extension-less "hosts" file as INI, with steps and letter ranges', async () => {
    const path = inventoryFile('hosts', ['[db]', 'db[a:c]', '[web]', 'web[1:9:4].example.com', ''].join('\n'));
    const inv = await load(path);
    expect([...inv.hosts.keys()]).toEqual(['dba', 'dbb', 'dbc', 'web1.example.com', 'web5.example.com', 'web9.example.com']);
  });

  it('group_vars and host_vars apply to INI inventories too', async () => {
    const path = inventoryFile('inventory.ini', '[kube_node]\nnode1\n', {
      'group_vars/kube_node': 'ansible_user: from-group-vars\n',
      'host_vars/node1.json': '{"ansible_port": 2022}',
    });
    expect(host(await load(path), 'node1')).toMatchObject({ user: 'from-group-vars', port: 2022 });
  });
});

describe('decom/v1 inventory', () => {
  const file = join(EXAMPLES, 'decom/hosts.yaml');

  it('applies defaults, lets each host override them, and keeps groups and vars', async () => {
    const inv = await load(file);
    expect(host(inv, 'node1')).toEqual({
      name: 'node1',
      address: '198.18.0.11',
      port: 22,
      user: 'ops',
      privateKeyFile: home('.ssh/id_ed25519'),
      knownHostsFile: home('.ssh/known_hosts_cluster'),
      strictHostKeyChecking: 'yes',
      become: true,
      becomeUser: 'root',
      proxyJump: ['ops@bastion.example.com'],
      connectTimeoutSec: 10,
      groups: ['all', 'kube_control_plane', 'etcd'],
      vars: {},
    });
    expect(host(inv, 'node2')).toMatchObject({
      address: '198.18.0.12',
      user: 'admin',
      port: 2222,
      become: true,
      proxyJump: ['jump1.example.com', 'admin@jump2.example.com:2200'],
      strictHostKeyChecking: 'accept-new',
      connectTimeoutSec: 30,
      groups: ['all', 'kube_node'],
      vars: { rack: 'r2' },
    });
    // an empty entry: every default, the name as address, group "ungrouped"
    expect(host(inv, 'node3')).toMatchObject({ address: 'node3', user: 'ops', groups: ['all', 'ungrouped'] });
    expect(Object.fromEntries(inv.groups)).toEqual({
      all: ['node1', 'node2', 'node3'],
      kube_control_plane: ['node1'],
      etcd: ['node1'],
      kube_node: ['node2'],
      ungrouped: ['node3'],
    });
  });

  it('exports its schema as JSON Schema', () => {
    const schema = decomInventoryJsonSchema() as {
      type: string;
      required: string[];
      additionalProperties: boolean;
      properties: Record<string, { const?: string; additionalProperties?: unknown }>;
    };
    expect(schema.type).toBe('object');
    expect(schema.required).toEqual(['apiVersion', 'hosts']);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.apiVersion!.const).toBe('decom/v1');
    const hostEntry = JSON.stringify(schema.properties.hosts!.additionalProperties);
    expect(hostEntry).toContain('"becomeUser"');
    expect(hostEntry).toContain('"enum":["yes","accept-new","no"]');
    expect(hostEntry).toContain('"maximum":65535');
  });
});

describe('the example inventories in inventory/', () => {
  const cluster = {
    all: ['node1', 'node2', 'node3'],
    ungrouped: [],
    kube_control_plane: ['node1'],
    etcd: ['node1'],
    kube_node: ['node2', 'node3'],
    k8s_cluster: ['node1', 'node2', 'node3'],
  };
  const connection = {
    user: 'ops',
    privateKeyFile: home('.ssh/id_ed25519'),
    become: true,
    knownHostsFile: home('.ssh/known_hosts_cluster'),
    strictHostKeyChecking: 'yes',
    connectTimeoutSec: 5,
  };

  it('kubespray: hosts.yaml with group_vars/ (a folder of files) and host_vars/', async () => {
    const inv = await load(join(EXAMPLES, 'kubespray/hosts.yaml'));
    expect(Object.fromEntries(inv.groups)).toEqual({ ...cluster, calico_rr: [] });
    expect(host(inv, 'node1')).toMatchObject({ ...connection, address: '198.18.0.11', port: 22, proxyJump: [] });
    expect(host(inv, 'node3')).toMatchObject({ ...connection, address: '198.18.0.13', port: 2222, proxyJump: ['ops@bastion.example.com'] });
    expect(host(inv, 'node1').vars).toMatchObject({ ip: '198.18.0.11', kube_network_plugin: 'calico' });
  });

  it('INI: the same cluster, with [group:vars] and group_vars/', async () => {
    const ini = await load(join(EXAMPLES, 'ini/hosts.ini'));
    const yaml = await load(join(EXAMPLES, 'kubespray/hosts.yaml'));
    expect(Object.fromEntries(ini.groups)).toEqual(cluster);
    for (const name of cluster.all) {
      const { vars: _iniVars, ...fromIni } = host(ini, name);
      const { vars: _yamlVars, groups: _groups, ...fromYaml } = host(yaml, name);
      expect(fromIni).toMatchObject(fromYaml);
    }
    expect(names(resolveTargets(ini, ['kube_node'], '!node3'))).toEqual(['node2']);
  });
});

describe('connection variables', () => {
  /** One host with these variables (YAML flow syntax), loaded. */
  async function hostWith(vars: string): Promise<Host> {
    const inv = await load(inventoryFile('hosts.yaml', `all:\n  hosts:\n    n1: {${vars}}\n`));
    return host(inv, 'n1');
  }

  it('uses defaults when nothing is set', async () => {
    const h = await hostWith('');
    expect(h).toEqual({
      name: 'n1',
      address: 'n1',
      port: 22,
      user: 'ops-default',
      become: false,
      becomeUser: 'root',
      strictHostKeyChecking: 'yes',
      proxyJump: [],
      connectTimeoutSec: 10,
      groups: ['all', 'ungrouped'],
      vars: {},
    });
  });

  it('defaults the user to the one running decom', async () => {
    const inv = await loadInventory(inventoryFile('hosts.yaml', 'all: {hosts: {n1: }}\n'));
    expect(host(inv, 'n1').user).toBe(userInfo().username);
  });

  it('reads every connection variable', async () => {
    const h = await hostWith(
      'ansible_host: 10.1.2.3, ansible_port: "2022", ansible_user: deploy, ansible_ssh_private_key_file: ~/keys/id, ' +
        'ansible_become: True, ansible_become_user: admin, ansible_become_pass: pw1, ansible_ssh_timeout: 7',
    );
    expect(h).toMatchObject({
      address: '10.1.2.3',
      port: 2022,
      user: 'deploy',
      privateKeyFile: home('keys/id'),
      become: true,
      becomeUser: 'admin',
      becomePassword: 'pw1',
      connectTimeoutSec: 7,
    });
    // the current name wins over its older alias
    expect(await hostWith('ansible_host: new, ansible_ssh_host: old, ansible_become_password: a, ansible_become_pass: b')).toMatchObject({
      address: 'new',
      becomePassword: 'a',
    });
    expect((await hostWith('ansible_ssh_host: old, ansible_ssh_port: 2, ansible_ssh_user: u')).address).toBe('old');
  });

  it('reads Ansible booleans for ansible_become', async () => {
    for (const [written, become] of [
      ['true', true],
      ['True', true],
      ['yes', true],
      ['"yes"', true],
      ['"on"', true],
      ['1', true],
      ['"Y"', true],
      ['false', false],
      ['no', false],
      ['"off"', false],
      ['0', false],
      ['"n"', false],
    ] as const) {
      expect((await hostWith(`ansible_become: ${written}`)).become, written).toBe(become);
    }
  });

  it('reads ssh options from ansible_ssh_common_args and ansible_ssh_extra_args', async () => {
    const h = await hostWith(
      `ansible_ssh_common_args: "-o UserKnownHostsFile=~/kh -oStrictHostKeyChecking=accept-new -o 'ConnectTimeout 4' -J hop1,user@hop2:2222 -C -vv", ` +
        `ansible_ssh_extra_args: "-p 2200 -i /k/id -o StrictHostKeyChecking=no"`,
    );
    expect(h).toMatchObject({
      knownHostsFile: home('kh'),
      // as in ssh, the first value wins: common args come before extra args
      strictHostKeyChecking: 'accept-new',
      connectTimeoutSec: 10, // Ansible's own -o ConnectTimeout=10 comes before the args: set ansible_ssh_timeout instead
      proxyJump: ['hop1', 'user@hop2:2222'],
      port: 2200,
      privateKeyFile: '/k/id',
    });
  });

  it('lets explicit variables win over the same setting in the ssh args', async () => {
    const h = await hostWith('ansible_port: 22, ansible_ssh_private_key_file: /a, ansible_ssh_common_args: "-p 2200 -i /b"');
    expect(h).toMatchObject({ port: 22, privateKeyFile: '/a' });
  });

  it('parses every form of ssh option ssh accepts', () => {
    const cases: [string, ReturnType<typeof parseSshArgs>][] = [
      ['-o UserKnownHostsFile=/kh', { knownHostsFile: '/kh' }],
      ['-oUserKnownHostsFile=/kh', { knownHostsFile: '/kh' }],
      ['-o "UserKnownHostsFile /kh /other"', { knownHostsFile: '/kh' }],
      ['-o "userknownhostsfile = /kh"', { knownHostsFile: '/kh' }],
      ['-o StrictHostKeyChecking no', { strictHostKeyChecking: 'no' }],
      ['-o StrictHostKeyChecking=ask', { strictHostKeyChecking: 'yes' }],
      ['-o StrictHostKeyChecking=off', { strictHostKeyChecking: 'no' }],
      ['-o stricthostkeychecking=Accept-New', { strictHostKeyChecking: 'accept-new' }],
      ['-o ProxyJump=a,b@c:22', { proxyJump: ['a', 'b@c:22'] }],
      ['-o ProxyJump=none', { proxyJump: [] }],
      ['-J a -o ProxyJump=b', { proxyJump: ['a'] }],
      ['-Ja,b', { proxyJump: ['a', 'b'] }],
      ['-o ConnectTimeout=3', { connectTimeoutSec: 3 }],
      ['-p2222', { port: 2222 }],
      ['-4Cqp 2222', { port: 2222 }],
      ['-i ~/.ssh/k -i /second', { identityFile: home('.ssh/k') }],
      ['-l admin -o User=other', { user: 'admin' }],
      ['-o ForwardAgent=yes -o ControlMaster=auto -o ControlPersist=60s', {}],
      ['-F ~/.ssh/bastion.conf -F /second', { configFile: home('.ssh/bastion.conf') }],
      ['-o UserKnownHostsFile=/dev/null -o UserKnownHostsFile=/kh', { knownHostsOff: true }],
      ['-o HostName=10.0.0.9', { hostName: '10.0.0.9' }],
      // ProxyCommand and ProxyJump: whichever comes first, as in ssh.
      [`-o ProxyCommand="nc %h %p" -J a`, { proxyCommand: 'nc %h %p' }],
      [`-J a -o ProxyCommand="nc %h %p"`, { proxyJump: ['a'] }],
      ['-o ProxyCommand=none', {}],
      ['', {}],
    ];
    for (const [args, expected] of cases) expect(parseSshArgs(args), args).toEqual(expected);
  });

  it('refuses malformed or unsupported ssh args with a reason', () => {
    const cases: [string, string][] = [
      ['-o', '-o needs a value after it'],
      ['-o StrictHostKeyChecking=yes -p', '-p needs a value after it'],
      ['-o StrictHostKeyChecking', '-o StrictHostKeyChecking needs a value, e.g. -o StrictHostKeyChecking=VALUE'],
      ['-o StrictHostKeyChecking=maybe', '-o StrictHostKeyChecking takes yes, accept-new or no, got "maybe"'],
      ['-p twenty', '-p takes a port number 1-65535, got "twenty"'],
      ['-o ConnectTimeout=0', '-o ConnectTimeout takes a whole number of seconds from 1, got "0"'],
      ['-Z', 'unknown ssh option -Z'],
      ['-o X=Y host', 'unexpected argument "host": only ssh options belong here'],
      ['-o "X=Y', 'unterminated " quote at character 4'],
      ['-J a,,b', '-J takes [user@]host[:port] hops separated by commas, got "a,,b"'],
    ];
    for (const [args, message] of cases) expect(() => parseSshArgs(args), args).toThrow(new SshArgsError(message));
  });
});

describe('errors name the file, line, column and field', () => {
  it('a missing file, or a directory with no inventory file', async () => {
    const missing = join(TMP, 'no-such-dir', 'hosts.yaml');
    expect(await loadError(missing)).toBe(`inventory file not found: ${missing}`);
    const dir = writeTree({ 'inventory.ini': '[kube_node]\nnode1\n', 'group_vars/all.yml': 'x: 1\n' });
    expect(await loadError(dir)).toBe(
      `inventory directory ${dir} holds no inventory file; skipped as Ansible skips them: ${join(dir, 'inventory.ini')}; give the inventory file itself, ${join(dir, 'inventory.ini')}, or name it hosts.yaml or hosts (INI)`,
    );
  });

  it('a YAML syntax error, at its position', async () => {
    const path = inventoryFile('hosts.yaml', 'all:\n  hosts:\n    node1: {ansible_host: 10.0.0.1\n  children: {}\n');
    expect(await loadError(path)).toBe(`${path}:4:3: invalid YAML: Flow map in block collection must be sufficiently indented and end with a }`);
  });

  it('a wrongly typed ansible_port, in the inventory and in group_vars', async () => {
    const dir = writeTree({
      'inventory/hosts.yaml': ['# kubespray inventory', 'all:', '  hosts:', '    node0:', '      ansible_host: 10.0.0.9', '    node1:', '       ansible_port: twenty-two', ''].join('\n'),
    });
    const path = join(dir, 'inventory/hosts.yaml');
    expect(await loadError(path)).toBe(`${path}:7:22: all.hosts.node1.ansible_port: expected a port number 1-65535, got "twenty-two"`);

    // from a group: the message also says which host it was checking
    const withGroupVars = inventoryFile('hosts.yaml', 'all: {hosts: {node1: }}\n', { 'group_vars/all.yml': '# ports\nansible_port: 70000\n' });
    expect(await loadError(withGroupVars)).toBe(
      `${join(dirname(withGroupVars), 'group_vars/all.yml')}:2:15: ansible_port (host node1): expected a port number 1-65535, got 70000`,
    );

    const ini = inventoryFile('hosts.ini', '[kube_node]\nnode1 ansible_host=10.0.0.1 ansible_port=22x\n');
    expect(await loadError(ini)).toBe(`${ini}:2:29: node1.ansible_port: expected a port number 1-65535, got "22x"`);
  });

  it('malformed ssh args, naming the host and the field', async () => {
    const yaml = inventoryFile('hosts.yaml', 'all:\n  hosts:\n    node1:\n      ansible_ssh_common_args: -o StrictHostKeyChecking=yes -o\n');
    expect(await loadError(yaml)).toBe(`${yaml}:4:32: all.hosts.node1.ansible_ssh_common_args: -o needs a value after it`);

    const ini = inventoryFile('hosts.ini', `[k8s_cluster:children]\nkube_node\n[kube_node]\nnode1\n[k8s_cluster:vars]\n  ansible_ssh_extra_args=-o StrictHostKeyChecking=maybe\n`);
    expect(await loadError(ini)).toBe(
      `${ini}:6:3: k8s_cluster:vars.ansible_ssh_extra_args (host node1): -o StrictHostKeyChecking takes yes, accept-new or no, got "maybe"`,
    );

    const quoted = inventoryFile('hosts.ini', `node1 'ansible_ssh_common_args=-o ProxyCommand="ssh -W %h:%p gw'\n`);
    expect(await loadError(quoted)).toBe(`${quoted}:1:8: node1.ansible_ssh_common_args: unterminated " quote at character 17`);
  });

  it('an unknown field in decom/v1, with the fields it could be', async () => {
    const path = inventoryFile('decom.yaml', 'apiVersion: decom/v1\nhosts:\n  node1:\n    address: 10.0.0.1\n    becom: true\n');
    expect(await loadError(path)).toBe(
      `${path}:5:5: hosts.node1.becom: unknown field; expected one of address, groups, vars, user, port, key, knownHosts, strictHostKeyChecking, become, becomeUser, becomePassword, proxyJump, connectTimeoutSec`,
    );
    const top = inventoryFile('decom.yaml', 'apiVersion: decom/v1\ndefault: {user: root}\nhosts: {}\n');
    expect(await loadError(top)).toBe(`${top}:2:1: default: unknown field; expected one of apiVersion, defaults, hosts`);
  });

  it('wrong values in decom/v1, the first one in the file', async () => {
    const path = inventoryFile(
      'decom.yaml',
      'apiVersion: decom/v1\ndefaults:\n  strictHostKeyChecking: maybe\nhosts:\n  node1: {port: "22", become: yes}\n',
    );
    expect(await loadError(path)).toBe(`${path}:3:26: defaults.strictHostKeyChecking: expected yes, accept-new or no, got "maybe"`);
    const port = inventoryFile('decom.yaml', 'apiVersion: decom/v1\nhosts:\n  node1: {port: 0}\n');
    expect(await loadError(port)).toBe(`${port}:3:17: hosts.node1.port: expected a port number 1-65535, got 0`);
    const noHosts = inventoryFile('decom.yaml', 'apiVersion: decom/v1\n');
    expect(await loadError(noHosts)).toBe(`${noHosts}:1:1: hosts: expected a mapping of host names to their settings, got nothing`);
    const version = inventoryFile('decom.yaml', 'apiVersion: decom/v2\nhosts: {}\n');
    expect(await loadError(version)).toBe(`${version}:1:13: apiVersion: expected decom/v1, got "decom/v2"`);
  });

  it('mistakes in the inventory structure', async () => {
    const unknownKey = inventoryFile('hosts.yaml', 'all:\n  children:\n    kube_node:\n      host: {node1: }\n');
    expect(await loadError(unknownKey)).toBe(`${unknownKey}:4:7: all.children.kube_node.host: unknown key: a group has only hosts, children and vars; did you mean hosts?`);

    const loop = inventoryFile('hosts.ini', '[a:children]\nb\n[b:children]\na\n');
    expect(await loadError(loop)).toBe(`${loop}:4:1: group "b" cannot have "a" as a child: that makes a loop, a -> b -> a; remove one of these children`);

    const undefinedChild = inventoryFile('hosts.ini', '[k8s_cluster:children]\nkube_nodes\n[kube_node]\nnode1\n');
    expect(await loadError(undefinedChild)).toBe(`${undefinedChild}:2:1: [k8s_cluster:children]: group "kube_nodes" is declared nowhere: add a [kube_nodes] section (its hosts; it may be empty) or a [kube_nodes:children] section, or correct the name`);

    const badRange = inventoryFile('hosts.ini', '[kube_node]\nnode[5:1]\n');
    expect(await loadError(badRange)).toBe(`${badRange}:2:1: [kube_node]: host range in node[5:1] runs backwards: write the smaller end first`);

    const quote = inventoryFile('hosts.ini', `[kube_node]\nnode1 ansible_ssh_common_args='-o X=Y\n`);
    expect(await loadError(quote)).toBe(`${quote}:2:31: [kube_node]: unterminated ' quote`);

    const header = inventoryFile('hosts.ini', '[kube node]\n');
    expect(await loadError(header)).toBe(`${header}:1:1: [kube node]: a group name is one word, without spaces (e.g. [web_servers]); write [group], [group:children] or [group:vars]`);
  });

  it('values decom cannot use: templates, vault, unusable names', async () => {
    const jinja = inventoryFile('hosts.yaml', 'all:\n  hosts:\n    node1: {ansible_host: "{{ ip }}"}\n');
    expect(await loadError(jinja)).toBe(
      `${jinja}:3:27: all.hosts.node1.ansible_host: is a Jinja template, which decom does not evaluate; write the value itself: "{{ ip }}"`,
    );
    const optionLike = inventoryFile('hosts.ini', '[kube_node]\n-oStrictHostKeyChecking\n');
    expect(await loadError(optionLike)).toBe(`${optionLike}:2:1: host name "-oStrictHostKeyChecking" cannot be used as an address; set ansible_host`);
    const noName = inventoryFile('hosts.ini', '[kube_node]\n  ansible_host=10.0.0.1\n');
    expect(await loadError(noName)).toBe(`${noName}:2:3: [kube_node]: a host line starts with the host name, then key=value variables`);
    const vaultFile = inventoryFile('hosts.yaml', 'all: {hosts: {node1: }}\n', { 'group_vars/all/vault.yml': '$ANSIBLE_VAULT;1.1;AES256\n6162\n' });
    const noPassword = 'is encrypted with ansible-vault and no vault password was given (--vault-password-file, --vault-id, --ask-vault-pass)';
    expect(await loadError(vaultFile)).toBe(`${join(dirname(vaultFile), 'group_vars/all/vault.yml')}: ${noPassword}`);
    const vaultValue = inventoryFile('hosts.yaml', 'all:\n  vars:\n    ansible_become_password: !vault |\n      $ANSIBLE_VAULT;1.1;AES256\n      6162\n  hosts: {node1: }\n');
    expect(await loadError(vaultValue)).toBe(
      `${vaultValue}:3:37: all.vars.ansible_become_password (host node1): ${noPassword}`,
    );
  });
});

describe('passwords are never shown', () => {
  const password = 's3cr3t pass';

  it('redact() replaces the password and passphrase, in the target and in the vars', async () => {
    const path = inventoryFile('hosts.ini', `[kube_node]\nnode1 ansible_become=true 'ansible_become_password=${password}' 'copy_of_it=x ${password} y' other=keep\n`);
    const h = host(await load(path), 'node1');
    expect(h.becomePassword).toBe(password);
    const shown = redact({ ...h, passphrase: 'key-phrase' });
    const json = JSON.stringify(shown);
    expect(json).not.toContain('s3cr3t');
    expect(json).not.toContain('key-phrase');
    expect(shown.becomePassword).toBe('(redacted)');
    expect(shown.passphrase).toBe('(redacted)');
    expect(shown.vars).toEqual({
      ansible_become: 'true',
      ansible_become_password: '(redacted)',
      copy_of_it: '(redacted)',
      other: 'keep',
    });
    // the host itself is untouched
    expect(h.becomePassword).toBe(password);
    expect(h.vars.ansible_become_password).toBe(password);
  });

  it('no error message carries the password', async () => {
    const broken = [
      // an unquoted password with a space: the rest is not key=value
      inventoryFile('hosts.ini', `node1 ansible_become_password=s3cr3t pass\n`),
      inventoryFile('hosts.yaml', `all:\n  hosts:\n    node1: {ansible_become_password: "{{ '${password}' }}"}\n`),
      inventoryFile('hosts.yaml', `all:\n  hosts:\n    node1: {ansible_become_password: {nested: "${password}"}}\n`),
      inventoryFile('hosts.yaml', `all:\n  hosts:\n    node1: {ansible_become_password: "${password}", ansible_port: nope}\n`),
      inventoryFile('decom.yaml', `apiVersion: decom/v1\nhosts:\n  node1: {becomePassword: 12345678}\n`),
      inventoryFile('decom.yaml', `apiVersion: decom/v1\nhosts:\n  node1: {becomePassword: ["${password}"]}\n`),
    ];
    const messages = [];
    for (const path of broken) messages.push(await loadError(path));
    for (const m of messages) {
      expect(m).not.toContain('s3cr3t');
      expect(m).not.toContain('12345678');
    }
    expect(messages[0]).toBe(`${broken[0]}:1:38: node1: expected key=value after the host name (quote values that contain spaces)`);
    expect(messages[1]).toBe(
      `${broken[1]}:3:38: all.hosts.node1.ansible_become_password: is a Jinja template, which decom does not evaluate; write the value itself`,
    );
    expect(messages[4]).toBe(`${broken[4]}:3:27: hosts.node1.becomePassword: expected a string`);
  });
});

describe('resolveTargets', () => {
  const kubespray = () => load(join(FIXTURES, 'kubespray/hosts.yaml'));
  const ini = () => load(join(FIXTURES, 'ini/hosts.ini'));

  it('takes hosts, groups and "all", de-duplicated, in inventory order', async () => {
    const inv = await kubespray();
    expect(names(resolveTargets(inv, ['all']))).toEqual(['node1', 'node2', 'node3']);
    expect(names(resolveTargets(inv, ['node3', 'kube_control_plane', 'etcd', 'node1']))).toEqual(['node1', 'node3']);
    expect(names(resolveTargets(inv, ['kube_node']))).toEqual(['node2', 'node3']);
    expect(resolveTargets(inv, ['node2'])[0]).toBe(inv.hosts.get('node2'));
  });

  it('refuses an empty target list', async () => {
    expect(targetError(await kubespray(), [])).toBe('no target given: name hosts or groups, or "all"');
  });

  it('suggests the nearest names for a typo', async () => {
    const two = await load(inventoryFile('hosts.yaml', 'all:\n  hosts: {node1: , node2: }\n  children: {etcd: {hosts: {node1: }}}\n'));
    expect(targetError(two, ['nod1'])).toBe('unknown host or group "nod1"; did you mean node1, node2?');
    const inv = await kubespray();
    expect(targetError(inv, ['kube-node'])).toBe('unknown host or group "kube-node"; did you mean kube_node?');
    expect(targetError(inv, ['ETC'])).toBe('unknown host or group "ETC"; did you mean etcd?');
    expect(targetError(inv, ['node1', 'mystery'])).toBe('unknown host or group "mystery"');
  });

  it('refuses patterns: decom never picks machines by wildcard, range or regex', async () => {
    const inv = await kubespray();
    expect(targetError(inv, ['node*'])).toBe('target "node*" is a pattern; decom acts only on hosts and groups named exactly');
    for (const pattern of ['node?', 'node[1:3]', '~node.*', '*']) {
      expect(targetError(inv, [pattern])).toBe(`target ${JSON.stringify(pattern)} is a pattern; decom acts only on hosts and groups named exactly`);
    }
    expect(targetError(inv, ['node1,node2'])).toBe(
      'target "node1,node2" looks like an Ansible pattern; give each host or group as its own argument, and narrow with --limit',
    );
  });

  it('treats shell metacharacters as part of an unknown name, and runs nothing', async () => {
    const inv = await kubespray();
    const marker = join(TMP, 'pwned');
    expect(targetError(inv, [`n1;touch ${marker}`])).toBe(`unknown host or group "n1;touch ${marker}"`);
    expect(targetError(inv, ['$(touch x)'])).toBe('unknown host or group "$(touch x)"');
    expect(existsSync(marker)).toBe(false);
  });

  it('narrows with --limit: names, !exclude, &intersect, comma or colon', async () => {
    const inv = await ini();
    expect(names(resolveTargets(inv, ['all'], 'node1,worker02'))).toEqual(['node1', 'worker02']);
    expect(names(resolveTargets(inv, ['all'], 'node1:worker02'))).toEqual(['node1', 'worker02']);
    expect(names(resolveTargets(inv, ['kube_node'], '!worker01,!node4'))).toEqual(['worker02', 'worker03', 'node3']);
    expect(names(resolveTargets(inv, ['all'], 'k8s_cluster,&kube_control_plane'))).toEqual(['node1', 'node2']);
    expect(names(resolveTargets(inv, ['all'], 'kube_control_plane:!etcd'))).toEqual(['node2']);
    expect(names(resolveTargets(inv, ['all'], '&etcd'))).toEqual(['node1']);
    // a limit never adds hosts that are not targeted
    expect(names(resolveTargets(inv, ['etcd'], 'node1,node2'))).toEqual(['node1']);
  });

  it('refuses a --limit that leaves nothing, is empty, has typos or patterns', async () => {
    const inv = await ini();
    expect(targetError(inv, ['etcd'], '!node1')).toBe('--limit "!node1" leaves no hosts: the targets match node1');
    expect(targetError(inv, ['all'], 'bastion,&etcd')).toBe(
      '--limit "bastion,&etcd" leaves no hosts: the targets match bastion, node1, node2, worker01, worker02 and 3 more',
    );
    expect(targetError(inv, ['all'], ' , ')).toBe('--limit is empty: give host or group names, e.g. --limit node1,node2');
    expect(targetError(inv, ['all'], '!workr01')).toBe('unknown host or group "workr01" in --limit; did you mean worker01, worker02, worker03?');
    expect(targetError(inv, ['all'], 'worker0*')).toBe('--limit "worker0*" is a pattern; decom acts only on hosts and groups named exactly');
    expect(targetError(inv, ['all'], '@retry.txt')).toBe('--limit @file is not supported: give host and group names');
  });

  it('refuses a target group with no hosts', async () => {
    const inv = await kubespray();
    expect(targetError(inv, ['ungrouped'])).toBe('group "ungrouped" has no hosts');
  });
});
