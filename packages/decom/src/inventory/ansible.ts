/**
 * Ansible's inventories (what kubespray writes): the YAML and INI files as written,
 * into one RawInventory, then what Ansible makes of it: group membership through
 * children, and each host's variables in Ansible's precedence order. Reading the
 * files from disk (the inventory, group_vars/, host_vars/) is load.ts's job.
 */
import { isScalar, type Node, type YAMLMap } from 'yaml';
import { inputError } from '../util/errors.js';
import { ShellSyntaxError, splitShellWords, type ConnectionInputs, type Word } from './connection.js';
import { nearestNames } from './suggest.js';
import { fieldError, formatWhere, type Located, type VarSet, type Where } from './where.js';
import { deref, expectMap, keyString, MERGE, varsFromMap, whereOf, type YamlFile } from './yaml-source.js';

// ---- The inventory as written ----

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

function newRawInventory(file: string): RawInventory {
  const inv: RawInventory = { file, hostOrder: [], hostWhere: new Map(), hostVars: new Map(), groups: new Map() };
  ensureGroup(inv, 'all');
  ensureGroup(inv, 'ungrouped');
  return inv;
}

function ensureGroup(inv: RawInventory, name: string): RawGroup {
  let group = inv.groups.get(name);
  if (!group) {
    group = { name, hosts: [], children: [], vars: new Map() };
    inv.groups.set(name, group);
  }
  return group;
}

/** Puts a host in a group (creating both as needed) and layers its inline variables. */
function addHost(inv: RawInventory, group: string, host: string, where: Where, vars: VarSet): void {
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

function addChild(inv: RawInventory, parent: string, child: string, where: Where): void {
  const group = ensureGroup(inv, parent);
  ensureGroup(inv, child);
  if (!group.children.some((c) => c.name === child)) group.children.push({ name: child, where });
}

/**
 * The inventory files of a directory as one, as Ansible adds each to the same inventory
 * in turn: hosts and groups unioned in the order first seen; a variable a later file sets
 * again (on the same host, or the same group) replaces the earlier one.
 */
export function mergeRawInventories(file: string, parts: RawInventory[]): RawInventory {
  const inv = newRawInventory(file);
  for (const part of parts) {
    for (const host of part.hostOrder) {
      if (!inv.hostWhere.has(host)) {
        inv.hostOrder.push(host);
        inv.hostWhere.set(host, part.hostWhere.get(host)!);
        inv.hostVars.set(host, new Map());
      }
      const own = inv.hostVars.get(host)!;
      for (const [name, value] of part.hostVars.get(host) ?? []) own.set(name, value);
    }
    for (const group of part.groups.values()) {
      const into = ensureGroup(inv, group.name);
      for (const host of group.hosts) if (!into.hosts.includes(host)) into.hosts.push(host);
      for (const child of group.children) if (!into.children.some((c) => c.name === child.name)) into.children.push(child);
      for (const [name, value] of group.vars) into.vars.set(name, value);
    }
  }
  return inv;
}

// ---- YAML ----

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
  refusePluginConfig(y, root);
  for (const pair of root.items) {
    const name = groupName(y, pair.key as Node, '(top level)');
    if (name !== 'all') addChild(inv, 'all', name, whereOf(y, pair.key as Node));
    parseGroup(y, inv, name, deref(y, pair.value as Node | null, name), name);
  }
  return inv;
}

const GROUP_KEYS = ['hosts', 'children', 'vars'];

/**
 * A top-level `plugin: NAME` is an inventory plugin's settings (aws_ec2, constructed...),
 * which Ansible's yaml plugin declines too; decom runs no plugin, so it asks for the
 * inventory the plugin makes.
 */
function refusePluginConfig(y: YamlFile, root: YAMLMap): void {
  const pair = root.items.find((p) => isScalar(p.key) && p.key.value === 'plugin');
  if (!pair || !isScalar(pair.value) || typeof pair.value.value !== 'string') return;
  throw fieldError(
    whereOf(y, pair.value as Node),
    'plugin',
    `this is the settings of the ${JSON.stringify(pair.value.value)} inventory plugin, which decom does not run; give decom the inventory it makes (ansible-inventory -i ${y.file} --list -y > hosts.yaml)`,
  );
}

