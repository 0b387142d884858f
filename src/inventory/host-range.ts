/**
 * Ansible host ranges in inventory host names: `node[1:3]` is node1..node3,
 * `node[01:10]` keeps the zero padding, `[a:c]` counts letters, `[1:9:2]` steps,
 * and several ranges in one name multiply. Only inventory files use these: targets
 * on the command line are exact names.
 */

/** A malformed range; the caller adds the file position. */
export class HostRangeError extends Error {}

const MAX_HOSTS = 10_000;
const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

export function expandHostPattern(pattern: string): string[] {
  const hosts = expand(pattern);
  if (hosts.length > MAX_HOSTS) throw new HostRangeError(`host range ${pattern} makes more than ${MAX_HOSTS} hosts`);
  return hosts;
}

function expand(pattern: string): string[] {
  const open = pattern.indexOf('[');
  if (open < 0) {
    if (pattern.includes(']')) throw new HostRangeError(`host name ${pattern} has a "]" without "["`);
    return [pattern];
  }
  const close = pattern.indexOf(']', open);
  if (close < 0) throw new HostRangeError(`host range in ${pattern} has no closing "]"`);
  const head = pattern.slice(0, open);
  const tail = pattern.slice(close + 1);
  const values = rangeValues(pattern, pattern.slice(open + 1, close));
  if (values.length > MAX_HOSTS) throw new HostRangeError(`host range ${pattern} makes more than ${MAX_HOSTS} hosts`);
  return values.flatMap((v) => expand(`${head}${v}${tail}`));
}

function rangeValues(pattern: string, range: string): string[] {
  const bounds = range.split(':');
  if (bounds.length !== 2 && bounds.length !== 3) {
    throw new HostRangeError(`host range in ${pattern} must be [begin:end] or [begin:end:step]`);
  }
  const begin = bounds[0] || '0';
  const end = bounds[1] ?? '';
  const stepText = bounds[2] ?? '1';
  if (!/^[1-9][0-9]*$/.test(stepText)) throw new HostRangeError(`host range in ${pattern} has step "${stepText}", expected a whole number from 1`);
  const step = Number(stepText);
  if (end === '') throw new HostRangeError(`host range in ${pattern} has no end`);

  if (/^[a-zA-Z]$/.test(begin) && /^[a-zA-Z]$/.test(end)) {
    const from = LETTERS.indexOf(begin);
    const to = LETTERS.indexOf(end);
    if (from > to) throw new HostRangeError(`host range in ${pattern} runs backwards`);
    const letters: string[] = [];
    for (let i = from; i <= to; i += step) letters.push(LETTERS[i]!);
    return letters;
  }
  if (!/^[0-9]+$/.test(begin) || !/^[0-9]+$/.test(end)) {
    throw new HostRangeError(`host range in ${pattern} must count numbers (1:3) or single letters (a:c)`);
  }
  // A leading zero asks for fixed width: [01:10] gives 01..10, and both ends must agree.
  const width = begin.length > 1 && begin.startsWith('0') ? begin.length : 0;
  if (width && end.length !== width) {
    throw new HostRangeError(`host range in ${pattern} must give begin and end with the same number of digits`);
  }
  const from = Number(begin);
  const to = Number(end);
  if (from > to) throw new HostRangeError(`host range in ${pattern} runs backwards`);
  if ((to - from) / step >= MAX_HOSTS) throw new HostRangeError(`host range ${pattern} makes more than ${MAX_HOSTS} hosts`);
  const numbers: string[] = [];
  for (let i = from; i <= to; i += step) numbers.push(String(i).padStart(width, '0'));
  return numbers;
}
