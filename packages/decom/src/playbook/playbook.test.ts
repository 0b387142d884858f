// Playbooks (src/playbook): a good one, a bad one named by FILE:LINE:COL and field, `when:`
// conditions, tag selection, finding the playbook, and the JSON Schema for editors, against a
// step catalogue made here. Plain unit tests: text parsed in memory, or files in a temporary
// folder. No sandbox.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  evalWhen,
  loadPlaybook,
  PACKAGE_ROOT,
  parseCondition,
  parsePlaybook,
  playbookJsonSchema,
  resolvePlaybook,
  selectSteps,
  type StepCatalogue,
} from './index.js';
import { UserError } from '../util/errors.js';
import { tempDir } from '../../test/helpers/temp.js';

const TMP = tempDir('decom-playbook-test-');
afterAll(() => rmSync(TMP, { recursive: true, force: true }));

const catalogue: StepCatalogue = {
  backup: {
    description: 'Back up what a reset destroys',
    params: z.object({ dir: z.string().default('/var/backups/decom'), mode: z.enum(['tar', 'copy']).optional(), keep: z.int({ error: 'expected a count of backups' }).optional() }),
  },
  'static-pods': {
    description: 'Stop static pods through kubelet',
    params: z.object({ timeoutSec: z.number().int().min(1).default(120), force: z.boolean().optional() }),
  },
  verify: { description: 'Probe again; fail if anything is left', params: z.object({}) },
};

const F = '/etc/decom/pb.yaml';
const HEAD = 'apiVersion: decom/v1\nkind: Playbook\n';
const parse = (text: string) => parsePlaybook(F, text, catalogue);

/** The one-line UserError (exit code 2) that `fn` fails with. */
function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(UserError);
    expect((e as UserError).exitCode).toBe(2);
    expect((e as UserError).message).not.toContain('\n');
    return (e as UserError).message;
  }
  throw new Error('expected an error');
}
const parseError = (text: string) => errorOf(() => parse(text));

async function asyncErrorOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(UserError);
  return (e as UserError).message;
}

describe('a good playbook', () => {
  it('reads every shape of step, with defaults applied and where each entry is', () => {
    const pb = parse(`${HEAD}name: reset
description: Tear a node down in the order that leaves nothing behind.
steps:
  - backup
  - step: static-pods
    with: { timeoutSec: 60 }
    tags: [pods]
  - name: remove kubespray's leftover tool
    shell: rm -f /usr/local/bin/foo
    check: test -e /usr/local/bin/foo
    when: "'kube_node' in group_names"
    tags: [extra]
  - step: verify
    tags: [always]
`);
    expect(pb.file).toBe(F);
    expect(pb.name).toBe('reset');
    expect(pb.description).toBe('Tear a node down in the order that leaves nothing behind.');
    const [backup, pods, shell, verify] = pb.steps;
    expect(backup).toEqual({ kind: 'builtin', name: 'backup', params: { dir: '/var/backups/decom' }, label: 'backup', tags: [], where: `${F}:6:5` });
    expect(pods).toEqual({ kind: 'builtin', name: 'static-pods', params: { timeoutSec: 60 }, label: 'static-pods', tags: ['pods'], where: `${F}:7:5` });
    expect(shell).toEqual({
      kind: 'shell',
      label: "remove kubespray's leftover tool",
      shell: 'rm -f /usr/local/bin/foo',
      check: 'test -e /usr/local/bin/foo',
      timeoutSec: 300,
      tags: ['extra'],
      when: [{ text: "'kube_node' in group_names", test: 'in', var: 'group_names', value: 'kube_node', not: false, where: `${F}:13:11` }],
      where: `${F}:10:5`,
    });
    expect(verify).toMatchObject({ kind: 'builtin', name: 'verify', params: {}, tags: ['always'], where: `${F}:15:5` });
  });

  it('takes its name from the file, a one-tag string, a when list, a named built-in step and a shell timeout', () => {
    const pb = parse(`${HEAD}steps:
  - step: backup
    name: save the PKI
    with: { dir: /srv/b }
    tags: always
    when: [etcd_member is defined, etcd_member | bool]
  - name: t
    shell: "true"
    timeoutSec: 5
`);
    expect(pb.name).toBe('pb');
    expect(pb).not.toHaveProperty('description');
    expect(pb.steps[0]).toMatchObject({ label: 'save the PKI', params: { dir: '/srv/b' }, tags: ['always'] });
    expect(pb.steps[0]!.when!.map((c) => [c.test, c.where])).toEqual([
      ['defined', `${F}:8:12`],
      ['truthy', `${F}:8:36`],
    ]);
    expect(pb.steps[1]).toMatchObject({ kind: 'shell', timeoutSec: 5 });
    expect(pb.steps[1]).not.toHaveProperty('check');
  });
});

