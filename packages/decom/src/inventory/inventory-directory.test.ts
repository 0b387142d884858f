// An inventory directory read as Ansible reads one (src/inventory/load.ts): its files in name
// order, what Ansible's walk skips skipped, its group_vars/ and host_vars/; the files merged as
// Ansible merges them; a file that is no inventory (kubespray's artifacts/ beside its hosts.yaml)
// skipped with one warning, as Ansible skips it. The installed ansible-inventory is the judge:
// the same directory read by both, hosts, groups, every host's variables and the files skipped
// compared. And the INI section header errors, each naming file:line and what to write instead.
// Files in a temporary folder; no network.
import { spawnSync } from 'node:child_process';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { inputRefusal } from '../../test/helpers/refusal.js';
import { fileTree, tempDir } from '../../test/helpers/temp.js';
import { loadInventory, type Inventory } from './index.js';

const TMP = tempDir('decom-inventory-dir-test-');
afterAll(() => rmSync(TMP, { recursive: true, force: true }));
afterEach(() => vi.unstubAllEnvs());

let n = 0;
/** Files in a fresh folder, read with no ansible.cfg; returns the folder. */
function tree(files: Record<string, string>): string {
  const dir = fileTree(join(TMP, `case${++n}`), files);
  vi.stubEnv('ANSIBLE_CONFIG', join(dir, 'no-ansible.cfg'));
  return dir;
}

/** The warnings of the last `load`, one line each. */
let warnings: string[] = [];
const load = (path: string) => {
  warnings = [];
  return loadInventory(path, { defaultUser: 'ops', warn: (line) => warnings.push(line) });
};

const loadError = (path: string): Promise<string> => inputRefusal(load(path));

/** What an inventory is, in the terms both tools give: each group's hosts (children's included), each host's variables. */
interface Seen {
  groups: Record<string, string[]>;
  hostvars: Record<string, Record<string, unknown>>;
}

/** The files decom's warnings say it skipped as no inventory. */
const skippedByDecom = () => warnings.map((w) => /^decom: warning: (\S+): skipped, not an inventory \(.+\)$/.exec(w)?.[1] ?? `not a skip warning: ${w}`);

function decomSees(inv: Inventory): Seen {
  const groups = Object.fromEntries([...inv.groups].filter(([, hosts]) => hosts.length).map(([g, hosts]) => [g, [...hosts].sort()]));
  // ansible-inventory --list leaves out a host without variables.
  return { groups, hostvars: Object.fromEntries([...inv.hosts].filter(([, h]) => Object.keys(h.vars).length).map(([name, h]) => [name, h.vars])) };
}

/**
 * `ansible-inventory --list` of the directory, its home out of the way and its config `config`
 * (none, unless given); and, of `files`, those it says it is "Unable to parse ... as an inventory source".
 */
function ansibleSees(dir: string, config = join(dir, 'no-ansible.cfg'), files: string[] = []): Seen & { unparsed: string[] } {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, ANSIBLE_CONFIG: config, ANSIBLE_LOCAL_TEMP: join(dir, '.tmp') };
  const r = spawnSync('ansible-inventory', ['-i', dir, '--list'], { cwd: dir, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) throw new Error(`ansible-inventory exited ${r.status}: ${r.stderr}`);
  const list = JSON.parse(r.stdout) as Record<string, { hosts?: string[]; children?: string[]; hostvars?: Record<string, Record<string, unknown>> }>;
  const hostsOf = (g: string): string[] => [...(list[g]?.hosts ?? []), ...(list[g]?.children ?? []).flatMap(hostsOf)];
  const names = Object.keys(list).filter((g) => g !== '_meta');
  const groups = Object.fromEntries(names.map((g) => [g, [...new Set(hostsOf(g))].sort()] as const).filter(([, hosts]) => hosts.length));
  // Ansible wraps its warnings at 79 columns, inside words too: read them with the white space gone.
  const said = r.stderr.replace(/\s+/g, '');
  const unparsed = files.filter((f) => said.includes(`Unabletoparse${f.replace(/\s+/g, '')}asaninventorysource`));
  return { groups, hostvars: list._meta?.hostvars ?? {}, unparsed };
}

