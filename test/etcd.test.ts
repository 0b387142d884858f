import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { down, ssh, up } from './helpers/sandbox.js';
import { holders } from './helpers/facts.js';

describe('real etcd on the etcd nodes', () => {
  beforeAll(() => up(['--nodes', '4', '--control-planes', '3', '--etcd', '--scenario', 'kubespray-leftovers']));
  afterAll(() => down());

  it('runs a healthy 3-member cluster, as etcd.service, with the static etcd pod left out', () => {
    const health = ssh('node2', 'ETCDCTL_API=3 etcdctl endpoint health --cluster 2>&1');
    const healthy = health.split('\n').filter((l) => / is healthy: successfully committed proposal/.test(l));
    expect(healthy.map((l) => l.split(' ')[0]).sort()).toEqual(['http://198.18.0.11:2379', 'http://198.18.0.12:2379', 'http://198.18.0.13:2379']);
    const members = ssh('node1', 'ETCDCTL_API=3 etcdctl member list -w json');
    expect((JSON.parse(members) as { members: { name: string }[] }).members.map((m) => m.name).sort()).toEqual(['node1', 'node2', 'node3']);
    expect(ssh('node1', 'systemctl is-active etcd').trim()).toBe('active');
    expect(ssh('node1', 'ls /etc/kubernetes/manifests')).not.toContain('etcd.yaml');
    const pid = holders(ssh('node1', 'ss -Hltnp "sport = :2379"')).get(2379)!;
    expect(ssh('node1', `cat /proc/${pid}/comm`).trim()).toBe('etcd');
    expect(ssh('node4', 'pgrep -x etcd || true').trim()).toBe('');
  });
});
