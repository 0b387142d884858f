/**
 * The field of 2026, on a sandbox of real components (containerd 2.1 and 1.7 from
 * Debian's archive, Debian 12's 1.6 and Docker, the real CNI plugins, nft, Debian's
 * etcd.service):
 * - node2 (field-2026): the residue today's clusters leave — the nftables tables of
 *   kube-proxy, Calico and flannel, a driver's transient CDI spec, Cilium's sysctl
 *   override and the CNI config it renamed aside, the cluster's old etcd data — beside
 *   collateral of the same shapes: the user's own `inet` table with a rule, an
 *   administrator's /etc/cdi spec, Debian's own etcd on its own data dir;
 * - node3 and node4: containerd with its root, state and socket moved by a `version = 3`
 *   (node4: `version = 2`, containerd 1.7) config's conf.d import, found by decom from
 *   that config alone;
 * - every node's facts (runtime and version, CNI, kube-proxy's mode) in verify's and
 *   the audit's host rows, text, JSON and HTML.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, down, ssh, STATE_DIR, up } from '../helpers/sandbox.js';
import { leftovers } from '../helpers/residue.js';
import { MOVED_CONTAINERD } from '../helpers/facts.js';
import { tempDir } from '../helpers/temp.js';

const INVENTORY = join(STATE_DIR, 'hosts.yaml');

interface Finding { kind: string; subject: string; detail: string }
interface Facts { runtime: string; cni: string; kubeProxy: string }
interface HostReport { host: string; clean: boolean; findings: Finding[]; warnings?: string[]; facts?: Facts }

function verify(...args: string[]): { code: number; hosts: HostReport[]; stdout: string } {
  const r = decom(['verify', INVENTORY, ...args, '--output', 'json']);
  try {
    return { code: r.code, hosts: (JSON.parse(r.stdout) as { hosts: HostReport[] }).hosts, stdout: r.stdout };
  } catch {
    throw new Error(`decom verify ${args.join(' ')}: exit ${r.code}: ${r.stderr}${r.stdout}`);
  }
}
const host = (hosts: HostReport[], name: string) => hosts.find((h) => h.host === name) as HostReport;
const subjects = (h: HostReport, kind: string) => h.findings.filter((f) => f.kind === kind).map((f) => f.subject).sort();
const reset = (node: string, ...args: string[]) => {
  const r = decom(['run', INVENTORY, node, '--playbook', 'reset', '--yes', ...args]);
  expect(r.code, r.stderr + r.stdout).toBe(0);
  return r;
};

const CLUSTER_TABLES = ['arp calico-arp', 'ip calico', 'ip flannel-ipv4', 'ip kube-proxy', 'ip6 calico', 'ip6 flannel-ipv6', 'ip6 kube-proxy'];

/** What is not the cluster's on node2, as text: compared byte for byte before and after. */
const COLLATERAL = [
  'nft list table inet app-filter',
  'cat /etc/cdi/vendor.yaml',
  'systemctl is-active etcd',
  'ETCDCTL_API=3 etcdctl get owner --print-value-only',
  'find /var/lib/etcd/default -type f | sort',
].map((c) => `echo "## ${c}"; ${c}`).join('; ');

