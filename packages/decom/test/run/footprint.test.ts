// The whole footprint on a 3-node sandbox of kubespray-leftovers (node3 a cri-dockerd node):
// verify and the reset of the membership tier, and of the installation with --purge; the
// trust store, the backups, and what is not Kubernetes' left byte for byte.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, down, ssh, STATE_DIR, up, subnetAddr } from '../helpers/sandbox.js';
import { installedLeftovers, leftovers, nodeSnapshot, userObjects } from '../helpers/residue.js';
import { runJson, type RunReport } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

interface Report {
  hosts: { host: string; clean: boolean; warnings?: string[]; findings: { kind: string; subject: string }[] }[];
}

const INVENTORY = join(STATE_DIR, 'hosts.yaml');

function verifyJson(args: string[]): Report {
  const r = decom(['verify', INVENTORY, ...args, '--output', 'json']);
  try {
    return JSON.parse(r.stdout) as Report;
  } catch {
    throw new Error(`verify printed no JSON (exit ${r.code}): ${r.stdout}${r.stderr}`);
  }
}

const pairs = (r: Report, host: string) => r.hosts.find((h) => h.host === host)!.findings.map((f) => `${f.kind} ${f.subject}`);
const warnings = (r: Report, host: string) => (r.hosts.find((h) => h.host === host)!.warnings ?? []).join('\n');

/** What kubespray leaves of a member, as the scenario plants it on a control-plane + etcd node. */
const MEMBERSHIP = [
  'credential /root/.kube/config',
  'credential /etc/ssl/etcd/ssl/ca-key.pem',
  'credential /etc/ssl/etcd/ssl/node-node1-key.pem',
  'etcd-config /etc/ssl/etcd/ssl/ca.pem',
  'etcd-config /etc/etcd.env',
  'etcd-config /var/lib/etcd-events',
  'trust-anchor /usr/local/share/ca-certificates/kube-ca.crt',
  'trust-anchor /usr/local/share/ca-certificates/etcd-ca.crt',
  'trust-anchor /etc/ssl/certs/ca-certificates.crt',
  'cni-state /var/lib/calico',
  'cni-state /etc/calico',
  'cni-state /var/lib/kube-router',
  'kubernetes-config /etc/nginx/nginx.conf',
  'route blackhole 10.233.65.0/24 proto 12',
  'route 10.233.120.0/24 proto 12',
  'route 10.240.3.0/24 proto 17',
  'ipset KUBE-CLUSTER-IP',
  'ipset KUBE-LOOP-BACK',
  'ipset KUBE-NODE-PORT-TCP',
  'ipset cali40all-ipam-pools',
  'ipset cali40masq-ipam-pools',
  'bpf-pin /sys/fs/bpf/tc/globals/cilium_lxc',
  'bpf-pin /sys/fs/bpf/tc/globals/cilium_ipcache',
  'bpf-pin /sys/fs/bpf/tc/globals/cilium_policy_00123',
];

const INSTALLATION = [
  ...['kubelet', 'kubeadm', 'kubectl', 'etcd', 'etcdctl', 'helm', 'calicoctl', 'nerdctl', 'k8s-certs-renew.sh'].map((b) => `installed-binary /usr/local/bin/${b}`),
  'installed-binary /opt/cni/bin',
  'installed-binary /usr/libexec/kubernetes',
  'installed-unit /etc/systemd/system/kubelet.service',
  'installed-unit /etc/systemd/system/kubelet.service.d',
  'installed-unit /etc/systemd/system/k8s-certs-renew.service',
  'installed-unit /etc/systemd/system/k8s-certs-renew.timer',
  'installed-unit /etc/systemd/system/timers.target.wants/k8s-certs-renew.timer',
  'installed-unit /etc/systemd/system/containerd.service.d/http-proxy.conf',
  'installed-config /etc/crictl.yaml',
  'installed-config /etc/modules-load.d/kubespray-br_netfilter.conf',
  'installed-config /etc/bash_completion.d/kubectl',
  'image registry.k8s.io/pause:3.9',
  'image registry.k8s.io/busybox:sandbox',
];