describe('a bad playbook names FILE:LINE:COL and the field', () => {
  it('a parameter of the wrong type, at its value', () => {
    expect(parseError(`${HEAD}steps:\n  - backup\n  - step: static-pods\n    with:\n      timeoutSec: "x"\n`)).toBe(
      `${F}:7:19: steps[1].with.timeoutSec: expected a number, got "x"`,
    );
    expect(parseError(`${HEAD}steps:\n  - step: static-pods\n    with: { timeoutSec: 0 }\n`)).toBe(`${F}:5:25: steps[0].with.timeoutSec: expected at least 1, got 0`);
    expect(parseError(`${HEAD}steps:\n  - step: static-pods\n    with: { force: maybe }\n`)).toBe(`${F}:5:20: steps[0].with.force: expected true or false, got "maybe"`);
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    with: { mode: zip }\n`)).toBe(`${F}:5:19: steps[0].with.mode: expected one of "tar", "copy", got "zip"`);
    // A step's own message wins over decom's wording.
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    with: { keep: many }\n`)).toBe(`${F}:5:19: steps[0].with.keep: expected a count of backups, got "many"`);
    expect(parseError(`${HEAD}steps:\n  - step: static-pods\n    with: [1]\n`)).toBe(`${F}:5:11: steps[0].with: expected a mapping of parameters, got a list`);
  });

  it('an unknown parameter, at its key, with the nearest names', () => {
    expect(parseError(`${HEAD}steps:\n  - step: static-pods\n    with: { timeoutSecs: 5 }\n`)).toBe(
      `${F}:5:13: steps[0].with.timeoutSecs: unknown parameter of static-pods; did you mean timeoutSec? (expected one of timeoutSec, force)`,
    );
    expect(parseError(`${HEAD}steps:\n  - step: verify\n    with: { deep: true }\n`)).toBe(`${F}:5:13: steps[0].with.deep: unknown parameter of verify; it takes none`);
  });

  it('an unknown step, with the nearest known names', () => {
    expect(parseError(`${HEAD}steps:\n  - bakup\n`)).toBe(`${F}:4:5: steps[0]: unknown step "bakup"; did you mean backup? (built-in steps: backup, static-pods, verify)`);
    expect(parseError(`${HEAD}steps:\n  - verify\n  - step: static-pod\n`)).toBe(
      `${F}:5:11: steps[1].step: unknown step "static-pod"; did you mean static-pods? (built-in steps: backup, static-pods, verify)`,
    );
  });

  it('unknown keys in a step and at the top level', () => {
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    tag: [x]\n`)).toBe(
      `${F}:5:5: steps[0].tag: unknown field; did you mean tags? (expected one of step, with, name, when, tags, parallel)`,
    );
    expect(parseError(`${HEAD}steps:\n  - name: n\n    shell: "true"\n    chek: "false"\n`)).toBe(
      `${F}:6:5: steps[0].chek: unknown field; did you mean check, when? (expected one of name, shell, check, timeoutSec, when, tags, parallel)`,
    );
    expect(parseError(`${HEAD}descripton: x\nsteps: [backup]\n`)).toBe(
      `${F}:3:1: descripton: unknown field; did you mean description? (expected one of apiVersion, kind, name, description, steps)`,
    );
    // A misspelt `steps:` is named, rather than steps being reported missing.
    expect(parseError(`${HEAD}stepz: [backup]\n`)).toBe(`${F}:3:1: stepz: unknown field; did you mean steps? (expected one of apiVersion, kind, name, description, steps)`);
    expect(parseError(`${HEAD}steps:\n  - stpe: backup\n`)).toBe(
      `${F}:4:5: steps[0].stpe: unknown field; did you mean step? (expected one of step, with, name, when, tags, parallel, shell, check, timeoutSec)`,
    );
  });

  it('an entry that is not exactly one kind of step', () => {
    expect(parseError(`${HEAD}steps:\n  - 42\n`)).toBe(
      `${F}:4:5: steps[0]: expected a built-in step name, {step: NAME, with: {...}} or {name: ..., shell: COMMAND}, got 42`,
    );
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    shell: ls\n`)).toBe(`${F}:4:5: steps[0]: a step has step: (built-in) or shell: (a command), not both`);
    expect(parseError(`${HEAD}steps:\n  - name: x\n`)).toBe(`${F}:4:5: steps[0]: expected a built-in step name, {step: NAME, with: {...}} or {name: ..., shell: COMMAND}`);
    expect(parseError(`${HEAD}steps:\n  - shell: ls\n`)).toBe(`${F}:4:5: steps[0].name: missing; expected a name for the step`);
    expect(parseError(`${HEAD}steps:\n  - name: x\n    shell: ""\n`)).toBe(`${F}:5:12: steps[0].shell: expected a shell command, not an empty string, got ""`);
    expect(parseError(`${HEAD}steps:\n  - name: x\n    shell: ls\n    timeoutSec: 1.5\n`)).toBe(`${F}:6:17: steps[0].timeoutSec: expected a whole number of seconds, got 1.5`);
  });

  it('bad tags, at the item that is wrong', () => {
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    tags: [pods, 3]\n`)).toBe(`${F}:5:18: steps[0].tags[1]: expected a tag, got 3`);
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    tags: 3\n`)).toBe(`${F}:5:11: steps[0].tags: expected a tag or a list of tags, got 3`);
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    tags: "a,b"\n`)).toBe(`${F}:5:11: steps[0].tags: expected a tag (one word, no commas), got "a,b"`);
  });

  it('a when: condition outside the subset, at the condition', () => {
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    when: x > 3\n`)).toMatch(
      new RegExp(`^${F}:5:11: steps\\[0\\]\\.when: unsupported condition "x > 3"; supported: VAR, not VAR, VAR \\| bool, `),
    );
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    when:\n      - a is defined\n      - a and b\n`)).toBe(
      `${F}:7:9: steps[0].when[1]: "a and b": "and"/"or" are not supported; give a list of conditions instead (all must hold)`,
    );
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    when: "{{ a }}"\n`)).toBe(`${F}:5:11: steps[0].when: "{{ a }}": drop the {{ }}; when: is already an expression`);
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    when: true\n`)).toBe(`${F}:5:11: steps[0].when: expected a condition or a list of conditions, got true`);
  });

  it('duplicate keys, an empty or missing step list, wrong apiVersion or kind, an empty file', () => {
    expect(parseError(`${HEAD}steps:\n  - step: backup\n    with: {}\n    with: {}\n`)).toBe(`${F}:6:5: invalid YAML: duplicate key "with"`);
    expect(parseError(`${HEAD}steps: []\n`)).toBe(`${F}:3:8: steps: a playbook needs at least one step`);
    expect(parseError(`${HEAD}steps:\n`)).toBe(`${F}:3:1: steps: expected a list of steps, got nothing`);
    expect(parseError(`${HEAD}name: x\n`)).toBe(`${F}:1:1: steps: missing; expected a list of steps`);
    expect(parseError(`apiVersion: decom/v2\nkind: Playbook\nsteps: [backup]\n`)).toBe(`${F}:1:13: apiVersion: expected decom/v1, got "decom/v2"`);
    expect(parseError(`apiVersion: decom/v1\nkind: Inventory\nsteps: [backup]\n`)).toBe(`${F}:2:7: kind: expected Playbook, got "Inventory"`);
    expect(parseError(`kind: Playbook\nsteps: [backup]\n`)).toBe(`${F}:1:1: apiVersion: missing; expected decom/v1`);
    expect(parseError(`- backup\n`)).toBe(`${F}:1:1: (top level): expected a mapping (apiVersion: decom/v1, kind: Playbook, steps: [...]), got a list`);
    expect(parseError(`# nothing yet\n`)).toBe(`${F}:1:1: (top level): the file is empty; expected a playbook`);
  });
});

