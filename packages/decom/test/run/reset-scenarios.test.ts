/**
 * The reset on every scenario, on every containerd the field runs: each sandbox below
 * holds a group of the matrix's cells, every node reset at once with --check first,
 * then judged by the independent checker, verify, the audit and a second run.
 *
 *   containerd 2 (the default)  every scenario but docker-runtime (whose node keeps the
 *                               containerd Debian 12's Docker runs), both inits
 *   containerd 1.7 and 1.6      kubespray-leftovers, force-deleted-pods, runtime-lost and
 *                               clean, one init each: 1.7 with systemd, 1.6 without
 *
 * The older versions ride in the same sandboxes as 2.x, on nodes of their own: in the
 * cluster scenarios the first worker of each version loses its runtime (runtime-lost).
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, down, nodes, ssh, STATE_DIR, up } from '../helpers/sandbox.js';
import { leftovers, nodeSnapshot, userObjects } from '../helpers/residue.js';
import { actionsOf, runJson, type RunReport } from '../helpers/run.js';
import { kubectl } from '../helpers/kubectl.js';
import { tempDir } from '../helpers/temp.js';

const NODE_SCENARIOS = ['kubespray-leftovers', 'orphaned-shims', 'docker-runtime', 'force-deleted-pods', 'clean'];
const OLDER_SCENARIOS = ['kubespray-leftovers', 'force-deleted-pods', 'clean'];
const CLUSTER_SCENARIOS = ['cluster', 'etcd-restore-phantoms', 'stuck-terminating', 'pdb-blocked', 'runtime-lost'];

interface Cell {
  title: string;
  up: string[];
  /** The containerd family each node must run, by node name. */
  family: (node: string, scenario: string) => string;
  /** Also wait 30 s and look again (containerd restarted on the systemd nodes). */
  later?: true;
  /** The nodes are members of the sandbox's API: their Node objects outlive a node-side reset. */
  api?: true;
}

const older = { systemd: '1.7', none: '1.6' } as const;
const INITS = ['systemd', 'none'] as const;

/** Every node scenario on one sandbox, one node each and all control planes (the most residue), each init its own nodes. */
const nodeCells = INITS.flatMap((init) => [
  ...NODE_SCENARIOS.map((scenario) => ({ init, scenario, containerd: scenario === 'docker-runtime' ? '1.6' : '2' })),
  ...OLDER_SCENARIOS.map((scenario) => ({ init, scenario, containerd: older[init] })),
]);

const MATRIX: Cell[] = [
  {
    title: `every node scenario on containerd 2, and ${OLDER_SCENARIOS.join(', ')} on 1.7 (systemd) and 1.6 (init: none)`,
    up: ['--nodes', String(nodeCells.length), '--control-planes', String(nodeCells.length),
      ...(['init', 'scenario', 'containerd'] as const).flatMap((k) => [`--${k}`, nodeCells.map((c) => c[k]).join(',')])],
    family: (node) => nodeCells[Number(node.slice(4)) - 1]!.containerd,
    later: true,
  },
  ...INITS.map((init): Cell => ({
    // node2 (2.x) and node3 (the older one) are the first workers of their versions: both lose their runtime.
    title: `the cluster scenarios together on containerd 2, runtime-lost also on ${older[init]} (init: ${init})`,
    up: ['--nodes', '4', '--init', init, '--scenario', CLUSTER_SCENARIOS.join(','), '--containerd', `2,2,${older[init]},2`],
    family: (node) => (node === 'node3' ? older[init] : '2'),
    api: true,
  })),
];

interface StatusNode { name: string; init: string; runtime: { family: string; containerd: string; cni: string } }

