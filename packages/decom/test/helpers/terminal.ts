// The one way a test runs a command line on a pseudo-terminal, as a person at a terminal
// would: util-linux `script -qec COMMAND /dev/null` gives it a terminal of its own (decom's
// confirmations and password prompts ask only on one), forwards what the test types, and
// exits with the command's exit code. What the terminal showed (stdout and stderr, the
// typed text's echo) comes back as one text.
import { spawn, type ChildProcess } from 'node:child_process';
import { collected, inHome, type Home } from './home.js';

/** Text typed once the terminal has shown `after` (after the previous answer's prompt); `type` may be a function, called then (to change something first). */
export interface Answer {
  after: string;
  type: string | (() => string);
}

export interface TerminalOptions {
  cwd?: string;
  /** The whole environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Typed at once, before anything is asked (a terminal echoes it then); stdin ends after it unless `answers` are given. */
  input?: string;
  /** Each typed once its prompt shows, in order (a password typed after the prompt is not echoed); stdin stays open until the command ends. */
  answers?: Answer[];
  /** Run in a test home (home.ts's inHome: its mount namespace, HOME, cwd) instead of `cwd` and `env`. */
  home?: Home;
  /** Called with `script`'s process once spawned. */
  onSpawn?: (child: ChildProcess) => void;
  /** Killed (SIGTERM) after this long. Default 120 s. */
  timeoutMs?: number;
}

export interface OnTerminal {
  code: number;
  /** What the terminal showed, then anything `script` itself said on its stderr. */
  out: string;
  /** The prompts that were answered, in order: fewer than `answers` when one never showed. */
  answered: string[];
}

/** argv as one sh command line, each word single-quoted. */
export const shellLine = (argv: readonly string[]): string => argv.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');

/** Runs `command` (a sh command line) on a pseudo-terminal; resolves when it ends. Never rejects. */
export async function onTerminal(command: string, opts: TerminalOptions = {}): Promise<OnTerminal> {
  const argv = ['script', '-qec', command, '/dev/null'];
  const due = [...(opts.answers ?? [])];
  const answered: string[] = [];
  let shown = '';
  let from = 0;
  let child: ChildProcess | undefined;
  const answerShown = () => {
    for (let next = due[0]; next && child; next = due[0]) {
      const at = shown.indexOf(next.after, from);
      if (at < 0) return;
      from = at + next.after.length;
      due.shift();
      answered.push(next.after);
      child.stdin!.write(typeof next.type === 'function' ? next.type() : next.type);
    }
  };
  const how = {
    keepStdin: true,
    timeoutMs: opts.timeoutMs ?? 120_000,
    onSpawn: (c: ChildProcess) => {
      child = c;
      if (opts.input) c.stdin!.write(opts.input);
      if (!opts.answers?.length) c.stdin!.end();
      opts.onSpawn?.(c);
    },
    onStdout: (s: string) => {
      shown += s;
      answerShown();
    },
  };
  const o = opts.home
    ? await inHome(opts.home, argv, how)
    : await collected(spawn(argv[0]!, argv.slice(1), { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] }), how);
  child?.stdin?.end();
  return { code: o.code, out: `${o.stdout}${o.stderr}`, answered };
}