/** `seen` without some hosts, as if they had never been read. */
function without(seen: Seen, drop: (host: string) => boolean): Seen {
  const groups = Object.fromEntries(Object.entries(seen.groups).map(([g, hosts]) => [g, hosts.filter((h) => !drop(h))] as const).filter(([, hosts]) => hosts.length));
  return { groups, hostvars: Object.fromEntries(Object.entries(seen.hostvars).filter(([h]) => !drop(h))) };
}

/** kubespray's inventory directory after a run: its hosts.yaml and group_vars/, and what its playbooks write beside them. */
const KUBECONFIG = [
  'apiVersion: v1',
  'clusters:',
  '- cluster: {certificate-authority-data: LS0tCg==, server: "https://10.0.0.1:6443"}',
  '  name: cluster.local',
  'contexts:',
  '- context: {cluster: cluster.local, user: kubernetes-admin}',
  '  name: kubernetes-admin@cluster.local',
  'current-context: kubernetes-admin@cluster.local',
  'kind: Config',
  'users:',
  '- name: kubernetes-admin',
  '  user: {client-certificate-data: LS0tCg==, client-key-data: LS0tCg==}',
  '',
].join('\n');
const CERTIFICATE_KEY = '3f9c0b7e2a4d6e8f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081';

function kubesprayTree(): { root: string; dir: string; artifacts: string[] } {
  const root = tree({
    'inventory/mycluster/hosts.yaml': [
      'all:',
      '  hosts:',
      '    node1: {ansible_host: 10.0.0.1, ip: 10.0.0.1, access_ip: 10.0.0.1}',
      '    node2: {ansible_host: 10.0.0.2, ip: 10.0.0.2, access_ip: 10.0.0.2}',
      '  children:',
      '    kube_control_plane: {hosts: {node1: }}',
      '    kube_node: {hosts: {node1: , node2: }}',
      '    etcd: {hosts: {node1: }}',
      '    k8s_cluster: {children: {kube_control_plane: , kube_node: }}',
      '    calico_rr: {hosts: {}}',
      '',
    ].join('\n'),
    'inventory/mycluster/group_vars/all/all.yml': 'ansible_user: deploy\nbin_dir: /usr/local/bin\n',
    'inventory/mycluster/group_vars/k8s_cluster/k8s-cluster.yml': 'kube_network_plugin: calico\n',
    // kubeconfig_localhost and kubectl_localhost write these; the password lookups, credentials/.
    'inventory/mycluster/artifacts/admin.conf': KUBECONFIG,
    'inventory/mycluster/artifacts/kubectl.sh': '#!/bin/bash\n${BASH_SOURCE%/*}/kubectl --kubeconfig=${BASH_SOURCE%/*}/admin.conf "$@"\n',
    'inventory/mycluster/credentials/kubeadm_certificate_key.creds': `${CERTIFICATE_KEY}\n`,
  });
  const dir = join(root, 'inventory/mycluster');
  // A binary's first lines, as a real kubectl's begin: an ELF header with NULs, then bytes that are not UTF-8.
  writeFileSync(join(dir, 'artifacts/kubectl'), Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x0a]), Buffer.from('H\xff$( H\xffD$\n', 'latin1')]));
  chmodSync(join(dir, 'artifacts/kubectl'), 0o755);
  chmodSync(join(dir, 'artifacts/kubectl.sh'), 0o755);
  return { root, dir, artifacts: ['admin.conf', 'kubectl', 'kubectl.sh'].map((f) => join(dir, 'artifacts', f)) };
}

