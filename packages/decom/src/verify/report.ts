/**
 * Findings as people read them: per kind, how many and which, in a few lines. A dirty
 * node has thousands of findings (every iptables rule, every mount of every pod), and
 * one line each buries what matters. `decom verify` prints this by default, and the
 * reset prints what is left with it.
 */
import type { Finding } from '../rules/residue.js';

export interface KindSummary {
  kind: Finding['kind'];
  /** How many findings of this kind. */
  count: number;
  /** The first distinct subjects, sorted (numbers as numbers). */
  subjects: string[];
  /** How many distinct subjects are not in `subjects`. */
  more: number;
}

/**
 * One entry per kind, in the order the kinds first appear. Subjects are listed up to
 * `maxSubjects`, and only while they fit in about `maxChars` (container ids and mount
 * paths are long); the first one is always listed, whole.
 */
export function summarizeFindings(findings: Finding[], maxSubjects = 4, maxChars = 100): KindSummary[] {
  const byKind = new Map<Finding['kind'], { count: number; subjects: Set<string> }>();
  for (const f of findings) {
    const k = byKind.get(f.kind) ?? { count: 0, subjects: new Set<string>() };
    k.count++;
    k.subjects.add(f.subject);
    byKind.set(f.kind, k);
  }
  return [...byKind].map(([kind, { count, subjects }]) => {
    const sorted = [...subjects].sort(bySubject);
    const shown: string[] = [];
    let width = 0;
    for (const s of sorted) {
      if (shown.length === maxSubjects || (shown.length > 0 && width + 2 + s.length > maxChars)) break;
      width += (shown.length ? 2 : 0) + s.length;
      shown.push(s);
    }
    return { kind, count, subjects: shown, more: sorted.length - shown.length };
  });
}

/** Ports and PIDs in numeric order (2379 before 10248), before anything else, which sorts as written. */
function bySubject(a: string, b: string): number {
  const [na, nb] = [/^\d+$/.test(a), /^\d+$/.test(b)];
  if (na && nb) return Number(a) - Number(b);
  if (na !== nb) return na ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * One aligned line per kind: `kind  count  subject, subject, … (+N)`, each after
 * `prefix` (e.g. the host name). Subjects are escaped with `printable`.
 */
export function renderSummary(summary: KindSummary[], prefix = ''): string[] {
  const kindW = Math.max(0, ...summary.map((s) => s.kind.length));
  const countW = Math.max(0, ...summary.map((s) => String(s.count).length));
  return summary.map((s) => {
    const subjects = s.subjects.map(printable).join(', ') + (s.more ? `, … (+${s.more})` : '');
    return `${prefix}${s.kind.padEnd(kindW)}  ${String(s.count).padStart(countW)}  ${subjects}`;
  });
}

/**
 * Control characters as escapes (\n, \t, \x1b): a mount target, a file name or a
 * process title on the node is anyone's text, and must not move the cursor or forge a
 * line of a report. JSON output escapes them itself and keeps them exact.
 */
export const printable = (s: string): string =>
  s.replace(/[\x00-\x1f\x7f]/g, (c) =>
    c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );

