// The iptables prune (src/firewall/iptables.ts) on the parsed model: pruneRestore and
// pruneCommands on real iptables-nft-save output (test/fixtures/iptables), applied by a model of
// iptables-restore --noflush, and the sandbox's kubeProxyRuleset (its --services). Pure.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isClusterRule, isKubernetesChain, pruneCommands, pruneRestore } from './iptables.js';
import { parseIptablesSave } from '../probes/parse.js';
import type { IptablesTable } from '../probes/state.js';
import { emptyState } from '../probes/index.js';
import { kubeProxyRuleset } from '../../../sandbox/src/services.js';
import { findings, lookalikeRule, notes } from '../rules/residue.js';

// Real iptables-nft-save output of test/fixtures/iptables/node-v*.rules, loaded in a netns.
const fixture = (f: string) => readFileSync(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'iptables', f), 'utf8');
const v4 = parseIptablesSave(fixture('node-v4.nft.save'), 'nft', 4);
const v6 = parseIptablesSave(fixture('node-v6.nft.save'), 'nft', 6);
const table = (ts: IptablesTable[], name: string) => ts.find((t) => t.table === name) as IptablesTable;

/** The verify rules' iptables findings for a node with nothing else on it. */
const iptablesFindings = (iptables: IptablesTable[]) =>
  findings({ ...emptyState(), iptables }).filter((f) => f.kind === 'iptables');

/**
 * What iptables-restore --noflush does with our input, on the parsed model, with
 * the kernel's refusals: a -D that matches no rule, a -X of a chain that still has
 * rules or is still jumped to, anything but -S, -D, -X and chain declarations.
 */
function applyRestore(tables: IptablesTable[], input: string): IptablesTable[] {
  const out = tables.map((t) => ({ ...t, chains: [...t.chains], rules: [...t.rules] }));
  let cur: IptablesTable | undefined;
  for (const line of input.split('\n')) {
    if (line === '' || line === 'COMMIT' || line === '-S') continue;
    if (line.startsWith('*')) {
      cur = out.find((t) => t.table === line.slice(1));
      if (!cur) throw new Error(`no table ${line}`);
      continue;
    }
    if (!cur) throw new Error(`line outside a table: ${line}`);
    const t: IptablesTable = cur;
    const declared = /^:(\S+) - \[0:0\]$/.exec(line)?.[1];
    const [op, chain = ''] = line.split(' ');
    if (declared) {
      // Under --noflush, declaring an existing user chain flushes it.
      if (!t.chains.includes(declared)) throw new Error(`declares a chain that is not there: ${declared}`);
      t.rules = t.rules.filter((r) => r.chain !== declared);
    } else if (op === '-D') {
      const i = t.rules.findIndex((r) => r.spec === `-A${line.slice(2)}`);
      if (i < 0) throw new Error(`-D matches no rule: ${line}`);
      t.rules.splice(i, 1);
    } else if (op === '-X') {
      if (t.rules.some((r) => r.chain === chain)) throw new Error(`-X of a chain with rules: ${chain}`);
      if (t.rules.some((r) => / -[jg] (\S+)/.exec(r.spec)?.[1] === chain)) throw new Error(`-X of a chain in use: ${chain}`);
      t.chains = t.chains.filter((c) => c !== chain);
    } else throw new Error(`unexpected restore line: ${line}`);
  }
  return out;
}

/** A table's chains and rules minus whatever is Kubernetes': what must be left, in order. */
const others = (t: IptablesTable) => [
  ...t.chains.filter((c) => !isKubernetesChain(c)),
  ...t.rules.filter((r) => !isKubernetesChain(r.chain) && !isClusterRule(r.spec)).map((r) => r.spec),
];

