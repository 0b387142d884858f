/**
 * A flag of a process, read from its command line as the probe sent it: THE way every
 * rule reads one. The probe cuts a long command line (CMDLINE_BYTES, script.ts), so on a
 * cut line a flag not seen may have fallen off, and a value that runs to the cut may be
 * cut short: both are unknown, never absent.
 */
import type { Proc } from './state.js';

/** A flag whose value cannot be told: the process's command line was cut before it could show whole. */
export const UNKNOWN_FLAG = Symbol('unknown: the command line was cut');

/** The flag's value; undefined when the command line does not have it; UNKNOWN_FLAG when the cut may have taken it. */
export type FlagValue = string | undefined | typeof UNKNOWN_FLAG;

/** `--flag=V` or `--flag V`, or with one dash (etcd's and the shim's Go flags take all four). */
export function procFlag(p: Pick<Proc, 'args' | 'cut'>, flag: string): FlagValue {
  const m = new RegExp(`(?:^|\\s)--?${flag}(?:=|\\s+)(\\S+)`).exec(p.args);
  if (!p.cut) return m?.[1];
  return m && m.index + m[0].length < p.args.length ? m[1] : UNKNOWN_FLAG;
}
