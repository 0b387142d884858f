// What bad input costs, seen from inside: the UserError a call rejects with, held to the
// rule of every input error (exit 2, one line), its message returned for the test to read.
import { expect } from 'vitest';
import { UserError } from '../../src/util/errors.js';

/** The one-line message of the input error (exit 2) `p` rejects with; fails the test when it resolves or rejects otherwise. */
export async function inputRefusal(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(UserError);
  expect((e as UserError).exitCode).toBe(2);
  expect((e as UserError).message).not.toContain('\n');
  return (e as UserError).message;
}
