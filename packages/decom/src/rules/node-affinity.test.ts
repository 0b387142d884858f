// A required node affinity evaluated as component-helpers' nodeaffinity does (rules/node-affinity.ts):
// each operator on labels, matchFields on the Node's name, terms ORed and expressions ANDed, and the
// edge cases of its source (an empty term, a term that does not parse, a Node without a name);
// then which PersistentVolumes are a Node's local data (rules/local-volumes.ts), and which are stranded.
import { describe, expect, it } from 'vitest';
import type { V1Node, V1PersistentVolume, V1Pod } from '@kubernetes/client-node';
import { isLabelKey, isLabelValue, nodesSelected, parseInt64, selectsNode, type NodeSelectorRequirement, type NodeSelectorTerm } from './node-affinity.js';
import { localVolumesOf, strandedVolumes, volumeLine } from './local-volumes.js';

const node = (name: string | undefined, labels: Record<string, string> = {}): V1Node => ({ metadata: { ...(name ? { name } : {}), labels } });
const n1 = node('node1', { 'kubernetes.io/hostname': 'node1', zone: 'a', cores: '8', rack: '07' });
const expr = (key: string, operator: string, values?: string[]): NodeSelectorRequirement => ({ key, operator, ...(values ? { values } : {}) });
const one = (...matchExpressions: NodeSelectorRequirement[]) => ({ nodeSelectorTerms: [{ matchExpressions }] });
const fields = (...matchFields: NodeSelectorRequirement[]) => ({ nodeSelectorTerms: [{ matchFields }] });

describe('matchExpressions, each operator on the labels', () => {
  const cases: [string, NodeSelectorRequirement, boolean][] = [
    ['In: the label among the values', expr('zone', 'In', ['b', 'a']), true],
    ['In: the label not among them', expr('zone', 'In', ['b']), false],
    ['In: no such label', expr('disk', 'In', ['ssd']), false],
    ['In: an empty label value is a value like any', expr('zone', 'In', ['']), false],
    ['NotIn: the label not among the values', expr('zone', 'NotIn', ['b']), true],
    ['NotIn: the label among them', expr('zone', 'NotIn', ['a']), false],
    ['NotIn: no such label matches', expr('disk', 'NotIn', ['ssd']), true],
    ['Exists: has the label', expr('zone', 'Exists'), true],
    ['Exists: has not', expr('disk', 'Exists'), false],
    ['DoesNotExist: has not the label', expr('disk', 'DoesNotExist'), true],
    ['DoesNotExist: has it', expr('zone', 'DoesNotExist'), false],
    ['Gt: 8 > 4', expr('cores', 'Gt', ['4']), true],
    ['Gt: 8 > 8 is false', expr('cores', 'Gt', ['8']), false],
    ['Gt: a label "07" parses as 7', expr('rack', 'Gt', ['6']), true],
    ['Gt: no such label', expr('disk', 'Gt', ['1']), false],
    ['Gt: a label that is no integer', expr('zone', 'Gt', ['1']), false],
    ['Lt: 8 < 16', expr('cores', 'Lt', ['16']), true],
    ['Lt: 8 < 8 is false', expr('cores', 'Lt', ['8']), false],
    ['Lt: a value of leading zeros parses (0009 is 9)', expr('cores', 'Lt', ['0009']), true],
  ];
  it.each(cases)('%s', (_, e, want) => expect(selectsNode(one(e), n1)).toBe(want));

  it('Gt and Lt compare as 64-bit integers: past 2^53, and at the edges of int64', () => {
    const big = node('big', { n: '9007199254740993' });
    expect(selectsNode(one(expr('n', 'Gt', ['9007199254740992'])), big)).toBe(true);
    expect(selectsNode(one(expr('n', 'Lt', ['9223372036854775807'])), node('x', { n: '9223372036854775806' }))).toBe(true);
    // A label past int64 does not parse: no match, either way.
    expect(selectsNode(one(expr('n', 'Gt', ['1'])), node('x', { n: '9223372036854775808' }))).toBe(false);
    expect(selectsNode(one(expr('n', 'Lt', ['1'])), node('x', { n: '9223372036854775808' }))).toBe(false);
    // A sign parses in the label (ParseInt), not as a value (no label value starts with one).
    expect(parseInt64('-5')).toBe(-5n);
    expect(selectsNode(one(expr('n', 'Lt', ['0'])), node('x', { n: '-5' }))).toBe(true);
    expect(selectsNode(one(expr('n', 'Gt', ['-10'])), node('x', { n: '5' }))).toBe(false);
    expect([parseInt64(''), parseInt64('1.0'), parseInt64('0x1'), parseInt64('1_000'), parseInt64(' 1')]).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });

  it('expressions of a term are ANDed; terms are ORed', () => {
    expect(selectsNode(one(expr('zone', 'In', ['a']), expr('cores', 'Gt', ['4'])), n1)).toBe(true);
    expect(selectsNode(one(expr('zone', 'In', ['a']), expr('cores', 'Gt', ['8'])), n1)).toBe(false);
    const either = { nodeSelectorTerms: [{ matchExpressions: [expr('zone', 'In', ['b'])] }, { matchExpressions: [expr('cores', 'Gt', ['4'])] }] };
    expect(selectsNode(either, n1)).toBe(true);
    expect(selectsNode({ nodeSelectorTerms: [{ matchExpressions: [expr('zone', 'In', ['b'])] }, { matchExpressions: [expr('cores', 'Gt', ['9'])] }] }, n1)).toBe(false);
  });
});