describe('the field of 2026, on a sandbox of real components', () => {
  // node1 the control plane (nothing planted, Debian 12's containerd 1.6), node2 today's residue beside its collateral,
  // node3 and node4 containerd's paths moved (2 on systemd, 1.7 init-less), node5 a cri-dockerd node (Docker's 1.6).
  beforeAll(() =>
    up([
      '--nodes', '5', '--init', 'systemd,systemd,systemd,none,systemd', '--containerd', '1.6,2,2,1.7,1.6', '--containerd-paths', 'default,default,moved,moved,default',
      '--scenario', 'clean,field-2026,kubespray-leftovers,force-deleted-pods,docker-runtime',
    ]),
  );
  afterAll(() => down());

  it("each node's facts in verify's and the audit's host rows: text, JSON and HTML", () => {
    const v = verify('all');
    const facts = Object.fromEntries(v.hosts.map((h) => [h.host, h.facts]));
    const version = (node: string) => ssh(node, 'containerd --version').split(/\s+/)[2] as string;
    expect(facts).toEqual({
      // Nothing planted: no CNI config, no kube-proxy and nothing it left.
      node1: { runtime: `containerd ${version('node1')}`, cni: 'unknown', kubeProxy: 'unknown' },
      // The CNI plugins' bridge conflist; kube-proxy's nftables tables left, no kube-proxy running.
      node2: { runtime: `containerd ${version('node2')}`, cni: 'bridge', kubeProxy: 'nftables (kube-proxy not running)' },
      // kube-proxy (stand-in) answers its mode on 127.0.0.1:10249/proxyMode, as kube-proxy does.
      node3: { runtime: `containerd ${version('node3')}`, cni: 'bridge', kubeProxy: 'ipvs' },
      node4: { runtime: `containerd ${version('node4')}`, cni: 'bridge', kubeProxy: 'unknown' },
      node5: { runtime: `docker ${/version ([^,\s]+)/.exec(ssh('node5', 'dockerd --version'))?.[1]} (cri-dockerd)`, cni: 'bridge', kubeProxy: 'iptables' },
    });
    expect(facts.node2?.runtime).toMatch(/^containerd 2\./);
    expect(facts.node4?.runtime).toMatch(/^containerd 1\.7\./);
    expect(facts.node1?.runtime).toMatch(/^containerd 1\.6\./);

    const text = decom(['verify', INVENTORY, 'all']).stdout;
    expect(text).toContain(`node3: runtime ${facts.node3?.runtime}, CNI bridge, kube-proxy ipvs\n`);
    expect(text).toContain(`node1: runtime ${facts.node1?.runtime}, CNI unknown, kube-proxy unknown\n`);

    const dir = tempDir('decom-facts-');
    try {
      const html = join(dir, 'audit.html');
      const a = decom(['audit', INVENTORY, 'all', '--no-api', '--output', 'json', '--html', html]);
      const audited = JSON.parse(a.stdout) as { hosts: { host: string; facts?: Facts }[] };
      expect(Object.fromEntries(audited.hosts.map((h) => [h.host, h.facts]))).toEqual(facts);
      expect(readFileSync(html, 'utf8')).toContain(`node5 <small class="facts">runtime ${facts.node5?.runtime}, CNI bridge, kube-proxy iptables</small>`);
      expect(decom(['audit', INVENTORY, 'node3', '--no-api']).stdout).toContain(`node3: runtime ${facts.node3?.runtime}, CNI bridge, kube-proxy ipvs\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("today's residue beside collateral of the same shapes: verify names each kind and warns about the administrator's spec; the reset removes exactly the residue", () => {
    const before = ssh('node2', COLLATERAL);
    expect(before).toContain('tcp dport 8088 accept');
    expect(before).toContain('not-kubernetes');
    const tables = () => ssh('node2', 'nft list tables').split('\n').filter(Boolean).map((l) => l.replace(/^table /, '')).sort();
    const tablesBefore = tables();
    const files = () => ssh('node2', 'ls -d /etc/cni/net.d/* /etc/sysctl.d/* /var/run/cdi/* /etc/cdi/* /var/lib/etcd/* 2>/dev/null; true').split('\n').filter(Boolean).sort();
    const filesBefore = files();
    const cdi = filesBefore.find((f) => f.startsWith('/var/run/cdi/')) as string;
    expect(cdi).toMatch(/^\/var\/run\/cdi\/example\.com-gpu_[0-9a-f-]{36}\.json$/);

    const v = host(verify('node2').hosts, 'node2');
    expect(subjects(v, 'nftables')).toEqual(CLUSTER_TABLES);
    expect(subjects(v, 'cdi-spec')).toEqual([cdi]);
    expect(subjects(v, 'cni-config')).toEqual(['/etc/cni/net.d/10-containerd-net.conflist', '/etc/cni/net.d/10-flannel.conflist.cilium_bak', '/etc/sysctl.d/99-zzz-override_cilium.conf']);
    expect(subjects(v, 'etcd-data')).toEqual(['/var/lib/etcd/member']);
    // Neither the administrator's spec nor Debian's etcd (its process, ports, data) is residue.
    expect(v.findings.filter((f) => /\/etc\/cdi|\/var\/lib\/etcd\/default/.test(f.subject) || f.kind === 'etcd-process' || f.kind === 'runtime-config')).toEqual([]);
    expect(v.warnings).toContainEqual('runtime configuration an administrator may have written, left in place (decom run --purge removes it): /etc/cdi/vendor.yaml');
    expect(v.warnings).toContainEqual(expect.stringMatching(/^etcd runs here \(pid \d+\) and nothing ties it to this cluster .*: left running; its ports 2379, 2380 would collide with a control-plane rejoin$/));

    const run = reset('node2');
    const runId = /backups\/(\S+?)\/node2/.exec(run.stdout)?.[1] as string;
    expect(host(verify('node2').hosts, 'node2').clean).toBe(true);
    // The independent checker finds only Debian's etcd, on its own ports.
    expect(leftovers('node2').sort()).toEqual(['port: 2379', 'port: 2380']);
    const etcdPid = ssh('node2', 'systemctl show -p MainPID --value etcd').trim();
    expect(ssh('node2', "ss -Hltnp 'sport = :2379'")).toContain(`pid=${etcdPid},`);
    // Exactly the residue went: the cluster's tables and files; everything else is as it was, byte for byte.
    expect(tables()).toEqual(tablesBefore.filter((t) => !CLUSTER_TABLES.includes(t)));
    expect(tables()).toContain('inet app-filter');
    expect(files()).toEqual(filesBefore.filter((f) => ![cdi, '/etc/cni/net.d/10-containerd-net.conflist', '/etc/cni/net.d/10-flannel.conflist.cilium_bak', '/etc/sysctl.d/99-zzz-override_cilium.conf', '/var/lib/etcd/member'].includes(f)));
    expect(ssh('node2', COLLATERAL)).toBe(before);
    // The cluster's etcd data was backed up first, on the node: its archive holds the member's WAL and snapshot.
    expect(ssh('node2', `tar tzf /var/backups/decom/${runId}-etcd-data/etcd-data.tar.gz | sort`)).toMatch(/var\/lib\/etcd\/member\/snap\/db\n[^]*var\/lib\/etcd\/member\/wal\/0000000000000000-0000000000000000\.wal/);
    // The cluster's nftables tables are in the operator's copy of the backup, loadable with nft -f.
    const nftables = readFileSync(join(process.env.HOME ?? '/root', '.local/state/decom/backups', runId, 'node2', 'nftables.conf'), 'utf8');
    for (const t of CLUSTER_TABLES) expect(nftables).toContain(`table ${t} {`);
    expect(nftables).not.toContain('app-filter');
  });

  it('the purge tier removes what an administrator may have written, backed up first', () => {
    const v = host(verify('node2', '--purge').hosts, 'node2');
    expect(subjects(v, 'runtime-config')).toEqual(['/etc/cdi/vendor.yaml']);
    const run = reset('node2', '--purge');
    const runId = /backups\/(\S+?)\/node2/.exec(run.stdout)?.[1] as string;
    expect(ssh('node2', 'ls /etc/cdi; nft list table inet app-filter >/dev/null && echo app-filter; systemctl is-active etcd')).toBe('app-filter\nactive\n');
    const copy = join(process.env.HOME ?? '/root', '.local/state/decom/backups', runId, 'node2', 'files.tar.gz');
    expect(execFileSync('tar', ['tzf', copy], { encoding: 'utf8' })).toContain('etc/cdi/vendor.yaml');
  });

  for (const node of ['node3', 'node4']) {
    it(`${node}: containerd's root, state and socket moved by its config's conf.d import: verify finds the residue there, the reset is clean, the independent checker finds nothing there`, () => {
      const config = ssh(node, 'cat /etc/containerd/config.toml /etc/containerd/conf.d/10-paths.toml');
      expect(config).toMatch(/^imports = \["conf\.d\/\*\.toml"\]$/m);
      expect(config).toContain(`state = "${MOVED_CONTAINERD.state}"`);
      // Nothing on the node tells ctr where the socket is: only containerd's config does.
      expect(ssh(node, 'echo "[$CONTAINERD_ADDRESS]"; ls /run/containerd/containerd.sock 2>&1 || true')).toMatch(/^\[\]\nls: cannot access/);
      expect(leftovers(node, MOVED_CONTAINERD).filter((l) => l.startsWith('mount: /run/containerd-moved/'))).not.toEqual([]);

      const v = host(verify(node).hosts, node);
      const mounts = subjects(v, 'mount');
      expect(mounts.filter((m) => m.startsWith(`${MOVED_CONTAINERD.state}/io.containerd.runtime.v2.task/k8s.io/`)).length).toBeGreaterThan(0);
      expect(mounts.filter((m) => m.startsWith(`${MOVED_CONTAINERD.state}/io.containerd.grpc.v1.cri/sandboxes/`)).length).toBeGreaterThan(0);
      expect(mounts.filter((m) => m.startsWith('/run/containerd/'))).toEqual([]);
      // The runtime answered where its config put the socket: the pods are named, not guessed.
      expect(subjects(v, 'pod-sandbox').length).toBeGreaterThan(0);
      expect(v.warnings ?? []).not.toContainEqual(expect.stringMatching(/containerd's config/));

      reset(node);
      expect(host(verify(node).hosts, node).clean).toBe(true);
      expect(leftovers(node, MOVED_CONTAINERD)).toEqual([]);
      expect(ssh(node, `CONTAINERD_ADDRESS=${MOVED_CONTAINERD.address} ctr -n k8s.io containers ls -q; ls ${MOVED_CONTAINERD.state}/io.containerd.runtime.v2.task/k8s.io 2>/dev/null | wc -l`).trim()).toBe('0');
    });
  }
});
