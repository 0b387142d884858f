// A node of a large cluster in kube-proxy's iptables mode: 20,000 Services, about
// 100,000 rules in 40,000 chains. How fast is bench/scale.sh's to say; this says right.
// A 1-node sandbox of kubespray-leftovers with --services 20000: verified, then reset.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, down, ssh, up } from '../helpers/sandbox.js';
import { leftovers, userObjects } from '../helpers/residue.js';
import { INVENTORY, runJson } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

describe('a node with 20,000 Services (kube-proxy iptables mode)', () => {
  let user = '';
  beforeAll(() => {
    up(['--nodes', '1', '--scenario', 'kubespray-leftovers', '--services', '20000']);
    user = userObjects('node1');
  });
  afterAll(() => down());

  it('is verified in a summary of a few lines, every chain counted', () => {
    const r = decom(['verify', INVENTORY, 'node1']);
    expect(r.code).toBe(1);
    expect(r.stdout.split('\n').length).toBeLessThan(40);
    const chains = Number(ssh('node1', 'iptables-save | grep -c "^:KUBE-"; true').trim());
    expect(chains).toBeGreaterThan(40_000);
    expect(r.stdout).toMatch(new RegExp(`node1  iptables +\\d+ `));
  });

  it("resets it: every Kubernetes chain gone in both backends, the other application's chains byte for byte", () => {
    const r = runJson(['node1', '--playbook', 'reset', '--yes'], tempDir('decom-scale-'));
    expect(r.code, JSON.stringify(r.report.hosts[0]!.steps.filter((s) => s.status === 'failed'))).toBe(0);
    expect(r.report.hosts[0]!.steps.find((s) => s.name === 'firewall')!.actions.map((a) => a.what)).toEqual([
      expect.stringMatching(/^iptables-nft: remove 400\d\d Kubernetes chains .* in one restore$/),
      expect.stringMatching(/^iptables-legacy: remove \d+ Kubernetes chains/),
      'nft delete table ip kube-proxy',
      'nft delete table ip6 kube-proxy',
      expect.stringMatching(/^destroy 5 ipsets: KUBE-CLUSTER-IP, /),
    ]);
    expect(leftovers('node1')).toEqual([]);
    expect(userObjects('node1')).toBe(user);
  });
});
