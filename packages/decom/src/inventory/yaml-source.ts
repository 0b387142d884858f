/**
 * YAML files read with their positions: parsed as Ansible (YAML 1.1, !vault, !unsafe) or decom (YAML 1.2)
 * reads them, values and variables taken from them, and where each node was written, for errors.
 */
import {
  isAlias,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  visit,
  type Document,
  type Node,
  type Pair,
  type ScalarTag,
  type Tags,
  type YAMLMap,
} from 'yaml';
import { inputError } from '../util/errors.js';
import { describeValue, fieldError, formatWhere, type Located, type VarSet, type Where } from './where.js';

/**
 * A value Ansible would decrypt with ansible-vault (`!vault |`). decom cannot decrypt
 * it, and must never use the ciphertext as if it were the secret.
 */
export class VaultEncrypted {
  /** The envelope as written ($ANSIBLE_VAULT;1.1;AES256 and the hex), for vault.ts to open; never printed. */
  constructor(readonly envelope = '') {}
  toJSON(): string {
    return '(vault-encrypted)';
  }
}

/** A parsed YAML file and what it takes to say where a node of it is. */
export interface YamlFile {
  file: string;
  doc: Document.Parsed;
  lines: LineCounter;
}

/**
 * 'ansible': YAML 1.1 as PyYAML reads it (yes/no/on/off are booleans, but y/n are
 * not), plus Ansible's !vault and !unsafe tags. 'decom': plain YAML 1.2.
 */
export type YamlFlavour = 'ansible' | 'decom';

const BOOL_TAG = 'tag:yaml.org,2002:bool';
const pyYamlBool = (value: boolean, test: RegExp): ScalarTag => ({
  tag: BOOL_TAG,
  default: true,
  identify: (v) => v === value,
  test,
  resolve: () => value,
});
const ansibleTags = (tags: Tags): Tags => [
  ...tags.filter((t) => (typeof t === 'string' ? t !== 'bool' : t.tag !== BOOL_TAG)),
  pyYamlBool(true, /^(?:[Yy]es|YES|[Tt]rue|TRUE|[Oo]n|ON)$/),
  pyYamlBool(false, /^(?:[Nn]o|NO|[Ff]alse|FALSE|[Oo]ff|OFF)$/),
  { tag: '!vault', resolve: (s: string) => new VaultEncrypted(s) },
  { tag: '!unsafe', resolve: (s: string) => s },
];

/** Parses YAML text; a syntax error becomes `file:line:col: invalid YAML: ...`. */
export function parseYaml(file: string, text: string, flavour: YamlFlavour): YamlFile {
  const lines = new LineCounter();
  const doc = parseDocument(text, {
    lineCounter: lines,
    prettyErrors: false,
    ...(flavour === 'ansible' ? { version: '1.1' as const, customTags: ansibleTags } : {}),
  });
  const err = doc.errors[0];
  if (err) {
    const pos = lines.linePos(err.pos[0]);
    const dup = err.code === 'DUPLICATE_KEY' ? keyAt(doc, err.pos[0]) : undefined;
    const what = dup !== undefined ? `duplicate key ${JSON.stringify(dup)}` : (err.message.split('\n')[0] ?? '');
    throw inputError(`${formatWhere({ file, line: pos.line, col: pos.col })}: invalid YAML: ${what}`);
  }
  return { file, doc, lines };
}

