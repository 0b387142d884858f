// Real etcd on a 4-node sandbox (3 control planes, --etcd) with the kubespray-leftovers
// scenario: the reset refuses a voting member of the healthy cluster, and resets a member
// whose cluster has lost quorum.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { down, ssh, up, addrOf } from '../helpers/sandbox.js';
import { leftovers } from '../helpers/residue.js';
import { runJson } from '../helpers/run.js';
import { holders } from '../helpers/facts.js';
import { tempDir } from '../helpers/temp.js';

describe('real etcd on the etcd nodes', () => {
  beforeAll(() => up(['--nodes', '4', '--control-planes', '3', '--etcd', '--scenario', 'kubespray-leftovers']));
  afterAll(() => down());

  it('runs a healthy 3-member cluster, as etcd.service, with the static etcd pod left out', () => {
    const health = ssh('node2', 'ETCDCTL_API=3 etcdctl endpoint health --cluster 2>&1');
    const healthy = health.split('\n').filter((l) => / is healthy: successfully committed proposal/.test(l));
    expect(healthy.map((l) => l.split(' ')[0]).sort()).toEqual(['node1', 'node2', 'node3'].map((n) => `http://${addrOf(n)}:2379`));
    const members = ssh('node1', 'ETCDCTL_API=3 etcdctl member list -w json');
    expect((JSON.parse(members) as { members: { name: string }[] }).members.map((m) => m.name).sort()).toEqual(['node1', 'node2', 'node3']);
    expect(ssh('node1', 'systemctl is-active etcd').trim()).toBe('active');
    expect(ssh('node1', 'ls /etc/kubernetes/manifests')).not.toContain('etcd.yaml');
    const pid = holders(ssh('node1', 'ss -Hltnp "sport = :2379"')).get(2379)!;
    expect(ssh('node1', `cat /proc/${pid}/comm`).trim()).toBe('etcd');
    expect(ssh('node4', 'pgrep -x etcd || true').trim()).toBe('');
  });

  const state = tempDir('decom-etcd-');
  const look = (n: string) => ssh(n, "ls /etc/kubernetes/manifests /var/lib/etcd/member; iptables-save | grep -c KUBE; systemctl is-active etcd kubelet; ls /run/decom.lock 2>&1; true");

  it('reset refuses a voting member of the healthy cluster (exit 4), changes nothing, and etcd keeps serving', () => {
    const before = look('node1');
    const r = runJson(['node1', '--playbook', 'reset', '--yes'], state);
    expect(r.code).toBe(4);
    expect(r.report.hosts[0]!.refused).toMatch(/etcd member node1 is a voting member of a healthy 3-member cluster.*decom run without --playbook/);
    expect(look('node1')).toBe(before);
    expect(ssh('node1', 'ETCDCTL_API=3 etcdctl endpoint health --cluster 2>&1')).not.toMatch(/unhealthy/);
  });

  it('resets a member whose cluster has lost quorum: etcd.service stopped and disabled, its data gone', () => {
    ssh('node2', 'systemctl stop etcd');
    ssh('node3', 'systemctl stop etcd');
    const r = runJson(['node1', '--playbook', 'reset', '--yes'], state);
    expect(r.code, JSON.stringify(r.report.hosts[0]!.steps.filter((s) => s.status === 'failed'))).toBe(0);
    expect(r.report.hosts[0]!.steps.find((s) => s.name === 'etcd')!.actions.map((a) => a.what)).toEqual([
      'systemctl disable --now etcd.service',
      expect.stringMatching(/^stop etcd \(\d+\)$/),
      expect.stringMatching(/^archive etcd data to \/var\/backups\/decom\/\S+-etcd-data\/etcd-data\.tar\.gz, then remove etcd data \/var\/lib\/etcd\/member$/),
    ]);
    expect(ssh('node1', 'systemctl is-active etcd; systemctl is-enabled etcd; ls -A /var/lib/etcd; true')).toBe('inactive\ndisabled\n');
    expect(leftovers('node1')).toEqual([]);
  });
});
