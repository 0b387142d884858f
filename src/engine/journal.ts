/**
 * The run's journal: JSON lines, one per event, written synchronously so a run
 * killed at any point has recorded everything up to it. It holds commands and output
 * excerpts, never a secret: the become password travels only on sudo's stdin, and no
 * action prints credentials.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where runs keep their journals and the operator's backup copies. */
export function stateDir(flag?: string): string {
  if (flag) return flag;
  if (process.env.DECOM_STATE_DIR) return process.env.DECOM_STATE_DIR;
  return join(process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'decom');
}

export class Journal {
  readonly file: string;
  constructor(
    dir: string,
    readonly runId: string,
  ) {
    mkdirSync(join(dir, 'runs'), { recursive: true, mode: 0o700 });
    this.file = join(dir, 'runs', `${runId}.jsonl`);
  }

  write(event: Record<string, unknown>): void {
    appendFileSync(this.file, `${JSON.stringify({ ts: new Date().toISOString(), run: this.runId, ...event })}\n`, { mode: 0o600 });
  }
}