describe('matchFields: metadata.name, In and NotIn of one value', () => {
  it('In and NotIn on the name', () => {
    expect(selectsNode(fields(expr('metadata.name', 'In', ['node1'])), n1)).toBe(true);
    expect(selectsNode(fields(expr('metadata.name', 'In', ['node2'])), n1)).toBe(false);
    expect(selectsNode(fields(expr('metadata.name', 'NotIn', ['node2'])), n1)).toBe(true);
    expect(selectsNode(fields(expr('metadata.name', 'NotIn', ['node1'])), n1)).toBe(false);
  });
  it('fields and labels of one term are ANDed', () => {
    const both = (name: string, zone: string) => ({ nodeSelectorTerms: [{ matchExpressions: [expr('zone', 'In', [zone])], matchFields: [expr('metadata.name', 'In', [name])] }] });
    expect(selectsNode(both('node1', 'a'), n1)).toBe(true);
    expect(selectsNode(both('node1', 'b'), n1)).toBe(false);
    expect(selectsNode(both('node2', 'a'), n1)).toBe(false);
  });
  it('an operator other than In and NotIn, or other than one value, does not parse: the term matches nothing', () => {
    expect(selectsNode(fields(expr('metadata.name', 'Exists')), n1)).toBe(false);
    expect(selectsNode(fields(expr('metadata.name', 'In', ['node1', 'node2'])), n1)).toBe(false);
    expect(selectsNode(fields(expr('metadata.name', 'In', [])), n1)).toBe(false);
  });
  it('a field the Node does not have reads as empty (fields.Set)', () => {
    expect(selectsNode(fields(expr('spec.unschedulable', 'In', [''])), n1)).toBe(true);
    expect(selectsNode(fields(expr('spec.unschedulable', 'In', ['true'])), n1)).toBe(false);
  });
  it('a Node without a name has no fields: a term\'s fields are not asked, its labels still are', () => {
    const nameless = node(undefined, { zone: 'a' });
    expect(selectsNode(fields(expr('metadata.name', 'In', ['node9'])), nameless)).toBe(true);
    expect(selectsNode({ nodeSelectorTerms: [{ matchExpressions: [expr('zone', 'In', ['b'])], matchFields: [expr('metadata.name', 'In', ['node9'])] }] }, nameless)).toBe(false);
  });
});

