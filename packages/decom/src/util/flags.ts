/**
 * Command-line values that are more than a string: durations, counts, seconds and
 * percentages, refused with the flag named. THE place a number on the command line is
 * read (decom's commands, and the sandbox's through `decom/flags`): a whole number is
 * digits only, blanks around it ignored; "1e3", "0x10", "5.0", "-1" and "" are not.
 */
import { inputError } from './errors.js';

/** A whole number as the command line writes one (digits only, blanks around ignored); undefined when it is not one. */
export function parseWhole(v: string): number | undefined {
  const t = v.trim();
  return /^\d+$/.test(t) ? Number(t) : undefined;
}

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
  const n = parseWhole(v);
  if (n === undefined || n < min) throw inputError(`${flag} ${JSON.stringify(v)}: expected a whole number of at least ${min}`);
  return n;
}

/** Whole seconds, 0 included (kubectl's --grace-period, --skip-wait-for-delete-timeout): no unit, unlike a duration. */
export function seconds(flag: string, v: string): number {
  const n = parseWhole(v);
  if (n === undefined) throw inputError(`${flag} ${JSON.stringify(v)}: expected whole seconds, e.g. 30`);
  return n;
}

/** A whole percentage from 0 to 100 (--max-fail-percent); undefined when the flag is not given. */
export function percent(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = parseWhole(v);
  if (n === undefined || n > 100) throw inputError(`${flag} ${JSON.stringify(v)}: expected a whole percentage from 0 to 100`);
  return n;
}

/** N, or P% of `total` rounded down and at least one (--serial); undefined when the flag is not given. */
export function countOrPercent(flag: string, v: string | undefined, total: number): number | undefined {
  if (v === undefined) return undefined;
  const pct = /^(\d+)%$/.exec(v.trim());
  if (pct) {
    const p = Number(pct[1]);
    if (p < 1 || p > 100) throw inputError(`${flag} ${v}: a percentage from 1% to 100%`);
    return Math.max(1, Math.floor((total * p) / 100));
  }
  return count(flag, v, 1);
}

/**
 * A whole number whose range the caller judges (the sandbox's --nodes, --services…:
 * their bounds are checked with the options, whoever gives them).
 */
export function wholeNumber(flag: string, v: string): number {
  const n = parseWhole(v);
  if (n === undefined) throw inputError(`${flag} takes a whole number, got ${JSON.stringify(v)}`);
  return n;
}

/**
 * A comma-separated list of known names (`--init systemd,none`): each name refused, by
 * the flag, when it is not one of `known`.
 */
export function choiceList<T extends string>(flag: string, noun: string, text: string, known: readonly T[]): T[] {
  const names = text.split(',').map((x) => x.trim());
  const unknown = names.find((n) => !(known as readonly string[]).includes(n));
  if (unknown !== undefined) throw inputError(`${flag}: unknown ${noun} "${unknown}"; known: ${known.join(', ')}`);
  return names as T[];
}
