/**
 * A kube-proxy-sized firewall (`decom sandbox up --services N`): the
 * `iptables-restore` input kube-proxy's iptables mode writes for N Services with one
 * endpoint each, in the exact form `iptables-save` prints it back. N = 20,000 gives
 * ~100,000 rules in ~40,000 chains: the scale at which a reset or a verify must stay
 * linear. The generator is pure; loadServices puts it on a sandbox node.
 */
import { createHash } from 'node:crypto';
import { runNodeScript } from './scenarios/index.js';
import type { SandboxNode, SandboxState } from './types.js';

export const MAX_SERVICES = 50_000;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** kube-proxy's chain suffix: base32 of a SHA-256, first 16 characters. */
function chainHash(seed: string): string {
  const bytes = createHash('sha256').update(seed).digest();
  let out = '';
  for (let bit = 0; out.length < 16; bit += 5) {
    const byte = bit >> 3;
    const word = ((bytes[byte] ?? 0) << 8) | (bytes[byte + 1] ?? 0);
    out += BASE32[(word >> (11 - (bit & 7))) & 31];
  }
  return out;
}

/** 10.96.0.0/12 for Service IPs, 10.244.0.0/16 for pods: kubeadm's defaults. */
const ip = (prefix: string, i: number) => `${prefix}.${(i >> 8) & 255}.${i & 255}`;
const clusterIp = (i: number) => `10.${96 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;

/** Shared chains and the built-in chains' jumps into them (nat, filter, mangle). */
const BASE_NAT_CHAINS = ['KUBE-KUBELET-CANARY', 'KUBE-MARK-MASQ', 'KUBE-NODEPORTS', 'KUBE-POSTROUTING', 'KUBE-PROXY-CANARY', 'KUBE-SERVICES'];
const BASE_NAT_RULES = [
  '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
  '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
  '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
  '-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000',
  '-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN',
  '-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0',
  '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE',
];
const NODEPORTS_LAST =
  '-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS';
const BASE_FILTER = `*filter
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-PROXY-CANARY - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-SERVICES - [0:0]
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A INPUT -j KUBE-FIREWALL
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -j KUBE-FIREWALL
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
COMMIT
*mangle
:KUBE-KUBELET-CANARY - [0:0]
:KUBE-PROXY-CANARY - [0:0]
COMMIT
`;

/**
 * `iptables-restore --noflush` input for N Services. With `base` (the default) it
 * first creates the shared chains and the built-in chains' jumps; without, it only
 * adds the Services, to a node whose KUBE-SERVICES already exists (declaring an
 * existing chain under --noflush would flush it).
 *
 * The Services' block starts with `-S`: without a chain-less command first,
 * iptables-nft 1.8.x is quadratic in the chains a restore names (125 s instead of
 * 3 s for 20,000 Services; see src/firewall/iptables.ts). It prints the table: send
 * the restore's stdout to /dev/null. It goes in its own block because the base
 * block must create the table's built-in chains, which iptables-nft skips after -S.
 */
export function kubeProxyRuleset(services: number, opts: { base?: boolean } = {}): string {
  const base = opts.base ?? true;
  const chains: string[] = [];
  const rules: string[] = [];
  for (let i = 0; i < services; i++) {
    const name = `ns-${i % 100}/svc-${i}:http`;
    const vip = clusterIp(i + 10);
    const pod = ip('10.244', i + 2);
    const svc = `KUBE-SVC-${chainHash(`${name}tcp`)}`;
    const sep = `KUBE-SEP-${chainHash(`${name}tcp${pod}:8080`)}`;
    chains.push(`:${svc} - [0:0]`, `:${sep} - [0:0]`);
    rules.push(
      `-A KUBE-SERVICES -d ${vip}/32 -p tcp -m comment --comment "${name} cluster IP" -m tcp --dport 80 -j ${svc}`,
      `-A ${svc} ! -s 10.244.0.0/16 -d ${vip}/32 -p tcp -m comment --comment "${name} cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ`,
      `-A ${svc} -m comment --comment "${name} -> ${pod}:8080" -j ${sep}`,
      `-A ${sep} -s ${pod}/32 -m comment --comment "${name}" -j KUBE-MARK-MASQ`,
      `-A ${sep} -p tcp -m comment --comment "${name}" -m tcp -j DNAT --to-destination ${pod}:8080`,
    );
  }
  const block = (lines: string[]) => `*nat\n${lines.join('\n')}\nCOMMIT\n`;
  const servicesBlock = block(['-S', ...chains, ...rules, ...(base ? [NODEPORTS_LAST] : [])]);
  if (!base) return servicesBlock;
  return block([...BASE_NAT_CHAINS.map((c) => `:${c} - [0:0]`), ...BASE_NAT_RULES]) + servicesBlock + BASE_FILTER;
}

/** Another application's chains, as the sandbox's `not_kubernetes` plants them: they must survive. */
export const APP_RULESET = `*filter
:APP-FIREWALL - [0:0]
-A INPUT -m comment --comment "app: firewall" -j APP-FIREWALL
-A APP-FIREWALL -p tcp -m tcp --dport 8080 -m comment --comment "app: allow web" -j ACCEPT
COMMIT
`;

/**
 * Loads N Services into the node's iptables-nft, after its scenario: on top of the
 * scenario's own KUBE-* chains when it planted some, with the shared chains
 * otherwise; and another application's chains (lib.sh's, as every scenario but
 * none plants them) when the scenario did not, so a reset has something to spare.
 */
export async function loadServices(node: SandboxNode, state: SandboxState, services: number): Promise<void> {
  const has = await runNodeScript(
    node,
    state,
    'checking the firewall',
    `iptables-nft -w -n -L APP-FIREWALL >/dev/null 2>&1 || app_iptables
iptables-nft -w -t nat -n -L KUBE-SERVICES >/dev/null 2>&1 && echo kube-services || true`,
  );
  const ruleset = kubeProxyRuleset(services, { base: !has.includes('kube-services') });
  // stdout: the listing the ruleset's -S line prints.
  await runNodeScript(node, state, `loading ${services} Services into iptables-nft`, 'iptables-nft-restore --noflush >/dev/null', Buffer.from(ruleset));
}
