import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AuditReport } from '../src/audit/audit.js';
import { fixKinds, plan, remedy } from '../src/audit/fix.js';
import { STOP_PROCS } from '../src/engine/sh.js';
import { RM_CGROUPS } from '../src/steps/cgroups.js';
import type { AuditFinding } from '../src/audit/rules.js';

// The fix's plan, pure: what the report the operator saw holds against the re-check;
// and the node remedies' scripts under dash on copies of a node's files and cgroup
// tree. (The sandbox tests prove the remedies on real nodes and a real API.)

const finding = (kind: AuditFinding['kind'], subject: string, target: AuditFinding['target'], evidence: string[] = []): AuditFinding => ({ kind, subject, detail: '', evidence, target });
const report = (hosts: Record<string, AuditFinding[]>, cluster: AuditFinding[] = [], node: (h: string) => string = (h) => h): AuditReport => ({
  time: 0,
  hosts: Object.entries(hosts).map(([host, findings]) => ({ host, node: node(host), reachable: true, findings })),
  cluster,
});
const stuck = (over: Record<string, string>, evidence: string[] = []) =>
  finding('stuck-terminating-pod', 'default/p', { namespace: 'default', name: 'p', uid: 'u1', node: 'node3', nodeGone: 'false', containersRunning: '0', ...over }, evidence);
const outcomes = (as: ReturnType<typeof plan>) => as.map((a) => `${a.host ?? '(cluster)'} ${a.finding.kind} ${a.finding.subject}: ${a.outcome ?? 'to do'}${a.why ? ` (${a.why})` : ''}`);

