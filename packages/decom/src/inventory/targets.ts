/** Which hosts of an inventory a command acts on: its targets and --limit resolved to hosts, by exact names only. */
import { inputError } from '../util/errors.js';
import { nearestNames } from './suggest.js';
import type { Host, Inventory } from './types.js';

/**
 * The hosts a command acts on: targets are exact host names, group names, or "all";
 * the result is de-duplicated and in inventory order. `limit` narrows it as Ansible's
 * --limit does: `a,b` (or `a:b`) keeps hosts in a or b, `!x` drops x, `&g` keeps only
 * hosts also in g.
 *
 * decom resets machines, so it never picks them by pattern: `node*`, `node[1:3]` and
 * `~regex` are refused, and a name that is not in the inventory is an error, with the
 * nearest names as suggestions.
 */
export function resolveTargets(inv: Inventory, targets: string[], limit?: string): Host[] {
  if (targets.length === 0) throw inputError('no target given: name hosts or groups, or "all"');
  const chosen = new Set<string>();
  for (const target of targets) {
    const hosts = hostsNamed(inv, target, 'target');
    if (hosts.length === 0) throw inputError(`group ${JSON.stringify(target)} has no hosts`);
    for (const h of hosts) chosen.add(h);
  }
  let names = inInventoryOrder(inv, chosen);
  if (limit !== undefined) {
    const allowed = limitedHosts(inv, limit);
    const kept = names.filter((h) => allowed.has(h));
    if (kept.length === 0) throw inputError(`--limit ${JSON.stringify(limit)} leaves no hosts: the targets match ${listNames(names)}`);
    names = kept;
  }
  return names.map((n) => inv.hosts.get(n)!);
}

type Context = 'target' | '--limit';

/** Hosts of a host or group name, refusing patterns and unknown names. */
function hostsNamed(inv: Inventory, name: string, context: Context): string[] {
  const group = inv.groups.get(name);
  const isHost = inv.hosts.has(name);
  if (group || isHost) return [...new Set([...(group ?? []), ...(isHost ? [name] : [])])];

  const where = context === 'target' ? '' : ' in --limit';
  if (name.trim() === '') throw inputError(`empty host or group name${where}`);
  if (/[*?[\]]/.test(name) || name.startsWith('~')) {
    throw inputError(`${context} ${JSON.stringify(name)} is a pattern; decom acts only on hosts and groups named exactly`);
  }
  if (context === 'target' && /[,:!&]/.test(name)) {
    throw inputError(`target ${JSON.stringify(name)} looks like an Ansible pattern; give each host or group as its own argument, and narrow with --limit`);
  }
  const near = nearestNames(name, [...inv.hosts.keys(), ...inv.groups.keys()]);
  const hint = near.length ? `; did you mean ${near.join(', ')}?` : '';
  throw inputError(`unknown host or group ${JSON.stringify(name)}${where}${hint}`);
}

/** The set of hosts an Ansible-style --limit allows. */
function limitedHosts(inv: Inventory, limit: string): Set<string> {
  if (limit.startsWith('@')) throw inputError('--limit @file is not supported: give host and group names');
  // Ansible splits on commas, or on colons when there are none.
  const parts = (limit.includes(',') ? limit.split(',') : limit.split(':')).map((p) => p.trim()).filter((p) => p !== '');
  if (parts.length === 0) throw inputError('--limit is empty: give host or group names, e.g. --limit node1,node2');

  const include = parts.filter((p) => !p.startsWith('!') && !p.startsWith('&'));
  const intersect = parts.filter((p) => p.startsWith('&')).map((p) => p.slice(1));
  const exclude = parts.filter((p) => p.startsWith('!')).map((p) => p.slice(1));
  const hostsOf = (name: string) => new Set(hostsNamed(inv, name, '--limit'));

  // Only exclusions or intersections: start from every host, as Ansible does.
  let allowed = new Set(include.length ? include.flatMap((p) => [...hostsOf(p)]) : inv.hosts.keys());
  for (const name of intersect) {
    const also = hostsOf(name);
    allowed = new Set([...allowed].filter((h) => also.has(h)));
  }
  for (const name of exclude) for (const h of hostsOf(name)) allowed.delete(h);
  return allowed;
}

function inInventoryOrder(inv: Inventory, names: Set<string>): string[] {
  return [...inv.hosts.keys()].filter((h) => names.has(h));
}

function listNames(names: string[]): string {
  return names.length <= 5 ? names.join(', ') : `${names.slice(0, 5).join(', ')} and ${names.length - 5} more`;
}
