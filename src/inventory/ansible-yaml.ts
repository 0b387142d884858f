import type { Node } from 'yaml';
import { expandHostPattern, HostRangeError } from './host-range.js';
import { addChild, addHost, ensureGroup, newRawInventory, type RawInventory } from './raw.js';
import { fieldError } from './where.js';
import { deref, expectMap, keyString, MERGE, varsFromMap, whereOf, type YamlFile } from './yaml-source.js';

/**
 * Ansible's YAML inventory (what kubespray writes):
 *
 *   all:
 *     hosts: {node1: {ansible_host: 10.0.0.1}}
 *     children:
 *       kube_node: {hosts: {node1: }}
 *       k8s_cluster: {children: {kube_node: }}
 *     vars: {...}
 *
 * Groups nest to any depth and a host may sit in several groups. Top-level groups
 * other than `all` are children of `all`, as in Ansible.
 */
export function parseAnsibleYaml(y: YamlFile): RawInventory {
  const inv = newRawInventory(y.file);
  const root = expectMap(y, y.doc.contents as Node | null, '(top level)', 'a mapping of groups, e.g. "all:"');
  if (!root) return inv;
  for (const pair of root.items) {
    const name = groupName(y, pair.key as Node, '(top level)');
    if (name !== 'all') addChild(inv, 'all', name, whereOf(y, pair.key as Node));
    parseGroup(y, inv, name, deref(y, pair.value as Node | null, name), name);
  }
  return inv;
}

const GROUP_KEYS = ['hosts', 'children', 'vars'];

function parseGroup(y: YamlFile, inv: RawInventory, name: string, node: Node | null, field: string): void {
  ensureGroup(inv, name);
  const group = expectMap(y, node, field, 'a group: a mapping with hosts, children and/or vars');
  if (!group) return;
  for (const pair of group.items) {
    const key = keyString(y, pair.key, field);
    const value = pair.value as Node | null;
    if (key === MERGE || !GROUP_KEYS.includes(key)) {
      const shown = key === MERGE ? '<<' : key;
      throw fieldError(whereOf(y, pair.key as Node), `${field}.${shown}`, 'unknown key: a group has only hosts, children and vars');
    }
    const here = `${field}.${key}`;
    if (key === 'vars') {
      const vars = varsFromMap(y, value, here, 'group');
      const target = ensureGroup(inv, name).vars;
      for (const [k, v] of vars) target.set(k, v);
    } else if (key === 'hosts') {
      parseHosts(y, inv, name, deref(y, value, here), here);
    } else {
      const children = expectMap(y, deref(y, value, here), here, 'a mapping of child groups');
      for (const child of children?.items ?? []) {
        const childName = groupName(y, child.key as Node, here);
        addChild(inv, name, childName, whereOf(y, child.key as Node));
        const childField = `${here}.${childName}`;
        parseGroup(y, inv, childName, deref(y, child.value as Node | null, childField), childField);
      }
    }
  }
}

function parseHosts(y: YamlFile, inv: RawInventory, group: string, node: Node | null, field: string): void {
  const hosts = expectMap(y, node, field, 'a mapping of host names (each with its variables, or nothing)');
  for (const pair of hosts?.items ?? []) {
    const pattern = keyString(y, pair.key, field);
    const keyNode = pair.key as Node;
    if (pattern === MERGE) throw fieldError(whereOf(y, keyNode), field, 'merge keys (<<) are not supported for hosts');
    const hostField = `${field}.${pattern}`;
    const vars = varsFromMap(y, pair.value as Node | null, hostField, 'host');
    let names: string[];
    try {
      names = expandHostPattern(pattern);
    } catch (e) {
      if (e instanceof HostRangeError) throw fieldError(whereOf(y, keyNode), hostField, e.message);
      throw e;
    }
    for (const host of names) addHost(inv, group, host, whereOf(y, keyNode), vars);
  }
}

function groupName(y: YamlFile, keyNode: Node, field: string): string {
  const name = keyString(y, keyNode, field);
  if (name === MERGE) throw fieldError(whereOf(y, keyNode), field, 'merge keys (<<) are not supported for groups');
  if (!name.trim() || /\s/.test(name)) throw fieldError(whereOf(y, keyNode), field, `group name ${JSON.stringify(name)} must be one word`);
  return name;
}
