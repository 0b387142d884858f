/**
 * decom's exit codes, named once: what the commands' help texts (cli.ts) and the
 * README's "Exit codes" table promise. Every command's code is one of these, and
 * every command folds its hosts' (and the API's) outcomes into one the same way.
 */

export const EXIT = {
  /** 0: every host clean, nothing found, done. */
  clean: 0,
  /** 1: residue found or left, a step or a remedy failed (what is left is named). */
  residue: 1,
  /** 2: bad input (inventory, playbook, flag, kubeconfig, no confirmation possible); nothing is contacted. */
  input: 2,
  /** 3: a host (or the API, or one of its lists) could not be reached or checked, or was lost mid-run; the rest is still reported. */
  unreachable: 3,
  /** 4: refused by an interlock, or a confirmation declined (a run: nothing changed; a fix: the finding left alone). */
  refused: 4,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Which code wins when several apply: 3 over 4, 4 over 1, 1 over 0 (2 is raised before anything is judged, and wins over all). */
const RANK: readonly ExitCode[] = [EXIT.clean, EXIT.residue, EXIT.refused, EXIT.unreachable, EXIT.input];

/** A command's code from its outcomes' (each host's, the API's, the fix's): the one that wins; 0 for none. */
export function foldExit(codes: Iterable<ExitCode>): ExitCode {
  let worst: ExitCode = EXIT.clean;
  for (const c of codes) if (RANK.indexOf(c) > RANK.indexOf(worst)) worst = c;
  return worst;
}