describe('when: conditions', () => {
  const holds = (cond: string | string[], vars: Record<string, unknown>) => evalWhen((Array.isArray(cond) ? cond : [cond]).map(parseCondition), vars);

  it('parses each form, folding every negation into `not`', () => {
    const shape = (text: string) => {
      const { text: _t, ...rest } = parseCondition(text);
      return rest;
    };
    expect(shape('a')).toEqual({ test: 'truthy', var: 'a', bool: false, not: false });
    expect(shape('not a')).toEqual({ test: 'truthy', var: 'a', bool: false, not: true });
    expect(shape('a.b | bool')).toEqual({ test: 'truthy', var: 'a.b', bool: true, not: false });
    expect(shape('not  a|bool')).toEqual({ test: 'truthy', var: 'a', bool: true, not: true });
    expect(shape('a is defined')).toEqual({ test: 'defined', var: 'a', not: false });
    expect(shape('a is not defined')).toEqual({ test: 'defined', var: 'a', not: true });
    expect(shape('a == "x y"')).toEqual({ test: 'equals', var: 'a', value: 'x y', not: false });
    expect(shape("a != 'it\\'s'")).toEqual({ test: 'equals', var: 'a', value: "it's", not: true });
    expect(shape('a == -1.5')).toEqual({ test: 'equals', var: 'a', value: -1.5, not: false });
    expect(shape('a == True')).toEqual({ test: 'equals', var: 'a', value: true, not: false });
    expect(shape("'etcd' in group_names")).toEqual({ test: 'in', var: 'group_names', value: 'etcd', not: false });
    expect(shape("'etcd' not in group_names")).toEqual({ test: 'in', var: 'group_names', value: 'etcd', not: true });
    expect(shape('not not a')).toEqual({ test: 'truthy', var: 'a', bool: false, not: false });
  });

  it('refuses anything else, saying what is supported', () => {
    for (const bad of ['', 'a == b', '1 == a', 'a | int', 'a is undefined', "'x' in", 'a.', 'a == "open', 'a or b', '(a)', 'in', 'not', 'a b', 'a === 1', 'a ==']) {
      expect(() => parseCondition(bad), bad).toThrow(/unsupported condition|unterminated string|not supported/);
    }
  });

  it('truthiness: booleans, bool-filter strings, numbers, lists, null', () => {
    for (const v of [true, 'yes', 'On', 'TRUE', '1', 1, 2, -1, [0], { a: 1 }]) expect(holds('a', { a: v }), JSON.stringify(v)).toBe(true);
    for (const v of [false, 'no', 'Off', 'false', '0', '', 0, [], {}, null]) expect(holds('a', { a: v }), JSON.stringify(v)).toBe(false);
    for (const v of [false, 'no', 'false', 0, null]) expect(holds('not a', { a: v })).toBe(true);
    expect(holds('a | bool', { a: 'yes' })).toBe(true);
    expect(holds('a | bool', { a: 0 })).toBe(false);
    expect(holds('not a | bool', { a: 'off' })).toBe(true);
  });

  it('refuses a value that is neither true nor false rather than guessing', () => {
    expect(errorOf(() => holds('a', { a: 'eth0' }))).toBe(
      'when: "a": a is "eth0", neither true nor false (true: yes/on/true/1, false: no/off/false/0/""); compare it with == or !=',
    );
    expect(() => holds('a | bool', { a: 2 })).toThrow(/a is 2, neither true nor false/);
    expect(() => holds('a | bool', { a: [1] })).toThrow(/a is a list, neither/);
  });

  it('defined, equality and membership, on dotted names', () => {
    const vars = { group_names: ['kube_node', 'etcd'], k: { mode: 'ipvs', port: 6443, on: true, nested: { x: null } }, s: 'kube-proxy' };
    expect(holds('k.mode is defined', vars)).toBe(true);
    expect(holds('k.nested.x is defined', vars)).toBe(true);
    expect(holds('k.nope is defined', vars)).toBe(false);
    expect(holds('k.mode.deeper is not defined', vars)).toBe(true);
    expect(holds('nope is not defined', vars)).toBe(true);
    expect(holds("k.mode == 'ipvs'", vars)).toBe(true);
    expect(holds('k.port == 6443', vars)).toBe(true);
    expect(holds("k.port == '6443'", vars)).toBe(false);
    expect(holds('k.on == true', vars)).toBe(true);
    expect(holds("k.mode != 'iptables'", vars)).toBe(true);
    expect(holds("'etcd' in group_names", vars)).toBe(true);
    expect(holds("'kube_control_plane' in group_names", vars)).toBe(false);
    expect(holds("'kube_control_plane' not in group_names", vars)).toBe(true);
    expect(holds("'proxy' in s", vars)).toBe(true);
    expect(holds("'mode' in k", vars)).toBe(true);
    expect(() => holds("'x' in k.port", vars)).toThrow(/k.port is 6443, not a list, mapping or string/);
  });

  it('a list holds only if every item does, evaluated in order so a guard protects what follows', () => {
    expect(holds(['a is defined', 'a | bool'], {})).toBe(false);
    expect(holds(['a is defined', 'a | bool'], { a: 'yes' })).toBe(true);
    expect(evalWhen(undefined, {})).toBe(true);
    expect(evalWhen([], {})).toBe(true);
  });

  it('an undefined variable is an error naming where the condition is, as in Ansible', () => {
    const pb = parse(`${HEAD}steps:\n  - step: backup\n    when: "'etcd' in group_nmes"\n`);
    expect(errorOf(() => evalWhen(pb.steps[0]!.when, { group_names: [] }))).toBe(
      `${F}:5:11: when: "'etcd' in group_nmes": group_nmes is not defined (guard it with "group_nmes is defined")`,
    );
  });
});

