// `decom run --playbook reset` on a 2-node systemd sandbox of kubespray-leftovers: --check
// changes nothing, a backup whose archive brings a link or a bad name fails before anything
// is destroyed, the real run takes its actions and leaves nothing the independent checker
// finds, the user's objects untouched, the backup and the journal, the etcd archive it keeps named in
// a note; a second run plans nothing, and with --remove-etcd-archive removes that archive.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, down, ssh, up } from '../helpers/sandbox.js';
import { leftovers, nodeSnapshot, userObjects } from '../helpers/residue.js';

import { actionsOf, INVENTORY, runJson, type RunReport } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

describe('decom run --playbook reset on kubespray-leftovers (systemd)', () => {
  const state = tempDir('decom-reset-');
  const before = new Map<string, string>();
  let check: RunReport;
  let real: { code: number; report: RunReport; stderr: string };
  let resetAt = 0;
  // An administrator's own rule whose comment looks like kube-proxy's, and Calico's own accept rule (a rule of
  // its by its whole text alone), beside the scenario's kube-proxy, flannel and Calico rules, in both backends.
  const ADMIN_RULE = '-A INPUT -m comment --comment "kubernetes admin allowance" -j ACCEPT';
  const CALICO_ACCEPT = '-A FORWARD -m comment --comment "cali:S93hcgKJrXEqnTfs" -m comment --comment "Policy explicitly accepted packet." -m mark --mark 0x10000/0x10000 -j ACCEPT';
  /** The rules of node1 that carry a component's comment, in both backends. */
  let planted: string[] = [];
  const commented = () => ssh('node1', 'iptables-save; iptables-legacy-save').split('\n').filter((l) => /--comment "(kubernetes |cali:|flanneld )/.test(l));
  beforeAll(() => {
    up(['--nodes', '2', '--scenario', 'kubespray-leftovers']);
    ssh('node1', `for ipt in iptables iptables-legacy; do $ipt -w ${ADMIN_RULE}; $ipt -w ${CALICO_ACCEPT}; done`);
    planted = commented();
    for (const n of ['node1', 'node2']) {
      before.set(n, userObjects(n));
      // A copy of the cluster CA: the independent check asks whether the trust bundle still trusts it.
      ssh(n, 'cp /etc/kubernetes/pki/ca.crt /root/cluster-ca-copy.crt');
    }
  });
  afterAll(() => down());

  it('--check changes nothing on the node and prints every action', () => {
    const snap = nodeSnapshot('node1');
    const c = runJson(['node1', 'node2', '--playbook', 'reset', '--check'], state);
    expect(c.code).toBe(0);
    check = c.report;
    expect(nodeSnapshot('node1')).toBe(snap);
    const steps = check.hosts[0]!.steps;
    expect(steps.map((s) => s.name)).toEqual(['backup', 'static-pods', 'kubelet', 'containers', 'trust', 'processes', 'cgroups', 'etcd', 'ports', 'mounts', 'links', 'routes', 'netns', 'firewall', 'dns', 'files', 'installed', 'images', 'verify']);
    // Which steps a real run runs side by side, as the plan says it.
    expect(steps.filter((s) => s.parallel).map((s) => `${s.parallel}: ${s.name}`)).toEqual([
      'runtime-and-trust: containers', 'runtime-and-trust: trust', 'mounts-and-links: mounts', 'mounts-and-links: links',
      'network: routes', 'network: netns', 'network: firewall', 'network: dns',
    ]);
    expect(steps.find((s) => s.name === 'static-pods')!.actions.map((a) => a.what).join('\n')).toMatch(/move 4 manifests .*etcd\.yaml, kube-apiserver\.yaml/);
  });

  it("refuses what the node's backup archive must not bring: a symlink member and a SHA256SUMS name ../x are named in one line, none of them is in the operator's copy, and the host stops before anything is destroyed", () => {
    // A tar first in node2's PATH: when it makes the transfer archive (the backup dir minus manifests, made in that dir),
    // it puts a symlink into the archive and a line naming ../x into its SHA256SUMS.
    ssh('node2', `cat > /usr/local/bin/tar <<'EOF'
#!/bin/sh
case " $* " in *" --exclude=./manifests "*)
  ln -sfn /etc/shadow leak
  printf '%s  ../x\\n' "$(printf x | sha256sum | cut -d' ' -f1)" >> SHA256SUMS ;;
esac
exec /usr/bin/tar "$@"
EOF
chmod 0755 /usr/local/bin/tar`);
    const snap = nodeSnapshot('node2');
    let run = '';
    try {
      const r = runJson(['node2', '--playbook', 'reset', '--yes'], state);
      run = r.report.run;
      expect(r.code).toBe(1);
      const dir = join(state, 'backups', run, 'node2');
      const steps = r.report.hosts[0]!.steps;
      expect(steps[0]).toMatchObject({
        name: 'backup',
        status: 'failed',
        reason: `the copy of the node's backup refuses "./leak" (a symbolic link to "/etc/shadow"), SHA256SUMS's name "../x" (not a plain file name): none of it is in ${dir}`,
      });
      expect(steps.slice(1).every((x) => x.status === 'skipped' && x.reason === 'not run: backup failed'), JSON.stringify(steps.slice(1))).toBe(true);
      // The rest of the backup is there; nothing of the refused, in the copy or beside it.
      const copied = readdirSync(dir);
      expect(copied).toEqual(expect.arrayContaining(['SHA256SUMS', 'files.tar.gz', 'iptables-nft-v4.rules']));
      expect(copied).not.toContain('leak');
      expect(copied.filter((f) => !lstatSync(join(dir, f)).isFile() && !lstatSync(join(dir, f)).isDirectory())).toEqual([]);
      expect(readdirSync(dirname(dir))).toEqual(['node2']);
    } finally {
      ssh('node2', `rm -f /usr/local/bin/tar${run ? ` && rm -rf /var/backups/decom/${run} && rmdir /var/backups/decom` : ''}`);
    }
    expect(nodeSnapshot('node2')).toBe(snap);
  });

  it('resets both nodes, and the real run takes the actions --check printed', () => {
    real = runJson(['node1', 'node2', '--playbook', 'reset', '--yes'], state);
    resetAt = Date.now();
    expect(real.code, real.stderr).toBe(0);
    for (const h of real.report.hosts) expect([h.host, h.clean, h.failed]).toEqual([h.host, true, 0]);
    for (const n of ['node1', 'node2']) expect(actionsOf(real.report, n)).toEqual(actionsOf(check, n));
  });

  it("removes kube-proxy's, flannel's and Calico's rules from the built-in chains, and leaves the administrator's look-alike, named as a warning", () => {
    for (const rule of [
      '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES', // kube-proxy's
      '-A FORWARD -m comment --comment "flanneld forward" -j FLANNEL-FWD', // flannel's
      '-A FORWARD -m comment --comment "cali:wUHhoiAYhphO9Mso" -j cali-FORWARD', // Calico's
      CALICO_ACCEPT,
      ADMIN_RULE,
    ]) {
      expect(planted.filter((l) => l === rule), rule).toHaveLength(2); // one in each backend
    }
    expect(commented()).toEqual([ADMIN_RULE, ADMIN_RULE]);
    expect(real.report.hosts.find((h) => h.host === 'node1')!.warnings).toContain(
      `2 firewall rules carrying a Kubernetes component's comment without being one of its rules, left in place (an administrator's own?): iptables-nft table filter: ${ADMIN_RULE}; iptables-legacy table filter: ${ADMIN_RULE}`,
    );
  });

  it('leaves nothing an independent look at the node finds', () => {
    for (const n of ['node1', 'node2']) expect(leftovers(n), n).toEqual([]);
  });

  it("leaves everything that is not Kubernetes' exactly as it was", () => {
    for (const n of ['node1', 'node2']) expect(userObjects(n), n).toBe(before.get(n));
  });

  it("copies a checksummed backup to the operator (0700) and removes the node's copy", () => {
    const h = real.report.hosts[0]!;
    expect(h.backup).toBeDefined();
    expect(statSync(h.backup!).mode & 0o777).toBe(0o700);
    const sums = readFileSync(join(h.backup!, 'SHA256SUMS'), 'utf8');
    expect(sums).toMatch(/files\.tar\.gz/);
    expect(sums).toMatch(/iptables-nft-v4\.rules/);
    expect(readFileSync(join(h.backup!, 'iptables-legacy-v4.rules'), 'utf8')).toContain(':KUBE-SERVICES');
    expect(existsSync(join(h.backup!, 'README.txt'))).toBe(true);
    // What the reset removed from outside /etc/kubernetes is in the backup too.
    const held = execFileSync('tar', ['-tzf', join(h.backup!, 'files.tar.gz')], { encoding: 'utf8' });
    for (const f of ['root/.kube/config', 'usr/local/share/ca-certificates/kube-ca.crt', 'etc/ssl/etcd/ssl/ca-key.pem', 'etc/etcd.env']) expect(held).toContain(f);
    // Only the cluster's etcd data stays on the node, archived by the etcd step before it removed it (it can be gigabytes).
    const run = /([^/]+)\.jsonl$/.exec(real.report.journal)?.[1] as string;
    expect(ssh('node1', 'ls -A /var/backups/decom 2>/dev/null; true').trim()).toBe(`${run}-etcd-data`);
    expect(ssh('node1', `tar -tzf /var/backups/decom/${run}-etcd-data/etcd-data.tar.gz`)).toMatch(/^var\/lib\/etcd\/member\//m);
  });

  it("names the etcd archive it keeps, which holds the cluster's Secrets: a note of the run and of verify, never a finding (verify exits 0)", () => {
    const run = /([^/]+)\.jsonl$/.exec(real.report.journal)?.[1] as string;
    const note = `etcd data archived by decom and kept on the node: /var/backups/decom/${run}-etcd-data/etcd-data.tar.gz; it holds every Secret of the cluster (remove it once it is not needed: decom run --remove-etcd-archive)`;
    expect(real.report.hosts.find((h) => h.host === 'node1')!.warnings).toContain(note);
    const v = decom(['verify', INVENTORY, 'node1']);
    expect(v.code, v.stdout + v.stderr).toBe(0);
    expect(v.stdout).toContain(`node1: warning: ${note}\n`);
    expect(v.stdout).toMatch(/^node1: clean$/m);
  });

  it('writes a journal of every action with its command and exit status', () => {
    const events = readFileSync(real.report.journal, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const actions = events.filter((e) => e.event === 'action' && e.host === 'node1');
    expect(actions.length).toBe(real.report.hosts[0]!.steps.reduce((n, s) => n + s.actions.length, 0));
    expect(actions.find((a) => String(a.action).startsWith('systemctl disable --now kubelet'))).toMatchObject({ code: 0, step: 'kubelet' });
    // Every action's time, the node's own for its scripts.
    expect(actions.filter((a) => typeof a.ms !== 'number')).toEqual([]);
    // The trust store's rebuild ran beside the runtime's teardown: both started before either ended, each journaled under its own step.
    const at = (event: string, step: string) => events.findIndex((e) => e.host === 'node1' && e.event === event && e.step === step);
    for (const step of ['containers', 'trust']) expect(events[at('step-start', step)], step).toMatchObject({ parallel: 'runtime-and-trust' });
    expect(Math.max(at('step-start', 'containers'), at('step-start', 'trust'))).toBeLessThan(Math.min(at('step', 'containers'), at('step', 'trust')));
    expect(actions.find((a) => String(a.action).includes('rebuild the trust bundle'))).toMatchObject({ code: 0, step: 'trust' });
    expect(events[at('step', 'trust')]).toMatchObject({ status: 'changed', parallel: 'runtime-and-trust' });
    expect(statSync(real.report.journal).mode & 0o777).toBe(0o600);
  });

  it('plans nothing on a second run: every step ok, no action, exit 0; --remove-etcd-archive removes the archive the first run kept', () => {
    const again = runJson(['node1', 'node2', '--playbook', 'reset', '--yes', '--remove-etcd-archive'], state);
    expect(again.code).toBe(0);
    for (const h of again.report.hosts) {
      expect(h.steps.every((s) => s.status === 'ok' && s.actions.length === 0), JSON.stringify(h.steps)).toBe(true);
      expect(h.warnings ?? [], h.host).not.toContainEqual(expect.stringContaining('etcd data archived'));
    }
    expect(ssh('node1', 'ls -A /var/backups/decom; true')).toBe('');
  });

  it('nothing has come back 30 s later (kubelet Restart=always, containerd restart)', async () => {
    await new Promise((r) => setTimeout(r, Math.max(0, 31_000 - (Date.now() - resetAt))));
    ssh('node1', 'systemctl restart containerd');
    for (const n of ['node1', 'node2']) expect(leftovers(n), n).toEqual([]);
  });
});
