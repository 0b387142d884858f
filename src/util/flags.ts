/** Command-line values that are more than a string: durations and counts, refused with the flag named. */
import { inputError } from './errors.js';

/** Seconds, or a number with s, m, h or d: 300, 90s, 5m, 1h, 7d. */
export function duration(flag: string, v: string, min = 1): number {
  const m = /^(\d+)(s|m|h|d)?$/.exec(v.trim());
  const sec = m ? Number(m[1]) * ({ s: 1, m: 60, h: 3600, d: 86400 }[m[2] ?? 's'] as number) : NaN;
  if (!(sec >= min)) throw inputError(`${flag} ${JSON.stringify(v)}: expected a duration such as ${min === 0 ? '0, ' : ''}300, 90s, 5m or 1h`);
  return sec;
}

/** A whole number of at least `min`; undefined when the flag is not given. */
export function count(flag: string, v: string | undefined, min: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw inputError(`${flag} ${JSON.stringify(v)}: expected a whole number of at least ${min}`);
  return n;
}
