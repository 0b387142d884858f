// The fix's plan (src/audit/fix.ts), pure: what the report the operator saw holds against the
// re-check; each node remedy's action is the reset step's own plus a guard; and the remedies run
// as the engine runs them (one round trip, the guards asked first) under dash, on
// copies of a node's files and cgroup tree. (The sandbox tests prove the remedies on
// real nodes and a real API.)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AuditReport } from './audit.js';
import { checkForceFinalize, fixKinds, nodeActions, outcomeOf, plan } from './fix.js';
import type { AuditFinding } from '../rules/audit.js';
import { roundTrip } from '../engine/round-trip.js';
import type { Action } from '../engine/step.js';
import { deletePathScript } from '../engine/sh.js';
import { emptyState, type NodeState } from '../probes/index.js';
import { cgroups, RM_CGROUPS } from '../steps/cgroups.js';
import { links, netns } from '../steps/kernel.js';
import { leaseRemedy, netnsRemedy, podCgroupRemedy, podDirRemedy, vethRemedy } from '../steps/remedies.js';
import type { Transport } from '../transport/types.js';
import { tempDir } from '../../test/helpers/temp.js';

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
    expect(() => checkForceFinalize(plan(r, r, fixKinds('', ['ghost']), new Set(['ghost'])), ['ghost'])).toThrow('--force-finalize ghost: the audit finds no namespace ghost stuck Terminating');
  });
});

