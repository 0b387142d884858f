/**
 * CronJob schedules as kube-controller-manager reads them: robfig/cron v3's ParseStandard
 * (five fields: minute hour day-of-month month day-of-week; `*`, `?`, ranges `a-b`,
 * steps `/n`, lists `a,b`, JAN-DEC and SUN-SAT names; @yearly @annually @monthly @weekly
 * @daily @midnight @hourly and `@every <duration>`), in UTC only: the sandbox's clock.
 */

const FIELDS = [
  { what: 'minute', min: 0, max: 59 },
  { what: 'hour', min: 0, max: 23 },
  { what: 'day of month', min: 1, max: 31 },
  { what: 'month', min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'], base: 1 },
  { what: 'day of week', min: 0, max: 6, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'], base: 0 },
] as const;

const DESCRIPTORS: Record<string, string> = {
  '@yearly': '0 0 1 1 *', '@annually': '0 0 1 1 *', '@monthly': '0 0 1 * *', '@weekly': '0 0 * * 0', '@daily': '0 0 * * *', '@midnight': '0 0 * * *', '@hourly': '0 * * * *',
};

export interface Schedule {
  /** The first time strictly after `ms` (epoch milliseconds), or undefined within five years none. */
  next(ms: number): number | undefined;
}

/** One field's allowed values, and whether it was `*`/`?` (robfig's star bit: day of month and week then AND, not OR). */
interface Field {
  values: Set<number>;
  star: boolean;
}

function parseField(expr: string, f: (typeof FIELDS)[number]): Field {
  const values = new Set<number>();
  let star = false;
  const num = (s: string): number => {
    const names = 'names' in f ? (f.names as readonly string[]) : [];
    const i = names.indexOf(s.toLowerCase());
    if (i >= 0) return i + ('base' in f ? f.base : 0);
    if (!/^\d+$/.test(s)) throw new Error(`failed to parse int from ${s}: strconv.Atoi: parsing "${s}": invalid syntax`);
    return Number(s);
  };
  for (const part of expr.split(',')) {
    const [range = '', stepText, extra] = part.split('/');
    if (extra !== undefined) throw new Error(`too many slashes: ${part}`);
    const bounds = range.split('-');
    if (bounds.length > 2) throw new Error(`too many hyphens: ${part}`);
    let lo: number;
    let hi: number;
    let isStar = false;
    if (range === '*' || range === '?') [lo, hi, isStar] = [f.min, f.max, true];
    else {
      lo = num(bounds[0] ?? '');
      hi = bounds.length === 2 ? num(bounds[1] ?? '') : lo;
    }
    let step = 1;
    if (stepText !== undefined) {
      step = num(stepText);
      if (step <= 0) throw new Error(`step of range should be a positive number: ${part}`);
      if (bounds.length === 1 && !isStar) hi = f.max; // "N/step" is "N-max/step"
      if (step > 1) isStar = false;
    }
    if (lo < f.min) throw new Error(`beginning of range (${lo}) below minimum (${f.min}): ${part}`);
    if (hi > f.max) throw new Error(`end of range (${hi}) above maximum (${f.max}): ${part}`);
    if (lo > hi) throw new Error(`beginning of range (${lo}) beyond end of range (${hi}): ${part}`);
    for (let v = lo; v <= hi; v += step) values.add(v);
    star ||= isStar;
  }
  return { values, star };
}

/** `@every 1h30m`: a constant delay, in whole seconds (at least one), as robfig's Every. */
function every(text: string): Schedule {
  const m = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?$/.exec(text);
  if (!text || !m) throw new Error(`failed to parse duration @every ${text}: time: invalid duration "${text}"`);
  const seconds = Math.max(1, Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0));
  return { next: (ms) => Math.floor(ms / 1000) * 1000 + seconds * 1000 };
}

/** Parses a schedule; throws with robfig's words when it is not one. */
export function parseSchedule(spec: string): Schedule {
  const text = spec.trim();
  if (/^(TZ|CRON_TZ)=/.test(text)) throw new Error('cannot use TZ or CRON_TZ in schedule, use timeZone field instead');
  if (text.startsWith('@every ')) return every(text.slice(7).trim());
  const expanded = text.startsWith('@') ? DESCRIPTORS[text] : text;
  if (expanded === undefined) throw new Error(`unrecognized descriptor: ${text}`);
  const parts = expanded.split(/\s+/).filter(Boolean);
  if (parts.length !== 5) throw new Error(`expected exactly 5 fields, found ${parts.length}: [${parts.join(' ')}]`);
  const [minute, hour, dom, month, dow] = parts.map((p, i) => parseField(p, FIELDS[i] as (typeof FIELDS)[number])) as [Field, Field, Field, Field, Field];
  const dayMatches = (d: Date) => {
    const a = dom.values.has(d.getUTCDate());
    const b = dow.values.has(d.getUTCDay());
    return dom.star || dow.star ? a && b : a || b;
  };
  return {
    next(ms) {
      // robfig's Next: the next whole minute, then roll month, day, hour and minute forward to a match.
      const t = new Date(Math.floor(ms / 60_000) * 60_000 + 60_000);
      const limit = t.getTime() + 5 * 366 * 86_400_000;
      while (t.getTime() <= limit) {
        if (!month.values.has(t.getUTCMonth() + 1)) t.setUTCMonth(t.getUTCMonth() + 1, 1), t.setUTCHours(0, 0);
        else if (!dayMatches(t)) t.setUTCDate(t.getUTCDate() + 1), t.setUTCHours(0, 0);
        else if (!hour.values.has(t.getUTCHours())) t.setUTCHours(t.getUTCHours() + 1, 0);
        else if (!minute.values.has(t.getUTCMinutes())) t.setUTCMinutes(t.getUTCMinutes() + 1);
        else return t.getTime();
      }
      return undefined;
    },
  };
}

/**
 * The latest schedule time in (after, now], as the CronJob controller's mostRecentScheduleTime:
 * a run missed while nothing ran is made once, not once per missed time. Searched back over
 * growing windows so a minutely schedule after a long stop does not walk every minute.
 */
export function mostRecent(s: Schedule, after: number, now: number): number | undefined {
  for (const window of [2 * 3600e3, 2 * 86_400e3, 63 * 86_400e3, Infinity]) {
    const from = Math.max(after, now - window);
    let t = s.next(from);
    if (t === undefined || t > now) continue;
    for (let n = s.next(t); n !== undefined && n <= now; n = s.next(n)) t = n;
    return t;
  }
  return undefined;
}
