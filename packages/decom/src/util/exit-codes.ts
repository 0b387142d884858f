/**
 * decom's exit codes, named once, and what each means for each command: what the
 * commands' help texts and the README's "Exit codes" table promise. Every command's
 * code is one of these, and every command folds its hosts' (and the API's) outcomes
 * into one the same way.
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

/**
 * The codes each command can end with, and what each means there: each command's
 * --help ends with exitCodesLine's line of it, and the README's "Exit codes" table has
 * a column per command and a row per code (test/docs-lists.test.ts holds them to this).
 * A code a command cannot return is absent. `sandbox`: the decom-sandbox package's.
 */
export const COMMAND_EXITS: Readonly<Record<string, Readonly<Partial<Record<ExitCode, string>>>>> = {
  run: {
    [EXIT.clean]: 'every targeted host clean',
    [EXIT.residue]: 'a host not clean, or a step failed',
    [EXIT.input]: 'bad input',
    [EXIT.unreachable]: 'a host unreachable, lost mid-run or past --max-output',
    [EXIT.refused]: 'refused by an interlock, nothing changed',
  },
  verify: {
    [EXIT.clean]: 'every host clean',
    [EXIT.residue]: 'residue found',
    [EXIT.input]: 'bad input',
    [EXIT.unreachable]: 'a host could not be checked',
  },
  ping: {
    [EXIT.clean]: 'every host answered',
    [EXIT.input]: 'bad input',
    [EXIT.unreachable]: 'a host unreachable, its become failed, or the API could not say which Node it is',
    [EXIT.refused]: 'a host is the wrong machine',
  },
  'hosts trust': {
    [EXIT.clean]: "every host's key trusted",
    [EXIT.input]: 'bad input, or no terminal to confirm on',
    [EXIT.unreachable]: 'a host could not be reached',
    [EXIT.refused]: 'a changed key, never recorded, or the confirmation declined',
  },
  audit: {
    [EXIT.clean]: 'nothing found',
    [EXIT.residue]: 'findings',
    [EXIT.input]: 'bad input',
    [EXIT.unreachable]: 'a host, the API, or one of its lists could not be checked',
    [EXIT.refused]: '--fix left a finding alone',
  },
  'audit-report': {
    [EXIT.clean]: 'nothing found',
    [EXIT.residue]: 'findings',
    [EXIT.input]: 'bad input',
    [EXIT.unreachable]: 'a shard could not check a host, the API, or one of its lists',
  },
  journal: {
    [EXIT.clean]: 'shown',
    [EXIT.input]: 'bad input',
  },
  sandbox: {
    [EXIT.clean]: 'done',
    [EXIT.residue]: 'the operation failed',
    [EXIT.input]: 'bad input',
  },
};

/** A command's codes in its --help: "Exit codes: 0 every host clean, 1 residue found, …". */
export function exitCodesLine(command: string): string {
  const codes = COMMAND_EXITS[command];
  if (!codes) throw new Error(`no exit codes are listed for decom ${command} (COMMAND_EXITS)`);
  return `Exit codes: ${Object.entries(codes).map(([code, meaning]) => `${code} ${meaning}`).join('; ')}.`;
}

/** Which code wins when several apply: 3 over 4, 4 over 1, 1 over 0 (2 is raised before anything is judged, and wins over all). */
const RANK: readonly ExitCode[] = [EXIT.clean, EXIT.residue, EXIT.refused, EXIT.unreachable, EXIT.input];

/** A command's code from its outcomes' (each host's, the API's, the fix's): the one that wins; 0 for none. */
export function foldExit(codes: Iterable<ExitCode>): ExitCode {
  let worst: ExitCode = EXIT.clean;
  for (const c of codes) if (RANK.indexOf(c) > RANK.indexOf(worst)) worst = c;
  return worst;
}