describe("each node remedy is the reset step's action plus a guard", () => {
  const state = (over: Partial<NodeState>): NodeState => ({ ...emptyState(), ...over });

  it('a netns: the netns step\'s delete', () => {
    const [fix] = netnsRemedy('cni-1234');
    const [reset] = netns.plan(state({ netns: ['cni-1234'] }), {} as never);
    expect(fix!.script).toBe(reset!.script);
    expect(fix!.guard).toMatch(/a process is in it now/);
    expect(reset!.guard).toBeUndefined();
  });

  it("a veth: the links step's delete by name", () => {
    const [fix] = vethRemedy('veth1a2b3c4d', 'cni-1234');
    const [reset] = links.plan(state({ links: [{ name: 'veth1a2b3c4d', kind: 'veth', master: 'cni0', peerNetns: 'cni-1234' } as NodeState['links'][number]] }), {} as never);
    expect(fix!.script).toBe(reset!.script);
    expect(fix!.guard).toMatch(/its peer is elsewhere now/);
  });

  it('a lease and a pod dir: deletePathScript, the files step\'s delete (never through a mount, never following a link)', () => {
    expect(leaseRemedy('/var/lib/cni/networks/cbr0/10.0.0.5', 'abc')[0]!.script).toBe(deletePathScript('/var/lib/cni/networks/cbr0/10.0.0.5', { root: '/var/lib/cni/networks' }));
    const dir = podDirRemedy('/var/lib/kubelet/pods/u1', ['/var/lib/kubelet/pods/u1/volumes/x', '/var/lib/kubelet/pods/u1/volumes/x/y']);
    expect(dir.map((a) => a.what)).toEqual(['unmount /var/lib/kubelet/pods/u1/volumes/x/y', 'unmount /var/lib/kubelet/pods/u1/volumes/x', 'delete /var/lib/kubelet/pods/u1']);
    expect(dir.at(-1)!.script).toBe(deletePathScript('/var/lib/kubelet/pods/u1', { root: '/var/lib/kubelet/pods' }));
    expect(dir.every((a) => a.guard?.includes('it is a symbolic link now'))).toBe(true);
  });

  it("a pod cgroup: the cgroups step's RM_CGROUPS removal, its slice stopped through systemd on the systemd driver", () => {
    const pod = '/kubepods/besteffort/pod0b0b0b0b-1111-4222-8333-444444444444';
    const reset = cgroups.plan(state({ cgroups: { hierarchies: ['/sys/fs/cgroup/pids'], kube: [{ path: pod, level: 'pod' }] } as NodeState['cgroups'] }), {} as never);
    const fix = podCgroupRemedy(state({}), [pod], []);
    expect(fix.map((a) => a.script)).toEqual(reset.filter((a) => a.script.startsWith(RM_CGROUPS)).map((a) => a.script));
    const slice = '/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0b0b0b0b_1111_4222_8333_444444444444.slice';
    const onSystemd = state({ pid1: 'systemd', cgroups: { hierarchies: ['/sys/fs/cgroup/pids'], kube: [{ path: slice, level: 'pod' }] } as NodeState['cgroups'] });
    expect(podCgroupRemedy(onSystemd, [slice], []).map((a) => a.script)).toEqual(cgroups.plan(onSystemd, {} as never).map((a) => a.script));
  });

  it('refuses the QoS tree, whatever a report says, before any action', () => {
    for (const c of ['/kubepods', '/kubepods/besteffort', '/kubepods.slice/kubepods-burstable.slice', '/kubepods/besteffort/pod0b0b0b0b-1111-4222-8333-444444444444/abc123', '']) {
      expect(nodeActions(finding('orphan-pod-cgroup', c, { uid: 'u', cgroups: [c], processes: [] }), emptyState())).toEqual({ refuse: expect.stringMatching(/^not a pod's cgroup/) });
    }
  });

  it('src/audit builds no node command text: every node action comes from src/steps', () => {
    const dir = import.meta.dirname;
    for (const f of readdirSync(dir).filter((x) => x.endsWith('.ts') && !x.endsWith('.test.ts'))) {
      const text = readFileSync(join(dir, f), 'utf8');
      expect(text, f).not.toMatch(/ip (netns|link)|rm -r|umount|rmdir|kill -|crictl |ctr -n|systemctl stop|stop_procs|rm_cgroups|\/proc\//);
    }
  });
});

describe('the remedies as the engine runs them: one round trip, each guard asked on the node first', () => {
  const work = tempDir('decom-fix-');
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  /** A transport that runs the round trip under dash here, with /sys/fs/cgroup and systemd's run dir at test paths; systemctl logs its argv. */
  const dashAt = (root: string, o: { systemd?: boolean } = {}): Transport & { systemctl(): string } => {
    const log = join(work, `systemctl-${Math.random().toString(16).slice(2)}.log`);
    const stubs = `systemctl() { printf '%s\\n' "$*" >> ${log}; }\n`;
    return {
      host: 'test',
      exec: async (cmd, opts) => {
        const script = `${stubs}${String(opts?.stdin ?? '')}`
          .replaceAll('/sys/fs/cgroup', root)
          .replaceAll('/run/systemd/system', o.systemd ? work : '/nonexistent')
          // host-local's dir, where this test keeps the leases.
          .replaceAll('/var/lib/cni/networks', work);
        const r = spawnSync('dash', ['-c', cmd], { input: script, encoding: 'utf8' });
        return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
      },
      openUnixSocket: () => Promise.reject(new Error('no sockets here')),
      close: async () => {},
      systemctl: () => (existsSync(log) ? readFileSync(log, 'utf8') : ''),
    };
  };
  const run = async (t: Transport, actions: Action[]) => outcomeOf((await roundTrip(t, { actions, views: new Set(), sudo: false, timeoutSec: 30 })).results);
  const tree = (name: string, paths: string[]) => {
    const root = join(work, name);
    for (const h of ['pids', 'memory', 'systemd']) for (const p of paths) mkdirSync(join(root, h, p), { recursive: true });
    return root;
  };
  const dirs = (root: string) => readdirSync(root, { recursive: true }).map(String).filter((p) => p.startsWith('pids')).sort();
  const POD = '/kubepods/besteffort/pod0b0b0b0b-1111-4222-8333-444444444444';
  const actionsOf = (f: AuditFinding, s: NodeState = emptyState()) => {
    const made = nodeActions(f, s);
    if ('refuse' in made) throw new Error(made.refuse);
    return made.actions;
  };

  it("an orphaned pod cgroup: the pod's cgroup and its containers' go in every hierarchy, the running kubelet's QoS tree stays", async () => {
    const root = tree('cgroupfs', [`${POD}/abc123`, '/kubepods/burstable/pod1c1c1c1c-1111-4222-8333-444444444444']);
    const f = finding('orphan-pod-cgroup', POD, { uid: '0b0b0b0b-1111-4222-8333-444444444444', cgroups: [POD], processes: [] });
    const t = dashAt(root);
    expect(await run(t, actionsOf(f))).toEqual({ outcome: 'done' });
    expect(t.systemctl()).toBe('');
    expect(dirs(root)).toEqual(['pids', 'pids/kubepods', 'pids/kubepods/besteffort', 'pids/kubepods/burstable', 'pids/kubepods/burstable/pod1c1c1c1c-1111-4222-8333-444444444444']);
    expect(readdirSync(join(root, 'memory', 'kubepods', 'besteffort'))).toEqual([]);
    // Run again: already gone.
    expect(await run(t, actionsOf(f))).toEqual({ outcome: 'gone' });
  });

  it('stops a systemd-driver pod slice through systemd before removing what it leaves', async () => {
    const slice = '/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0b0b0b0b_1111_4222_8333_444444444444.slice';
    const root = tree('systemd', [`${slice}/cri-containerd-abc.scope`]);
    const f = finding('orphan-pod-cgroup', slice, { uid: '0b0b0b0b-1111-4222-8333-444444444444', cgroups: [slice], processes: [] });
    const t = dashAt(root, { systemd: true });
    expect(await run(t, actionsOf(f, { ...emptyState(), pid1: 'systemd' }))).toEqual({ outcome: 'done' });
    expect(t.systemctl()).toBe('stop -- kubepods-besteffort-pod0b0b0b0b_1111_4222_8333_444444444444.slice\n');
    expect(dirs(root)).toEqual(['pids', 'pids/kubepods.slice', 'pids/kubepods.slice/kubepods-besteffort.slice']);
  });

  it("fails naming the process a pod's cgroup still holds", async () => {
    const root = tree('busy', [`${POD}/abc123`]);
    writeFileSync(join(root, 'memory', POD, 'abc123', 'cgroup.procs'), '4242\n');
    const f = finding('orphan-pod-cgroup', POD, { uid: 'u', cgroups: [POD], processes: [] });
    const r = await run(dashAt(root), actionsOf(f));
    expect(r.outcome).toBe('failed');
    expect(r.why).toContain(`cgroup ${root}/memory${POD}/abc123 still holds processes 4242`);
  });

  it('releases a lease only while it names the dead sandbox, in both formats (ID\\r\\nIFNAME since host-local 0.8, the ID alone before)', async () => {
    const id = 'd52f9f3a14f78eeb15d18d793e80da9dc65d238181fb8594a3fc47ef8ec24068';
    const lease = async (content: string, sandbox = id) => {
      // Named as on a node (a remedy deletes below host-local's dir only), kept in the test's dir.
      const name = `lease-${Math.random().toString(16).slice(2)}`;
      const file = join(work, name);
      writeFileSync(file, content);
      const onNode = `/var/lib/cni/networks/${name}`;
      return { file, r: await run(dashAt(work), actionsOf(finding('orphan-ipam-lease', onNode, { file: onNode, sandbox }))) };
    };
    for (const content of [`${id}\r\neth0`, id, `${id}\neth0`]) {
      const { file, r } = await lease(content);
      expect(r).toEqual({ outcome: 'done' });
      expect(existsSync(file)).toBe(false);
    }
    const taken = await lease(`${'e'.repeat(64)}\r\neth0`);
    expect(taken.r).toEqual({ outcome: 'left', why: 'the address was handed out again' });
    expect(existsSync(taken.file)).toBe(true);
  });

  it('leaves a pod dir that is a symbolic link now, and what it points at', async () => {
    const target = join(work, 'appdata');
    mkdirSync(target, { recursive: true });
    writeFileSync(join(target, 'important.db'), 'keep');
    const dir = join(work, 'pod-link');
    spawnSync('ln', ['-s', target, dir]);
    const r = await run(dashAt(work), actionsOf(finding('orphan-pod-dir', dir, { uid: 'u', dir, mounts: [] })));
    expect(r).toEqual({ outcome: 'left', why: 'it is a symbolic link now' });
    expect(readFileSync(join(dir, 'important.db'), 'utf8')).toBe('keep');
  });
});
