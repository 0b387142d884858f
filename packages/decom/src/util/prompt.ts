/**
 * The one confirmation prompt of the commands that change nodes (`decom run`,
 * `decom audit --fix`): said on stderr, answered on a terminal by typing what it
 * asks for. Without a terminal it is bad input unless --yes was given; an answer
 * that is not the expected one changes nothing (exit 4).
 */
import { createInterface } from 'node:readline/promises';
import { inputError, UserError } from './errors.js';
import { EXIT } from './exit-codes.js';

export interface Confirmation {
  /** --yes: nothing is asked. */
  yes: boolean;
  /** What is refused without a terminal, after "refusing to": "fix", "reset node1 node2". */
  action: string;
  /** The question, its last line saying what to type. */
  question: string;
  /** What must be typed (blanks around and between words do not count). */
  expect: string;
  /** Where it is asked (the tests'): process.stdin and process.stderr by default. */
  input?: NodeJS.ReadableStream & { isTTY?: boolean };
  output?: NodeJS.WritableStream;
}

const words = (s: string) => s.trim().split(/\s+/).join(' ');

/** Returns once confirmed (or --yes); throws the UserError that ends the command otherwise. */
export async function confirm(c: Confirmation): Promise<void> {
  if (c.yes) return;
  const input = c.input ?? process.stdin;
  if (!input.isTTY) throw inputError(`refusing to ${c.action} without confirmation: no terminal to ask on; pass --yes`);
  const rl = createInterface({ input, output: c.output ?? process.stderr });
  let answer: string;
  try {
    answer = await rl.question(c.question);
  } finally {
    rl.close();
  }
  if (words(answer) !== words(c.expect)) throw new UserError('not confirmed: nothing was changed', EXIT.refused);
}
