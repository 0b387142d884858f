// kubespray's DNS edits planted on sandbox nodes, made the real way. Each node first gets the
// host as it was (its own resolv.conf, the administrator's files of the same shapes, stand-in
// NetworkManager and systemd-resolved units) in one SSH round trip; then ansible-playbook runs
// kubespray's own preinstall tasks (modules, arguments, facts for the sandbox's defaults) from
// test/fixtures/kubespray-dns/preinstall-dns.yml, one play for every node planted. Optionally the
// real dhclient then rewrites resolv.conf from kubespray's supersede block. The fixture folder's
// README names kubespray's files and commits.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { instance } from '../../../sandbox/src/layout.js';
import { closeControlMasters, collected, shown } from './home.js';
import { ROOT, nodes, ssh } from './sandbox.js';
import { tempDir } from './temp.js';

const FIXTURES = join(ROOT, 'test', 'fixtures', 'kubespray-dns');
const PLAYBOOK = join(FIXTURES, 'preinstall-dns.yml');

/** The cluster's DNS facts the planted edits carry: kubespray's defaults for the sandbox. */
export const CLUSTER_DNS = {
  nodelocaldns: '169.254.25.10',
  /** The .3 of kube_service_addresses 10.233.0.0/18 (not written with nodelocaldns on). */
  skydns: '10.233.0.3',
  domain: 'cluster.local',
  searches: ['default.svc.cluster.local', 'svc.cluster.local'],
  options: { ndots: 2, timeout: 2, attempts: 2 },
} as const;

/** The host's own nameserver (a documentation address: nothing is sent to it). */
export const HOST_NAMESERVER = '192.0.2.53';

/** What the node held before kubespray: the host's resolver and the administrator's files, byte for byte. */
export const HOST_FILES = {
  resolvConf: `nameserver ${HOST_NAMESERVER}\nsearch corp.example\noptions edns0\n`,
  resolvConfWithoutNameserver: 'search corp.example\noptions edns0\n',
  /** /etc/dhcp/dhclient.conf: kubespray's block goes above these lines. */
  dhclientConf: "# The administrator's own settings.\nsend host-name = gethostname();\nrequest subnet-mask, broadcast-address, routers, domain-name, domain-name-servers, domain-search, host-name;\n",
  /** /etc/systemd/resolved.conf.d/corp.conf */
  resolvedConf: `[Resolve]\nDNS=${HOST_NAMESERVER}\nDomains=corp.example\n`,
  /** /etc/NetworkManager/conf.d/corp.conf */
  networkManagerConf: '[keyfile]\nunmanaged-devices+=interface-name:virbr*\n',
  /** /etc/NetworkManager/conf.d/dns.conf before kubespray merged its keys into it. */
  networkManagerDnsConf: '[main]\ndns=default\nrc-manager=file\n',
} as const;

/** Where the stand-in units record each "start PID", "reload PID" and "stop PID". */
export const STAND_IN_EVENTS = {
  NetworkManager: '/run/stand-in/NetworkManager.events',
  'systemd-resolved': '/run/stand-in/systemd-resolved.events',
} as const;

/** What is planted on one node. */
export interface KubesprayDnsPlant {
  /** The host's resolv.conf held its own nameserver before kubespray. Default true. */
  hostNameserver?: boolean;
  /** kubespray's disable_host_nameservers: its block leaves the host's nameservers out, and its clean-up deletes them. Default false. */
  disableHostNameservers?: boolean;
  /** kubespray's dhclient edits: its block in /etc/dhcp/dhclient.conf and its exit hook zdnsupdate. Without them the node has no dhclient.conf. Default true. */
  dhclient?: boolean;
  /** After kubespray, the lease renewed: the real dhclient rewrites resolv.conf from kubespray's supersede block (no markers), and the hook appends its options. Needs `dhclient`. Default false. */
  dhclientRenewed?: boolean;
  /** kubespray's /etc/systemd/resolved.conf.d/kubespray.conf. Default true. */
  resolved?: boolean;
  /** kubespray's NetworkManager files: conf.d's calico.conf and k8s.conf, and its keys merged into dns.conf. Default true. */
  networkManager?: boolean;
  /** The administrator's files beside kubespray's (HOST_FILES). Without them, dns.conf and dhclient.conf hold kubespray's alone. Default true. */
  collateral?: boolean;
  /** Stand-in NetworkManager.service and systemd-resolved.service (stand-ins/ in the fixture folder), started before kubespray ran. Needs a systemd node. Default false. */
  standIns?: boolean;
}

