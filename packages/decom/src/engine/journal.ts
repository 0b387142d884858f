/**
 * The run's journal: JSON lines, one per event, written synchronously so a run
 * killed at any point has recorded everything up to it. It holds commands and output
 * excerpts, never a secret: the become password travels only on sudo's stdin, and no
 * action prints credentials. `decom run` and `decom audit --fix` write the same
 * format in the same place; `decom journal` reads them.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { homedir, hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { inputError } from '../util/errors.js';

/** Where runs keep their journals and the operator's backup copies. */
export function stateDir(flag?: string): string {
  if (flag) return flag;
  if (process.env.DECOM_STATE_DIR) return process.env.DECOM_STATE_DIR;
  return join(process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'decom');
}

/** A run's ID: its start time (sortable), and 6 hex digits so two runs of one second differ. */
export const newRunId = (): string => `${new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}-${randomBytes(3).toString('hex')}`;

/** Who runs decom, as a node's lock names them: user@machine. */
export function operatorName(): string {
  let user = process.env.USER ?? '';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry for this uid (a container): $USER, or the uid
  }
  return `${user || process.getuid?.() || '?'}@${hostname()}`;
}

export class Journal {
  readonly file: string;
  constructor(
    readonly dir: string,
    readonly runId: string,
  ) {
    this.file = join(dir, 'runs', `${runId}.jsonl`);
    try {
      mkdirSync(join(dir, 'runs'), { recursive: true, mode: 0o700 });
      appendFileSync(this.file, '', { mode: 0o600 });
    } catch (e) {
      // Nothing changes a node unjournaled: a run or fix that cannot write its journal does not start.
      throw inputError(`cannot write the journal in ${dir} (${(e as Error).message.split('\n')[0]}): pass --state-dir DIR (a writable folder) or set DECOM_STATE_DIR; nothing was changed`);
    }
  }

  write(event: Record<string, unknown>): void {
    appendFileSync(this.file, `${JSON.stringify({ ts: new Date().toISOString(), run: this.runId, ...event })}\n`, { mode: 0o600 });
  }
}

export type JournalEvent = Record<string, unknown> & { ts: string; run: string; event: string; host?: string };

/** A journal's events; a last line being written right now (a run in progress) is left out. */
export function readJournal(file: string): JournalEvent[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  return lines.slice(0, -1).flatMap((l) => {
    try {
      return [JSON.parse(l) as JournalEvent];
    } catch {
      return [];
    }
  });
}

/**
 * A host's events of that name in a run's journal (`dir` the state dir), then in the runs
 * it finished (its `resume` events for the host), and so on back: what a killed run
 * recorded is read by the run that finishes its work. A journal gone is skipped.
 */
export function hostEvents(dir: string, runId: string, host: string, event: string): JournalEvent[] {
  const out: JournalEvent[] = [];
  const seen = new Set<string>();
  for (let run: string | undefined = runId; run && !seen.has(run); ) {
    seen.add(run);
    const file = join(dir, 'runs', `${run}.jsonl`);
    const events = existsSync(file) ? readJournal(file).filter((e) => e.host === host) : [];
    out.push(...events.filter((e) => e.event === event));
    const resumed = events.find((e) => e.event === 'resume')?.finishes;
    run = typeof resumed === 'string' ? resumed : undefined;
  }
  return out;
}

/** The journals in a state dir, newest first. */
export function journalFiles(dir: string): { runId: string; file: string }[] {
  const runs = join(dir, 'runs');
  if (!existsSync(runs)) return [];
  return readdirSync(runs)
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) => ({ runId: f.slice(0, -'.jsonl'.length), file: join(runs, f) }))
    .sort((a, b) => (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0));
}
