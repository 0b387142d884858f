/** Playbook `when:` conditions: the subset of Ansible's syntax decom parses when a playbook loads, and their evaluation on a host's variables. */
import { VaultEncrypted } from '../inventory/yaml-source.js';
import { describeValue } from '../inventory/where.js';
import { inputError } from '../util/errors.js';

/**
 * `when:` conditions: a small subset of Ansible's (Jinja) syntax, parsed when the
 * playbook loads so a typo fails before any host is touched:
 *
 *   VAR                       VAR | bool              not COND
 *   VAR is defined            VAR is not defined
 *   VAR == LITERAL            VAR != LITERAL
 *   LITERAL in VAR            LITERAL not in VAR
 *
 * VAR is a variable name, dotted for nested mappings (`a.b`); LITERAL is a quoted
 * string, a number, or true/false. A `when:` list holds only if every item does.
 */
export type Literal = string | number | boolean;

export type Condition = {
  /** The condition as written. */
  text: string;
  /** FILE:LINE:COL of the condition, for errors found while evaluating it. */
  where?: string;
  /** The result is negated (`not`, `is not`, `!=`, `not in`). */
  not: boolean;
} & (
  | { test: 'truthy'; var: string; bool: boolean }
  | { test: 'defined'; var: string }
  | { test: 'equals'; var: string; value: Literal }
  | { test: 'in'; var: string; value: Literal }
);

export const SUPPORTED_CONDITIONS =
  'VAR, not VAR, VAR | bool, VAR is defined, VAR is not defined, VAR == LITERAL, VAR != LITERAL, LITERAL in VAR, LITERAL not in VAR';

/** A condition the parser cannot read; the loader adds where it was written. */
export class ConditionSyntaxError extends Error {
  override name = 'ConditionSyntaxError';
}

type Token =
  | { kind: 'name'; text: string }
  | { kind: 'literal'; text: string; value: Literal }
  | { kind: 'op'; text: '==' | '!=' | '|' };

const KEYWORDS = new Set(['not', 'in', 'is', 'defined', 'and', 'or', 'true', 'false', 'True', 'False']);
const NAME = /^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*/;
const NUMBER = /^-?\d+(?:\.\d+)?(?![\w.])/;
const ESCAPES: Record<string, string> = { n: '\n', t: '\t', '\\': '\\', "'": "'", '"': '"' };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const rest = text.slice(i);
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "'" || c === '"') {
      let value = '';
      let j = i + 1;
      for (; j < text.length && text[j] !== c; j++) {
        if (text[j] === '\\' && j + 1 < text.length) value += ESCAPES[text[++j]!] ?? `\\${text[j]}`;
        else value += text[j];
      }
      if (j >= text.length) throw new ConditionSyntaxError(`unterminated string in ${JSON.stringify(text)}`);
      tokens.push({ kind: 'literal', text: text.slice(i, j + 1), value });
      i = j + 1;
    } else if (rest.startsWith('==') || rest.startsWith('!=') || c === '|') {
      const op = c === '|' ? '|' : (rest.slice(0, 2) as '==' | '!=');
      tokens.push({ kind: 'op', text: op });
      i += op.length;
    } else if (NUMBER.test(rest)) {
      const num = NUMBER.exec(rest)![0];
      tokens.push({ kind: 'literal', text: num, value: Number(num) });
      i += num.length;
    } else if (NAME.test(rest)) {
      const name = NAME.exec(rest)![0];
      if (name === 'true' || name === 'True') tokens.push({ kind: 'literal', text: name, value: true });
      else if (name === 'false' || name === 'False') tokens.push({ kind: 'literal', text: name, value: false });
      else tokens.push({ kind: 'name', text: name });
      i += name.length;
    } else {
      throw unsupported(text);
    }
  }
  return tokens;
}

function unsupported(text: string): ConditionSyntaxError {
  // The two mistakes Ansible users make most get a specific answer.
  if (text.includes('{{')) return new ConditionSyntaxError(`${JSON.stringify(text)}: drop the {{ }}; when: is already an expression`);
  if (/\b(?:and|or)\b/.test(text)) {
    return new ConditionSyntaxError(`${JSON.stringify(text)}: "and"/"or" are not supported; give a list of conditions instead (all must hold)`);
  }
  return new ConditionSyntaxError(`unsupported condition ${JSON.stringify(text)}; supported: ${SUPPORTED_CONDITIONS} (LITERAL: 'text', a number, true or false)`);
}