describe('tag selection', () => {
  const steps = [
    { id: 'plain', tags: [] },
    { id: 'pods', tags: ['pods'] },
    { id: 'extra', tags: ['extra', 'files'] },
    { id: 'always', tags: ['always'] },
    { id: 'never', tags: ['never', 'debug'] },
  ];
  const pick = (tags?: string[], skipTags?: string[]) => {
    const r = selectSteps(steps, { ...(tags ? { tags } : {}), ...(skipTags ? { skipTags } : {}) });
    return { ids: r.steps.map((s) => s.id), unknown: r.unknownTags };
  };

  it('without --tags everything runs but steps tagged never', () => {
    expect(pick()).toEqual({ ids: ['plain', 'pods', 'extra', 'always'], unknown: [] });
    expect(pick([])).toEqual(pick());
  });
  it('--tags runs the steps with one of them, plus always; never-tagged steps only by their own tag', () => {
    expect(pick(['pods']).ids).toEqual(['pods', 'always']);
    expect(pick(['files,pods']).ids).toEqual(['pods', 'extra', 'always']);
    expect(pick(['debug']).ids).toEqual(['always', 'never']);
    expect(pick(['tagged']).ids).toEqual(['pods', 'extra', 'always']);
    expect(pick(['untagged']).ids).toEqual(['plain', 'always']);
  });
  it('--skip-tags removes steps, always ones only when always itself is skipped', () => {
    expect(pick(undefined, ['pods']).ids).toEqual(['plain', 'extra', 'always']);
    expect(pick(['pods'], ['always']).ids).toEqual(['pods']);
    expect(pick(undefined, ['all']).ids).toEqual(['always']);
    expect(pick(undefined, ['all', 'always']).ids).toEqual([]);
    expect(pick(undefined, ['tagged']).ids).toEqual(['plain']);
  });
  it('reports tags no step has (special ones are always known)', () => {
    expect(pick(['pod', 'always'], ['extar', 'never', 'all']).unknown).toEqual(['pod', 'extar']);
  });
});