describe('an inventory directory, as Ansible reads it', () => {
  it('hosts.yaml, group_vars/ and a notes.bak of broken YAML and INI: read as ansible-inventory reads it', async () => {
    const dir = tree({
      'hosts.yaml': 'all:\n  hosts:\n    node1: {ansible_host: 10.0.0.1}\n    node2: {ansible_host: 10.0.0.2}\n  children:\n    web: {hosts: {node1: }}\n',
      'group_vars/all.yml': 'ansible_user: deploy\nshared: from-all\n',
      'group_vars/web.yml': 'shared: from-web\n',
      'host_vars/node2.yml': 'decom_node_name: k8s-node2\n',
      // Each of these would fail to parse or add hosts: Ansible skips them, so must decom.
      'notes.bak': '[web\nall: {hosts: {ghost1: }\n',
      'README.md': '# notes\nghost2\n',
      'old.ini': '[web]\nghost3\n',
      '.hidden': 'ghost4\n',
      'editor-copy~': 'ghost5\n',
    });
    const inv = await load(dir);
    expect([...inv.hosts.keys()]).toEqual(['node1', 'node2']);
    expect(inv.hosts.get('node1')).toMatchObject({ address: '10.0.0.1', user: 'deploy', vars: { shared: 'from-web' } });
    expect(inv.hosts.get('node2')!.vars).toMatchObject({ shared: 'from-all', decom_node_name: 'k8s-node2' });
    const { unparsed, ...ansible } = ansibleSees(dir);
    expect(decomSees(inv)).toEqual(ansible);
    // Skipped by name: no warning, from either.
    expect([warnings, unparsed]).toEqual([[], []]);
  });

  it("kubespray's directory after a run (artifacts/, credentials/): read as ansible-inventory reads it, each file that is no inventory skipped with one warning", async () => {
    const { dir, artifacts } = kubesprayTree();
    const inv = await load(dir);
    expect([...inv.hosts.keys()]).toEqual(['node1', 'node2']);
    expect(inv.hosts.get('node1')).toMatchObject({ address: '10.0.0.1', user: 'deploy', vars: { ip: '10.0.0.1', kube_network_plugin: 'calico' } });
    expect(warnings).toEqual([
      `decom: warning: ${artifacts[0]}: skipped, not an inventory (line 1: apiVersion "v1": another tool's file (a kubeconfig, a Kubernetes manifest), not an Ansible inventory)`,
      `decom: warning: ${artifacts[1]}: skipped, not an inventory (not a text file)`,
      `decom: warning: ${artifacts[2]}: skipped, not an inventory (a script, which decom does not run; if it is an inventory script, give decom the inventory it makes: ansible-inventory -i ${artifacts[2]} --list -y > hosts.yaml)`,
    ]);
    // Ansible skips the same files, each with its "Unable to parse" warning, and reads the rest as
    // decom does. But its INI parser keeps the hosts it read before it failed: the binary's first
    // line is a host. And it takes the credentials file's secret for a host: decom skips .creds
    // files, as kubespray's ansible.cfg does.
    const creds = join(dir, 'credentials/kubeadm_certificate_key.creds');
    const { unparsed, ...ansible } = ansibleSees(dir, undefined, [...artifacts, creds]);
    expect(unparsed).toEqual(skippedByDecom());
    const bogus = (h: string) => h === CERTIFICATE_KEY || h.startsWith('\x7fELF');
    expect(ansible.groups.ungrouped!.filter(bogus)).toHaveLength(2);
    expect(decomSees(inv)).toEqual(without(ansible, bogus));
  });

  it("kubespray's directory with kubespray's ansible.cfg: artifacts/ and credentials/ skipped by name, by both, without a word", async () => {
    const { root, dir, artifacts } = kubesprayTree();
    const cfg = join(root, 'ansible.cfg');
    writeFileSync(cfg, '[defaults]\ninventory_ignore_extensions = ~, .orig, .bak, .ini, .cfg, .retry, .pyc, .pyo, .creds, .gpg\n[inventory]\nignore_patterns = artifacts, credentials\n');
    vi.stubEnv('ANSIBLE_CONFIG', cfg);
    const inv = await load(dir);
    const { unparsed, ...ansible } = ansibleSees(dir, cfg, artifacts);
    expect(decomSees(inv)).toEqual(ansible);
    expect([warnings, unparsed]).toEqual([[], []]);
  });

  it('an INI file and a YAML file merged: hosts and groups added up, a later file wins, subdirectories read, in name order', async () => {
    const dir = tree({
      // No extension: Ansible's yaml plugin declines it, its ini plugin reads it (a .ini would be skipped).
      '10-hosts': '[kube_node]\nnode1 ansible_host=10.0.0.1 who=ini\nnode3\n[etcd]\nnode1\n',
      '20-k8s.yaml': [
        'all:',
        '  hosts:',
        '    node1: {who: yaml, ansible_port: 2201}',
        '    node2: {who: yaml}',
        '  children:',
        '    kube_control_plane: {hosts: {node2: }}',
        '    k8s_cluster: {children: {kube_node: , kube_control_plane: }}',
        '',
      ].join('\n'),
      // [etcd:vars] for a group an earlier file declared: taken, as Ansible takes it.
      'more/30-vars': '[etcd:vars]\netcd_role=member\n',
      'group_vars/k8s_cluster.yml': 'cluster_var: set\n',
    });
    const inv = await load(dir);
    expect([...inv.hosts.keys()]).toEqual(['node1', 'node3', 'node2']);
    expect(inv.hosts.get('node1')).toMatchObject({ address: '10.0.0.1', port: 2201, vars: { who: 'yaml', etcd_role: 'member', cluster_var: 'set' } });
    expect(inv.groups.get('k8s_cluster')).toEqual(['node1', 'node3', 'node2']);
    const { unparsed, ...ansible } = ansibleSees(dir);
    expect(decomSees(inv)).toEqual(ansible);
    expect([warnings, unparsed]).toEqual([[], []]);
  });

  it('a file that does not parse is skipped with a warning naming its line, as Ansible skips it; alone, its error is the error', async () => {
    const dir = tree({ 'a.yaml': 'all: {hosts: {node1: }}\n', 'b-hosts': '[kube_node]\nnode2\n[kube_node:childs]\n' });
    const inv = await load(dir);
    expect(warnings).toEqual([
      `decom: warning: ${join(dir, 'b-hosts')}: skipped, not an inventory (line 3: [kube_node:childs]: unknown section type "childs": write [kube_node], [kube_node:children] or [kube_node:vars])`,
    ]);
    // Ansible keeps what its INI parser read of b-hosts before line 3 (node2); decom takes no part of a file that fails.
    const { unparsed, ...ansible } = ansibleSees(dir, undefined, [join(dir, 'a.yaml'), join(dir, 'b-hosts')]);
    expect([decomSees(inv), skippedByDecom()]).toEqual([without(ansible, (h) => h === 'node2'), unparsed]);
    expect(ansible.groups.kube_node).toEqual(['node2']);
    // [web:vars] before any file declared web: that file fails, in Ansible as in decom.
    const order = tree({ 'a-hosts': '[web:vars]\nx=1\n', 'b.yaml': 'web: {hosts: {node1: }}\n' });
    const ordered = await load(order);
    expect(warnings).toEqual([expect.stringMatching(new RegExp(`^decom: warning: ${join(order, 'a-hosts')}: skipped, not an inventory \\(line 1: \\[web:vars\\]: group "web" is declared nowhere: add a \\[web\\] section`))]);
    // Here too Ansible keeps a part of the file it could not parse: web's x=1, on node1.
    const seen = ansibleSees(order, undefined, [join(order, 'a-hosts'), join(order, 'b.yaml')]);
    expect([decomSees(ordered), skippedByDecom()]).toEqual([{ groups: seen.groups, hostvars: {} }, seen.unparsed]);
    expect(seen.hostvars).toEqual({ node1: { x: 1 } });
    const alone = tree({ hosts: '[kube_node]\nnode2\n[kube_node:childs]\n' });
    expect(await loadError(alone)).toBe(`${join(alone, 'hosts')}:3:1: [kube_node:childs]: unknown section type "childs": write [kube_node], [kube_node:children] or [kube_node:vars]`);
  });

  it('a directory where no file is an inventory is one error naming what was skipped and why, and the file to give', async () => {
    const dir = tree({ 'inventory.ini': '[kube_node]\nnode1\n', 'group_vars/all.yml': 'x: 1\n', 'artifacts/admin.conf': KUBECONFIG, 'credentials/x.creds': `${CERTIFICATE_KEY}\n` });
    writeFileSync(join(dir, 'artifacts/kubectl'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x00, 0xff]));
    expect(await loadError(dir)).toBe(
      `inventory directory ${dir} holds no inventory file; skipped as Ansible skips them: ${join(dir, 'credentials/x.creds')}, ${join(dir, 'inventory.ini')}; not inventories: ${join(dir, 'artifacts/admin.conf')} (line 1: apiVersion "v1": another tool's file (a kubeconfig, a Kubernetes manifest), not an Ansible inventory), ${join(dir, 'artifacts/kubectl')} (not a text file); give the inventory file itself, ${join(dir, 'inventory.ini')}, or name it hosts.yaml or hosts (INI)`,
    );
  });

  it('what decom does not read is named, with what to give instead: skipped beside an inventory, the error alone', async () => {
    const script = tree({ 'hosts.yaml': 'all: {hosts: {node1: }}\n', 'zz-dynamic': '#!/bin/sh\necho {}\n', 'zz-decom.yaml': 'apiVersion: decom/v1\nhosts: {node2: }\n' });
    chmodSync(join(script, 'zz-dynamic'), 0o755);
    expect([...(await load(script)).hosts.keys()]).toEqual(['node1']);
    expect(warnings).toEqual([
      `decom: warning: ${join(script, 'zz-decom.yaml')}: skipped, not an inventory (decom's own format (apiVersion: decom/v1) is one whole inventory: give this file alone, not its directory)`,
      `decom: warning: ${join(script, 'zz-dynamic')}: skipped, not an inventory (a script, which decom does not run; if it is an inventory script, give decom the inventory it makes: ansible-inventory -i ${join(script, 'zz-dynamic')} --list -y > hosts.yaml)`,
    ]);
    const plugin = tree({ 'aws_ec2.yml': 'plugin: amazon.aws.aws_ec2\nregions: [eu-west-1]\n' });
    expect(await loadError(plugin)).toMatch(/aws_ec2\.yml:1:9: plugin: this is the settings of the "amazon\.aws\.aws_ec2" inventory plugin, which decom does not run; give decom the inventory it makes \(ansible-inventory -i \S+ --list -y > hosts\.yaml\)$/);
    const decom = tree({ 'hosts.yaml': 'apiVersion: decom/v1\nhosts: {node1: }\n' });
    expect(await loadError(decom)).toBe(`${join(decom, 'hosts.yaml')}: decom's own format (apiVersion: decom/v1) is one whole inventory: give this file alone, not its directory`);
  });

  it("ansible.cfg's inventory_ignore_extensions replaces the skipped endings, as in Ansible", async () => {
    const dir = tree({ 'hosts.ini': '[web]\nnode1\n', 'notes.txt': 'ghost\n' });
    vi.stubEnv('ANSIBLE_INVENTORY_IGNORE', '.txt');
    expect([...(await load(dir)).hosts.keys()]).toEqual(['node1']);
  });
});