function parseGroup(y: YamlFile, inv: RawInventory, name: string, node: Node | null, field: string): void {
  ensureGroup(inv, name);
  const group = expectMap(y, node, field, 'a group: a mapping with hosts, children and/or vars');
  if (!group) return;
  for (const pair of group.items) {
    const key = keyString(y, pair.key, field);
    const value = pair.value as Node | null;
    if (key === MERGE || !GROUP_KEYS.includes(key)) {
      const shown = key === MERGE ? '<<' : key;
      const near = key === MERGE ? [] : nearestNames(key, GROUP_KEYS, 1);
      const hint = near.length ? `; did you mean ${near[0]}?` : '';
      throw fieldError(whereOf(y, pair.key as Node), `${field}.${shown}`, `unknown key: a group has only hosts, children and vars${hint}`);
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
    if (pattern === MERGE) throw fieldError(whereOf(y, keyNode), field, 'merge keys (<<) are not supported for hosts: name each host, and put what they share in the group\'s vars');
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
  if (name === MERGE) throw fieldError(whereOf(y, keyNode), field, 'merge keys (<<) are not supported for groups: write the group out, or list it under children');
  if (!name.trim() || /\s/.test(name)) throw fieldError(whereOf(y, keyNode), field, `group name ${JSON.stringify(name)} must be one word`);
  return name;
}

// ---- INI ----

/**
 * Ansible's INI inventory, read the way Ansible reads it (the `ini` package gets
 * host lines wrong):
 *
 *   node1 ansible_host=10.0.0.1 'ansible_ssh_common_args=-o X=Y'   # before any section: group "ungrouped"
 *   [kube_node]             hosts, one per line, with key=value variables; node[1:3] expands
 *   [k8s_cluster:children]  one group name per line
 *   [k8s_cluster:vars]      key=value, the value is the rest of the line
 *
 * Values stay strings; the connection settings convert what they need.
 */
export function parseAnsibleIni(file: string, text: string, groupsBefore: Iterable<string> = []): RawInventory {
  const inv = newRawInventory(file);
  // A group exists once it has a [g] or [g:children] header, here or in an inventory file
  // read before this one (`groupsBefore`, in a directory); [g:vars] alone, or naming it in
  // someone's :children, is a typo Ansible refuses too. Checked at the end.
  const declared = new Set(['all', 'ungrouped', ...groupsBefore]);
  const mustBeDeclared: { group: string; where: Where; section: string }[] = [];
  let section = { group: 'ungrouped', kind: 'hosts' as SectionKind, label: '[ungrouped]' };

  text.split(/\r?\n/).forEach((line, index) => {
    const lineNo = index + 1;
    const indent = line.length - line.trimStart().length;
    const trimmed = line.trim();
    const at = (col: number): Where => ({ file, line: lineNo, col });
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) return;

    if (trimmed.startsWith('[')) {
      const header = parseHeader(trimmed);
      if (header) {
        section = { ...header, label: `[${header.group}${header.kind === 'hosts' ? '' : `:${header.kind}`}]` };
        if (header.kind === 'vars') mustBeDeclared.push({ group: header.group, where: at(indent + 1), section: section.label });
        else declared.add(header.group);
        ensureGroup(inv, header.group);
        return;
      }
      const problem = headerProblem(trimmed);
      if (problem) throw fieldError(at(indent + 1), trimmed.replace(/(\]|\s)\s*[#;].*$/, '$1').trim(), problem);
      // Otherwise a host line that starts with "[", e.g. a host range ([a:c]-web); parsed below.
    }

    switch (section.kind) {
      case 'hosts':
        return parseHostLine(inv, section.group, section.label, line, at);
      case 'children': {
        const words = splitLine(line, section.label, at);
        if (words.length !== 1) throw fieldError(at(indent + 1), section.label, 'expected one group name per line');
        const child = words[0]!.text;
        addChild(inv, section.group, child, at(words[0]!.col));
        mustBeDeclared.push({ group: child, where: at(words[0]!.col), section: section.label });
        return;
      }
      case 'vars': {
        const v = parseVarLine(trimmed);
        if (!v) throw fieldError(at(indent + 1), section.label, 'expected key=value');
        ensureGroup(inv, section.group).vars.set(v.key, {
          value: v.value,
          where: at(indent + 1),
          field: `${section.group}:vars.${v.key}`,
          scope: 'group',
        });
        return;
      }
    }
  });

  for (const ref of mustBeDeclared) {
    if (!declared.has(ref.group)) {
      throw fieldError(ref.where, ref.section, `group "${ref.group}" is declared nowhere: add a [${ref.group}] section (its hosts; it may be empty) or a [${ref.group}:children] section, or correct the name`);
    }
  }
  return inv;
}

type SectionKind = 'hosts' | 'children' | 'vars';

/** `[group]`, `[group:children]`, `[group:vars]`, optionally followed by a comment. */
function parseHeader(trimmed: string): { group: string; kind: SectionKind } | undefined {
  const m = /^\[([^:\]\s]+)(?::([^\]\s]*))?\]\s*(?:[#;].*)?$/.exec(trimmed);
  if (!m) return undefined;
  const group = m[1]!;
  const suffix = m[2];
  if (suffix === undefined) return { group, kind: 'hosts' };
  if (suffix === 'children' || suffix === 'vars') return { group, kind: suffix };
  return undefined;
}

/**
 * Why a line that starts with "[" is a broken section header, or undefined when it may be
 * a host line. As Ansible: a line that ends with "]" (a comment aside) is a header; so is
 * one with no "]" at all (`[web`), which no host line can be. The problem ends with what
 * to write instead.
 */
function headerProblem(trimmed: string): string | undefined {
  const closedHeader = /^\[([^\]]*)\]\s*(?:[#;].*)?$/.exec(trimmed);
  const closed = closedHeader !== null;
  if (!closed && trimmed.includes(']')) return undefined;
  const inside = closedHeader ? closedHeader[1]! : trimmed.slice(1).replace(/\s+[#;].*$/, '');
  const [group = '', ...rest] = inside.split(':');
  const kind = rest.join(':');
  const name = /^[^\s:\]]+$/.test(group) ? group : 'group';
  const write = `write [${name}], [${name}:children] or [${name}:vars]`;
  if (!closed) return `this section header has no closing "]": ${write}`;
  if (group.trim() === '') return `this section header names no group: ${write}`;
  if (/\s/.test(inside)) return `a group name is one word, without spaces (e.g. [web_servers]); ${write}`;
  return `unknown section type ${JSON.stringify(kind)}: ${write}`;
}

function splitLine(line: string, label: string, at: (col: number) => Where): Word[] {
  try {
    return splitShellWords(line, { comments: true });
  } catch (e) {
    if (e instanceof ShellSyntaxError) throw fieldError(at(e.col), label, e.message);
    throw e;
  }
}

/** `node[1:3]:2222 ansible_host=10.0.0.1 'ansible_ssh_common_args=-o A=B'` */
function parseHostLine(inv: RawInventory, group: string, label: string, line: string, at: (col: number) => Where): void {
  const [first, ...rest] = splitLine(line, label, at);
  if (!first) return;
  // Not echoed: a forgotten host name makes the first variable (perhaps a password) the name.
  if (first.text.includes('=')) throw fieldError(at(first.col), label, 'a host line starts with the host name, then key=value variables');
  const { pattern, port } = splitPort(first.text);
  const vars: VarSet = new Map();
  if (port !== undefined) {
    vars.set('ansible_port', { value: port, where: at(first.textCol), field: `${pattern}.ansible_port`, scope: 'host' });
  }
  for (const word of rest) {
    const eq = word.text.indexOf('=');
    // The word itself is not echoed: an unquoted password with a space lands here.
    if (eq <= 0) throw fieldError(at(word.col), pattern, 'expected key=value after the host name (quote values that contain spaces)');
    const key = word.text.slice(0, eq);
    vars.set(key, { value: word.text.slice(eq + 1), where: at(word.textCol), field: `${pattern}.${key}`, scope: 'host' });
  }
  let hosts: string[];
  try {
    hosts = expandHostPattern(pattern);
  } catch (e) {
    if (e instanceof HostRangeError) throw fieldError(at(first.textCol), label, e.message);
    throw e;
  }
  for (const host of hosts) addHost(inv, group, host, at(first.textCol), vars);
}

/** `node1:2222` is node1 on port 2222; `node[1:3]` and IPv6 addresses keep their colons. */
function splitPort(token: string): { pattern: string; port?: string } {
  const m = /^(.+):([0-9]+)$/.exec(token);
  if (m && !m[1]!.replace(/\[[^\]]*\]/g, '').includes(':')) return { pattern: m[1]!, port: m[2]! };
  return { pattern: token };
}

/** `key = value` in a [group:vars] section: the value is the rest of the line, quotes removed. */
function parseVarLine(trimmed: string): { key: string; value: string } | undefined {
  const eq = trimmed.indexOf('=');
  if (eq <= 0) return undefined;
  const key = trimmed.slice(0, eq).trim();
  if (!key || /\s/.test(key)) return undefined;
  let value = trimmed.slice(eq + 1).trim();
  const q = value[0];
  if (value.length >= 2 && (q === '"' || q === "'") && value.endsWith(q)) value = value.slice(1, -1);
  return { key, value };
}

// ---- Host ranges ----
// In inventory host names: `node[1:3]` is node1..node3, `node[01:10]` keeps the zero
// padding, `[a:c]` counts letters, `[1:9:2]` steps, and several ranges in one name
// multiply. Only inventory files use these: targets on the command line are exact names.

/** A malformed range; the caller adds the file position. */
class HostRangeError extends Error {}

const MAX_HOSTS = 10_000;
const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

function expandHostPattern(pattern: string): string[] {
  const hosts = expand(pattern);
  if (hosts.length > MAX_HOSTS) throw new HostRangeError(`host range ${pattern} makes more than ${MAX_HOSTS} hosts`);
  return hosts;
}

function expand(pattern: string): string[] {
  const open = pattern.indexOf('[');
  if (open < 0) {
    if (pattern.includes(']')) throw new HostRangeError(`host name ${pattern} has a "]" without "["`);
    return [pattern];
  }
  const close = pattern.indexOf(']', open);
  if (close < 0) throw new HostRangeError(`host range in ${pattern} has no closing "]"`);
  const head = pattern.slice(0, open);
  const tail = pattern.slice(close + 1);
  const values = rangeValues(pattern, pattern.slice(open + 1, close));
  if (values.length > MAX_HOSTS) throw new HostRangeError(`host range ${pattern} makes more than ${MAX_HOSTS} hosts`);
  return values.flatMap((v) => expand(`${head}${v}${tail}`));
}

function rangeValues(pattern: string, range: string): string[] {
  const bounds = range.split(':');
  if (bounds.length !== 2 && bounds.length !== 3) {
    throw new HostRangeError(`host range in ${pattern} must be [begin:end] or [begin:end:step]`);
  }
  const begin = bounds[0] || '0';
  const end = bounds[1] ?? '';
  const stepText = bounds[2] ?? '1';
  if (!/^[1-9][0-9]*$/.test(stepText)) throw new HostRangeError(`host range in ${pattern} has step "${stepText}", expected a whole number from 1`);
  const step = Number(stepText);
  if (end === '') throw new HostRangeError(`host range in ${pattern} has no end`);

  if (/^[a-zA-Z]$/.test(begin) && /^[a-zA-Z]$/.test(end)) {
    const from = LETTERS.indexOf(begin);
    const to = LETTERS.indexOf(end);
    if (from > to) throw new HostRangeError(`host range in ${pattern} runs backwards: write the smaller end first`);
    const letters: string[] = [];
    for (let i = from; i <= to; i += step) letters.push(LETTERS[i]!);
    return letters;
  }
  if (!/^[0-9]+$/.test(begin) || !/^[0-9]+$/.test(end)) {
    throw new HostRangeError(`host range in ${pattern} must count numbers (1:3) or single letters (a:c)`);
  }
  // A leading zero asks for fixed width: [01:10] gives 01..10, and both ends must agree.
  const width = begin.length > 1 && begin.startsWith('0') ? begin.length : 0;
  if (width && end.length !== width) {
    throw new HostRangeError(`host range in ${pattern} must give begin and end with the same number of digits`);
  }
  const from = Number(begin);
  const to = Number(end);
  if (from > to) throw new HostRangeError(`host range in ${pattern} runs backwards: write the smaller end first`);
  if ((to - from) / step >= MAX_HOSTS) throw new HostRangeError(`host range ${pattern} makes more than ${MAX_HOSTS} hosts`);
  const numbers: string[] = [];
  for (let i = from; i <= to; i += step) numbers.push(String(i).padStart(width, '0'));
  return numbers;
}

// ---- Groups ----

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
        throw refuse(`that makes a loop, ${[...path.slice(path.indexOf(child.name)), child.name].join(' -> ')}; remove one of these children`);
      }
      if (!state.has(child.name)) visit(child.name, [...path, child.name]);
    }
    state.set(name, 'done');
  };
  for (const name of raw.groups.keys()) if (!state.has(name)) visit(name, [name]);
}

