import type { VarSet, Where } from './where.js';

/**
 * An Ansible inventory as written (YAML or INI), before group trees are resolved
 * and variables merged. Both parsers fill this; everything after is shared.
 */
export interface RawInventory {
  file: string;
  /** Host names in the order they first appear: the order decom reports and acts in. */
  hostOrder: string[];
  /** Where each host first appears, for errors about the host itself. */
  hostWhere: Map<string, Where>;
  /** Variables written on the host's own line or entry; later entries win. */
  hostVars: Map<string, VarSet>;
  groups: Map<string, RawGroup>;
}

export interface RawGroup {
  name: string;
  /** Hosts listed directly in this group. */
  hosts: string[];
  children: ChildRef[];
  /** `vars:` in YAML, `[group:vars]` in INI. */
  vars: VarSet;
}

export interface ChildRef {
  name: string;
  where: Where;
}

export function newRawInventory(file: string): RawInventory {
  const inv: RawInventory = { file, hostOrder: [], hostWhere: new Map(), hostVars: new Map(), groups: new Map() };
  ensureGroup(inv, 'all');
  ensureGroup(inv, 'ungrouped');
  return inv;
}

export function ensureGroup(inv: RawInventory, name: string): RawGroup {
  let group = inv.groups.get(name);
  if (!group) {
    group = { name, hosts: [], children: [], vars: new Map() };
    inv.groups.set(name, group);
  }
  return group;
}

/** Puts a host in a group (creating both as needed) and layers its inline variables. */
export function addHost(inv: RawInventory, group: string, host: string, where: Where, vars: VarSet): void {
  if (!inv.hostWhere.has(host)) {
    inv.hostOrder.push(host);
    inv.hostWhere.set(host, where);
    inv.hostVars.set(host, new Map());
  }
  const members = ensureGroup(inv, group).hosts;
  if (!members.includes(host)) members.push(host);
  const own = inv.hostVars.get(host)!;
  for (const [name, value] of vars) own.set(name, value);
}

export function addChild(inv: RawInventory, parent: string, child: string, where: Where): void {
  const group = ensureGroup(inv, parent);
  ensureGroup(inv, child);
  if (!group.children.some((c) => c.name === child)) group.children.push({ name: child, where });
}
