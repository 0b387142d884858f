/** The private folder of this decom process's OpenSSH control sockets, forwarded sockets and askpass helper: made on first use, removed when the last connection closes or the process exits. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let dir: string | undefined;
let users = 0;
let seq = 0;

/** Signals that end decom by default: the folder is removed, then the signal raised again, so decom still ends by it. */
const ENDING_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const onSignal = (signal: NodeJS.Signals) => {
  removeControlDir();
  process.kill(process.pid, signal);
};

/**
 * The folder (mode 0700, under $TMPDIR: the CronJob mounts an emptyDir there, its root
 * being read-only) and a short name in it for one connection's files. Unix socket paths
 * hold at most 107 bytes, and ssh adds 17 to a control path while it binds: names stay
 * short, numbered, never the host's.
 */
export function takeControlDir(): { dir: string; prefix: string } {
  if (dir === undefined) {
    dir = mkdtempSync(join(tmpdir(), 'decom-ssh-'));
    process.once('exit', removeControlDir);
    for (const s of ENDING_SIGNALS) process.once(s, onSignal);
  }
  users += 1;
  seq += 1;
  return { dir, prefix: join(dir, String(seq)) };
}

/** A connection is done with the folder: the last one removes it. */
export function releaseControlDir(): void {
  users -= 1;
  if (users <= 0) removeControlDir();
}

function removeControlDir(): void {
  if (dir === undefined) return;
  rmSync(dir, { recursive: true, force: true });
  process.off('exit', removeControlDir);
  for (const s of ENDING_SIGNALS) process.off(s, onSignal);
  dir = undefined;
  users = 0;
}
