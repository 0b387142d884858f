import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, down, ssh, STATE_DIR, up } from './helpers/sandbox.js';
import { leftovers, nodeSnapshot, userObjects } from './helpers/residue.js';
import { actionsOf, runJson, type RunReport } from './helpers/run.js';

// Every scenario on one sandbox, one node each, all control planes (the most residue):
// --check, then the reset, judged by the independent checker, then again 30 s later.
const SCENARIOS = ['kubespray-leftovers', 'orphaned-shims', 'docker-runtime', 'force-deleted-pods', 'clean'];
const HOSTS = SCENARIOS.map((_, i) => `node${i + 1}`);

for (const init of ['systemd', 'none'] as const) {
  describe(`decom run --playbook reset on every scenario (init: ${init})`, () => {
    const state = mkdtempSync(join(tmpdir(), 'decom-scenarios-'));
    const user = new Map<string, string>();
    let check: RunReport;
    let real: RunReport;
    let resetAt = 0;
    beforeAll(() => {
      up(['--nodes', String(HOSTS.length), '--control-planes', String(HOSTS.length), '--init', init, '--scenario', SCENARIOS.join(',')]);
      for (const h of HOSTS) user.set(h, userObjects(h));
    });
    afterAll(() => down());

    it('--check changes nothing on any node', () => {
      const before = HOSTS.map(nodeSnapshot);
      const c = runJson([...HOSTS, '--playbook', 'reset', '--check'], state);
      expect(c.code).toBe(0);
      check = c.report;
      expect(HOSTS.map(nodeSnapshot)).toEqual(before);
    });

    it('resets every node, taking the actions --check printed', () => {
      const r = runJson([...HOSTS, '--playbook', 'reset', '--yes'], state);
      resetAt = Date.now();
      real = r.report;
      expect(r.code, JSON.stringify(real.hosts.filter((h) => !h.clean))).toBe(0);
      for (const h of HOSTS) expect(actionsOf(real, h), `${h} (${SCENARIOS[HOSTS.indexOf(h)]})`).toEqual(actionsOf(check, h));
      // The journal: no action failed, and the pods went through containerd's CRI (no crictl on these nodes), whose
      // CNI DEL took their netns with it: the netns step, planned after it, deletes only Calico's hand-made one.
      const journal = readFileSync(real.journal, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(journal.filter((e) => e.event === 'action' && e.code !== 0 && !e.skipped)).toEqual([]);
      const ofNode1 = journal.filter((e) => e.host === 'node1');
      const teardown = ofNode1.find((e) => e.event === 'action' && e.step === 'containers');
      expect(teardown.output).toMatch(/^CRI v1 StopPodSandbox, RemovePodSandbox [0-9a-f]{13} \(kube-system\/coredns-/m);
      expect(ofNode1.find((e) => e.event === 'step-start' && e.step === 'netns').planned).toEqual([expect.stringMatching(/^delete network namespace cni-/)]);
    });

    it("leaves nothing an independent look finds, and everything that is not Kubernetes' as it was", () => {
      for (const h of HOSTS) {
        expect(leftovers(h), `${h} (${SCENARIOS[HOSTS.indexOf(h)]})`).toEqual([]);
        expect(userObjects(h), h).toBe(user.get(h));
      }
    });

    it('leaves nothing decom verify or decom audit reports', () => {
      const verify = decom(['verify', join(STATE_DIR, 'hosts.yaml'), ...HOSTS]);
      expect(verify.code, verify.stdout).toBe(0);
      const audit = decom(['audit', join(STATE_DIR, 'hosts.yaml'), ...HOSTS, '--no-api', '--output', 'json']);
      expect(audit.code, audit.stdout).toBe(0);
      expect(JSON.parse(audit.stdout).hosts.flatMap((h: { findings: unknown[] }) => h.findings)).toEqual([]);
    });

    it('plans nothing on a second run', () => {
      const again = runJson([...HOSTS, '--playbook', 'reset', '--yes'], state);
      expect(again.code).toBe(0);
      for (const h of again.report.hosts) expect(h.steps.filter((s) => s.actions.length || s.status !== 'ok'), h.host).toEqual([]);
    });

    it('nothing has come back 30 s later', async () => {
      await new Promise((r) => setTimeout(r, Math.max(0, 31_000 - (Date.now() - resetAt))));
      if (init === 'systemd') for (const h of HOSTS) ssh(h, 'systemctl restart containerd');
      for (const h of HOSTS) expect(leftovers(h), `${h} (${SCENARIOS[HOSTS.indexOf(h)]})`).toEqual([]);
    });
  });
}
