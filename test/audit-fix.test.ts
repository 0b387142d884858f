import { describe, expect, it } from 'vitest';
import type { AuditReport } from '../src/audit/audit.js';
import { fixKinds, plan } from '../src/audit/fix.js';
import type { AuditFinding } from '../src/audit/rules.js';

// The fix's plan, pure: what the report the operator saw holds against the re-check.
// (The sandbox tests prove the remedies themselves on real nodes and a real API.)

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