describe('INI section headers: a broken one names file:line and what a header looks like', () => {
  const cases: [string, string][] = [
    ['[web\nnode1\n', '1:1: [web: this section header has no closing "]": write [web], [web:children] or [web:vars]'],
    ['[web:childs]\nnode1\n', '1:1: [web:childs]: unknown section type "childs": write [web], [web:children] or [web:vars]'],
    ['# hosts\n  [web:var]   # the vars\n', '2:3: [web:var]: unknown section type "var": write [web], [web:children] or [web:vars]'],
    ['[]\n', '1:1: []: this section header names no group: write [group], [group:children] or [group:vars]'],
    ['[web servers]\n', '1:1: [web servers]: a group name is one word, without spaces (e.g. [web_servers]); write [group], [group:children] or [group:vars]'],
  ];
  for (const [text, message] of cases) {
    it(JSON.stringify(text.split('\n')[0]), async () => {
      const dir = tree({ 'hosts.ini': text });
      expect(await loadError(join(dir, 'hosts.ini'))).toBe(`${join(dir, 'hosts.ini')}:${message}`);
    });
  }

  it('a host line that starts with a host range is still a host line', async () => {
    const dir = tree({ 'hosts.ini': '[web]\n[a:b]-web ansible_port=2201\n' });
    expect([...(await load(join(dir, 'hosts.ini'))).hosts.keys()]).toEqual(['a-web', 'b-web']);
  });
});