// ---- Variables ----

/** Variables from group_vars/ and host_vars/ files, by group or host name. */
export interface VarsFiles {
  groups: Map<string, VarSet>;
  hosts: Map<string, VarSet>;
}

/**
 * One host's variables, merged in Ansible's order, lowest first (a later layer
 * replaces a whole variable; mappings are not deep-merged, as Ansible's default):
 *
 *   1. group vars written in the inventory (vars:, [g:vars]): `all`, then parents
 *      before children (deeper wins), same depth by name
 *   2. group_vars/all
 *   3. group_vars/<group>, same order as 1
 *   4. host vars written in the inventory
 *   5. host_vars/<host>
 *
 * `groups` is the host's groups, already in that order (`all` first).
 */
export function mergeHostVars(raw: RawInventory, files: VarsFiles, host: string, groups: string[]): VarSet {
  const layers: (VarSet | undefined)[] = [
    ...groups.map((g) => raw.groups.get(g)?.vars),
    files.groups.get('all'),
    ...groups.filter((g) => g !== 'all').map((g) => files.groups.get(g)),
    raw.hostVars.get(host),
    files.hosts.get(host),
  ];
  const merged: VarSet = new Map();
  for (const layer of layers) for (const [name, value] of layer ?? []) merged.set(name, value);
  return merged;
}

