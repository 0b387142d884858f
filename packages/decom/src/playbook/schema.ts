/** The playbook file's format (decom/v1, kind Playbook) as zod schemas, and as one JSON Schema for editors. */
import { z } from 'zod';
import { SUPPORTED_CONDITIONS } from './when.js';
import type { StepCatalogue } from './types.js';

/**
 * The playbook format as zod schemas. The loader checks a file piece by piece with
 * them (so each error names the piece), and playbookJsonSchema() assembles the same
 * pieces into one JSON Schema for editors.
 */
export const PLAYBOOK_API_VERSION = 'decom/v1';
export const PLAYBOOK_KIND = 'Playbook';
export const DEFAULT_SHELL_TIMEOUT_SEC = 300;

const text = (what: string) => z.string({ error: `expected ${what}` }).min(1, { error: `expected ${what}, not an empty string` });
const tag = z.string({ error: 'expected a tag' }).regex(/^[^\s,]+$/, { error: 'expected a tag (one word, no commas)' });
const condition = text('a condition').describe(`Ansible-style condition: ${SUPPORTED_CONDITIONS}`);

const common = {
  name: text('a name').describe('what progress output calls the step').optional(),
  when: z
    .union([condition, z.array(condition)], { error: 'expected a condition or a list of conditions' })
    .describe('run the step only on hosts where this holds (a list: all must hold)')
    .optional(),
  tags: z
    .union([tag, z.array(tag)], { error: 'expected a tag or a list of tags' })
    .describe('select steps with --tags/--skip-tags; "always" and "never" are special')
    .optional(),
  parallel: text('a group name')
    .describe('run side by side on the node, in one round trip, with the adjacent steps of the same group (their views, paths and order must be independent)')
    .optional(),
};

export const builtinStepSchema = z.strictObject(
  {
    step: text('a built-in step name').describe('a built-in step'),
    with: z.record(z.string(), z.unknown(), { error: 'expected a mapping of parameters' }).describe("the step's parameters").optional(),
    ...common,
  },
  { error: 'expected a mapping' },
);

export const shellStepSchema = z
  .strictObject(
    {
      name: text('a name for the step').describe('what progress output calls the step'),
      shell: text('a shell command').describe('run by /bin/sh on the host'),
      check: text('a shell command').describe('run first; the step runs its shell only when this exits 0 ("there is work")').optional(),
      timeoutSec: z
        .int({ error: 'expected a whole number of seconds' })
        .min(1, { error: 'expected a whole number of seconds from 1' })
        .describe('seconds the shell (and the check) may take')
        .default(DEFAULT_SHELL_TIMEOUT_SEC),
      when: common.when,
      tags: common.tags,
      parallel: common.parallel,
    },
    { error: 'expected a mapping' },
  )
  .describe('a shell step');

/** The whole file, with `step` for what one entry of `steps:` must be. */
export function playbookSchema<S extends z.ZodType>(step: S) {
  return z.strictObject(
    {
      apiVersion: z.literal(PLAYBOOK_API_VERSION, { error: `expected ${PLAYBOOK_API_VERSION}` }),
      kind: z.literal(PLAYBOOK_KIND, { error: `expected ${PLAYBOOK_KIND}` }),
      name: text('a name').describe('the playbook name (default: the file name)').optional(),
      description: z.string({ error: 'expected a string' }).optional(),
      steps: z.array(step, { error: 'expected a list of steps' }).min(1, { error: 'a playbook needs at least one step' }),
    },
    { error: `expected a mapping (apiVersion: ${PLAYBOOK_API_VERSION}, kind: ${PLAYBOOK_KIND}, steps: [...])` },
  );
}

/**
 * JSON Schema of a playbook for editors: each entry of `steps:` is one of the
 * built-in step names, a `{step, with}` mapping per built-in step (its own `with:`
 * keys), or a shell step, so an editor completes names and parameters.
 */
export function playbookJsonSchema(catalogue: StepCatalogue): Record<string, unknown> {
  const entries = Object.entries(catalogue);
  const byName = entries.map(([name, spec]) => z.literal(name).describe(spec.description));
  const withParams = entries.map(([name, spec]) =>
    builtinStepSchema
      .extend({ step: z.literal(name).describe(spec.description), with: spec.params.strict().describe("the step's parameters").optional() })
      .describe(spec.description),
  );
  const schema = playbookSchema(z.xor([...byName, ...withParams, shellStepSchema])).meta({ title: 'decom playbook' });
  // `input`: what a user writes, so parameters with defaults are optional.
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
}
