/** Running programs on this machine without a shell, and quoting for POSIX sh (shQuote, here-documents). */
import { spawn } from 'node:child_process';

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a program without a shell (arguments are never re-parsed), optionally
 * feeding stdin. Never rejects on a non-zero exit: callers judge `code`. With
 * `timeoutMs`, the program runs in a process group of its own, killed whole at the
 * deadline (`code` null): what it started (ssh's Match exec) keeps its pipes open
 * after the program itself is gone.
 */
export function run(
  file: string,
  args: readonly string[],
  opts: { input?: string | Buffer; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'], detached: opts.timeoutMs !== undefined });
    let timedOut = false;
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            try {
              process.kill(-child.pid!, 'SIGKILL');
            } catch {
              // already gone
            }
          }, opts.timeoutMs);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => (clearTimeout(timer), reject(e)));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: timedOut ? null : code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() });
    });
    child.stdin.on('error', () => {}); // the program may exit before reading all input
    child.stdin.end(opts.input ?? '');
  });
}

/** Like run(), but a non-zero exit is an error carrying the program's stderr. */
export async function runOk(
  file: string,
  args: readonly string[],
  opts: Parameters<typeof run>[2] = {},
): Promise<string> {
  const r = await run(file, args, opts);
  if (r.code !== 0) {
    const why = (r.stderr.trim() || r.stdout.trim()).split('\n').slice(-3).join(' | ');
    throw new Error(`${file} ${args.join(' ')}: exit ${r.code}${why ? `: ${why}` : ''}`);
  }
  return r.stdout;
}

/** Quotes one word for POSIX sh (dash): single quotes, no bash-only $'…'. */
export const shQuote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * `COMMAND <<'TAG'` with `text` as its stdin, for a script that travels on stdin
 * itself (megabytes do not fit in an argument). Quoted: nothing in it is expanded. The
 * tag is made longer until no line of the text is the tag. A text not ending in a
 * newline gets one (the here-document's last line needs it).
 */
export function hereDocument(command: string, text: string, tag = 'DECOM_EOF'): string {
  const lines = new Set(text.split('\n'));
  let eof = tag;
  for (let i = 1; lines.has(eof); i++) eof = `${tag}_${i}`;
  return `${command} <<'${eof}'\n${text}${text.endsWith('\n') || text === '' ? '' : '\n'}${eof}`;
}
