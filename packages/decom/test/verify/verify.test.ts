// `decom verify` on a 2-node sandbox of kubespray-leftovers (every planted object reported,
// nothing of the user's, text and JSON, --connection local, unreachable hosts, a changed host
// key), then on clean, orphaned-shims, docker-runtime and force-deleted-pods sandboxes.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, decom, down, ssh, STATE_DIR, up, addrOf, subnetAddr } from '../helpers/sandbox.js';
import { facts, holders, lines, mounts, type Facts } from '../helpers/facts.js';
import { tempDir } from '../helpers/temp.js';

interface Report {
  hosts: { host: string; reachable: boolean; clean: boolean; error?: string; findings: { kind: string; subject: string; detail: string }[] }[];
}

const INVENTORY = join(STATE_DIR, 'hosts.yaml');

function verifyJson(args: string[]): { code: number; report: Report; stderr: string } {
  const r = decom(['verify', INVENTORY, ...args, '--output', 'json']);
  let report: Report = { hosts: [] };
  try {
    report = JSON.parse(r.stdout) as Report;
  } catch {
    throw new Error(`verify printed no JSON (exit ${r.code}): ${r.stdout}${r.stderr}`);
  }
  return { code: r.code, report, stderr: r.stderr };
}

const subjects = (r: Report, host: string, kind: string) =>
  r.hosts.find((h) => h.host === host)!.findings.filter((f) => f.kind === kind).map((f) => f.subject).sort();

/** Nothing the user owns may ever show up in a finding. */
function expectNoUserObjects(r: Report): void {
  const text = JSON.stringify(r.hosts.map((h) => h.findings));
  for (const mine of ['app-vpn', 'app-veth0', 'APP-FIREWALL', 'APP-LEGACY', 'app-filter', '/srv/appdata', '/etc/app', 'app-cache', 'app-registry', ':8081', 'app-ca', 'custom-ca', '/home/alice', '99-sysctl']) {
    expect(text).not.toContain(mine);
  }
}

/** Kubernetes mount targets on the node, straight from its mountinfo. */
const k8sMounts = (f: Facts) =>
  mounts(f.mountinfo)
    .filter((t) => /^(\/var\/lib\/kubelet\/|\/run\/containerd\/io\.containerd\.runtime\.v2\.task\/k8s\.io\/|\/run\/containerd\/io\.containerd\.grpc\.v1\.cri\/sandboxes\/|\/run\/netns\/cni-)/.test(t))
    .sort();

