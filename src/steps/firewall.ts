/**
 * The firewall, selectively: only Kubernetes' and the CNIs' chains and the rules
 * that jump to them, in both iptables backends, each backend and family in ONE
 * atomic `iptables-restore --noflush` (100,000 rules in seconds, not one command per
 * chain); kube-proxy's nftables tables; IPVS virtual services. Never a flush of a
 * table or chain that holds anything else.
 */
import { z } from 'zod';
import type { NodeState } from '../probes/index.js';
import type { IptablesTable } from '../probes/state.js';
import type { Action, Step } from '../engine/step.js';
import { pruneRestore, isKubernetesChain, mentionsKubernetes } from '../firewall/iptables.js';
import { q } from './sh.js';

const RESTORE: Record<string, string> = {
  'nft 4': 'if has iptables-nft-restore; then R=iptables-nft-restore; else R=iptables-restore; fi',
  'nft 6': 'if has ip6tables-nft-restore; then R=ip6tables-nft-restore; else R=ip6tables-restore; fi',
  'legacy 4': 'R=iptables-legacy-restore',
  'legacy 6': 'R=ip6tables-legacy-restore',
};

const groups = (s: NodeState) => {
  const m = new Map<string, IptablesTable[]>();
  for (const t of s.iptables) m.set(`${t.backend} ${t.family}`, [...(m.get(`${t.backend} ${t.family}`) ?? []), t]);
  return m;
};

export const firewall: Step = {
  name: 'firewall',
  description: "remove Kubernetes' and the CNIs' iptables chains and the rules jumping to them (both backends, one atomic restore each), kube-proxy's nftables tables and IPVS services; nothing else",
  params: z.object({}),
  owns: (f) => f.kind === 'iptables' || f.kind === 'nftables' || f.kind === 'ipvs',
  views: ['firewall'],
  plan(s) {
    const actions: Action[] = [];
    for (const [key, tables] of groups(s)) {
      const texts = tables.map((t) => ({ t, text: pruneRestore(t) })).filter((x) => x.text !== undefined);
      if (!texts.length) continue;
      const [backend, family] = key.split(' ');
      const chains = texts.reduce((n, x) => n + x.t.chains.filter(isKubernetesChain).length, 0);
      const eof = `DECOM_RULES_${texts.length}_${chains}_EOF`;
      actions.push({
        what: `iptables-${backend}${family === '6' ? ' (IPv6)' : ''}: remove ${chains} Kubernetes chain${chains === 1 ? '' : 's'} and the rules that jump to them, in ${texts.map((x) => x.t.table).join(', ')}, in one restore`,
        script: `${RESTORE[key]}\n"$R" --noflush <<'${eof}'\n${texts.map((x) => x.text).join('')}\n${eof}`,
      });
    }
    for (const t of s.nftTables.filter((x) => x.name === 'kube-proxy')) {
      actions.push({ what: `nft delete table ${t.family} ${t.name}`, script: `nft delete table ${q(t.family)} ${q(t.name)}` });
    }
    for (const v of s.ipvs) {
      const [proto, addr] = v.split(' ');
      const flag = proto === 'UDP' ? '-u' : proto === 'SCTP' ? '--sctp-service' : '-t';
      actions.push({ what: `ipvsadm -D ${flag} ${addr}`, script: `ipvsadm -D ${flag} ${q(addr ?? '')}` });
    }
    return actions;
  },
  after: (s) => ({
    ...s,
    iptables: s.iptables.map((t) => ({
      ...t,
      chains: t.chains.filter((c) => !isKubernetesChain(c)),
      rules: t.rules.filter((r) => !isKubernetesChain(r.chain) && !mentionsKubernetes(r.spec)),
    })),
    nftTables: s.nftTables.filter((x) => x.name !== 'kube-proxy'),
    ipvs: [],
  }),
};