describe('pruneRestore', () => {
  it('deletes the jumps into Kubernetes chains as saved, then flushes all its chains, then deletes them', () => {
    expect(pruneRestore(table(v4, 'filter'))).toBe(
      [
        '*filter',
        '-S', // iptables-nft: fetch the whole table once (see pruneRestore)
        ':FLANNEL-FWD - [0:0]', // an existing chain declared under --noflush: flushed
        ':KUBE-FIREWALL - [0:0]',
        ':KUBE-FORWARD - [0:0]',
        ':KUBE-KUBELET-CANARY - [0:0]',
        ':cali-FORWARD - [0:0]',
        ':cali-from-wl-dispatch - [0:0]',
        '-D INPUT -j KUBE-FIREWALL',
        '-D INPUT -j KUBE-FIREWALL', // added twice (kubelet and kube-proxy): deleted twice
        '-D FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
        '-D FORWARD -m comment --comment "flanneld forward" -j FLANNEL-FWD',
        '-D FORWARD -m comment --comment "cali:wUHhoiAYhphO9Mso" -j cali-FORWARD',
        '-D FORWARD -m comment --comment "cali:S93hcgKJrXEqnTfs" -m comment --comment "Policy explicitly accepted packet." -m mark --mark 0x10000/0x10000 -j ACCEPT',
        '-D OUTPUT -j KUBE-FIREWALL',
        String.raw`-D OUTPUT -m comment --comment "kubelet: it\'s \"firewall\" \\ here" -j KUBE-FIREWALL`,
        '-X FLANNEL-FWD',
        '-X KUBE-FIREWALL',
        '-X KUBE-FORWARD',
        '-X KUBE-KUBELET-CANARY',
        '-X cali-FORWARD',
        '-X cali-from-wl-dispatch',
        'COMMIT',
        '',
      ].join('\n'),
    );
  });

  it('leaves every other chain and rule of every table, IPv4 and IPv6, and nothing verify would report', () => {
    for (const tables of [v4, v6]) {
      let after = tables;
      for (const t of tables) {
        const text = pruneRestore(t);
        if (text !== undefined) after = applyRestore(after, text);
      }
      expect(iptablesFindings(tables).length).toBeGreaterThan(0);
      expect(iptablesFindings(after)).toEqual([]);
      for (const [i, t] of after.entries()) expect(others(t)).toEqual(others(tables[i] as IptablesTable));
    }
    // The other applications' objects are really in the fixture, and so still there.
    expect(table(v4, 'filter').chains).toContain('APP-FIREWALL');
    expect(table(v4, 'nat').rules.map((r) => r.spec)).toContain('-A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE');
    expect(table(v6, 'filter').rules.map((r) => r.spec)).toContain(String.raw`-A APP6-FIREWALL -s 2001:db8::/32 -p tcp -m tcp --dport 22 -m comment --comment "app: \"ssh\" from lab" -j ACCEPT`);
  });

  it("never flushes a built-in or another application's chain, nor a table", () => {
    for (const t of [...v4, ...v6]) {
      for (const line of (pruneRestore(t) ?? '').split('\n')) {
        if (/^(-[FXZNEP]|:)/.test(line)) expect(line).toMatch(/^(-X (KUBE-|CNI-|cali-|FLANNEL)\S+|:(KUBE-|CNI-|cali-|FLANNEL)\S+ - \[0:0\])$/);
      }
    }
  });

  it("returns undefined for a table with nothing Kubernetes'", () => {
    expect(pruneRestore(table(v4, 'security'))).toBeUndefined();
    expect(pruneRestore({ backend: 'legacy', family: 4, table: 'filter', chains: ['INPUT', 'FORWARD', 'OUTPUT'], rules: [] })).toBeUndefined();
  });

  it('handles IPv6 tables the same way, and legacy ones without the -S', () => {
    expect(pruneRestore({ ...table(v6, 'nat'), backend: 'legacy' })).toBe(
      [
        '*nat',
        ':KUBE-POSTROUTING - [0:0]',
        ':KUBE-SEP-OYSH5VXQQZOZ7YSO - [0:0]',
        ':KUBE-SERVICES - [0:0]',
        ':KUBE-SVC-TCOU7JCQXEZGVUNU - [0:0]',
        '-D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-D OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-D POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
        '-X KUBE-POSTROUTING',
        '-X KUBE-SEP-OYSH5VXQQZOZ7YSO',
        '-X KUBE-SERVICES',
        '-X KUBE-SVC-TCOU7JCQXEZGVUNU',
        'COMMIT',
        '',
      ].join('\n'),
    );
  });
});

describe("whether a rule outside the components' chains is theirs: one predicate for verify, the notes and the restore", () => {
  /** An administrator's own rule, with a comment that starts as kube-proxy's do. */
  const ADMIN = '-A INPUT -m comment --comment "kubernetes admin allowance" -j ACCEPT';
  const CALICO_ACCEPT = '-A FORWARD -m comment --comment "cali:S93hcgKJrXEqnTfs" -m comment --comment "Policy explicitly accepted packet." -m mark --mark 0x10000/0x10000 -j ACCEPT';
  const outside = (tables: IptablesTable[]) => tables.flatMap((t) => t.rules.filter((r) => !isKubernetesChain(r.chain)).map((r) => r.spec));

  it("judges every rule of the recorded firewalls outside the components' chains: their jumps and Calico's accept are theirs, the others' rules are not", () => {
    const theirs = outside([...v4, ...v6]).filter(isClusterRule);
    expect(theirs.filter((r) => !/ -j (KUBE-|CNI-|cali-|FLANNEL-)\S+$/.test(r))).toEqual([CALICO_ACCEPT]);
    expect(outside([...v4, ...v6]).filter((r) => !isClusterRule(r)).every((r) => !/--comment "(kubernetes |cali:|flanneld |cilium)/.test(r))).toBe(true);
    expect(outside([...v4, ...v6]).filter(lookalikeRule)).toEqual([]);
  });

  it("knows a component's own rule whole, however iptables-save printed it: with counters, a comment as a bare word, wider spacing", () => {
    expect(isClusterRule(`[12:3456] ${CALICO_ACCEPT}`)).toBe(true);
    expect(isClusterRule(CALICO_ACCEPT.replace('"cali:S93hcgKJrXEqnTfs"', 'cali:S93hcgKJrXEqnTfs').replaceAll(' -m', '  -m'))).toBe(true);
    expect(isClusterRule(CALICO_ACCEPT.replace('accepted packet.', 'accepted packet!'))).toBe(false); // the whole text, not a part
    expect(isClusterRule(CALICO_ACCEPT.replace('-j ACCEPT', '-j DROP'))).toBe(false);
    // kube-proxy's jumps, as its versions write them (the conntrack match before or after the comment): theirs by the jump.
    expect(isClusterRule('-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES')).toBe(true);
    expect(isClusterRule('-A INPUT -m comment --comment "kubernetes externally-visible service portals" -m conntrack --ctstate NEW -j KUBE-EXTERNAL-SERVICES')).toBe(true);
  });

  it("leaves an administrator's rule with a look-alike comment: not a finding, not in the restore, named in the notes", () => {
    const filter = table(v4, 'filter');
    const withAdmin: IptablesTable = { ...filter, rules: [{ chain: 'INPUT', spec: ADMIN }, ...filter.rules] };
    expect(iptablesFindings([withAdmin]).map((f) => f.detail)).not.toContainEqual(expect.stringContaining('admin allowance'));
    expect(pruneRestore(withAdmin)).toBe(pruneRestore(filter));
    const after = applyRestore([withAdmin], pruneRestore(withAdmin) as string);
    expect(after[0]?.rules.map((r) => r.spec)).toContain(ADMIN);
    expect([isClusterRule(ADMIN), lookalikeRule(ADMIN)]).toEqual([false, true]);
    expect(notes({ ...emptyState(), iptables: [withAdmin] })).toEqual([
      `a firewall rule carrying a Kubernetes component's comment without being one of its rules, left in place (an administrator's own?): iptables-nft table filter: ${ADMIN}`,
    ]);
  });
});

describe('pruneCommands', () => {
  it('gives one restore per backend and family, covering all its tables, none for a clean one', () => {
    const legacy = v4.map((t) => ({ ...t, backend: 'legacy' as const }));
    const clean6: IptablesTable = { backend: 'legacy', family: 6, table: 'filter', chains: ['INPUT'], rules: [] };
    const cmds = pruneCommands([...v4, ...v6, ...legacy, clean6]);
    expect(cmds.map((c) => [c.backend, c.family])).toEqual([['nft', 4], ['nft', 6], ['legacy', 4]]);
    const [nft4, nft6, legacy4] = cmds as [(typeof cmds)[0], (typeof cmds)[0], (typeof cmds)[0]];
    expect(nft4.command).toBe(
      'if command -v iptables-nft-restore >/dev/null 2>&1; then exec iptables-nft-restore --wait=10 --noflush >/dev/null; else exec iptables-restore --noflush >/dev/null; fi',
    );
    expect(nft6.command).toContain('exec ip6tables-nft-restore --wait=10 --noflush >/dev/null; else exec ip6tables-restore ');
    expect(legacy4.command).toBe('exec iptables-legacy-restore --wait=10 --noflush');
    // mangle, raw, filter, nat: the tables in save order, each its own transaction; not security.
    expect(nft4.input.match(/^\*\S+/gm)).toEqual(['*mangle', '*raw', '*filter', '*nat']);
    expect(nft4.input.match(/^COMMIT$/gm)).toHaveLength(4);
    expect(legacy4.input).toBe(nft4.input.replaceAll('\n-S\n', '\n'));
    expect(pruneCommands([clean6])).toEqual([]);
  });
});

describe("kubeProxyRuleset (the sandbox's --services)", () => {
  /** The ruleset as iptables-save would print it once loaded: its two nat blocks are one table. */
  const loaded = (text: string): IptablesTable[] => {
    const byName = new Map<string, IptablesTable>();
    for (const t of parseIptablesSave(text, 'nft', 4)) {
      const had = byName.get(t.table);
      byName.set(t.table, had ? { ...had, chains: had.chains.concat(t.chains), rules: had.rules.concat(t.rules) } : t);
    }
    return [...byName.values()];
  };

  it('makes ~100,000 rules in ~40,000 chains for 20,000 Services, all prunable', () => {
    const nat = table(loaded(kubeProxyRuleset(20_000)), 'nat');
    expect(nat.rules.length).toBeGreaterThanOrEqual(100_000);
    expect(nat.rules.length).toBeLessThan(100_100);
    expect(nat.chains.length).toBeGreaterThanOrEqual(40_000);
    expect(nat.chains.length).toBeLessThan(40_100);
    expect(new Set(nat.chains).size).toBe(nat.chains.length); // no two Services share a chain
    expect(nat.chains.filter((c) => c.startsWith('KUBE-SVC-')).every((c) => /^KUBE-SVC-[A-Z2-7]{16}$/.test(c))).toBe(true);
    const text = pruneRestore(nat) as string;
    expect(text.match(/^-D /gm)).toHaveLength(3); // PREROUTING, OUTPUT, POSTROUTING
    expect(text.match(/^-X /gm)).toHaveLength(nat.chains.length);
  });

  it('is pruned to nothing, in all three of its tables', () => {
    const tables = loaded(kubeProxyRuleset(50));
    expect(tables.map((t) => t.table)).toEqual(['nat', 'filter', 'mangle']);
    const after = applyRestore(tables, pruneCommands(tables)[0]?.input ?? '');
    expect(iptablesFindings(after)).toEqual([]);
    expect(after.flatMap((t) => [...t.chains, ...t.rules.map((r) => r.spec)])).toEqual([]);
  });

  it('without base, only adds Services to an existing KUBE-SERVICES', () => {
    const text = kubeProxyRuleset(2, { base: false });
    expect(text).not.toMatch(/^:KUBE-SERVICES|^-A (PREROUTING|OUTPUT|POSTROUTING|INPUT|FORWARD) |^\*filter/m);
    expect(text.match(/^-A KUBE-SERVICES /gm)).toHaveLength(2);
    expect(text.match(/^:KUBE-(SVC|SEP)-/gm)).toHaveLength(4);
    expect(text.split('\n').slice(0, 2)).toEqual(['*nat', '-S']); // iptables-nft: fetch the table once
  });
});
