/** --tags and --skip-tags: which steps of a playbook run, by Ansible's tag rules. */

/** What --tags / --skip-tags asked for; each entry may hold several tags separated by commas. */
export interface TagSelection {
  tags?: readonly string[];
  skipTags?: readonly string[];
}

/** Tags with a meaning of their own, as in Ansible; never "unknown". */
export const SPECIAL_TAGS = ['all', 'always', 'never', 'tagged', 'untagged'] as const;

const split = (list: readonly string[] | undefined): Set<string> =>
  new Set((list ?? []).flatMap((t) => t.split(',')).map((t) => t.trim()).filter(Boolean));

/**
 * The steps --tags/--skip-tags select, in order, with Ansible's rules (its
 * `Taggable.evaluate_tags`): without --tags everything runs but steps tagged `never`;
 * with --tags only steps with one of them run, plus those tagged `always`; --skip-tags
 * then removes steps with any skipped tag (`always` ones too when `always` itself is
 * skipped). `unknownTags` lists tags asked for that no step has, so the CLI can refuse
 * a typo instead of quietly running nothing.
 */
export function selectSteps<S extends { tags: readonly string[] }>(
  steps: readonly S[],
  selection: TagSelection = {},
): { steps: S[]; unknownTags: string[] } {
  const only = split(selection.tags);
  if (only.size === 0) only.add('all');
  const skip = split(selection.skipTags);
  const overlaps = (a: Set<string>, b: Set<string>) => [...a].some((t) => b.has(t));

  const chosen = steps.filter((step) => {
    const untagged = step.tags.length === 0;
    const tags = new Set(untagged ? ['untagged'] : step.tags);
    const run =
      tags.has('always') ||
      (only.has('all') && !tags.has('never')) ||
      overlaps(tags, only) ||
      (only.has('tagged') && !untagged && !tags.has('never'));
    if (!run) return false;
    if (skip.has('all')) return tags.has('always') && !skip.has('always');
    return !overlaps(tags, skip) && !(skip.has('tagged') && !untagged);
  });

  const known = new Set<string>([...SPECIAL_TAGS, ...steps.flatMap((s) => s.tags)]);
  const unknownTags = [...new Set([...only, ...skip])].filter((t) => !known.has(t));
  return { steps: chosen, unknownTags };
}
