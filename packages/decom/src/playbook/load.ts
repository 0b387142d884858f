/** Loading a playbook: a shipped name or a path resolved, its YAML checked against the schema and the step catalogue, every error as FILE:LINE:COL and the field. */
import { readdir } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { readTextFile } from '../inventory/load.js';
import { nearestNames } from '../inventory/suggest.js';
import { describeValue, fieldError, formatWhere } from '../inventory/where.js';
import { parseYaml, toValue, whereOfPath, type NodePath, type YamlFile } from '../inventory/yaml-source.js';
import { inputError } from '../util/errors.js';
import { expandHome } from '../util/paths.js';
import { builtinStepSchema, playbookSchema, shellStepSchema } from './schema.js';
import { cannotRunInParallel, conflict } from './parallel.js';
import type { Playbook, PlaybookStep, StepCatalogue } from './types.js';
import { ConditionSyntaxError, parseCondition, type Condition } from './when.js';

/** Two levels above this module: the repository in tests (src/playbook), the package when built (dist/playbook). */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface LoadOptions {
  /** Where `playbooks/` is looked for (default: the package root). */
  root?: string;
}

/**
 * Loads a playbook: a bare name (no `/`, no .yaml/.yml) is one shipped in
 * `playbooks/`, anything else a path. Every error is a UserError naming
 * FILE:LINE:COL and the field.
 */
export async function loadPlaybook(nameOrPath: string, catalogue: StepCatalogue, options: LoadOptions = {}): Promise<Playbook> {
  const file = await resolvePlaybook(nameOrPath, options.root ?? PACKAGE_ROOT);
  return parsePlaybook(file, await readTextFile(file, 'playbook'), catalogue);
}

const isBareName = (s: string) => !s.includes('/') && !/\.ya?ml$/i.test(s);

/** The file a playbook argument names; an unknown shipped name lists the shipped ones. */
export async function resolvePlaybook(nameOrPath: string, root: string = PACKAGE_ROOT): Promise<string> {
  if (!isBareName(nameOrPath)) return expandHome(nameOrPath);
  const shipped = await shippedPlaybooks(root);
  if (shipped.includes(nameOrPath)) return join(root, 'playbooks', `${nameOrPath}.yaml`);
  const near = nearestNames(nameOrPath, shipped);
  const hint = near.length ? `; did you mean ${near.join(', ')}?` : '';
  const list = shipped.length ? `shipped playbooks: ${shipped.join(', ')}` : `none are shipped in ${join(root, 'playbooks')}`;
  throw inputError(`unknown playbook "${nameOrPath}"${hint} (${list}; or give the path of a .yaml file)`);
}

/** Names of the playbooks in `ROOT/playbooks/`, sorted. */
export async function shippedPlaybooks(root: string = PACKAGE_ROOT): Promise<string[]> {
  const files = await readdir(join(root, 'playbooks')).catch(() => [] as string[]);
  return files.filter((f) => f.endsWith('.yaml')).map((f) => f.slice(0, -'.yaml'.length)).sort();
}

/** Parses and checks playbook text (`file` only names it in errors). */
export function parsePlaybook(file: string, text: string, catalogue: StepCatalogue): Playbook {
  const y = parseYaml(file, text, 'decom');
  const data = toValue(y, y.doc.contents, '(top level)');
  if (data === null || data === undefined) throw fieldError(whereOfPath(y, []), '(top level)', 'the file is empty; expected a playbook');
  const top = check(y, playbookSchema(z.unknown()), data, [], TOP_KEYS);
  return {
    file,
    name: top.name ?? basename(file, extname(file)),
    ...(top.description !== undefined ? { description: top.description } : {}),
    steps: checkParallel(y, top.steps.map((entry, i) => readStep(y, entry, ['steps', i], catalogue)), catalogue),
  };
}

/**
 * Each `parallel:` group: adjacent, of two steps or more, every one a built-in node step
 * independent of the others (playbook/parallel.ts). An error names the step's `parallel:`.
 */