for (const cell of MATRIX) {
  describe(`decom run --playbook reset: ${cell.title}`, () => {
    const state = tempDir('decom-scenarios-');
    const user = new Map<string, string>();
    let hosts: string[] = [];
    const scenario = new Map<string, string>();
    const label = (h: string) => `${h} (${scenario.get(h)})`;
    let check: RunReport;
    let real: RunReport;
    let resetAt = 0;
    beforeAll(() => {
      up(cell.up);
      const planted = nodes();
      hosts = planted.map((n) => n.name);
      // The cluster scenarios are the whole cluster's: every node is a member (runtime-lost's first workers aside).
      for (const n of planted) scenario.set(n.name, cell.api ? 'cluster member' : (n.scenario ?? 'no scenario'));
      for (const h of hosts) user.set(h, userObjects(h));
    });
    afterAll(() => {
      down();
      rmSync(state, { recursive: true, force: true });
    });

    it('runs the containerd asked for on every node (the exact versions printed)', () => {
      const status = JSON.parse(decom(['sandbox', 'status', '--output', 'json']).stdout).nodes as StatusNode[];
      for (const n of status) {
        console.log(`${label(n.name)}: init ${n.init}, containerd ${n.runtime.containerd}, CNI plugins ${n.runtime.cni}`);
        expect(n.runtime.family, label(n.name)).toBe(cell.family(n.name, scenario.get(n.name) as string));
        expect(ssh(n.name, 'containerd --version'), label(n.name)).toContain(` ${n.runtime.family === '2' ? '2.' : `${n.runtime.family}.`}`);
      }
    });

    if (cell.api) {
      it("has the lost runtimes' traces to reset, on the first worker of each version (runtime-lost)", () => {
        const audit = decom(['audit', join(STATE_DIR, 'hosts.yaml'), 'node2', 'node3', '--no-api', '--output', 'json']);
        const found = JSON.parse(audit.stdout) as { hosts: { host: string; findings: { kind: string }[] }[] };
        for (const h of found.hosts) expect(new Set(h.findings.map((f) => f.kind)), h.host).toEqual(new Set(['orphan-netns', 'orphan-veth', 'orphan-ipam-lease', 'orphan-pod-dir', 'orphan-pod-cgroup']));
      });
    }

    it('--check changes nothing on any node', () => {
      const before = hosts.map(nodeSnapshot);
      const c = runJson([...hosts, '--playbook', 'reset', '--check'], state);
      expect(c.code).toBe(0);
      check = c.report;
      expect(hosts.map(nodeSnapshot)).toEqual(before);
    });

    it('resets every node, taking the actions --check printed, no action failing', () => {
      const r = runJson([...hosts, '--playbook', 'reset', '--yes'], state);
      resetAt = Date.now();
      real = r.report;
      expect(r.code, JSON.stringify(real.hosts.filter((h) => !h.clean))).toBe(0);
      for (const h of hosts) expect(actionsOf(real, h), label(h)).toEqual(actionsOf(check, h));
      const journal = readFileSync(real.journal, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(journal.filter((e) => e.event === 'action' && e.code !== 0 && !e.skipped)).toEqual([]);
      // On kubespray-leftovers the pods went through containerd's CRI (no crictl on these nodes), whose CNI DEL
      // took their netns with it: the netns step, planned after it, deletes only Calico's hand-made one.
      for (const h of hosts.filter((x) => scenario.get(x) === 'kubespray-leftovers')) {
        const ofHost = journal.filter((e) => e.host === h);
        const teardown = ofHost.find((e) => e.event === 'action' && e.step === 'containers');
        expect(teardown.output, label(h)).toMatch(/^CRI v1 StopPodSandbox, RemovePodSandbox [0-9a-f]{13} \(kube-system\/coredns-/m);
        expect(ofHost.find((e) => e.event === 'step-start' && e.step === 'netns').planned, label(h)).toEqual([expect.stringMatching(/^delete network namespace cni-/)]);
      }
    });

    it("leaves nothing an independent look finds, and everything that is not Kubernetes' as it was", () => {
      for (const h of hosts) {
        expect(leftovers(h), label(h)).toEqual([]);
        expect(userObjects(h), label(h)).toBe(user.get(h));
      }
    });

    it('leaves nothing decom verify or decom audit reports', () => {
      if (cell.api) {
        // A node-side reset leaves the Node in the API, and verify says so (the decommission deletes it last): deleted
        // here as an operator would after a reset, what verify reports is the node's own state alone.
        const before = JSON.parse(decom(['verify', join(STATE_DIR, 'hosts.yaml'), ...hosts, '--output', 'json']).stdout) as { hosts: { host: string; findings: { kind: string }[] }[] };
        for (const h of before.hosts) expect(h.findings.map((f) => f.kind), label(h.host)).toEqual(['node-object']);
        const del = kubectl('delete', 'node', ...hosts);
        expect(del.code, del.err).toBe(0);
      }
      const verify = decom(['verify', join(STATE_DIR, 'hosts.yaml'), ...hosts]);
      expect(verify.code, verify.stdout).toBe(0);
      const audit = decom(['audit', join(STATE_DIR, 'hosts.yaml'), ...hosts, '--no-api', '--output', 'json']);
      expect(audit.code, audit.stdout).toBe(0);
      expect(JSON.parse(audit.stdout).hosts.flatMap((h: { findings: unknown[] }) => h.findings)).toEqual([]);
    });

    it('plans nothing on a second run', () => {
      const again = runJson([...hosts, '--playbook', 'reset', '--yes'], state);
      expect(again.code).toBe(0);
      for (const h of again.report.hosts) expect(h.steps.filter((s) => s.actions.length || s.status !== 'ok'), h.host).toEqual([]);
    });

    if (cell.later) {
      it('nothing has come back 30 s later', async () => {
        await new Promise((r) => setTimeout(r, Math.max(0, 31_000 - (Date.now() - resetAt))));
        for (const n of nodes()) if (n.init === 'systemd') ssh(n.name, 'systemctl restart containerd');
        for (const h of hosts) expect(leftovers(h), label(h)).toEqual([]);
      });
    }
  });
}