/** A shell script writing the node as it was before kubespray, for one SSH round trip. */
function hostBefore(p: Required<KubesprayDnsPlant>): string {
  const files: [path: string, mode: string, content: string][] = [
    ['/etc/resolv.conf', '644', p.hostNameserver ? HOST_FILES.resolvConf : HOST_FILES.resolvConfWithoutNameserver],
  ];
  if (p.dhclient) files.push(['/etc/dhcp/dhclient.conf', '644', p.collateral ? HOST_FILES.dhclientConf : '']);
  if (p.collateral && p.resolved) files.push(['/etc/systemd/resolved.conf.d/corp.conf', '644', HOST_FILES.resolvedConf]);
  if (p.collateral && p.networkManager) {
    files.push(['/etc/NetworkManager/conf.d/corp.conf', '644', HOST_FILES.networkManagerConf]);
    files.push(['/etc/NetworkManager/conf.d/dns.conf', '644', HOST_FILES.networkManagerDnsConf]);
  }
  const units = ['NetworkManager.service', 'systemd-resolved.service'];
  // The sandbox masks systemd-resolved (a link to /dev/null): each file is written anew, never through a link.
  if (p.standIns) for (const u of units) files.push([`/etc/systemd/system/${u}`, '644', readFileSync(join(FIXTURES, 'stand-ins', u), 'utf8')]);
  const end = 'KUBESPRAY_DNS_PLANT_EOF';
  const lines = ['set -eu', 'write() { mkdir -p "${1%/*}"; rm -f "$1"; cat > "$1"; chmod "$2" "$1"; }'];
  // Without kubespray's dhclient edits the host has no dhclient.conf (the node's overlay shows this machine's).
  if (!p.dhclient) lines.push('rm -f /etc/dhcp/dhclient.conf');
  for (const [path, mode, content] of files) {
    if (content.includes(end) || !(content === '' || content.endsWith('\n'))) throw new Error(`plantKubesprayDns: ${path}'s content cannot go into a here-document`);
    lines.push(`write ${path} ${mode} <<'${end}'`, `${content}${end}`);
  }
  if (p.standIns) lines.push(`systemctl daemon-reload`, `systemctl start ${units.join(' ')}`);
  return `${lines.join('\n')}\n`;
}

/**
 * Plants kubespray's DNS edits on sandbox nodes of the instance the helpers act on: one node
 * with its options, or several (node -> options) in one ansible-playbook run. Throws with
 * Ansible's output when the play fails.
 */
export function plantKubesprayDns(node: string, plant?: KubesprayDnsPlant): Promise<void>;
export function plantKubesprayDns(plants: Record<string, KubesprayDnsPlant>): Promise<void>;
export async function plantKubesprayDns(target: string | Record<string, KubesprayDnsPlant>, plant: KubesprayDnsPlant = {}): Promise<void> {
  const plants = typeof target === 'string' ? { [target]: plant } : target;
  const stateDir = instance().dir;
  const hosts: Record<string, Record<string, unknown>> = {};
  for (const [name, given] of Object.entries(plants)) {
    const node = nodes().find((n) => n.name === name);
    if (!node) throw new Error(`plantKubesprayDns: no node ${name} in ${stateDir}`);
    const p: Required<KubesprayDnsPlant> = {
      hostNameserver: true, disableHostNameservers: false, dhclient: true, dhclientRenewed: false,
      resolved: true, networkManager: true, collateral: true, standIns: false, ...given,
    };
    if (p.dhclientRenewed && !p.dhclient) throw new Error(`plantKubesprayDns ${name}: dhclientRenewed needs kubespray's dhclient edits`);
    if (p.standIns && node.init !== 'systemd') throw new Error(`plantKubesprayDns ${name}: stand-in units need a systemd node (its init is ${node.init})`);
    ssh(name, hostBefore(p));
    hosts[name] = {
      ansible_host: node.addr,
      ansible_user: 'root',
      ansible_ssh_private_key_file: join(stateDir, 'id_ed25519'),
      ansible_ssh_common_args: `-o UserKnownHostsFile=${join(stateDir, 'known_hosts')} -o StrictHostKeyChecking=yes`,
      plant_disable_host_nameservers: p.disableHostNameservers,
      plant_dhclient_renewed: p.dhclientRenewed,
      plant_resolved: p.resolved,
      plant_network_manager: p.networkManager,
    };
  }
  const dir = tempDir('decom-kubespray-dns-');
  const inventory = join(dir, 'inventory.json');
  writeFileSync(inventory, JSON.stringify({ planted: { hosts } }));
  // Ansible's home, control sockets and settings in the temp dir: nothing of the caller's is read, nothing
  // written in it. HOME too: ansible-core 2.14 puts its ssh control sockets in ~/.ansible/cp whatever `home` says.
  const config = join(dir, 'ansible.cfg');
  writeFileSync(config, `[defaults]\nhome = ${join(dir, '.ansible')}\ninterpreter_python = /usr/bin/python3\nretry_files_enabled = false\nnocolor = true\n\n[ssh_connection]\npipelining = true\n`);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: dir, ANSIBLE_CONFIG: config };
  for (const k of Object.keys(env)) if (/^(ANSIBLE_(?!CONFIG$)|SSH_AUTH_SOCK$|SSH_AGENT_PID$)/.test(k)) delete env[k];
  const child = spawn('ansible-playbook', ['-i', inventory, PLAYBOOK], { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'] });
  const outcome = await collected(child, { timeoutMs: 120_000 });
  await closeControlMasters(dir);
  if (outcome.code !== 0) throw new Error(`ansible-playbook ${PLAYBOOK} failed on ${Object.keys(plants).join(', ')}: ${shown(outcome)}`);
}