function checkParallel(y: YamlFile, steps: PlaybookStep[], catalogue: StepCatalogue): PlaybookStep[] {
  const fail = (i: number, problem: string): never => {
    const path = ['steps', i, 'parallel'];
    throw fieldError(whereOfPath(y, path), fieldName(path), problem);
  };
  const members = new Map<string, number[]>();
  steps.forEach((s, i) => {
    const group = s.parallel;
    if (group === undefined) return;
    const before = members.get(group) ?? [];
    if (before.length && before.at(-1) !== i - 1) fail(i, `group ${JSON.stringify(group)} must be adjacent steps: ${fieldName(['steps', before.at(-1)!])} is in it, ${fieldName(['steps', i - 1])} is not`);
    if (s.kind === 'shell') fail(i, 'a shell step cannot run side by side with another: decom cannot tell what its command touches');
    const name = (s as { name: string }).name;
    const spec = catalogue[name]!;
    const alone = cannotRunInParallel(name, spec);
    if (alone) fail(i, alone);
    for (const j of before) {
      const other = (steps[j] as { name: string }).name;
      const why = conflict({ name: other, spec: catalogue[other]! }, { name, spec });
      if (why) fail(i, `${name} cannot run side by side with ${other} (${fieldName(['steps', j])}): ${why}`);
    }
    members.set(group, [...before, i]);
  });
  for (const [group, at] of members) if (at.length === 1) fail(at[0]!, `group ${JSON.stringify(group)} has this step alone; give the same group to the adjacent steps that run with it`);
  return steps;
}

const TOP_KEYS = Object.keys(playbookSchema(z.unknown()).shape);
const BUILTIN_KEYS = Object.keys(builtinStepSchema.shape);
const SHELL_KEYS = Object.keys(shellStepSchema.shape);

function readStep(y: YamlFile, entry: unknown, path: NodePath, catalogue: StepCatalogue): PlaybookStep {
  const at = whereOfPath(y, path);
  const where = formatWhere(at);
  if (typeof entry === 'string') return builtin(y, { step: entry }, path, where, catalogue, path);
  const field = fieldName(path);
  const forms = 'a built-in step name, {step: NAME, with: {...}} or {name: ..., shell: COMMAND}';
  if (!isMapping(entry)) throw fieldError(at, field, `expected ${forms}, got ${describeValue(entry)}`);
  if ('step' in entry && 'shell' in entry) throw fieldError(at, field, 'a step has step: (built-in) or shell: (a command), not both');
  if ('step' in entry) return builtin(y, check(y, builtinStepSchema, entry, path, BUILTIN_KEYS), path, where, catalogue, [...path, 'step']);
  if ('shell' in entry) {
    const s = check(y, shellStepSchema, entry, path, SHELL_KEYS);
    return { kind: 'shell', label: s.name, shell: s.shell, ...optional('check', s.check), timeoutSec: s.timeoutSec, ...extras(y, s, path), where };
  }
  // Neither: most likely a misspelt `step:` or `shell:`; point at that key.
  const typo = Object.keys(entry).find((k) => !BUILTIN_KEYS.includes(k) && !SHELL_KEYS.includes(k));
  if (typo) throw fieldError(whereOfPath(y, [...path, typo], true), fieldName([...path, typo]), unknownKey(typo, [...new Set([...BUILTIN_KEYS, ...SHELL_KEYS])]));
  throw fieldError(at, field, `expected ${forms}`);
}

type BuiltinEntry = z.output<typeof builtinStepSchema>;

/** A built-in step: its name looked up in the catalogue (`namePath` is where the name is written), `with:` checked. */
function builtin(y: YamlFile, s: BuiltinEntry, path: NodePath, where: string, catalogue: StepCatalogue, namePath: NodePath): PlaybookStep {
  const spec = Object.hasOwn(catalogue, s.step) ? catalogue[s.step] : undefined;
  if (!spec) {
    const known = Object.keys(catalogue);
    const near = nearestNames(s.step, known);
    const hint = near.length ? `; did you mean ${near.join(', ')}?` : '';
    throw fieldError(whereOfPath(y, namePath), fieldName(namePath), `unknown step ${JSON.stringify(s.step)}${hint} (built-in steps: ${known.join(', ')})`);
  }
  const paramNames = Object.keys(spec.params.shape);
  const params = check(y, spec.params.strict(), s.with ?? {}, [...path, 'with'], paramNames, `parameter of ${s.step}`);
  return { kind: 'builtin', name: s.step, params, label: s.name ?? s.step, ...extras(y, s, path), where };
}

/** Tags and parsed conditions, common to both kinds of step. */
function extras(y: YamlFile, s: Pick<BuiltinEntry, 'when' | 'tags' | 'parallel'>, path: NodePath) {
  const tags = s.tags === undefined ? [] : typeof s.tags === 'string' ? [s.tags] : [...new Set(s.tags)];
  const parallel = optional('parallel', s.parallel);
  if (s.when === undefined) return { tags, ...parallel };
  const whenPath = [...path, 'when'];
  const texts = typeof s.when === 'string' ? [s.when] : s.when;
  const when = texts.map((text, j): Condition => {
    const at = typeof s.when === 'string' ? whenPath : [...whenPath, j];
    const where = whereOfPath(y, at);
    try {
      return { ...parseCondition(text), where: formatWhere(where) };
    } catch (e) {
      if (e instanceof ConditionSyntaxError) throw fieldError(where, fieldName(at), e.message);
      throw e;
    }
  });
  return { tags, when, ...parallel };
}

