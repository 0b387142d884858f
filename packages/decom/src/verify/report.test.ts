// verify's report (src/verify/report.ts, and renderText of verify.ts): summarizeFindings,
// renderSummary and renderText. Plain unit tests: findings made up here, no node.
import { describe, expect, it } from 'vitest';
import { renderSummary, summarizeFindings } from './report.js';
import type { Finding } from '../rules/residue.js';
import { renderText, type HostReport } from './verify.js';

const f = (kind: Finding['kind'], subject: string, detail = 'left on disk'): Finding => ({ kind, subject, detail });
const ports = [10259, 6443, 2379, 10248, 10250, 2380, 10249, 10256, 10257].map((p) => f('listening-port', String(p), `*:${p} held by x (pid 1)`));

describe('summarizeFindings', () => {
  it('counts per kind, in the order kinds first appear, subjects sorted with numbers as numbers', () => {
    const s = summarizeFindings([f('netns', 'cni-b'), ...ports, f('netns', 'cni-a')]);
    expect(s).toEqual([
      { kind: 'netns', count: 2, subjects: ['cni-a', 'cni-b'], more: 0 },
      { kind: 'listening-port', count: 9, subjects: ['2379', '2380', '6443', '10248'], more: 5 },
    ]);
  });

  it('lists a subject once however many findings name it, and counts the findings', () => {
    const chains = ['KUBE-SERVICES', 'KUBE-SERVICES', 'PREROUTING', 'KUBE-SERVICES'].map((c) => f('iptables', c, 'iptables-nft table nat'));
    expect(summarizeFindings(chains)).toEqual([{ kind: 'iptables', count: 4, subjects: ['KUBE-SERVICES', 'PREROUTING'], more: 0 }]);
  });

  it('lists at most maxSubjects, and only while they fit in maxChars, but always the first, whole', () => {
    expect(summarizeFindings(ports, 2)[0]).toMatchObject({ subjects: ['2379', '2380'], more: 7 });
    const ids = ['a', 'b', 'c'].map((c) => f('container', c.repeat(64)));
    expect(summarizeFindings(ids)[0]).toMatchObject({ count: 3, subjects: ['a'.repeat(64)], more: 2 });
    expect(summarizeFindings(ids, 4, 130)[0]).toMatchObject({ subjects: ['a'.repeat(64), 'b'.repeat(64)], more: 1 });
    const long = `/var/lib/kubelet/pods/${'x'.repeat(200)}`;
    expect(summarizeFindings([f('mount', long), f('mount', '/var/lib/kubelet/pods/y')])[0]).toMatchObject({ subjects: [long], more: 1 });
  });

  it('gives nothing for no findings', () => expect(summarizeFindings([])).toEqual([]));
});

describe('renderSummary', () => {
  it('aligns kinds and counts, ends a cut list with … (+N), escapes control characters', () => {
    const lines = renderSummary(
      summarizeFindings([...ports, f('mount', '/var/lib/kubelet/pods/u1/my data\nline'), f('kubelet-service', 'kubelet.service')]),
      'node1  ',
    );
    expect(lines).toEqual([
      'node1  listening-port   9  2379, 2380, 6443, 10248, … (+5)',
      'node1  mount            1  /var/lib/kubelet/pods/u1/my data\\nline',
      'node1  kubelet-service  1  kubelet.service',
    ]);
  });

  it('escapes every control character, so a subject cannot move the cursor or forge a line', () => {
    expect(renderSummary(summarizeFindings([f('netns', 'cni-\x1b[2J\tx\r')]))).toEqual(['netns  1  cni-\\x1b[2J\\tx\\x0d']);
  });
});

describe('renderText', () => {
  const dirty: HostReport = {
    host: 'node1',
    reachable: true,
    clean: false,
    findings: [f('static-pod-manifest', '/etc/kubernetes/manifests/etcd.yaml', 'the kubelet runs this pod while the file exists'), ...ports],
    warnings: ['the probe ran as uid 1000, not root'],
  };
  const clean: HostReport = { host: 'node2', reachable: true, clean: true, findings: [] };
  const gone: HostReport = { host: 'node3', reachable: false, clean: false, findings: [], error: 'node3: connect: refused' };

  it('prints per kind by default, then warnings, then one verdict line per host', () => {
    expect(renderText([dirty, clean, gone])).toBe(
      [
        'node1  static-pod-manifest  1  /etc/kubernetes/manifests/etcd.yaml',
        'node1  listening-port       9  2379, 2380, 6443, 10248, … (+5)',
        'node1: warning: the probe ran as uid 1000, not root',
        'node1: NOT CLEAN: 10 findings (1 static-pod-manifest, 9 listening-port)',
        'node2: clean',
        'node3: NOT CHECKED: connect: refused',
        '',
      ].join('\n'),
    );
  });

  it('prints every finding with its detail with details', () => {
    const lines = renderText([dirty, clean], { details: true }).split('\n');
    expect(lines[0]).toBe('node1  static-pod-manifest  /etc/kubernetes/manifests/etcd.yaml  the kubelet runs this pod while the file exists');
    expect(lines[1]).toBe('node1  listening-port       10259                                *:10259 held by x (pid 1)');
    expect(lines.slice(10)).toEqual(['node1: warning: the probe ran as uid 1000, not root', 'node1: NOT CLEAN: 10 findings (1 static-pod-manifest, 9 listening-port)', 'node2: clean', '']);
  });

  it('says "1 finding" for one', () => {
    expect(renderText([{ ...clean, clean: false, findings: [f('netns', 'cni-1')] }])).toBe('node2  netns  1  cni-1\nnode2: NOT CLEAN: 1 finding (1 netns)\n');
  });
});
