import { inputError } from '../util/errors.js';
import type { RawInventory } from './raw.js';
import { formatWhere } from './where.js';

/** The group hierarchy of an inventory, resolved once for membership and precedence. */
export interface GroupTree {
  /** Longest path from `all` (0): deeper groups are more specific and their variables win. */
  depth: Map<string, number>;
  /** Every group of each host, directly or through children: `all` first, then by depth and name. */
  hostGroups: Map<string, string[]>;
  /** Every host of each group, directly or through children, in inventory order. */
  groupHosts: Map<string, string[]>;
}

export function resolveGroupTree(raw: RawInventory): GroupTree {
  refuseLoops(raw);
  const parents = parentsOf(raw);
  const depth = new Map<string, number>();
  const depthOf = (g: string): number => {
    const known = depth.get(g);
    if (known !== undefined) return known;
    const d = g === 'all' ? 0 : Math.max(...(parents.get(g) ?? ['all']).map((p) => depthOf(p) + 1));
    depth.set(g, d);
    return d;
  };
  for (const g of raw.groups.keys()) depthOf(g);

  const byPrecedence = (a: string, b: string) => depth.get(a)! - depth.get(b)! || (a < b ? -1 : a > b ? 1 : 0);
  const ancestors = (g: string, into: Set<string>) => {
    if (into.has(g)) return;
    into.add(g);
    for (const p of parents.get(g) ?? []) ancestors(p, into);
  };

  const direct = directGroups(raw);
  const hostGroups = new Map<string, string[]>();
  for (const host of raw.hostOrder) {
    const mine = direct.get(host) ?? [];
    // As Ansible: a host in no group but `all` (and `ungrouped`) is in `ungrouped`.
    const named = mine.filter((g) => g !== 'all' && g !== 'ungrouped');
    const seeds = named.length ? named : ['ungrouped'];
    const closure = new Set<string>(['all']);
    for (const g of seeds) ancestors(g, closure);
    hostGroups.set(host, [...closure].sort(byPrecedence));
  }

  const groupHosts = new Map<string, string[]>();
  for (const g of raw.groups.keys()) groupHosts.set(g, raw.hostOrder.filter((h) => hostGroups.get(h)!.includes(g)));
  return { depth, hostGroups, groupHosts };
}

/** Child -> parents; a group nobody lists as a child is a child of `all`. */
function parentsOf(raw: RawInventory): Map<string, string[]> {
  const parents = new Map<string, string[]>();
  for (const group of raw.groups.values()) {
    for (const child of group.children) parents.set(child.name, [...(parents.get(child.name) ?? []), group.name]);
  }
  for (const g of raw.groups.keys()) if (g !== 'all' && !parents.has(g)) parents.set(g, ['all']);
  return parents;
}

function directGroups(raw: RawInventory): Map<string, string[]> {
  const direct = new Map<string, string[]>();
  for (const group of raw.groups.values()) {
    for (const host of group.hosts) direct.set(host, [...(direct.get(host) ?? []), group.name]);
  }
  return direct;
}

/** A group that contains itself would make membership and precedence meaningless. */
function refuseLoops(raw: RawInventory): void {
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, path: string[]): void => {
    state.set(name, 'visiting');
    for (const child of raw.groups.get(name)?.children ?? []) {
      const refuse = (why: string) =>
        inputError(`${formatWhere(child.where)}: group "${name}" cannot have "${child.name}" as a child: ${why}`);
      if (child.name === 'all') throw refuse('every group is already inside "all"');
      if (state.get(child.name) === 'visiting') {
        throw refuse(`that makes a loop, ${[...path.slice(path.indexOf(child.name)), child.name].join(' -> ')}`);
      }
      if (!state.has(child.name)) visit(child.name, [...path, child.name]);
    }
    state.set(name, 'done');
  };
  for (const name of raw.groups.keys()) if (!state.has(name)) visit(name, [name]);
}