const optional = <K extends string, V>(key: K, value: V | undefined) => (value === undefined ? {} : ({ [key]: value } as Record<K, V>));
const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `steps[2].with.timeoutSec`, as a reader finds it in the file. */
function fieldName(path: NodePath): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : `${out ? '.' : ''}${String(p)}`;
  return out || '(top level)';
}

function unknownKey(key: string, known: string[], what = 'field'): string {
  const near = nearestNames(key, known);
  const hint = near.length ? `did you mean ${near.join(', ')}? ` : '';
  return known.length ? `unknown ${what}; ${hint}(expected one of ${known.join(', ')})` : `unknown ${what}; it takes none`;
}

/**
 * Parses `data` (found at `path` in the file) with `schema`; the first problem in
 * file order becomes `FILE:LINE:COL: field: problem` at the offending node, or the
 * nearest parent that exists when the value is missing.
 */
function check<S extends z.ZodType>(y: YamlFile, schema: S, data: unknown, path: NodePath, known: string[], what?: string): z.output<S> {
  const result = schema.safeParse(data, { reportInput: true, error: friendly });
  if (result.success) return result.data;
  const located = flattenUnions(result.error.issues).map((issue) => {
    const at = [...path, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      const key = at.concat(issue.keys[0]!);
      // `known` lists the keys of `data` itself; a deeper mapping's are not at hand.
      const problem = issue.path.length === 0 ? unknownKey(issue.keys[0]!, known, what) : 'unknown field';
      return { where: whereOfPath(y, key, true), field: fieldName(key), problem, missing: false };
    }
    const input = (issue as { input?: unknown }).input;
    const missing = input === undefined;
    const scalar = input === null || (input !== undefined && typeof input !== 'object');
    const got = !missing && (scalar || issue.code === 'invalid_type' || issue.code === 'invalid_union') ? `, got ${describeValue(input)}` : '';
    return { where: whereOfPath(y, at), field: fieldName(at), problem: missing ? `missing; ${issue.message}` : `${issue.message}${got}`, missing };
  });
  // A missing field is often a misspelt one: name the misspelling first.
  located.sort((a, b) => Number(a.missing) - Number(b.missing) || a.where.line - b.where.line || a.where.col - b.where.col);
  const first = located[0]!;
  throw fieldError(first.where, first.field, first.problem);
}

/**
 * A failed union (`tags: tag | [tag]`) reports the branch whose type matched, so
 * `tags: [a, 3]` says `tags[1]: expected a tag`; when no branch's type matched, the
 * union's own message stands ("expected a tag or a list of tags").
 */
function flattenUnions(issues: z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  return issues.flatMap((issue) => {
    if (issue.code !== 'invalid_union') return [issue];
    const matched = issue.errors.filter((branch) => !branch.every((i) => i.code === 'invalid_type' && i.path.length === 0));
    if (matched.length !== 1) return [issue];
    return flattenUnions(matched[0]!).map((i) => ({ ...i, path: [...issue.path, ...i.path] }));
  });
}

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
  record: 'a mapping',
};

/** Messages for issues whose schema has none of its own (the catalogue's, mostly). */
const friendly: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case 'too_small':
    case 'too_big': {
      const bound = issue.code === 'too_small' ? issue.minimum : issue.maximum;
      const least = issue.code === 'too_small' ? 'at least' : 'at most';
      const strictly = issue.code === 'too_small' ? 'more than' : 'less than';
      if (issue.origin === 'array' || issue.origin === 'set') return `expected ${least} ${bound} item${bound === 1 ? '' : 's'}`;
      if (issue.origin === 'string') return `expected ${least} ${bound} character${bound === 1 ? '' : 's'}`;
      return `expected ${issue.inclusive ? least : strictly} ${bound}`;
    }
    case 'invalid_value':
      return issue.values.length === 1 ? `expected ${JSON.stringify(issue.values[0])}` : `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_format':
      return issue.format === 'regex' && issue.pattern ? `expected text matching ${issue.pattern}` : `expected ${issue.format}`;
    case 'not_multiple_of':
      return `expected a multiple of ${issue.divisor}`;
    default:
      return undefined;
  }
};