/** Shapes of the collateral: none may ever be a finding. */
const COLLATERAL = ['/etc/nginx/conf.d', 'app-blocklist', '10.233.121.0', '192.0.2.0', 'app_ratelimit', '/home/alice', 'app-ca', 'sysctl', 'default/'];

/** Everything the footprint tiers are made of, read independently: for --check to leave alone. */
const footprintSnapshot = (n: string) =>
  `${nodeSnapshot(n)}\n${ssh(n, 'ip route show table all; ipset list -n; ls -R /sys/fs/bpf; ls -la /usr/local/bin /etc/systemd/system /etc/nginx /usr/local/share/ca-certificates; ctr -n k8s.io images ls -q; md5sum /etc/ssl/certs/ca-certificates.crt')}`;

describe('the whole footprint on kubespray-leftovers: the membership tier, and the installation with --purge', () => {
  const state = tempDir('decom-footprint-');
  const before = new Map<string, string>();
  let node2CA = '';
  let purge: { code: number; report: RunReport; stderr: string };

  beforeAll(() => {
    // node3: a cri-dockerd node, for Docker's images.
    up(['--nodes', '3', '--scenario', 'kubespray-leftovers,kubespray-leftovers,docker-runtime']);
    before.set('node3', userObjects('node3'));
    for (const n of ['node1', 'node2']) {
      before.set(n, userObjects(n));
      // A server certificate the cluster CA signed: the trust store must stop trusting it.
      ssh(n, `openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=kube-apiserver -keyout /root/leaf.key 2>/dev/null |
        openssl x509 -req -CA /etc/kubernetes/pki/ca.crt -CAkey /etc/kubernetes/pki/ca.key -CAcreateserial -CAserial /root/leaf.srl -days 30 -out /root/leaf.crt 2>/dev/null`);
    }
    node2CA = ssh('node2', 'cat /etc/kubernetes/pki/ca.crt');
  });
  afterAll(() => down());

  it('verify reports every membership item with its kind and subject, and no installation item without --purge', () => {
    const r = verifyJson(['node1']);
    const found = pairs(r, 'node1');
    for (const p of MEMBERSHIP) expect(found, p).toContain(p);
    expect(found.filter((p) => /^(installed-|image )/.test(p))).toEqual([]);
    for (const c of COLLATERAL) expect(found.filter((p) => p.includes(c)), c).toEqual([]);
    // What decom leaves alone, it still says.
    expect(warnings(r, 'node1')).toMatch(/kernel settings .*\/etc\/sysctl\.conf:\d+:net\.ipv4\.ip_forward=1/);
    expect(warnings(r, 'node1')).toContain('another cluster (left alone): /home/alice/.kube/config');
  });

  it('verify --purge adds every installation item; files a package owns are warnings, not findings', () => {
    const r = verifyJson(['node1', '--purge']);
    const found = pairs(r, 'node1');
    for (const p of [...MEMBERSHIP, ...INSTALLATION]) expect(found, p).toContain(p);
    for (const c of COLLATERAL) expect(found.filter((p) => p.includes(c)), c).toEqual([]);
    expect(found.filter((p) => p.startsWith('installed-') && p.includes(' /usr/bin/'))).toEqual([]);
    expect(warnings(r, 'node1')).toContain('/usr/bin/etcd (etcd-server)');
  });

  it('--check --purge lists each removal and changes nothing', () => {
    const snap = footprintSnapshot('node1');
    const c = runJson(['node1', '--playbook', 'reset', '--purge', '--check'], state);
    expect(c.code, c.stderr).toBe(0);
    expect(footprintSnapshot('node1')).toBe(snap);
    const planned = c.report.hosts[0]!.steps.flatMap((s) => s.actions.map((a) => `${s.name}: ${a.what}`)).join('\n');
    for (const want of [
      'routes: delete route blackhole 10.233.65.0/24 proto 12',
      `routes: delete route 10.240.3.0/24 proto 17 via ${subnetAddr(251)}`,
      'firewall: destroy 5 ipsets: KUBE-CLUSTER-IP, KUBE-LOOP-BACK, KUBE-NODE-PORT-TCP, cali40all-ipam-pools, cali40masq-ipam-pools',
      'files: delete /etc/nginx/nginx.conf',
      'files: delete /sys/fs/bpf/tc/globals/cilium_lxc',
      'trust: remove /usr/local/share/ca-certificates/etcd-ca.crt, /usr/local/share/ca-certificates/kube-ca.crt and rebuild the trust bundle',
      'installed: delete /usr/local/bin/kubelet',
      'installed: delete /etc/systemd/system/k8s-certs-renew.timer',
      'installed: systemctl daemon-reload',
      "images: remove 4 images from containerd's k8s.io namespace", // busybox and pause, by name and by the CRI's image ID,
    ]) {
      expect(planned).toContain(want);
    }
  });

  it('a reset removes the membership tier; with --purge the installation too; without, the installation stays', () => {
    purge = runJson(['node1', '--playbook', 'reset', '--purge', '--yes'], state);
    expect(purge.code, purge.stderr).toBe(0);
    const plain = runJson(['node2', '--playbook', 'reset', '--yes'], state);
    expect(plain.code, plain.stderr).toBe(0);
    for (const n of ['node1', 'node2']) expect(leftovers(n), n).toEqual([]);
    expect(installedLeftovers('node1')).toEqual([]);
    expect(installedLeftovers('node2')).toContain('installed: /usr/local/bin/kubelet');
    // The images went through containerd: the user's namespace keeps its image, and its container runs.
    expect(ssh('node1', 'ctr -n default images ls -q')).toContain('registry.k8s.io/busybox:sandbox');
  });

  it("the trust store no longer trusts the cluster CA, and still trusts the user's", () => {
    for (const n of ['node1', 'node2']) {
      expect(ssh(n, 'openssl verify -CAfile /etc/ssl/certs/ca-certificates.crt /root/leaf.crt >/dev/null 2>&1 && echo trusted || echo refused').trim(), n).toBe('refused');
      expect(ssh(n, 'openssl verify -CAfile /etc/ssl/certs/ca-certificates.crt /etc/app/app.crt').trim(), n).toBe('/etc/app/app.crt: OK');
    }
  });

  it("leaves every collateral file, route, set and pin byte for byte, Debian's sysctl link included", () => {
    for (const n of ['node1', 'node2']) expect(userObjects(n), n).toBe(before.get(n));
  });

  it('the backups hold what was removed', () => {
    const dir = purge.report.hosts[0]!.backup!;
    const held = execFileSync('tar', ['-tzf', join(dir, 'files.tar.gz')], { encoding: 'utf8' });
    for (const f of ['etc/nginx/nginx.conf', 'root/.kube/config', 'etc/ssl/etcd/ssl/ca-key.pem', 'etc/systemd/system/k8s-certs-renew.timer', 'etc/crictl.yaml']) expect(held).toContain(f);
    expect(readFileSync(join(dir, 'ipsets.save'), 'utf8')).toMatch(/^create KUBE-CLUSTER-IP hash:ip,port/m);
  });

  it("removes the Docker image references only Kubernetes' containers used, never one a user's container uses or keeps", () => {
    const check = runJson(['node3', '--playbook', 'reset', '--purge', '--check'], state);
    const planned = check.report.hosts[0]!.steps.find((s) => s.name === 'images')!.actions.map((a) => a.what);
    expect(planned.filter((a) => a.includes('Docker'))).toEqual(['remove 1 Docker image reference through the Docker API: registry.k8s.io/pause:3.9']);
    const r = runJson(['node3', '--playbook', 'reset', '--purge', '--yes'], state);
    expect(r.code, r.stderr).toBe(0);
    expect(ssh('node3', "docker images --format '{{.Repository}}:{{.Tag}}' | sort").trim().split('\n')).toEqual(['app/tools:1', 'registry.k8s.io/busybox:sandbox']);
    expect(leftovers('node3')).toEqual([]);
    expect(userObjects('node3')).toBe(before.get('node3'));
  });

  it('a second run with --purge is a no-op', () => {
    const again = runJson(['node1', '--playbook', 'reset', '--purge', '--yes'], state);
    expect(again.code).toBe(0);
    expect(again.report.hosts[0]!.steps.filter((s) => s.actions.length).map((s) => s.name)).toEqual([]);
  });

  it("recognises this cluster's credentials and CA by the operator's kubeconfig (its --context) once /etc/kubernetes is gone", () => {
    // A copy of admin.conf in another user's home and the CA back in the trust store, after the node's PKI is gone.
    const caData = Buffer.from(node2CA).toString('base64');
    ssh('node2', `mkdir -p /home/bob/.kube /usr/local/share/ca-certificates && printf '%s' '${node2CA}' > /usr/local/share/ca-certificates/kube-ca.crt &&
      printf 'apiVersion: v1\\nkind: Config\\nclusters:\\n- cluster:\\n    certificate-authority-data: ${caData}\\n    server: https://lb.cluster.example:6443\\n  name: c\\n' > /home/bob/.kube/config`);
    const alone = pairs(verifyJson(['node2']), 'node2');
    expect(alone.filter((p) => p.startsWith('credential') || p.startsWith('trust-anchor'))).toEqual([]);
    const operator = join(state, 'operator.kubeconfig');
    writeFileSync(operator, `apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: ${caData}\n    server: https://127.0.0.1:1\n  name: sandbox\ncontexts:\n- context: {cluster: sandbox, user: admin}\n  name: admin@sandbox\ncurrent-context: admin@sandbox\nusers:\n- name: admin\n  user: {token: x}\n`);
    const known = pairs(verifyJson(['node2', '--kubeconfig', operator]), 'node2');
    expect(known).toContain('credential /home/bob/.kube/config');
    expect(known).toContain('trust-anchor /usr/local/share/ca-certificates/kube-ca.crt');
    // The same cluster as context admin@sandbox of a kubeconfig whose current context is another cluster (another CA):
    // only --context makes it the operator's cluster, for verify and for the reset.
    const other = Buffer.from('-----BEGIN CERTIFICATE-----\nT1RIRVI=\n-----END CERTIFICATE-----\n').toString('base64');
    const two = join(state, 'two-contexts.kubeconfig');
    writeFileSync(
      two,
      `apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: ${other}\n    server: https://127.0.0.1:1\n  name: other\n- cluster:\n    certificate-authority-data: ${caData}\n    server: https://127.0.0.1:1\n  name: sandbox\n` +
        'contexts:\n- context: {cluster: other, user: admin}\n  name: admin@other\n- context: {cluster: sandbox, user: admin}\n  name: admin@sandbox\ncurrent-context: admin@other\nusers:\n- name: admin\n  user: {token: x}\n',
    );
    const current = verifyJson(['node2', '--kubeconfig', two]);
    expect(pairs(current, 'node2').filter((p) => p.startsWith('credential') || p.startsWith('trust-anchor'))).toEqual([]);
    expect(warnings(current, 'node2')).toContain('kubeconfigs for another cluster (left alone): /home/alice/.kube/config, /home/bob/.kube/config');
    const chosen = pairs(verifyJson(['node2', '--kubeconfig', two, '--context', 'admin@sandbox']), 'node2');
    expect(chosen).toContain('credential /home/bob/.kube/config');
    expect(chosen).toContain('trust-anchor /usr/local/share/ca-certificates/kube-ca.crt');
    const bob = 'ls /home/bob/.kube/config /usr/local/share/ca-certificates/kube-ca.crt 2>&1; true';
    const leftAlone = runJson(['node2', '--playbook', 'reset', '--yes', '--kubeconfig', two], state);
    expect(leftAlone.code, leftAlone.stderr).toBe(0);
    expect(ssh('node2', bob)).not.toMatch(/No such file/);
    const reset = runJson(['node2', '--playbook', 'reset', '--yes', '--kubeconfig', two, '--context', 'admin@sandbox'], state);
    expect(reset.code, reset.stderr).toBe(0);
    expect(ssh('node2', bob)).toMatch(/No such file.*\n.*No such file/);
  });
});
