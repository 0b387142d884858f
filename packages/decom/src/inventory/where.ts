/** Where a value was written in an inventory file (file:line:col and its field name), and the errors that point there. */
import { inputError, type UserError } from '../util/errors.js';

/** A place in a file, 1-based, as editors show it. */
export interface Where {
  file: string;
  line: number;
  col: number;
}

/**
 * A value read from an inventory, with where it was written and its name there
 * (`all.hosts.node1.ansible_port`), so an error can send the reader straight to it.
 */
export interface Located {
  value: unknown;
  where: Where;
  field: string;
  /** 'host' when written for this host alone; 'group' when it came from a group or defaults. */
  scope: 'host' | 'group';
}

/** Variables by name, in the order they were written. */
export type VarSet = Map<string, Located>;

/** `file:line:col`; `file:line` for a file without columns (ansible.cfg: col 0), the name alone for no file (an environment variable: line 0). */
export const formatWhere = (w: Where): string => (w.line === 0 ? w.file : w.col === 0 ? `${w.file}:${w.line}` : `${w.file}:${w.line}:${w.col}`);

/** `file:line:col: field: problem`, one line. */
export function fieldError(where: Where, field: string, problem: string): UserError {
  return inputError(`${formatWhere(where)}: ${field}: ${problem}`);
}

/** How a value reads in a message: strings quoted (so "" and " " show), long ones cut. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') {
    const cut = value.length > 60 ? `${value.slice(0, 57)}...` : value;
    return JSON.stringify(cut);
  }
  return String(value);
}
