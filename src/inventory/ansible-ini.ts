import { expandHostPattern, HostRangeError } from './host-range.js';
import { addChild, addHost, ensureGroup, newRawInventory, type RawInventory } from './raw.js';
import { ShellSyntaxError, splitShellWords, type Word } from './shell-words.js';
import { fieldError, type VarSet, type Where } from './where.js';

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
export function parseAnsibleIni(file: string, text: string): RawInventory {
  const inv = newRawInventory(file);
  // A group exists once it has a [g] or [g:children] header; [g:vars] alone, or naming
  // it in someone's :children, is a typo Ansible refuses too. Checked at the end.
  const declared = new Set(['all', 'ungrouped']);
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
      if (/^\[[^\]]*\]\s*(?:[#;].*)?$/.test(trimmed)) {
        throw fieldError(at(indent + 1), trimmed.replace(/\s*[#;].*$/, ''), 'invalid section header: expected [group], [group:children] or [group:vars]');
      }
      // Otherwise a host line that starts with "[", e.g. an IPv6 address; parsed below.
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
      throw fieldError(ref.where, ref.section, `group "${ref.group}" has no [${ref.group}] or [${ref.group}:children] section`);
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