/** Parses one condition; throws ConditionSyntaxError for anything outside the subset. */
export function parseCondition(text: string): Condition {
  const tokens = tokenize(text);
  let not = false;
  let i = 0;
  while (tokens[i]?.kind === 'name' && tokens[i]!.text === 'not') {
    not = !not;
    i++;
  }
  const t = tokens.slice(i);
  const isVar = (k: Token | undefined): k is Token & { kind: 'name' } => k?.kind === 'name' && !KEYWORDS.has(k.text);
  const word = (k: Token | undefined, w: string) => k?.kind === 'name' && k.text === w;
  const [a, b, c, d] = t;
  const base = { text, not };
  if (isVar(a)) {
    if (t.length === 1) return { ...base, test: 'truthy', var: a.text, bool: false };
    if (t.length === 3 && b?.kind === 'op' && b.text === '|' && word(c, 'bool')) return { ...base, test: 'truthy', var: a.text, bool: true };
    if (t.length === 3 && word(b, 'is') && word(c, 'defined')) return { ...base, test: 'defined', var: a.text };
    if (t.length === 4 && word(b, 'is') && word(c, 'not') && word(d, 'defined')) return { ...base, not: !not, test: 'defined', var: a.text };
    if (t.length === 3 && b?.kind === 'op' && b.text !== '|' && c?.kind === 'literal') {
      return { ...base, not: b.text === '!=' ? !not : not, test: 'equals', var: a.text, value: c.value };
    }
  }
  if (a?.kind === 'literal') {
    if (t.length === 3 && word(b, 'in') && isVar(c)) return { ...base, test: 'in', var: c.text, value: a.value };
    if (t.length === 4 && word(b, 'not') && word(c, 'in') && isVar(d)) return { ...base, not: !not, test: 'in', var: d.text, value: a.value };
  }
  throw unsupported(text);
}

/**
 * True when every condition holds for these variables (in order, stopping at the
 * first that fails, so `[x is defined, x | bool]` is safe). As in Ansible, using an
 * undefined variable other than in `is defined` is an error, not false.
 */
export function evalWhen(conds: readonly Condition[] | undefined, vars: Record<string, unknown>): boolean {
  for (const cond of conds ?? []) {
    if (!evalOne(cond, vars)) return false;
  }
  return true;
}

function evalOne(cond: Condition, vars: Record<string, unknown>): boolean {
  const fail = (problem: string) => inputError(`${cond.where ? `${cond.where}: ` : ''}when: ${JSON.stringify(cond.text)}: ${problem}`);
  const value = lookup(vars, cond.var);
  if (cond.test === 'defined') return (value !== undefined) !== cond.not;
  if (value === undefined) throw fail(`${cond.var} is not defined (guard it with "${cond.var} is defined")`);
  if (value instanceof VaultEncrypted) throw fail(`${cond.var} is vault-encrypted, and decom cannot decrypt it`);
  let result: boolean;
  switch (cond.test) {
    case 'truthy': {
      const truth = truthOf(value, cond.bool);
      if (truth === undefined) {
        throw fail(`${cond.var} is ${describeValue(value)}, neither true nor false (true: yes/on/true/1, false: no/off/false/0/""); compare it with == or !=`);
      }
      result = truth;
      break;
    }
    case 'equals':
      result = value === cond.value;
      break;
    case 'in':
      if (Array.isArray(value)) result = value.some((v) => v === cond.value);
      else if (typeof value === 'string' && typeof cond.value === 'string') result = value.includes(cond.value);
      else if (isMapping(value)) result = Object.hasOwn(value, String(cond.value));
      else throw fail(`${cond.var} is ${describeValue(value)}, not a list, mapping or string`);
      break;
  }
  return result !== cond.not;
}

const TRUE_WORDS = new Set(['yes', 'on', 'true', '1']);
const FALSE_WORDS = new Set(['no', 'off', 'false', '0', '']);

/**
 * Strings follow Ansible's `bool` filter (case-insensitive yes/on/true/1 and
 * no/off/false/0), so "false" is false as a user expects, not true as in Python;
 * any other string is refused rather than guessed. Plain `VAR` also takes Python's
 * view of numbers, lists and mappings (non-zero, non-empty); `| bool` only 1 and 0.
 */
function truthOf(value: unknown, boolFilter: boolean): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === null) return false;
  if (typeof value === 'string') {
    const word = value.toLowerCase();
    return TRUE_WORDS.has(word) ? true : FALSE_WORDS.has(word) ? false : undefined;
  }
  if (typeof value === 'number') return boolFilter ? (value === 1 ? true : value === 0 ? false : undefined) : value !== 0;
  if (boolFilter) return undefined;
  if (Array.isArray(value)) return value.length > 0;
  if (isMapping(value)) return Object.keys(value).length > 0;
  return undefined;
}

const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `a.b.c` through nested mappings; undefined as soon as a part is missing. */
function lookup(vars: Record<string, unknown>, name: string): unknown {
  let value: unknown = vars;
  for (const part of name.split('.')) {
    if (!isMapping(value) || !Object.hasOwn(value, part)) return undefined;
    value = value[part];
  }
  return value;
}