/**
 * Ansible's connection variables. Where Ansible has an older alias, the current
 * name wins if both are set.
 */
const CONNECTION_VARS: Record<keyof ConnectionInputs, string[]> = {
  address: ['ansible_host', 'ansible_ssh_host'],
  port: ['ansible_port', 'ansible_ssh_port'],
  user: ['ansible_user', 'ansible_ssh_user'],
  privateKeyFile: ['ansible_ssh_private_key_file', 'ansible_private_key_file'],
  become: ['ansible_become'],
  becomeUser: ['ansible_become_user'],
  becomePassword: ['ansible_become_password', 'ansible_become_pass'],
  becomeMethod: ['ansible_become_method'],
  knownHostsFile: [],
  strictHostKeyChecking: [],
  proxyJump: [],
  connectTimeoutSec: ['ansible_ssh_timeout', 'ansible_timeout'],
  connection: ['ansible_connection'],
  loginPassword: ['ansible_password', 'ansible_ssh_pass', 'ansible_ssh_password'],
  hostKeyChecking: ['ansible_host_key_checking', 'ansible_ssh_host_key_checking'],
  pipelining: ['ansible_pipelining', 'ansible_ssh_pipelining'],
  pythonInterpreter: ['ansible_python_interpreter'],
  controlPath: ['ansible_control_path'],
  sshArgs: ['ansible_ssh_args'],
  commonArgs: ['ansible_ssh_common_args'],
  extraArgs: ['ansible_ssh_extra_args'],
};

/** Every connection variable decom reads, under each of its names. */
export const CONNECTION_VARIABLES: readonly string[] = Object.values(CONNECTION_VARS).flat();

export function ansibleConnectionInputs(vars: VarSet): ConnectionInputs {
  const isSet = (v: Located | undefined): v is Located => v !== undefined && v.value !== null && v.value !== undefined;
  const inputs: ConnectionInputs = {};
  for (const [input, names] of Object.entries(CONNECTION_VARS) as [keyof typeof CONNECTION_VARS, string[]][]) {
    const found = names.map((n) => vars.get(n)).find(isSet);
    if (found) inputs[input] = found;
  }
  return inputs;
}

/** The merged variables as a plain object, for Host.vars. */
export function plainVars(vars: VarSet): Record<string, unknown> {
  // fromEntries, not assignment: a variable named __proto__ stays a variable.
  return Object.fromEntries([...vars].map(([name, located]) => [name, located.value]));
}
