/**
 * The prompts decom asks on a terminal: the one confirmation of the commands that
 * change nodes (`decom run`, `decom audit --fix`) or what decom trusts (`decom hosts
 * trust`, before it records host keys), said on stderr and answered by typing
 * what it asks for (without a terminal it is bad input unless --yes was given; an answer
 * that is not the expected one changes nothing, exit 4); and a secret, asked on the
 * terminal itself with echo off (--ask-vault-pass).
 */
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
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

/** Whether a confirmation could be asked: --yes, or a terminal. Throws the input error `confirm` would, for a command that checks before it contacts anything. */
export function confirmable(c: Pick<Confirmation, 'yes' | 'action' | 'input'>): void {
  if (c.yes) return;
  if (!(c.input ?? process.stdin).isTTY) throw inputError(`refusing to ${c.action} without confirmation: no terminal to ask on; pass --yes`);
}

/** Returns once confirmed (or --yes); throws the UserError that ends the command otherwise. */
export async function confirm(c: Confirmation): Promise<void> {
  confirmable(c);
  if (c.yes) return;
  const input = c.input ?? process.stdin;
  const rl = createInterface({ input, output: c.output ?? process.stderr });
  let answer: string;
  try {
    answer = await rl.question(c.question);
  } finally {
    rl.close();
  }
  if (words(answer) !== words(c.expect)) throw new UserError('not confirmed: nothing was changed', EXIT.refused);
}

/**
 * A secret typed on the controlling terminal, echo off: read by the shell's `read` on
 * the terminal and handed back through a pipe, never an argument or the environment.
 * `flag` names what asked, for the error when there is no terminal.
 */
export async function askSecret(question: string, flag: string): Promise<string> {
  let tty: number;
  try {
    tty = openSync('/dev/tty', 'r+');
  } catch {
    throw inputError(`${flag}: no terminal to ask on; give the password another way (a file)`);
  }
  try {
    // Echo goes off before the prompt shows: a password typed at once after it is never echoed.
    const script = `trap 'stty echo' EXIT HUP INT TERM; stty -echo; printf '%s' "$1" >&2; IFS= read -r secret; printf '%s' "$secret"`;
    const r = spawnSync('/bin/sh', ['-c', script, 'sh', question], { stdio: [tty, 'pipe', tty] });
    writeSync(tty, '\n');
    if (r.status !== 0) throw inputError(`${flag}: nothing was typed`);
    return r.stdout.toString();
  } finally {
    closeSync(tty);
  }
}
