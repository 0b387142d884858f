// The node's DNS given back, on a 3-node sandbox with nothing of Kubernetes' but kubespray's
// resolver edits, planted by Ansible from kubespray's own tasks (helpers/kubespray-dns.ts).
// node1: every edit beside an administrator's files of the same shapes, and stand-in
// NetworkManager and systemd-resolved units; node2: a resolv.conf block of the cluster's
// entries only; node3: a resolv.conf the real dhclient wrote from kubespray's supersede block.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOST_FILES, HOST_NAMESERVER, STAND_IN_EVENTS, plantKubesprayDns } from '../helpers/kubespray-dns.js';
import { INVENTORY, runJson } from '../helpers/run.js';
import { decom, down, ssh, up } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/temp.js';

const KUBESPRAY_WHOLE_FILES = [
  '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate',
  '/etc/systemd/resolved.conf.d/kubespray.conf',
  '/etc/NetworkManager/conf.d/calico.conf',
  '/etc/NetworkManager/conf.d/k8s.conf',
];
const COLLATERAL = ['/etc/systemd/resolved.conf.d/corp.conf', '/etc/NetworkManager/conf.d/corp.conf'];

/** Each file's mode, owner and SHA-256, or that it is absent. */
const filesOf = (node: string, paths: string[]) =>
  ssh(node, paths.map((p) => `if [ -e ${p} ]; then printf '%s %s ' "$(stat -c '%a %U' ${p})" ${p}; sha256sum < ${p}; else echo "absent ${p}"; fi`).join('\n'));

const journalOf = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

describe("the node's DNS given back: kubespray's resolver edits removed, the host's own kept", () => {
  const state = tempDir('decom-dns-');
  beforeAll(async () => {
    up(['--nodes', '3', '--scenario', 'clean']);
    await plantKubesprayDns({
      node1: { standIns: true },
      node2: { disableHostNameservers: true, dhclient: false, resolved: false, networkManager: false, collateral: false },
      node3: { dhclientRenewed: true, resolved: false, networkManager: false },
    });
  }, 300_000);
  afterAll(() => down());

  it("names each of kubespray's edits, removes them beside the administrator's own (backed up first), reloads NetworkManager and try-restarts resolved, and plans nothing the second time", () => {
    const collateral = filesOf('node1', COLLATERAL);
    const resolvMode = ssh('node1', "stat -c '%a %U' /etc/resolv.conf");
    const verify = decom(['verify', INVENTORY, 'node1', '--output', 'json']);
    expect(verify.code).toBe(1);
    const named = (JSON.parse(verify.stdout) as { hosts: { findings: { kind: string; subject: string }[] }[] }).hosts[0]!.findings.filter((f) => f.kind === 'dns-config').map((f) => f.subject);
    expect(named.sort()).toEqual(['/etc/resolv.conf', '/etc/dhcp/dhclient.conf', ...KUBESPRAY_WHOLE_FILES, '/etc/NetworkManager/conf.d/dns.conf'].sort());

    const r = runJson(['node1', '--playbook', 'reset', '--yes'], state);
    expect(r.code, JSON.stringify(r.report.hosts[0]!.steps.filter((s) => s.status === 'failed'))).toBe(0);
    expect(ssh('node1', 'cat /etc/resolv.conf')).toBe(`nameserver ${HOST_NAMESERVER}\n`);
    expect(ssh('node1', "stat -c '%a %U' /etc/resolv.conf")).toBe(resolvMode);
    expect(ssh('node1', 'cat /etc/dhcp/dhclient.conf')).toBe(HOST_FILES.dhclientConf);
    expect(ssh('node1', 'cat /etc/NetworkManager/conf.d/dns.conf')).toBe(HOST_FILES.networkManagerDnsConf);
    expect(filesOf('node1', KUBESPRAY_WHOLE_FILES)).toBe(KUBESPRAY_WHOLE_FILES.map((p) => `absent ${p}\n`).join(''));
    expect(filesOf('node1', COLLATERAL)).toBe(collateral);

    // Backed up before they changed: in the operator's copy of the node's backup.
    const backup = r.report.hosts[0]!.backup!;
    const saved = execFileSync('tar', ['-tzf', join(backup, 'files.tar.gz')], { encoding: 'utf8' }).split('\n');
    for (const p of ['/etc/resolv.conf', '/etc/dhcp/dhclient.conf', '/etc/NetworkManager/conf.d/dns.conf', ...KUBESPRAY_WHOLE_FILES]) expect(saved).toContain(p.slice(1));

    // The journal holds the services' actions: NetworkManager reloaded, never restarted; resolved (no ExecReload on this systemd) try-restarted.
    const actions = journalOf(r.report.journal).filter((e) => e.event === 'action' && e.step === 'dns').map((e) => [e.command, e.code]);
    expect(actions).toContainEqual(['systemctl reload NetworkManager.service', 0]);
    expect(actions).toContainEqual(['systemctl try-restart systemd-resolved.service', 0]);
    expect(actions.map(([c]) => c)).not.toContain('systemctl restart NetworkManager.service');
    const events = (unit: keyof typeof STAND_IN_EVENTS) => ssh('node1', `cat ${STAND_IN_EVENTS[unit]}`).trim().split('\n').map((l) => l.split(' ')[0]);
    expect(events('NetworkManager')).toEqual(['start', 'reload']);
    expect(events('systemd-resolved')).toEqual(['start', 'stop', 'start']);

    const again = runJson(['node1', '--playbook', 'reset', '--yes'], state);
    expect(again.code).toBe(0);
    expect(again.report.hosts[0]!.steps.filter((s) => s.actions.length > 0 && s.name !== 'backup').map((s) => s.name)).toEqual([]);
    expect(again.report.hosts[0]!.steps.every((s) => s.status === 'ok')).toBe(true);
  });

  it("leaves a resolv.conf of the cluster's entries only as it was, names kubespray's backups of it, and exits 1", () => {
    const before = ssh('node2', 'cat /etc/resolv.conf');
    const backups = ssh('node2', 'ls /etc/resolv.conf.*~').trim().split('\n');
    expect(backups.length).toBeGreaterThan(0);
    const r = runJson(['node2', '--playbook', 'reset', '--yes'], state);
    expect(r.code).toBe(1);
    expect(ssh('node2', 'cat /etc/resolv.conf')).toBe(before);
    const resolver = r.report.hosts[0]!.left?.find((f) => f.kind === 'cluster-resolver');
    expect(resolver?.subject).toBe('/etc/resolv.conf');
    for (const b of backups) expect(resolver?.detail).toContain(b);
  });

  it('keeps only the host\'s nameserver in a resolv.conf dhclient wrote from kubespray\'s supersede block', () => {
    expect(ssh('node3', 'cat /etc/resolv.conf')).not.toContain('# Ansible entries');
    const r = runJson(['node3', '--playbook', 'reset', '--yes'], state);
    expect(r.code, JSON.stringify(r.report.hosts[0]!.steps.filter((s) => s.status === 'failed'))).toBe(0);
    expect(ssh('node3', 'cat /etc/resolv.conf')).toBe(`nameserver ${HOST_NAMESERVER}\n`);
    expect(ssh('node3', 'cat /etc/dhcp/dhclient.conf')).toBe(HOST_FILES.dhclientConf);
    expect(ssh('node3', 'ls /etc/dhcp/dhclient-exit-hooks.d/zdnsupdate 2>&1; true')).toMatch(/No such file/);
  });
});
