/**
 * Errors the user can act on. The CLI prints `message` as one line and exits with
 * `exitCode`; anything else is a bug and is reported as such.
 */
export class UserError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = 2,
  ) {
    super(message);
    this.name = 'UserError';
  }
}

/** Bad input: flags, files, a missing prerequisite. Exit code 2. */
export const inputError = (message: string): UserError => new UserError(message, 2);