describe('the fix plan against its re-check', () => {
  it('acts only on the kinds named; a phantom the re-check no longer finds, or finds with another pod, is left alone', () => {
    const phantom = (uid: string) => finding('phantom-pod', 'default/orders', { uid, containers: ['c'], sandboxes: ['s'], runtime: 'containerd' });
    const seen = report({ node2: [phantom('u1'), finding('orphan-netns', 'cni-a', { netns: 'cni-a' })] });
    expect(outcomes(plan(seen, seen, new Set(['phantom-pod']), new Set()))).toEqual(['node2 phantom-pod default/orders: to do']);
    expect(outcomes(plan(seen, report({ node2: [] }), new Set(['phantom-pod']), new Set()))).toEqual([
      'node2 phantom-pod default/orders: left (the re-check no longer finds it (its pod is known to the API again, or its containers are gone))',
    ]);
    expect(outcomes(plan(seen, report({ node2: [phantom('u2')] }), new Set(['phantom-pod']), new Set()))[0]).toMatch(/: left \(the re-check finds it changed: /);
  });

  it('force-deletes a Terminating pod only when its node is gone or its containers are proven dead, never under finalizers', () => {
    const kinds = new Set(['stuck-terminating-pod'] as const);
    const on = (f: AuditFinding) => report({ node3: [f] });
    expect(outcomes(plan(on(stuck({})), on(stuck({})), kinds, new Set()))).toEqual(['node3 stuck-terminating-pod default/p: to do']);
    expect(outcomes(plan(on(stuck({ containersRunning: '2' })), on(stuck({ containersRunning: '2' })), kinds, new Set()))).toEqual([
      'node3 stuck-terminating-pod default/p: left (2 of its containers still run on node3)',
    ]);
    const gone = report({}, [stuck({ nodeGone: 'true', node: 'node9' })]);
    expect(outcomes(plan(gone, gone, kinds, new Set()))).toEqual(['(cluster) stuck-terminating-pod default/p: to do']);
    const elsewhere = report({}, [stuck({ node: 'node9' })]);
    expect(outcomes(plan(elsewhere, elsewhere, kinds, new Set()))[0]).toMatch(/left \(its node node9 is not audited in this run/);
    const held = on(stuck({}, ['finalizer example.com/x']));
    expect(outcomes(plan(held, held, kinds, new Set()))[0]).toMatch(/left \(held by finalizers \(example\.com\/x\)/);
  });

  it('finalizes only the namespaces named, and refuses a name the audit does not find stuck', () => {
    const ns = (n: string) => finding('stuck-terminating-namespace', n, { namespace: n });
    const r = report({}, [ns('retired'), ns('other')]);
    const kinds = fixKinds('', ['retired']);
    expect(outcomes(plan(r, r, kinds, new Set(['retired'])))).toEqual(['(cluster) stuck-terminating-namespace retired: to do']);
    expect(() => plan(r, r, fixKinds('', ['ghost']), new Set(['ghost']))).toThrow('--force-finalize ghost: the audit finds no namespace ghost stuck Terminating');
  });
});

describe("the remedies' scripts", () => {
  const work = mkdtempSync(join(tmpdir(), 'decom-fix-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  /** A remedy as fixHost runs it, under dash, with /sys/fs/cgroup and systemd's run dir at test paths; systemctl logs its argv. */
  const run = (f: AuditFinding, root: string, o: { systemd?: boolean } = {}) => {
    const log = join(work, 'systemctl.log');
    const stubs = `systemctl() { printf '%s\\n' "$*" >> ${log}; }\ntimeout() { shift; "$@"; }`;
    const script = `${STOP_PROCS}\n${RM_CGROUPS}\n${stubs}\n( ${remedy(f)} )`.replaceAll('/sys/fs/cgroup', root).replaceAll('/run/systemd/system', o.systemd ? work : '/nonexistent');
    const out = spawnSync('dash', ['-c', script], { encoding: 'utf8' }).stdout;
    return { out, systemctl: existsSync(log) ? readFileSync(log, 'utf8') : '' };
  };
  const tree = (name: string, paths: string[]) => {
    const root = join(work, name);
    for (const h of ['pids', 'memory', 'systemd']) for (const p of paths) mkdirSync(join(root, h, p), { recursive: true });
    return root;
  };
  const dirs = (root: string) => readdirSync(root, { recursive: true }).map(String).filter((p) => p.startsWith('pids')).sort();
  const POD = '/kubepods/besteffort/pod0b0b0b0b-1111-4222-8333-444444444444';

  it("an orphaned pod cgroup: the pod's cgroup and its containers' go in every hierarchy, the running kubelet's QoS tree stays", () => {
    const root = tree('cgroupfs', [`${POD}/abc123`, '/kubepods/burstable/pod1c1c1c1c-1111-4222-8333-444444444444']);
    const f = finding('orphan-pod-cgroup', POD, { uid: '0b0b0b0b-1111-4222-8333-444444444444', cgroups: [POD], processes: [] });
    expect(remedy(f)).toContain(`rm_cgroups '${POD}'`);
    expect(remedy(f)).not.toContain('systemctl');
    expect(run(f, root).out).toBe('@@R done\n');
    expect(dirs(root)).toEqual(['pids', 'pids/kubepods', 'pids/kubepods/besteffort', 'pids/kubepods/burstable', 'pids/kubepods/burstable/pod1c1c1c1c-1111-4222-8333-444444444444']);
    expect(readdirSync(join(root, 'memory', 'kubepods', 'besteffort'))).toEqual([]);
    // Run again: already gone.
    expect(run(f, root).out).toBe('@@R gone\n');
  });

  it('never acts on the QoS tree, whatever a report says', () => {
    for (const c of ['/kubepods', '/kubepods/besteffort', '/kubepods.slice/kubepods-burstable.slice', `${POD}/abc123`, '']) {
      const script = remedy(finding('orphan-pod-cgroup', c, { uid: 'u', cgroups: [c], processes: [] }));
      expect(script).toMatch(/^echo "@@R failed not a pod's cgroup/);
      expect(script).not.toContain('rm_cgroups');
    }
  });

  it('stops a systemd-driver pod slice through systemd before removing what it leaves', () => {
    const slice = '/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0b0b0b0b_1111_4222_8333_444444444444.slice';
    const root = tree('systemd', [`${slice}/cri-containerd-abc.scope`]);
    const f = finding('orphan-pod-cgroup', slice, { uid: '0b0b0b0b-1111-4222-8333-444444444444', cgroups: [slice], processes: [] });
    const r = run(f, root, { systemd: true });
    expect(r.out).toBe('@@R done\n');
    expect(r.systemctl).toBe('stop -- kubepods-besteffort-pod0b0b0b0b_1111_4222_8333_444444444444.slice\n');
    expect(dirs(root)).toEqual(['pids', 'pids/kubepods.slice', 'pids/kubepods.slice/kubepods-besteffort.slice']);
  });

  it("fails naming the process a pod's cgroup still holds", () => {
    const root = tree('busy', [`${POD}/abc123`]);
    writeFileSync(join(root, 'memory', POD, 'abc123', 'cgroup.procs'), '4242\n');
    const f = finding('orphan-pod-cgroup', POD, { uid: 'u', cgroups: [POD], processes: [] });
    expect(run(f, root).out).toBe(`@@R failed cgroup ${root}/memory${POD}/abc123 still holds processes 4242\n`);
  });

  it('releases a lease only while it names the dead sandbox, in both formats (ID\\r\\nIFNAME since host-local 0.8, the ID alone before)', () => {
    const id = 'd52f9f3a14f78eeb15d18d793e80da9dc65d238181fb8594a3fc47ef8ec24068';
    const lease = (content: string, sandbox = id) => {
      const file = join(work, `lease-${Math.random().toString(16).slice(2)}`);
      writeFileSync(file, content);
      return { file, out: run(finding('orphan-ipam-lease', file, { file, sandbox }), work).out };
    };
    for (const content of [`${id}\r\neth0`, id, `${id}\neth0`]) {
      const r = lease(content);
      expect(r.out).toBe('@@R done\n');
      expect(existsSync(r.file)).toBe(false);
    }
    const taken = lease(`${'e'.repeat(64)}\r\neth0`);
    expect(taken.out).toBe('@@R failed the address was handed out again\n');
    expect(existsSync(taken.file)).toBe(true);
  });
});