/** The text of the mapping key that starts at `offset`, to name it in a duplicate-key error. */
function keyAt(doc: Document.Parsed, offset: number): string | undefined {
  let key: string | undefined;
  visit(doc, {
    Pair(_, pair) {
      if (isScalar(pair.key) && pair.key.range?.[0] === offset) {
        key = String(pair.key.value);
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return key;
}

/** Where a node starts; `fallback` (or the file's start) for a missing node. */
export function whereOf(y: YamlFile, node: Node | null | undefined, fallback?: Where): Where {
  const offset = node?.range?.[0];
  if (offset === undefined) return fallback ?? { file: y.file, line: 1, col: 1 };
  const { line, col } = y.lines.linePos(offset);
  return { file: y.file, line, col };
}

/** The node an alias (`*name`) points to, or the node itself. */
export function deref(y: YamlFile, node: Node | null | undefined, field: string): Node | null {
  if (!node) return null;
  if (!isAlias(node)) return node;
  const target = node.resolve(y.doc);
  if (!target) throw fieldError(whereOf(y, node), field, `alias *${node.source} has no matching &${node.source} before it`);
  return target;
}

/** True for a missing value: `key:` with nothing after it, `~` or `null`. */
export function isNullNode(node: Node | null): boolean {
  return node === null || (isScalar(node) && node.value === null);
}

/** The plain JS value of a node (aliases and merge keys resolved). */
export function toValue(y: YamlFile, node: Node | null, field: string): unknown {
  if (!node) return null;
  try {
    return node.toJS(y.doc, { maxAliasCount: 1000 });
  } catch (e) {
    // Unresolved or exploding aliases: the library throws instead of reporting.
    const detail = e instanceof Error ? (e.message.split('\n')[0] ?? '') : String(e);
    throw fieldError(whereOf(y, node), field, detail);
  }
}

/** A mapping key as a string; keys that are lists or mappings are refused. */
export function keyString(y: YamlFile, key: unknown, parentField: string): string | typeof MERGE {
  if (isScalar(key)) {
    if (typeof key.value === 'symbol') return MERGE;
    if (key.value === null) throw fieldError(whereOf(y, key), parentField, 'a key is empty');
    return String(key.value);
  }
  throw fieldError(whereOf(y, key as Node | null), parentField, 'keys must be plain names, not lists or mappings');
}
/** The `<<` merge key of YAML 1.1. */
export const MERGE = Symbol('<<');

/** A node that must be a mapping, or nothing (null). */
export function expectMap(y: YamlFile, node: Node | null, field: string, what: string): YAMLMap | null {
  if (isNullNode(node)) return null;
  if (isMap(node)) return node;
  const got = isSeq(node) ? 'a list' : describeValue(isScalar(node) ? node.value : null);
  throw fieldError(whereOf(y, node), field, `expected ${what}, got ${got}`);
}

/**
 * Variables of a mapping, each with where it was written. Merge keys (`<<: *common`)
 * are honoured; a merged-in variable points at the `<<` line.
 */
export function varsFromMap(y: YamlFile, node: Node | null, field: string, scope: Located['scope']): VarSet {
  const vars: VarSet = new Map();
  // A whole file of variables (group_vars/all.yml) has no field of its own.
  const label = field || '(top level)';
  const map = expectMap(y, deref(y, node, label), label, 'a mapping of variable names to values');
  if (!map) return vars;
  const value = toValue(y, map, label) as Record<string, unknown>;
  const written = new Map<string, Pair>();
  let mergeAt: Where | undefined;
  for (const pair of map.items) {
    const key = keyString(y, pair.key, label);
    if (key === MERGE) mergeAt ??= whereOf(y, pair.key as Node);
    else written.set(key, pair);
  }
  for (const [name, v] of Object.entries(value)) {
    const pair = written.get(name);
    const where = pair ? whereOf(y, (pair.value ?? pair.key) as Node) : (mergeAt ?? whereOf(y, map));
    vars.set(name, { value: v, where, field: field ? `${field}.${name}` : name, scope });
  }
  return vars;
}

/** A path into a document: mapping keys and list indexes, as zod reports issue paths. */
export type NodePath = readonly PropertyKey[];

/**
 * The node at a path (its value, and its key when it is a mapping entry), or the
 * deepest one that exists (`found: false`), so an error about a missing or wrong
 * value can still point at the nearest thing the user wrote.
 */
export function nodeAt(y: YamlFile, path: NodePath): { key: Node | null; value: Node | null; found: boolean } {
  let value = deref(y, y.doc.contents as Node | null, '(top level)');
  let key: Node | null = null;
  for (const step of path) {
    let next: { key: Node | null; value: Node | null } | undefined;
    if (isMap(value)) {
      const pair = value.items.find((p) => isScalar(p.key) && String(p.key.value) === String(step));
      if (pair) next = { key: pair.key as Node, value: deref(y, pair.value as Node | null, String(step)) };
    } else if (isSeq(value) && typeof step === 'number') {
      const item = value.items[step] as Node | undefined;
      if (item) next = { key: null, value: deref(y, item, String(step)) };
    }
    if (!next) return { key, value, found: false };
    ({ key, value } = next);
  }
  return { key, value, found: true };
}

/** Where the node at a path starts (its key with `atKey`), or the nearest parent that exists. */
export function whereOfPath(y: YamlFile, path: NodePath, atKey = false): Where {
  const node = nodeAt(y, path);
  if (!node.found) return whereOf(y, node.value ?? node.key);
  // `key:` with nothing after it: the key is what the reader looks for.
  const empty = isScalar(node.value) && node.value.range?.[0] === node.value.range?.[1];
  return whereOf(y, atKey || empty ? (node.key ?? node.value) : (node.value ?? node.key));
}