describe('the edge cases of the source', () => {
  it('an empty term, no terms, no selector and no Node match nothing', () => {
    expect(selectsNode({ nodeSelectorTerms: [{}] }, n1)).toBe(false);
    expect(selectsNode({ nodeSelectorTerms: [{ matchExpressions: [], matchFields: [] }] }, n1)).toBe(false);
    expect(selectsNode({ nodeSelectorTerms: [] }, n1)).toBe(false);
    expect(selectsNode({}, n1)).toBe(false);
    expect(selectsNode(undefined, n1)).toBe(false);
    expect(selectsNode(one(expr('zone', 'Exists')), undefined)).toBe(false);
    // An empty term beside one that matches: the other still selects.
    expect(selectsNode({ nodeSelectorTerms: [{}, { matchExpressions: [expr('zone', 'Exists')] }] }, n1)).toBe(true);
  });

  const unparsed: [string, NodeSelectorRequirement][] = [
    ['an unknown operator', expr('zone', 'Equals', ['a'])],
    ['In with no values', expr('zone', 'In', [])],
    ['NotIn with no values', expr('disk', 'NotIn')],
    ['Exists with values', expr('zone', 'Exists', ['a'])],
    ['DoesNotExist with values', expr('disk', 'DoesNotExist', ['x'])],
    ['Gt with two values', expr('cores', 'Gt', ['1', '2'])],
    ['Gt with a value that is no integer', expr('cores', 'Gt', ['four'])],
    ['Lt with a value no label can have (a sign)', expr('cores', 'Lt', ['+100'])],
    ['a key no label can have', expr('-zone', 'Exists')],
    ['a key with an empty prefix', expr('/zone', 'Exists')],
    ['a value no label can have', expr('disk', 'NotIn', ['ssd!'])],
  ];
  it.each(unparsed)('a term that does not parse matches nothing (%s), and the other terms still do', (_, bad) => {
    expect(selectsNode(one(bad), n1)).toBe(false);
    // NotIn and DoesNotExist on an absent label would match: they do not, because the term does not parse.
    expect(selectsNode(one(expr('zone', 'Exists'), bad), n1)).toBe(false);
    expect(selectsNode({ nodeSelectorTerms: [{ matchExpressions: [bad] }, { matchExpressions: [expr('zone', 'In', ['a'])] }] }, n1)).toBe(true);
  });

  it("label keys and values as apimachinery's validation has them", () => {
    expect(['zone', 'kubernetes.io/hostname', 'a.b-c_d', 'example.com/x.y', 'A1'].every(isLabelKey)).toBe(true);
    expect(['', '-a', 'a-', 'a/b/c', 'Example.com/x', '/x', 'x/', 'a'.repeat(64)].some(isLabelKey)).toBe(false);
    expect(['', 'a', 'node-1', 'A_b.c', '0', 'a'.repeat(63)].every(isLabelValue)).toBe(true);
    expect(['-a', 'a-', 'a b', '+1', 'a'.repeat(64)].some(isLabelValue)).toBe(false);
  });

  it('nodesSelected: the names of the Nodes selected, in the list\'s order', () => {
    const nodes = [n1, node('node2', { zone: 'b' }), node('node3', { zone: 'a' })];
    expect(nodesSelected(one(expr('zone', 'In', ['a'])), nodes)).toEqual(['node1', 'node3']);
    expect(nodesSelected(one(expr('zone', 'In', ['c'])), nodes)).toEqual([]);
  });
});