describe('decom verify on kubespray-leftovers', () => {
  let f1: Facts;
  let r: Report;
  let code: number;
  beforeAll(() => {
    up(['--nodes', '2', '--scenario', 'kubespray-leftovers']);
    f1 = facts('node1');
    ({ code, report: r } = verifyJson(['all']));
  });
  afterAll(() => down());

  it('exits 1 and reports every host not clean', () => {
    expect(code).toBe(1);
    expect(r.hosts.map((h) => [h.host, h.reachable, h.clean])).toEqual([
      ['node1', true, false],
      ['node2', true, false],
    ]);
  });

  it('reports every planted object with the right kind and subject', () => {
    expect(subjects(r, 'node1', 'static-pod-manifest')).toEqual(
      ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'].map((n) => `/etc/kubernetes/manifests/${n}.yaml`),
    );
    expect(subjects(r, 'node1', 'kubelet-process')).toEqual(lines(f1.kubeletProc));
    expect(subjects(r, 'node1', 'kubelet-service')).toEqual(['kubelet.service']);
    const ids = lines(f1.k8sContainers).sort();
    expect([...subjects(r, 'node1', 'pod-sandbox'), ...subjects(r, 'node1', 'container')].sort()).toEqual(ids);
    expect(subjects(r, 'node1', 'pod-sandbox')).toHaveLength(ids.length / 2);
    expect(subjects(r, 'node1', 'shim-process')).toEqual(lines(f1.shims).filter((pid) => ssh('node1', `cat /proc/${pid}/cmdline`).includes('k8s.io')).sort());
    expect(subjects(r, 'node1', 'listening-port').map(Number).sort((a, b) => a - b)).toEqual([2379, 2380, 6443, 10248, 10249, 10250, 10256, 10257, 10259]);
    expect(subjects(r, 'node1', 'mount')).toEqual(k8sMounts(f1));
    expect(subjects(r, 'node1', 'netns')).toEqual(lines(f1.netns).filter((n) => n.startsWith('cni-')).sort());
    expect(subjects(r, 'node1', 'cni-link')).toEqual(lines(f1.links).filter((l) => /^(cni0|flannel\.1|vxlan\.calico|cali|veth)/.test(l)).sort());
    const ipt = r.hosts[0]!.findings.filter((x) => x.kind === 'iptables');
    for (const backend of ['iptables-nft', 'iptables-legacy']) {
      for (const chain of ['KUBE-SERVICES', 'KUBE-POSTROUTING', 'KUBE-FORWARD', 'KUBE-FIREWALL', 'KUBE-KUBELET-CANARY', 'CNI-HOSTPORT-DNAT', 'FLANNEL-FWD', 'cali-FORWARD']) {
        expect(ipt.some((x) => x.subject === chain && x.detail.startsWith(`${backend} `)), `${backend} ${chain}`).toBe(true);
      }
      expect(ipt.some((x) => x.subject === 'PREROUTING' && x.detail.includes('-j KUBE-SERVICES') && x.detail.startsWith(backend))).toBe(true);
    }
    expect(subjects(r, 'node1', 'nftables')).toEqual(['ip kube-proxy', 'ip6 kube-proxy']);
    expect(subjects(r, 'node1', 'cni-config')).toEqual(['/etc/cni/net.d/10-containerd-net.conflist', '/etc/cni/net.d/calico-kubeconfig']);
    // The kubelet's cgroup tree (systemd driver), every level, as an independent look finds it in any hierarchy.
    const cgroups = [...new Set(lines(f1.podCgroups).map((d) => d.replace(/^\/sys\/fs\/cgroup\/[^/]+/, '')))].sort();
    expect(cgroups).toContain('/kubepods.slice/kubepods-besteffort.slice');
    expect([...subjects(r, 'node1', 'pod-cgroup')].sort()).toEqual(cgroups);
    expect(subjects(r, 'node1', 'cni-state')).toEqual(expect.arrayContaining(['/var/lib/cni/networks/cbr0/10.244.1.2', '/var/lib/cni/networks/cbr0/10.244.1.3']));
    expect(subjects(r, 'node1', 'kubernetes-config')).toEqual(expect.arrayContaining(['/etc/kubernetes/admin.conf', '/etc/kubernetes/kubelet.conf', '/etc/kubernetes/pki']));
    expect(subjects(r, 'node1', 'kubelet-state')).toEqual(expect.arrayContaining(['/var/lib/kubelet/config.yaml', '/var/lib/kubelet/pki']));
    expect(subjects(r, 'node1', 'etcd-data')).toEqual(['/var/lib/etcd/member']);
    // The rest of the footprint: credentials judged by content, the CAs in the trust store and its bundle, logs, etcd's config.
    expect(subjects(r, 'node1', 'credential')).toEqual(['/etc/ssl/etcd/ssl/ca-key.pem', '/etc/ssl/etcd/ssl/node-node1-key.pem', '/root/.kube/config']);
    expect(subjects(r, 'node1', 'trust-anchor')).toEqual(['/etc/ssl/certs/ca-certificates.crt', '/etc/ssl/certs/ca-certificates.crt', '/usr/local/share/ca-certificates/etcd-ca.crt', '/usr/local/share/ca-certificates/kube-ca.crt']);
    expect(subjects(r, 'node1', 'pod-logs')).toEqual(lines(f1.files).filter((p) => p.startsWith('/var/log/')).sort()); // every pod's log dir, the runtime's links
    expect(subjects(r, 'node1', 'etcd-config')).toEqual(['/etc/etcd.env', '/etc/ssl/etcd', '/etc/ssl/etcd/ssl/ca.pem', '/etc/ssl/etcd/ssl/node-node1.pem', '/var/lib/etcd-events']);
    expect(subjects(r, 'node1', 'cni-state')).toEqual(expect.arrayContaining(['/var/lib/calico', '/etc/calico', '/var/lib/kube-router']));
    expect((r.hosts[0] as { warnings?: string[] }).warnings).toEqual([
      'kubeconfig for another cluster (left alone): /home/alice/.kube/config',
      expect.stringMatching(/^kernel settings Kubernetes asks for, left as they are .*: \/etc\/sysctl\.conf:\d+:net\.ipv4\.ip_forward=1; /),
    ]);
    expect(subjects(r, 'node2', 'static-pod-manifest')).toEqual(['/etc/kubernetes/manifests/nginx-proxy.yaml']);
    expect(subjects(r, 'node2', 'etcd-data')).toEqual([]);
  });

  it("never reports what is not Kubernetes'", () => expectNoUserObjects(r));

  it('prints in text one line per finding kind and host, then one verdict line per host; every finding with --details', () => {
    const t = decom(['verify', INVENTORY, 'node1', 'node2']);
    expect(t.code).toBe(1);
    const lines = t.stdout.trim().split('\n');
    const verdicts = lines.slice(-2);
    expect(verdicts[0]).toMatch(/^node1: NOT CLEAN: \d+ findings \(.*4 static-pod-manifest.*9 listening-port/);
    expect(verdicts[1]).toMatch(/^node2: NOT CLEAN: /);
    // By default: host, kind, count, the first subjects sorted (ports as numbers), how many more.
    expect(t.stdout).toMatch(/^node1 {2}listening-port +9 {2}2379, 2380, 6443, 10248, … \(\+5\)$/m);
    expect(t.stdout).toMatch(
      /^node1 {2}static-pod-manifest +4 {2}\/etc\/kubernetes\/manifests\/etcd\.yaml, \/etc\/kubernetes\/manifests\/kube-apiserver\.yaml, … \(\+2\)$/m,
    );
    const kindsOf = (host: string) => [...new Set(r.hosts.find((h) => h.host === host)!.findings.map((x) => x.kind))].sort();
    const linesOf = (out: string[], host: string) => out.filter((l) => l.startsWith(`${host}  `));
    expect(linesOf(lines, 'node1').map((l) => l.split(/ +/)[1]).sort()).toEqual(kindsOf('node1'));
    expect(linesOf(lines, 'node2').map((l) => l.split(/ +/)[1]).sort()).toEqual(kindsOf('node2'));

    const d = decom(['verify', INVENTORY, 'node1', 'node2', '--details']);
    expect(d.code).toBe(1);
    const detailed = d.stdout.trim().split('\n');
    expect(detailed.slice(-2).map((l) => l.replace(/\d+/g, 'N'))).toEqual(verdicts.map((l) => l.replace(/\d+/g, 'N')));
    expect(d.stdout).toMatch(/^node1 {2}listening-port +6443 +\*:6443 held by httpd \(pid \d+\)$/m);
    expect(linesOf(detailed, 'node1').length).toBeGreaterThan(100);
    expect(linesOf(detailed, 'node1').filter((l) => / listening-port /.test(l))).toHaveLength(9);
  });

  it('reports the same findings when run on the node itself (--connection local)', () => {
    ssh('node1', `printf 'all:\\n  hosts:\\n    node1:\\n' > /root/local.yaml`);
    const local = JSON.parse(ssh('node1', `node ${join(import.meta.dirname, '..', '..', 'dist', 'cli.js')} verify /root/local.yaml node1 --connection local --output json; true`)) as Report;
    const remote = verifyJson(['node1']).report;
    const norm = (x: Report) => x.hosts[0]!.findings.map((f) => `${f.kind} ${f.subject}`).sort();
    expect(norm(local)).toEqual(norm(remote));
    expect(local.hosts[0]!.findings.length).toBeGreaterThan(100);
  });

  it('checks every host even when one cannot be reached, and exits 3', () => {
    const dir = tempDir('decom-verify-');
    const inv = join(dir, 'hosts.yaml');
    writeFileSync(
      inv,
      readFileSync(INVENTORY, 'utf8').replace(
        /^ {2}children:/m,
        `    gone:\n      ansible_host: ${subnetAddr(99)}\n      ansible_ssh_private_key_file: ${join(STATE_DIR, 'id_ed25519')}\n      ansible_ssh_timeout: 2\n  children:`,
      ),
    );
    const v = decom(['verify', inv, 'node1', 'gone', '--output', 'json']);
    rmSync(dir, { recursive: true });
    expect(v.code).toBe(3);
    const rep = JSON.parse(v.stdout) as Report;
    expect(rep.hosts.map((h) => [h.host, h.reachable])).toEqual([
      ['node1', true],
      ['gone', false],
    ]);
    expect(rep.hosts[0]!.findings.length).toBeGreaterThan(0);
    expect(rep.hosts[1]!.error).toContain(`${subnetAddr(99)}:22`);
    expect(rep.hosts[1]!.error).toMatch(/^gone: connect: /);
  });

  it('refuses a host whose key does not match known_hosts, naming the fingerprint', () => {
    const dir = tempDir('decom-kh-');
    const kh = join(dir, 'known_hosts');
    // node2's key recorded for node1's address: node1's real key is then a changed key.
    const line2 = readFileSync(join(STATE_DIR, 'known_hosts'), 'utf8').split('\n').find((l) => l.startsWith(`${addrOf('node2')} `))!;
    writeFileSync(kh, `${line2.replace(addrOf('node2'), addrOf('node1'))}\n`);
    const v = decom(['verify', INVENTORY, 'node1', 'node2', '--known-hosts', kh, '--output', 'json']);
    rmSync(dir, { recursive: true });
    expect(v.code).toBe(3);
    const rep = JSON.parse(v.stdout) as Report;
    expect(rep.hosts[0]!.error).toMatch(/^node1: host-key: .*SHA256:[A-Za-z0-9+/]{43}/);
    expect(rep.hosts[1]!.error).toMatch(/^node2: host-key: /); // unknown in that file
  });

  // Last in this block: it changes node2's kubelet.
  it('judges kubelet.service by its cgroup, and asks systemd when only systemd knows', () => {
    const unit = r.hosts[0]!.findings.find((x) => x.kind === 'kubelet-service')!;
    expect(unit.detail).toMatch(/^running \(its cgroup exists\); /);
    // Disabled and killed: no wants link, no cgroup, no process, yet systemd restarts it in 10 s.
    const sub = ssh('node2', 'systemctl disable -q kubelet && kill -9 "$(systemctl show -p MainPID --value kubelet)" && sleep 0.3 && systemctl show -p ActiveState,SubState,UnitFileState kubelet');
    expect(sub).toBe('ActiveState=activating\nSubState=auto-restart\nUnitFileState=disabled\n');
    const restarting = verifyJson(['node2']).report.hosts[0]!.findings;
    expect(restarting.filter((x) => x.kind === 'kubelet-process')).toEqual([]);
    expect(restarting.filter((x) => x.kind === 'kubelet-service').map((x) => x.detail)).toEqual([
      'activating, disabled; a running or enabled kubelet re-registers the Node',
    ]);
    ssh('node2', 'systemctl stop kubelet');
    expect(subjects(verifyJson(['node2']).report, 'node2', 'kubelet-service')).toEqual([]);
    // Stopped but enabled: systemd says so. Then kubespray's reset: unit file gone, wants link dangling.
    ssh('node2', 'systemctl enable -q kubelet');
    expect(verifyJson(['node2']).report.hosts[0]!.findings.filter((x) => x.kind === 'kubelet-service').map((x) => x.detail)).toEqual([
      'inactive, enabled; a running or enabled kubelet re-registers the Node',
    ]);
    ssh('node2', 'rm /etc/systemd/system/kubelet.service && systemctl daemon-reload && test -L /etc/systemd/system/multi-user.target.wants/kubelet.service');
    expect(subjects(verifyJson(['node2']).report, 'node2', 'kubelet-service')).toEqual([]);
  });
});

describe('decom verify on the other scenarios', () => {
  // Each test boots the sandbox it needs, after taking down what the test before left (also
  // after a failure). The three tests of the 2-node clean scenario share one boot: the first
  // only reads; the second changes nothing the first reads (it asks API servers of its own
  // and resets node1, clean already); the third ends every process it starts, by PID.
  let shared = '';
  const sandbox = (args: string[], share = false) => {
    if (share && shared === args.join(' ')) return;
    down();
    up(args);
    shared = share ? args.join(' ') : '';
  };
  afterAll(() => down());

  it('clean: exit 0, nothing reported', () => {
    sandbox(['--nodes', '2', '--scenario', 'clean'], true);
    const { code, report } = verifyJson(['all']);
    expect(report.hosts.map((h) => [h.host, h.clean, h.findings])).toEqual([
      ['node1', true, []],
      ['node2', true, []],
    ]);
    expect(code).toBe(0);
    const t = decom(['verify', INVENTORY, 'all']);
    // Another cluster's kubeconfig in a user's home is worth a word, and is not residue.
    // Each host's facts as found (nothing planted: no CNI config, no kube-proxy), then its warnings.
    const facts = (n: string) => `runtime containerd ${ssh(n, 'containerd --version').split(/\s+/)[2]}, CNI unknown, kube-proxy unknown`;
    expect(t.stdout).toBe(
      ['node1', 'node2'].map((n) => `${n}: ${facts(n)}\n${n}: warning: kubeconfig for another cluster (left alone): /home/alice/.kube/config\n`).join('') + 'node1: clean\nnode2: clean\n',
    );
  });

  it('clean node, but its Node object is still in the API: reported with a kubeconfig, asked of the context in use and of the inventory\'s decom_kubeconfig; the reset warns of it', async () => {
    sandbox(['--nodes', '2', '--scenario', 'clean'], true);
    // A minimal API server on loopback: node1 is still registered, node2 is not.
    const server = createServer((req, res) => {
      if (req.url === '/api/v1/nodes/node1') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Node', apiVersion: 'v1', metadata: { name: 'node1' }, status: { conditions: [{ type: 'Ready', status: 'False' }] } }));
      } else {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }));
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    const api = `http://127.0.0.1:${port}`;
    const dir = tempDir('decom-kubeconfig-');
    const kubeconfig = join(dir, 'config');
    writeFileSync(
      kubeconfig,
      `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "${api}", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`,
    );
    // Two contexts: the current one, a, is a cluster whose API is not there (a closed port); b is the one above.
    const two = join(dir, 'two-contexts');
    writeFileSync(
      two,
      `apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster: {server: "http://127.0.0.1:1", insecure-skip-tls-verify: true}\n- name: here\n  cluster: {server: "${api}", insecure-skip-tls-verify: true}\n` +
        'users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: a\n  context: {cluster: gone, user: u}\n- name: b\n  context: {cluster: here, user: u}\ncurrent-context: a\n',
    );
    // The inventory names its cluster's kubeconfig: no --kubeconfig, no $KUBECONFIG, no ~/.kube/config.
    const named = (file: string) => {
      const inv = join(dir, `hosts-${file.split('/').pop()}.yaml`);
      writeFileSync(inv, readFileSync(INVENTORY, 'utf8').replace(/^ {2}vars:\n/m, `  vars:\n    decom_kubeconfig: ${file}\n`));
      return inv;
    };
    const none = { KUBECONFIG: '', HOME: dir };
    // spawnSync would block this process's event loop, and with it the API server: run it async.
    const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } }, (err, stdout, stderr) =>
          resolve({ code: err ? Number((err as { code?: number }).code) : 0, stdout, stderr }),
        );
      });
    const verified = async (args: string[], inventory = INVENTORY) => {
      const r = await cli(['verify', inventory, 'all', ...args, '--output', 'json'], none);
      return { code: r.code, report: JSON.parse(r.stdout) as { hosts: (Report['hosts'][number] & { warnings?: string[] })[] } };
    };
    const registered = [
      ['node1', false, [{ kind: 'node-object', subject: 'node1', detail: `Node still registered at ${api} (Ready=False)` }]],
      ['node2', true, []],
    ];
    try {
      const r = await verified(['--kubeconfig', kubeconfig]);
      expect(r.code).toBe(1);
      expect(r.report.hosts.map((h) => [h.host, h.clean, h.findings])).toEqual(registered);
      // --context b: b's API is asked, not the current context's.
      const b = await verified(['--kubeconfig', two, '--context', 'b']);
      expect(b.report.hosts.map((h) => [h.host, h.clean, h.findings])).toEqual(registered);
      expect(b.code).toBe(1);
      const a = await verified(['--kubeconfig', two]);
      expect(a.report.hosts.map((h) => [h.host, h.clean, h.findings])).toEqual([['node1', true, []], ['node2', true, []]]);
      expect(a.report.hosts[0]!.warnings).toContainEqual(expect.stringMatching(/^could not ask http:\/\/127\.0\.0\.1:1 for its Node object: /));
      // The inventory's decom_kubeconfig, with its current context or --context.
      const inventoryOne = named(kubeconfig);
      expect((await verified([], inventoryOne)).report.hosts.map((h) => [h.host, h.clean, h.findings])).toEqual(registered);
      const inventoryTwo = named(two);
      expect((await verified(['--context', 'b'], inventoryTwo)).report.hosts.map((h) => [h.host, h.clean, h.findings])).toEqual(registered);
      // --kubeconfig overrides it.
      expect((await verified(['--kubeconfig', two], inventoryOne)).report.hosts.map((h) => h.findings)).toEqual([[], []]);

      // The reset of a clean node says its Node is still registered, as the context in use (b, the inventory's file) says.
      const reset = async (args: string[], inventory = INVENTORY) => {
        const out = await cli(['run', inventory, 'node1', '--playbook', 'reset', '--yes', '--output', 'json', '--state-dir', join(dir, 'state'), ...args], none);
        expect(out.code, out.stderr).toBe(0);
        return (JSON.parse(out.stdout) as { hosts: { host: string; clean: boolean; warnings?: string[] }[] }).hosts[0]!;
      };
      const still = `Node still registered at ${api} (Ready=False): the reset leaves the Node object; delete it (kubectl delete node node1) or run the decommission`;
      expect((await reset(['--kubeconfig', two, '--context', 'b'])).warnings).toContain(still);
      expect((await reset(['--context', 'b'], inventoryTwo)).warnings).toContain(still);
      const current = await reset([], inventoryTwo);
      expect(current.warnings).not.toContain(still);
      expect(current.warnings).toContainEqual(expect.stringMatching(/^could not ask http:\/\/127\.0\.0\.1:1 for its Node object: /));
    } finally {
      server.close();
      rmSync(dir, { recursive: true });
    }
  });

  it('a hostile node (1,500 processes of a user, each with a 100 KB argument): verify answers, receives under 16 MiB from it, stays under 300 MB; past --max-output that host alone is not checked, exit 3', () => {
    sandbox(['--nodes', '2', '--scenario', 'clean'], true);
    // As nobody, `sleep 600 000…0`: GNU sleep adds its arguments up, and 100,000 zeros are 0 s.
    const start = `Z=$(head -c 100000 /dev/zero | tr '\\0' 0); for i in $(seq 1500); do setpriv --reuid=65534 --regid=65534 --clear-groups sleep 600 "$Z" </dev/null >/dev/null 2>&1 & echo $!; done`;
    const pids = ssh('node1', start).trim().split('\n');
    try {
      expect(pids).toHaveLength(1500);
      const sentByNode = () => Number(ssh('node1', 'cat /sys/class/net/eth0/statistics/tx_bytes'));
      const before = sentByNode();
      const v = decom(['verify', INVENTORY, 'node1'], { wrap: ['/usr/bin/time', '-f', '%M'] });
      const sent = sentByNode() - before;
      const peakKiB = Number(v.stderr.trim().split('\n').pop());
      expect([0, 1], v.stdout + v.stderr).toContain(v.code);
      expect(sent, `${sent} bytes from node1`).toBeLessThan(16 * 1024 * 1024);
      expect(peakKiB * 1024, `peak ${peakKiB} KiB`).toBeLessThan(300e6);
      // Its answer is larger than 2 MiB (1,500 command lines of 4 KiB): node1 alone fails, in one line.
      const capped = decom(['verify', INVENTORY, 'all', '--max-output', '2']);
      expect(capped.stdout).toMatch(/^node1: NOT CHECKED: output: output of 2\.\d MiB exceeds --max-output 2 MiB; [^\n]*$/m);
      expect(capped.stdout).toMatch(/^node2: clean$/m);
      expect(capped.code).toBe(3);
    } finally {
      ssh('node1', `kill ${pids.join(' ')} 2>/dev/null; true`);
    }
  });

  it('orphaned-shims: the container without a shim, its port, the shims, bundles containerd no longer answers for', () => {
    sandbox(['--nodes', '1', '--scenario', 'orphaned-shims']);
    const f = facts('node1');
    const { code, report } = verifyJson(['node1']);
    expect(code).toBe(1);
    const apiserver = holders(f.listen).get(6443)!;
    expect(subjects(report, 'node1', 'orphan-container-process')).toContain(String(apiserver));
    expect(report.hosts[0]!.findings.find((x) => x.kind === 'listening-port' && x.subject === '6443')!.detail).toBe(`*:6443 held by httpd (pid ${apiserver})`);
    expect(subjects(report, 'node1', 'shim-process')).toEqual(lines(f.shims).filter((pid) => ssh('node1', `cat /proc/${pid}/cmdline`).includes('k8s.io')).sort());
    expect(subjects(report, 'node1', 'container').length).toBeGreaterThan(0);
    expect(subjects(report, 'node1', 'kubelet-service')).toEqual([]); // stopped and disabled
    expectNoUserObjects(report);
  });

  it('docker-runtime: k8s_ containers and their shims, not the user container', () => {
    sandbox(['--nodes', '1', '--scenario', 'docker-runtime']);
    const f = facts('node1');
    const { report } = verifyJson(['node1']);
    const found = report.hosts[0]!.findings.filter((x) => x.kind === 'container' || x.kind === 'pod-sandbox');
    expect(found.map((x) => x.detail.match(/name (k8s_\S+?),/)?.[1]).sort()).toEqual(lines(f.dockerNames).filter((n) => n.startsWith('k8s_')).sort());
    expect(subjects(report, 'node1', 'shim-process')).toHaveLength(4);
    expectNoUserObjects(report);
  });

  it('force-deleted-pods: netns, veths, leases and mounts of pods containerd no longer has', () => {
    sandbox(['--nodes', '1', '--scenario', 'force-deleted-pods']);
    const f = facts('node1');
    const { report } = verifyJson(['node1']);
    expect(subjects(report, 'node1', 'netns')).toEqual(lines(f.netns).filter((n) => n.startsWith('cni-')).sort());
    expect(subjects(report, 'node1', 'netns')).toHaveLength(3);
    expect(subjects(report, 'node1', 'mount')).toEqual(k8sMounts(f));
    expect(subjects(report, 'node1', 'cni-link')).toEqual(['cni0', ...lines(f.cni0Ports)].sort());
    expect(subjects(report, 'node1', 'cni-state').filter((p) => /\/10\.244\.1\.\d+$/.test(p))).toHaveLength(3);
    expectNoUserObjects(report);
  });

  it('hostile names: a mount target with a space and a newline, a manifest name with quotes, a host name with a ;', () => {
    sandbox(['--nodes', '1', '--scenario', 'clean']);
    const target = '/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/my data\nline';
    ssh('node1', `mkdir -p '${target}' && mount -t tmpfs none '${target}' && mkdir -p /etc/kubernetes/manifests && touch "/etc/kubernetes/manifests/it's \\"quoted\\".yaml"`);
    const dir = tempDir('decom-hostile-');
    const inv = join(dir, 'hosts.yaml');
    const pwned = join(dir, 'pwned');
    writeFileSync(
      inv,
      readFileSync(INVENTORY, 'utf8').replace(/^ {4}node1:$/m, `    "n1;touch ${pwned}":`).replace(/^( {8})node1:$/gm, `$1"n1;touch ${pwned}":`),
    );
    const v = decom(['verify', inv, `n1;touch ${pwned}`, '--output', 'json']);
    expect(v.stderr).toBe('');
    const rep = JSON.parse(v.stdout) as Report;
    expect(rep.hosts[0]!.host).toBe(`n1;touch ${pwned}`);
    expect(rep.hosts[0]!.findings.filter((x) => x.kind === 'mount').map((x) => x.subject)).toEqual([target]);
    expect(rep.hosts[0]!.findings.filter((x) => x.kind === 'static-pod-manifest').map((x) => x.subject)).toEqual([`/etc/kubernetes/manifests/it's "quoted".yaml`]);
    expect(existsSync(pwned)).toBe(false);
    expect(ssh('node1', `ls '${dir}' 2>&1 || true`)).toMatch(/No such file/);
    // In text, the newline is shown escaped: no line of the report starts with the target's tail.
    const text = decom(['verify', inv, `n1;touch ${pwned}`]).stdout;
    expect(text).toMatch(/ mount +1 {2}\/var\/lib\/kubelet\/pods\/u1\/volumes\/kubernetes\.io~empty-dir\/my data\\nline$/m);
    expect(text.split('\n').some((l) => l.startsWith('line'))).toBe(false);
    const details = decom(['verify', inv, `n1;touch ${pwned}`, '--details']).stdout;
    expect(details).toMatch(/ mount +\/var\/lib\/kubelet\/pods\/u1\/volumes\/kubernetes\.io~empty-dir\/my data\\nline /);
    expect(details.split('\n').some((l) => l.startsWith('line'))).toBe(false);
    rmSync(dir, { recursive: true });
  });
});
