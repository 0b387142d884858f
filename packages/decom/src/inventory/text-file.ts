/** A file the user pointed decom at (an inventory, a vars file, a playbook, an -e @FILE), read as text, every way it can fail one line naming its path. */
import { readFile, stat } from 'node:fs/promises';
import { inputError, UserError } from '../util/errors.js';

/**
 * Reads a text file the user pointed us at, turning every way it can fail into one
 * line that names the path. `what` says which file it is ("inventory file").
 */
export async function readTextFile(path: string, what: string): Promise<string> {
  try {
    const info = await stat(path);
    if (info.isDirectory()) throw inputError(`${what} ${path} is a directory, not a file`);
    const text = await readFile(path, 'utf8');
    if (text.includes('\0')) throw inputError(`${what} ${path} is not a text file`);
    return text.startsWith('\uFEFF') ? text.slice(1) : text;
  } catch (e) {
    throw fsError(e, path, what);
  }
}

/** One-line error for a failed file-system call on `path`. */
export function fsError(e: unknown, path: string, what: string): Error {
  if (e instanceof UserError) return e;
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOENT':
    case 'ENOTDIR':
      return inputError(`${what} not found: ${path}`);
    case 'EACCES':
    case 'EPERM':
      return inputError(`cannot read ${what} ${path}: permission denied`);
    case 'EISDIR':
      return inputError(`${what} ${path} is a directory, not a file`);
    default: {
      const detail = e instanceof Error ? (e.message.split('\n')[0] ?? '') : String(e);
      return inputError(`cannot read ${what} ${path}: ${code ?? detail}`);
    }
  }
}
