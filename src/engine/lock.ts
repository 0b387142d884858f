/**
 * The node's lock: one run at a time per node. It belongs to the run's session —
 * the first ancestor of the script that is not sh, timeout or sudo (sshd's session
 * process, or decom itself with --connection local), named by PID and start time —
 * so a lock left by a run that died (decom killed, SSH cut) is taken over, with a
 * warning, and never waited on.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Transport } from '../transport/types.js';
import type { View } from '../probes/index.js';
import { roundTrip, type RoundTrip } from './round-trip.js';
import { PSTAT, q } from './sh.js';

export const LOCK_FILE = '/run/decom.lock';

/**
 * Sets ME to this session's "pid:start": the first ancestor that is not a shell,
 * timeout or sudo (sshd's session process over SSH; decom itself when local), so the
 * lock lives exactly as long as the connection. alive_ref PID:START says whether that
 * very process still runs.
 */
const SESSION = `${PSTAT}
me=$$; ME=
while pstat "$me"; do
  case $C in sh|dash|bash|zsh|ksh|mksh|fish|tcsh|csh|timeout|sudo) me=$PPARENT ;; *) ME="$me:$PSTART"; break ;; esac
done
alive_ref() { [ -n "$1" ] && pstat "\${1%:*}" && [ "$PSTATE" != Z ] && [ "\${1%:*}:$PSTART" = "$1" ]; }
`;

/** Who holds a node's lock: what a refusal names, so the SRE knows whom to wait for. */
export interface LockHolder {
  runId: string;
  /** `run` or `audit --fix`. */
  command: string;
  /** user@machine that started it. */
  operator: string;
  /** When it started (ISO 8601). */
  since: string;
}

/** A lock file line holds no newline, and nothing the node's shell could read as code (it is quoted, but kept plain). */
const plain = (v: string) => v.replace(/[^\w@.:+ -]/g, '?');

/**
 * Prints a `lock` section: "acquired", "taken RUN-ID" (a dead run's lock), "held
 * RUN-ID" followed by the holder's command, operator and start (a live run's; nothing
 * taken). With `check`, only reads: "free [RUN-ID]", or "held …".
 *
 * The file: "RUN-ID SESSION" on its first line (all an older decom wrote and reads),
 * then the command, the operator and the start time, a line each.
 */
export function acquireScript(me: LockHolder, check: boolean): string {
  const L = q(LOCK_FILE);
  const mine = `printf '%s %s\\n%s\\n%s\\n%s\\n' ${q(me.runId)} "$ME" ${q(plain(me.command))} ${q(plain(me.operator))} ${q(plain(me.since))}`;
  // One decision at a time: two runs finding the same dead lock must not both take it.
  // (--check only reads, and leaves no file behind.)
  const guard = check ? '' : `exec 9>>${L}.guard\ncommand -v flock >/dev/null && flock -w 10 9\n`;
  return `${SESSION}
s lock
${guard}old=; holder=; [ -r ${L} ] && read -r old holder < ${L}
if [ -n "$old" ] && alive_ref "$holder"; then echo "held $old"; tail -n +2 ${L} | head -n 3
elif ${check ? 'true' : 'false'}; then echo "free $old"
elif [ -n "$old" ]; then ${mine} > ${L}.new && mv -f ${L}.new ${L} && echo "taken $old"
else ${mine} > ${L} && echo acquired
fi
${check ? '' : 'exec 9>&-'}
`;
}

/** The `lock` section, read: the verdict, the other run's ID, and (held) who it is. */
export interface LockVerdict {
  verdict: 'acquired' | 'taken' | 'held' | 'free' | 'none';
  /** The holder's (held) or the dead run's (taken, free) run ID. */
  other?: string;
  holder?: Partial<LockHolder>;
}

export function parseLock(section: string): LockVerdict {
  const [first = '', command, operator, since] = section.trim().split('\n');
  const [verdict, other] = first.trim().split(' ');
  const v: LockVerdict = { verdict: (['acquired', 'taken', 'held', 'free'] as const).find((x) => x === verdict) ?? 'none' };
  if (other) v.other = other;
  if (v.verdict === 'held' && other) v.holder = { runId: other, ...(command ? { command } : {}), ...(operator ? { operator } : {}), ...(since ? { since } : {}) };
  return v;
}

/** The refusal's words: "another decom run (ID: audit --fix, by root@ops, since …) is working on this node now". */
export function heldBy(v: LockVerdict): string {
  const h = v.holder ?? {};
  const who = [h.command, h.operator && `by ${h.operator}`, h.since && `since ${h.since}`].filter(Boolean).join(', ');
  return `another decom run (${v.other ?? '?'}${who ? `: ${who}` : ''}) is working on this node now`;
}

/** Removes the lock if this run still holds it. */
export const releaseScript = (runId: string): string =>
  `old=; [ -r ${q(LOCK_FILE)} ] && read -r old _ < ${q(LOCK_FILE)}; [ "$old" = ${q(runId)} ] && rm -f ${q(LOCK_FILE)}; true`;

/** How often a run that waits for the lock (--wait-lock) asks again. */
const LOCK_POLL_MS = 1000;

/**
 * A host's first round trip: its lock and a probe of `views`. While another live run
 * holds the lock and `waitSec` allows, the lock alone is asked again every second;
 * once taken, the node is probed afresh (the holder changed it meanwhile).
 */
export async function lockAndProbe(
  t: Transport,
  o: { holder: LockHolder; check: boolean; waitSec?: number; sudo: boolean; views: ReadonlySet<View>; waiting?: (held: LockVerdict) => void },
): Promise<{ trip: RoundTrip; lock: LockVerdict }> {
  const ask = (views: ReadonlySet<View>) => roundTrip(t, { actions: [], views, sudo: o.sudo, timeoutSec: 60, preamble: acquireScript(o.holder, o.check) });
  let trip = await ask(o.views);
  let lock = parseLock(trip.sections.get('lock') ?? '');
  const deadline = Date.now() + (o.waitSec ?? 0) * 1000;
  let waited = false;
  while (lock.verdict === 'held' && Date.now() < deadline) {
    if (!waited) o.waiting?.(lock);
    waited = true;
    await sleep(Math.min(LOCK_POLL_MS, deadline - Date.now()));
    const poll = await ask(new Set());
    lock = parseLock(poll.sections.get('lock') ?? '');
  }
  if (waited && lock.verdict !== 'held') trip = { ...(await roundTrip(t, { actions: [], views: o.views, sudo: o.sudo, timeoutSec: 60 })), sections: trip.sections };
  return { trip, lock };
}
