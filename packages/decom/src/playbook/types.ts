/** What a playbook is once loaded (its built-in and shell steps, with tags, conditions and positions), and the catalogue of built-in steps. */
import type { z } from 'zod';
import type { Condition } from './when.js';

/** A built-in step as the engine offers it to playbooks. */
export interface StepSpec {
  description: string;
  /** Its `with:` parameters; unknown keys are refused whatever the schema says. */
  params: z.ZodObject<any>;
  /** What `parallel:` is judged by (engine/step.ts says what each means): the views it re-probes, the paths it changes, the steps it follows. */
  views?: readonly string[];
  paths?: readonly string[];
  follows?: readonly string[];
  /** A cluster-side step, or one that re-probes everything: never side by side with another. */
  cluster?: unknown;
  reprobe?: boolean;
}

/** Built-in steps by name. */
export type StepCatalogue = Record<string, StepSpec>;

interface StepCommon {
  /** What progress output calls the step: its `name:`, else the built-in step's name. */
  label: string;
  tags: string[];
  /** All must hold for a host (see evalWhen); absent = always. */
  when?: Condition[];
  /** FILE:LINE:COL of the step's entry in the playbook. */
  where: string;
  /** The group of adjacent steps it runs side by side with, in one round trip (`parallel:`). */
  parallel?: string;
}

export type PlaybookStep =
  | (StepCommon & { kind: 'builtin'; name: string; params: Record<string, unknown> })
  | (StepCommon & {
      kind: 'shell';
      shell: string;
      /** Run `shell` only when this exits 0 ("there is work"); absent = always run. */
      check?: string;
      timeoutSec: number;
    });

export interface Playbook {
  file: string;
  name: string;
  description?: string;
  steps: PlaybookStep[];
}
