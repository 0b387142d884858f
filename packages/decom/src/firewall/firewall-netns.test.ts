// The prune (src/firewall/iptables.ts) through the real iptables-nft-restore and
// iptables-legacy-restore, in a network namespace of this test's own: the host's firewall is
// never touched. Skipped, saying why, without root or the iptables and iproute2 packages.
import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ownNetns } from '../../test/helpers/netns.js';
import { isClusterRule, isKubernetesChain, pruneCommands } from './iptables.js';
import { parseIptablesSave } from '../probes/parse.js';
import type { IptablesTable } from '../probes/state.js';
import { APP_RULESET, kubeProxyRuleset } from '../../../sandbox/src/services.js';

const TARGETS = [
  { backend: 'nft', family: 4, save: 'iptables-nft-save', restore: 'iptables-nft-restore' },
  { backend: 'nft', family: 6, save: 'ip6tables-nft-save', restore: 'ip6tables-nft-restore' },
  { backend: 'legacy', family: 4, save: 'iptables-legacy-save', restore: 'iptables-legacy-restore' },
  { backend: 'legacy', family: 6, save: 'ip6tables-legacy-save', restore: 'ip6tables-legacy-restore' },
] as const;

function skipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (it creates a network namespace)';
  for (const p of ['/usr/sbin/ip', ...TARGETS.flatMap((t) => [`/usr/sbin/${t.save}`, `/usr/sbin/${t.restore}`])]) {
    try {
      accessSync(p, constants.X_OK);
    } catch {
      return `${p} is missing (apt-get install -y iptables iproute2)`;
    }
  }
  return undefined;
}
const skip = skipReason();
if (skip) console.warn(`src/firewall/firewall-netns.test.ts skipped: ${skip}`);

const netns = ownNetns('decomfw-test');
const inNs = netns.run;

const saveAll = () => TARGETS.map((t) => ({ ...t, text: inNs(t.save) }));
const parseAll = (saved: ReturnType<typeof saveAll>): IptablesTable[] =>
  saved.flatMap((s) => parseIptablesSave(s.text, s.backend, s.family));

/** iptables-save output without its comments (they carry the time) and counters. */
const lines = (save: string): string[] =>
  save
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.replace(/ \[\d+:\d+\]$/, ''));
/** ... and without anything Kubernetes': what must be left. */
const kubernetes = (l: string): boolean =>
  l.startsWith(':') ? isKubernetesChain(l.slice(1).split(' ')[0] ?? '') : l.startsWith('-A ') && (isKubernetesChain(l.split(' ')[1] ?? '') || isClusterRule(l));
const others = (save: string): string[] => lines(save).filter((l) => !kubernetes(l));

/** Applies decom's prune, as the engine would: one restore per backend and family, the input on stdin. */
function prune(tables: IptablesTable[]): number {
  const t0 = performance.now();
  for (const c of pruneCommands(tables)) inNs(c.command, c.input);
  return (performance.now() - t0) / 1000;
}

function expectPruned(before: ReturnType<typeof saveAll>, after: ReturnType<typeof saveAll>): void {
  for (const [i, b] of before.entries()) {
    const a = after[i] as (typeof after)[number];
    expect(lines(a.text).filter(kubernetes), `${b.save}: Kubernetes left`).toEqual([]);
    expect(others(a.text), `${b.save}: everything else, byte for byte`).toEqual(others(b.text));
  }
}

describe.skipIf(skip)('iptables prune on a real kernel (own netns)', () => {
  beforeEach(netns.make);
  afterEach(netns.remove);

  it("removes a kubespray node's Kubernetes chains and rules in both backends and families, and nothing else", () => {
    const fixture = (f: string) => readFileSync(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'iptables', f), 'utf8');
    // An administrator's own rule whose comment starts as kube-proxy's do: it stays, in every backend.
    const admin = '-A INPUT -m comment --comment "kubernetes admin allowance" -j ACCEPT';
    for (const t of TARGETS) inNs(`${t.restore} --noflush`, `${fixture(t.family === 6 ? 'node-v6.rules' : 'node-v4.rules')}*filter\n${admin}\nCOMMIT\n`);
    const before = saveAll();
    for (const b of before) expect(b.text).toMatch(/^:APP6?-FIREWALL /m); // every backend holds another app's chains
    prune(parseAll(before));
    const after = saveAll();
    expectPruned(before, after);
    for (const a of after) expect(lines(a.text), a.save).toContain(admin);
    // Calico's accept rule, known by its whole text as each backend prints it, is gone from both.
    for (const [i, a] of after.entries()) if (a.family === 4) expect([before[i]!.text.includes('Policy explicitly accepted'), a.text.includes('Policy explicitly accepted')], a.save).toEqual([true, false]);
    expect(after[0]?.text).toContain(String.raw`-A APP-FIREWALL -s 203.0.113.0/24 -m comment --comment "app: it\'s \"quoted\" \\ here" -j DROP`);
    expect(pruneCommands(parseAll(after))).toEqual([]); // nothing left to do: a second run is a no-op
  });

  it('changes nothing when one line of a table fails (one transaction per table)', () => {
    inNs('iptables-nft-restore --noflush', readFileSync(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'iptables', 'node-v4.rules'), 'utf8'));
    const before = inNs('iptables-nft-save -t filter');
    const [cmd] = pruneCommands(parseIptablesSave(before, 'nft', 4));
    const broken = cmd?.input.replace('\nCOMMIT\n', '\n-D INPUT -s 192.0.2.99/32 -j KUBE-FIREWALL\nCOMMIT\n') ?? '';
    expect(() => inNs(cmd?.command ?? '', broken)).toThrow(/exit [1-9]/);
    expect(lines(inNs('iptables-nft-save -t filter'))).toEqual(lines(before));
    expect(before).toContain(':KUBE-FIREWALL');
  });

  it('removes 20,000 Services (100,000 rules, 40,000 chains) from both backends, leaving the other app', () => {
    const ruleset = kubeProxyRuleset(20_000) + APP_RULESET;
    for (const t of TARGETS.filter((x) => x.family === 4)) inNs(`${t.restore} --noflush >/dev/null`, ruleset);
    const before = saveAll();
    const tables = parseAll(before);
    for (const nat of tables.filter((t) => t.table === 'nat')) {
      expect(nat.rules.length).toBeGreaterThan(100_000);
      expect(nat.chains.length).toBeGreaterThan(40_000);
    }
    const secs = prune(tables);
    console.log(`prune of 2 x ${tables.reduce((n, t) => n + t.chains.filter(isKubernetesChain).length, 0) / 2} Kubernetes chains (nft + legacy): ${secs.toFixed(2)} s`);
    const after = saveAll();
    expectPruned(before, after);
    for (const s of after.filter((x) => x.family === 4)) {
      expect(s.text).toContain('-A INPUT -m comment --comment "app: firewall" -j APP-FIREWALL');
      expect(s.text).toContain('-A APP-FIREWALL -p tcp -m tcp --dport 8080 -m comment --comment "app: allow web" -j ACCEPT');
    }
  });
});