describe('local PersistentVolumes: evaluated against every Node, never matched by name', () => {
  const host = (name: string, extra: Record<string, string> = {}) => node(name, { 'kubernetes.io/hostname': name, ...extra });
  const nodes = [host('node1', { 'topology.kubernetes.io/zone': 'z1' }), host('node2', { 'local-path.example.com/disk': 'node2', 'topology.kubernetes.io/zone': 'z1' })];
  const pv = (name: string, source: Record<string, unknown>, terms: NodeSelectorTerm[] | undefined, o: { claim?: string; phase?: string; policy?: string } = {}): V1PersistentVolume => ({
    metadata: { name },
    spec: {
      ...source,
      ...(o.claim ? { claimRef: { namespace: 'default', name: o.claim } } : {}),
      persistentVolumeReclaimPolicy: o.policy ?? 'Retain',
      ...(terms ? { nodeAffinity: { required: { nodeSelectorTerms: terms } } } : {}),
    },
    status: { phase: o.phase ?? 'Bound' },
  });
  const byHost = (...names: string[]): NodeSelectorTerm[] => [{ matchExpressions: [expr('kubernetes.io/hostname', 'In', names)] }];
  const pod = (name: string, claim: string, onNode = 'node2'): V1Pod => ({ metadata: { name, namespace: 'default' }, spec: { nodeName: onNode, containers: [], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }] } });
  const pvs = [
    pv('local-a', { local: { path: '/mnt/disks/a' } }, byHost('node2'), { claim: 'data-a' }),
    // A local-path provisioner's hostPath volume, pinned by a label of its own: not by name.
    pv('lp-b', { hostPath: { path: '/opt/local-path-provisioner/pvc-b' } }, [{ matchExpressions: [expr('local-path.example.com/disk', 'In', ['node2'])] }], { claim: 'data-b', policy: 'Delete' }),
    // Released: its claim is gone; it is local data all the same.
    pv('local-released', { local: { path: '/mnt/disks/r' } }, byHost('node2'), { claim: 'old', phase: 'Released' }),
    // A CSI volume of a node-local driver, pinned by hostname.
    pv('topolvm-c', { csi: { driver: 'topolvm.io', volumeHandle: 'vol-c' } }, byHost('node2'), { claim: 'data-c' }),
    // Two Nodes allowed: not local.
    pv('local-two', { local: { path: '/mnt/disks/t' } }, byHost('node1', 'node2'), { claim: 'data-t' }),
    // Pinned by hostname to node1.
    pv('local-node1', { local: { path: '/mnt/disks/n' } }, byHost('node1')),
    // A zonal CSI volume: not of a local kind, whatever its zone holds.
    pv('zonal', { csi: { driver: 'ebs.csi.aws.com', volumeHandle: 'vol-z' } }, [{ matchExpressions: [expr('topology.kubernetes.io/zone', 'In', ['z9'])] }]),
    // hostPath without an affinity: it says nowhere, so it is no one Node's.
    pv('hostpath-free', { hostPath: { path: '/srv' } }, undefined),
    // A hostPath whose affinity pins it by hostname with NotIn: node2 is the only one left.
    pv('hostpath-notin', { hostPath: { path: '/srv/n' } }, [{ matchExpressions: [expr('kubernetes.io/hostname', 'NotIn', ['node1'])] }]),
    // Pinned by its name in a field: evaluated, like the labels.
    pv('local-field', { local: { path: '/mnt/disks/f' } }, [{ matchFields: [expr('metadata.name', 'In', ['node2'])] }]),
  ];
  const pods = [pod('app-a', 'data-a'), pod('app-b', 'data-b'), pod('app-b2', 'data-b'), { ...pod('eph', 'x'), spec: { containers: [], volumes: [{ name: 'scratch', ephemeral: {} }] } }];

  it("node2's local data: local, hostPath and hostname-pinned volumes its affinity selects alone, in every phase, with claims and pods", () => {
    const local = localVolumesOf('node2', pvs, nodes, pods);
    expect(local.map((v) => v.name)).toEqual(['hostpath-notin', 'local-a', 'local-field', 'local-released', 'lp-b', 'topolvm-c']);
    expect(local.map(volumeLine)).toContain('PersistentVolume lp-b (hostPath /opt/local-path-provisioner/pvc-b; claim default/data-b, Bound; used by pods default/app-b, default/app-b2)');
    expect(local.map(volumeLine)).toContain('PersistentVolume local-a (local /mnt/disks/a; claim default/data-a, Bound; used by pod default/app-a)');
    expect(local.map(volumeLine)).toContain('PersistentVolume local-released (local /mnt/disks/r; claim default/old, Released; no pod on the node uses it)');
    expect(local.find((v) => v.name === 'lp-b')).toMatchObject({ reclaimPolicy: 'Delete', affinity: 'local-path.example.com/disk In (node2)', selects: ['node2'] });
    // node1's: only the one pinned to it; the one of two Nodes is neither's.
    expect(localVolumesOf('node1', pvs, nodes, []).map((v) => v.name)).toEqual(['local-node1']);
  });

  it('the label moved to another Node: the volume is no longer node2\'s (evaluated, not matched by name)', () => {
    const moved = [host('node1', { 'local-path.example.com/disk': 'node2' }), host('node2')];
    expect(localVolumesOf('node2', pvs, moved, []).map((v) => v.name)).not.toContain('lp-b');
    expect(localVolumesOf('node1', pvs, moved, []).map((v) => v.name)).toContain('lp-b');
  });

  it('an ephemeral volume\'s claim is POD-VOLUME', () => {
    const eph = pv('eph-pv', { local: { path: '/mnt/e' } }, byHost('node2'), { claim: 'eph-scratch' });
    expect(localVolumesOf('node2', [eph], nodes, pods)[0]!.pods).toEqual(['default/eph']);
  });

  it('stranded once node2 is gone: every local one it held, not the zonal CSI volume with no Node in its zone, not node1\'s', () => {
    expect(strandedVolumes(pvs, [nodes[0]!]).map((v) => v.name)).toEqual(['hostpath-notin', 'local-a', 'local-field', 'local-released', 'lp-b', 'topolvm-c']);
    expect(strandedVolumes(pvs, nodes)).toEqual([]);
  });
});