describe('finding the playbook', () => {
  const root = join(TMP, 'pkg');
  mkdirSync(join(root, 'playbooks'), { recursive: true });
  writeFileSync(join(root, 'playbooks/reset.yaml'), `${HEAD}steps: [backup, verify]\n`);
  writeFileSync(join(root, 'playbooks/purge.yaml'), `${HEAD}steps: [verify]\n`);

  it('the package root is two levels above the module, in tests the repository', () => {
    expect(PACKAGE_ROOT.replace(/\/$/, '')).toBe(join(dirname(fileURLToPath(import.meta.url)), '..', '..'));
  });

  it('a bare name is a shipped playbook', async () => {
    const pb = await loadPlaybook('reset', catalogue, { root });
    expect(pb.file).toBe(join(root, 'playbooks/reset.yaml'));
    expect(pb.name).toBe('reset');
    expect(pb.steps.map((s) => s.label)).toEqual(['backup', 'verify']);
  });

  it('an unknown shipped name lists the shipped ones', async () => {
    expect(await asyncErrorOf(resolvePlaybook('rest', root))).toBe(
      'unknown playbook "rest"; did you mean reset? (shipped playbooks: purge, reset; or give the path of a .yaml file)',
    );
    expect(await asyncErrorOf(resolvePlaybook('x', join(TMP, 'nowhere')))).toBe(
      `unknown playbook "x" (none are shipped in ${join(TMP, 'nowhere', 'playbooks')}; or give the path of a .yaml file)`,
    );
  });

  it('anything with a slash or a YAML suffix is a path; an unreadable one is named', async () => {
    const own = join(TMP, 'mine.yml');
    writeFileSync(own, `${HEAD}steps: [backup]\n`);
    expect(await resolvePlaybook('reset.yaml', root)).toBe('reset.yaml');
    expect(await resolvePlaybook('./reset', root)).toBe('./reset');
    expect((await loadPlaybook(own, catalogue, { root })).name).toBe('mine');
    expect(await asyncErrorOf(loadPlaybook(join(TMP, 'missing.yaml'), catalogue))).toBe(`playbook not found: ${join(TMP, 'missing.yaml')}`);
    expect(await asyncErrorOf(loadPlaybook(`${TMP}/`, catalogue))).toBe(`playbook ${TMP}/ is a directory, not a file`);
  });
});

