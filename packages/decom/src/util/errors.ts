/** Errors a user can act on (UserError, inputError), and how a command line reports an error and exits. */
import { EXIT } from './exit-codes.js';

/**
 * Errors the user can act on. The CLI prints `message` as one line and exits with
 * `exitCode`; anything else is a bug and is reported as such.
 */
export class UserError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.input,
  ) {
    super(message);
    this.name = 'UserError';
  }
}

/** Bad input: flags, files, a missing prerequisite. Exit code 2. */
export const inputError = (message: string): UserError => new UserError(message, EXIT.input);

/**
 * A command line's last word on an error: a UserError as one line and its exit code;
 * anything else (a node did not boot, a command on it failed) as one line and exit 1,
 * the stack only when DECOM_DEBUG asks for it.
 */
export function exitOnError(program: string, e: unknown): never {
  if (e instanceof UserError) {
    process.stderr.write(`${program}: ${e.message}\n`);
    process.exit(e.exitCode);
  }
  const detail = process.env.DECOM_DEBUG && e instanceof Error ? (e.stack ?? e.message) : e instanceof Error ? e.message : String(e);
  process.stderr.write(`${program}: ${detail}\n`);
  process.exit(EXIT.residue);
}

/**
 * Where a warning goes by default: one line on stderr, worded by its caller as
 * `decom: warning…: …`. It stops nothing; callers that collect warnings take a `warn` option instead.
 */
export const warnOnStderr = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
