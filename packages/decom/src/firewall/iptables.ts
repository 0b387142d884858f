/**
 * Selective, atomic removal of Kubernetes' iptables chains and rules
 * (docs/design.md#b10-firewall-rules):
 * `iptables-restore --noflush` input that, per table, in one transaction, deletes
 * the components' rules in other chains (jumps into their chains, their own rules
 * whole: never a rule by its comment alone), then flushes and deletes their chains.
 * Everything else stays as it was: no table and no other chain is ever flushed. Pure;
 * the engine runs it.
 */
import type { IptablesTable } from '../probes/state.js';
import { isClusterRule, isKubernetesChain } from '../rules/residue.js';

// What is Kubernetes' is the residue rules' to say: the firewall removes exactly what verify reports.
export { isClusterRule, isKubernetesChain };

/**
 * The restore input for one table (one `*table … COMMIT` block), or undefined when
 * nothing in it is Kubernetes'. Exactly what `findings` reports for the table goes.
 *
 * Shaped for iptables-nft 1.8.x, which is quadratic in the number of chains two ways
 * (measured: 20,000 Services, 40,000 chains, 18 s with plain -F/-X, 2.5 s like this):
 * every line naming a chain is added to a sorted list of chains to fetch, walked from
 * the head each time, unless a chain-less command came first (then it fetches the
 * whole table once): `-S` is one that changes nothing (it prints the table; the
 * command discards it). And `-F CHAIN` rescans the whole pending batch, while
 * re-declaring the chain (`:CHAIN - [0:0]`, which under --noflush flushes it in both
 * backends, as kube-proxy itself relies on) does not.
 */
export function pruneRestore(t: IptablesTable): string | undefined {
  const chains = t.chains.filter(isKubernetesChain);
  // "-D" with the rule as iptables-save printed it, quoting included: that is the
  // form iptables-restore parses, and deletion matches the whole spec. One line per
  // copy: a rule added twice is there twice.
  const deletes = t.rules.filter((r) => !isKubernetesChain(r.chain) && isClusterRule(r.spec)).map((r) => `-D${r.spec.slice(2)}`);
  if (!chains.length && !deletes.length) return undefined;
  return [
    `*${t.table}`,
    ...(t.backend === 'nft' ? ['-S'] : []),
    // Every chain flushed before any is deleted: Kubernetes' chains jump into each
    // other, and a chain still jumped to cannot be deleted.
    ...chains.map((c) => `:${c} - [0:0]`),
    ...deletes,
    ...chains.map((c) => `-X ${c}`),
    'COMMIT',
    '',
  ].join('\n');
}

export interface PruneCommand {
  backend: IptablesTable['backend'];
  family: IptablesTable['family'];
  /** POSIX sh that applies `input`, fed on its stdin (it can be megabytes: never put it in the script). */
  command: string;
  /** One `*table … COMMIT` block per table with something to remove, each its own transaction. */
  input: string;
}

/**
 * The restore program per backend and family. `--wait` because legacy restore fails
 * at once while another iptables holds the xtables lock (the nft one ignores it).
 * Without iptables-nft-restore, plain iptables-restore, without options it may not
 * know: the probe read this backend with plain iptables-save then.
 */
function restoreCommand(backend: IptablesTable['backend'], family: IptablesTable['family']): string {
  const ip = family === 6 ? 'ip6tables' : 'iptables';
  if (backend === 'legacy') return `exec ${ip}-legacy-restore --wait=10 --noflush`;
  // stdout is the listing of the -S line above: megabytes nobody reads.
  return `if command -v ${ip}-nft-restore >/dev/null 2>&1; then exec ${ip}-nft-restore --wait=10 --noflush >/dev/null; else exec ${ip}-restore --noflush >/dev/null; fi`;
}

/** For a node's whole iptables view: one command and input per (backend, family) with something to remove. */
export function pruneCommands(tables: readonly IptablesTable[]): PruneCommand[] {
  const byTarget = new Map<string, PruneCommand>();
  for (const t of tables) {
    const block = pruneRestore(t);
    if (block === undefined) continue;
    const key = `${t.backend}/${t.family}`;
    const cmd = byTarget.get(key);
    if (cmd) cmd.input += block;
    else byTarget.set(key, { backend: t.backend, family: t.family, command: restoreCommand(t.backend, t.family), input: block });
  }
  return [...byTarget.values()];
}
