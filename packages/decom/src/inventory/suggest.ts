/** "Did you mean": the known names nearest to a mistyped host, group, playbook, step or field name. */

/** Up to `max` names closest to a mistyped one, closest first; case differences count as nothing. */
export function nearestNames(wanted: string, names: Iterable<string>, max = 3): string[] {
  const w = wanted.toLowerCase();
  // Far-off names are noise: allow about one edit per two characters, at most 3.
  const limit = Math.min(3, Math.ceil(w.length / 2));
  return [...new Set(names)]
    .map((name) => ({ name, d: editDistance(w, name.toLowerCase()) }))
    .filter((c) => c.d <= limit)
    .sort((a, b) => a.d - b.d || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .slice(0, max)
    .map((c) => c.name);
}

/** Levenshtein distance, two rows. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
    }
    prev = row;
  }
  return prev[b.length]!;
}
