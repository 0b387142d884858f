/**
 * The firewall, selectively: only Kubernetes' and the CNIs' chains and the rules
 * that jump to them, in both iptables backends, each backend and family in ONE
 * atomic `iptables-restore --noflush` (100,000 rules in seconds, not one command per
 * chain); the nftables tables of kube-proxy, Calico and Flannel, by name; IPVS virtual services. Never a flush of a
 * table or chain that holds anything else. Then kube-proxy's and the CNIs' ipsets, once
 * no rule uses them (never a user's set).
 */
import { z } from 'zod';
import type { Action, Step } from '../engine/step.js';
import { isClusterRule, isKubernetesChain, pruneCommands, pruneRestore } from '../firewall/iptables.js';
import { isKubernetesIpset } from '../rules/residue.js';
import { NFT_TABLES } from '../probes/script.js';

const isClusterTable = (t: { family: string; name: string }) => NFT_TABLES.some((x) => x.family === t.family && x.name === t.name);
import { q } from '../engine/sh.js';

export const firewall: Step = {
  name: 'firewall',
  description: "remove Kubernetes' and the CNIs' iptables chains and the rules jumping to them (both backends, one atomic restore each), kube-proxy's, Calico's and Flannel's nftables tables (by name), IPVS services, then their ipsets; nothing else",
  params: z.object({}),
  owns: (f) => f.kind === 'iptables' || f.kind === 'nftables' || f.kind === 'ipvs' || f.kind === 'ipset',
  views: ['firewall'],
  // The kernel's tables only.
  paths: [],
  follows: ['backup', 'containers', 'processes'],
  plan(s) {
    const actions: Action[] = [];
    for (const c of pruneCommands(s.iptables)) {
      const tables = s.iptables.filter((t) => t.backend === c.backend && t.family === c.family);
      const chains = tables.reduce((n, t) => n + t.chains.filter(isKubernetesChain).length, 0);
      const changed = tables.filter((t) => pruneRestore(t) !== undefined).map((t) => t.table);
      // The restore input travels inside the script (which is sent on stdin), as a here-document.
      const eof = `DECOM_RULES_${c.backend}_${c.family}_EOF`;
      actions.push({
        what: `iptables-${c.backend}${c.family === 6 ? ' (IPv6)' : ''}: remove ${chains} Kubernetes chain${chains === 1 ? '' : 's'} and the rules that jump to them, in ${changed.join(', ')}, in one restore`,
        script: `${c.command} <<'${eof}'\n${c.input}${eof}`,
      });
    }
    // The cluster's tables only (NFT_TABLES, all the probe looks for): each goes whole, by name (never a flush of the ruleset).
    for (const t of s.nftTables.filter(isClusterTable)) {
      actions.push({ what: `nft delete table ${t.family} ${t.name}`, script: `nft delete table ${q(t.family)} ${q(t.name)}` });
    }
    for (const v of s.ipvs) {
      const [proto, addr] = v.split(' ');
      const flag = proto === 'UDP' ? '-u' : proto === 'SCTP' ? '--sctp-service' : '-t';
      actions.push({ what: `ipvsadm -D ${flag} ${addr}`, script: `ipvsadm -D ${flag} ${q(addr ?? '')}` });
    }
    // Last: a set cannot be destroyed while a rule (removed above) or another set (a list:set) refers to it.
    const sets = s.ipsets.filter(isKubernetesIpset);
    if (sets.length) {
      actions.push({
        what: `destroy ${sets.length} ipset${sets.length === 1 ? '' : 's'}: ${sets.join(', ')}`,
        // A list:set holds its members until it goes: passes until none is left or none went. Never
        // flushed first: a set still in use (by a rule of the user's) is left whole, and named.
        // set -f: a set's name (Weave's) may hold glob characters.
        script: `set -f; left=${q(sets.join(' '))}
while [ -n "$left" ]; do
  next=; for n in $left; do ipset list -n "$n" >/dev/null 2>&1 || continue; ipset destroy "$n" 2>/dev/null || next="$next $n"; done
  [ "$next" = "$left" ] && break; left=$next
done
[ -z "$left" ] || { for n in $left; do ipset destroy "$n"; done; exit 1; }`,
      });
    }
    return actions;
  },
  after: (s) => ({
    ...s,
    iptables: s.iptables.map((t) => ({
      ...t,
      chains: t.chains.filter((c) => !isKubernetesChain(c)),
      rules: t.rules.filter((r) => !isKubernetesChain(r.chain) && !isClusterRule(r.spec)),
    })),
    nftTables: s.nftTables.filter((t) => !isClusterTable(t)),
    ipvs: [],
    ipsets: s.ipsets.filter((n) => !isKubernetesIpset(n)),
  }),
};