describe('JSON Schema for editors', () => {
  it('is JSON and offers every built-in step, with its own with: keys, and the shell step', () => {
    const schema = JSON.parse(JSON.stringify(playbookJsonSchema(catalogue))) as Record<string, any>;
    expect(schema.$schema).toMatch(/json-schema\.org/);
    expect(schema.required).toEqual(['apiVersion', 'kind', 'steps']);
    const branches = schema.properties.steps.items.oneOf as Record<string, any>[];
    const names = branches.filter((b) => b.type === 'string').map((b) => b.const);
    expect(names).toEqual(Object.keys(catalogue));
    const objects = branches.filter((b) => b.type === 'object');
    expect(objects.map((b) => b.properties.step?.const ?? 'shell')).toEqual([...Object.keys(catalogue), 'shell']);
    const pods = objects.find((b) => b.properties.step?.const === 'static-pods')!;
    expect(pods.description).toBe('Stop static pods through kubelet');
    expect(pods.additionalProperties).toBe(false);
    expect(Object.keys(pods.properties.with.properties)).toEqual(['timeoutSec', 'force']);
    expect(pods.properties.with.additionalProperties).toBe(false);
    expect(pods.properties.with.required ?? []).toEqual([]); // defaults make parameters optional to write
    const shell = objects.at(-1)!;
    expect(shell.required).toEqual(['name', 'shell']);
  });
});
