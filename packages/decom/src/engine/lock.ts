/**
 * The node's lock: one run at a time per node. It belongs to the run's session —
 * the first ancestor of the script that is not sh, timeout or sudo (sshd's session
 * process, or decom itself with --connection local), named by PID and start time —
 * so a lock left by a run that died (decom killed, SSH cut) is taken over, with a
 * warning, and never waited on.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TransportError, type Transport } from '../transport/types.js';
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

/** The command a fix's lock names: a dead fix's lock is anyone's to take, a dead run's only a run's (it finishes that run's work). */
export const FIX_COMMAND = 'audit --fix';

/** A lock file line holds no newline, and nothing the node's shell could read as code (it is quoted, but kept plain). */
const plain = (v: string) => v.replace(/[^\w@.:+ -]/g, '?');

/**
 * Prints a `lock` section: "acquired"; "taken RUN-ID" (a dead run's lock, taken over);
 * "held RUN-ID" (a live run's: nothing taken); "unfinished RUN-ID" (with `keepRuns`,
 * a dead `decom run`'s lock is left for a run to finish: nothing taken); with `check`,
 * only reads: "free [RUN-ID]" or "held …". Each verdict naming another run is followed
 * by that run's command, operator and start, a line each.
 *
 * The file: "RUN-ID SESSION" on its first line (all an older decom wrote and reads),
 * then the command, the operator and the start time, a line each.
 */
export function acquireScript(me: LockHolder, check: boolean, keepRuns = false): string {
  const L = q(LOCK_FILE);
  const mine = `printf '%s %s\\n%s\\n%s\\n%s\\n' ${q(me.runId)} "$ME" ${q(plain(me.command))} ${q(plain(me.operator))} ${q(plain(me.since))}`;
  // One decision at a time: two runs finding the same dead lock must not both take it.
  // (--check only reads, and leaves no file behind.)
  const guard = check ? '' : `exec 9>>${L}.guard\ncommand -v flock >/dev/null && flock -w 10 9\n`;
  return `${SESSION}
s lock
lock_who() { tail -n +2 ${L} 2>/dev/null | head -n 3; }
${guard}old=; holder=; [ -r ${L} ] && read -r old holder < ${L}
if [ -n "$old" ] && alive_ref "$holder"; then echo "held $old"; lock_who
elif ${check ? 'true' : 'false'}; then echo "free $old"; [ -z "$old" ] || lock_who
elif [ -n "$old" ] && ${keepRuns ? 'true' : 'false'} && [ "$(sed -n 2p ${L})" != ${q(FIX_COMMAND)} ]; then echo "unfinished $old"; lock_who
elif [ -n "$old" ]; then who=$(lock_who); ${mine} > ${L}.new && mv -f ${L}.new ${L} && { echo "taken $old"; [ -z "$who" ] || printf '%s\\n' "$who"; }
else ${mine} > ${L} && echo acquired
fi
${check ? '' : 'exec 9>&-'}
`;
}

/** The `lock` section, read: the verdict, the other run's ID, and who that run is (or was). */
export interface LockVerdict {
  verdict: 'acquired' | 'taken' | 'held' | 'free' | 'unfinished' | 'none';
  /** The holder's (held) or the dead run's (taken, unfinished, free) run ID. */
  other?: string;
  holder?: Partial<LockHolder>;
}

export function parseLock(section: string): LockVerdict {
  const [first = '', command, operator, since] = section.trim().split('\n');
  const [verdict, other] = first.trim().split(' ');
  const v: LockVerdict = { verdict: (['acquired', 'taken', 'held', 'free', 'unfinished'] as const).find((x) => x === verdict) ?? 'none' };
  if (other) {
    v.other = other;
    v.holder = { runId: other, ...(command ? { command } : {}), ...(operator ? { operator } : {}), ...(since ? { since } : {}) };
  }
  return v;
}

/** "RUN-ID: audit --fix, by root@ops, since …": another run, as a refusal names it. */
function named(v: LockVerdict): string {
  const h = v.holder ?? {};
  const who = [h.command, h.operator && `by ${h.operator}`, h.since && `since ${h.since}`].filter(Boolean).join(', ');
  return `${v.other ?? '?'}${who ? `: ${who}` : ''}`;
}

/** The refusal's words: "another decom run (ID: audit --fix, by root@ops, since …) is working on this node now". */
const heldBy = (v: LockVerdict): string => `another decom run (${named(v)}) is working on this node now`;

/** Removes the lock if this run still holds it (safe to ask on any path: another run's lock is left). */
export const releaseScript = (runId: string): string =>
  `old=; [ -r ${q(LOCK_FILE)} ] && read -r old _ < ${q(LOCK_FILE)}; [ "$old" = ${q(runId)} ] && rm -f ${q(LOCK_FILE)}; true`;

/** How often a run that waits for the lock (--wait-lock) asks again. */
const LOCK_POLL_MS = 1000;

/** A host's lock as its first round trip found it: the node probed, and whether the run may act. */
export interface NodeLock {
  trip: RoundTrip;
  lock: LockVerdict;
  /** Why the host is refused (another run holds the lock, or left work to finish): nothing was changed. */
  refused?: string;
  /** The dead run whose lock this one took over. */
  finishes?: string;
}

/**
 * A host's first round trip, for a run and a fix alike: its lock and a probe of
 * `views`, journaled as the host's start. While another live run holds the lock and
 * `waitSec` allows, the lock alone is asked again every second (journaled once as a
 * wait); once taken, the node is probed afresh (the holder changed it meanwhile). A
 * lock that could not be written at all fails the host: nothing acts unlocked.
 */
export async function openNodeLock(
  t: Transport,
  o: { holder: LockHolder; check: boolean; waitSec?: number; sudo: boolean; views: ReadonlySet<View>; keepRuns?: boolean; journal: (e: Record<string, unknown>) => void },
): Promise<NodeLock> {
  const ask = (views: ReadonlySet<View>) => roundTrip(t, { actions: [], views, sudo: o.sudo, timeoutSec: 60, preamble: acquireScript(o.holder, o.check, o.keepRuns) });
  let trip = await ask(o.views);
  let lock = parseLock(trip.sections.get('lock') ?? '');
  const deadline = Date.now() + (o.waitSec ?? 0) * 1000;
  let waited = false;
  while (lock.verdict === 'held' && Date.now() < deadline) {
    if (!waited) o.journal({ event: 'lock-wait', holder: lock.holder });
    waited = true;
    await sleep(Math.min(LOCK_POLL_MS, deadline - Date.now()));
    lock = parseLock((await ask(new Set())).sections.get('lock') ?? '');
  }
  if (waited && lock.verdict !== 'held') trip = await roundTrip(t, { actions: [], views: o.views, sudo: o.sudo, timeoutSec: 60 });
  o.journal({ event: 'host-start', check: o.check, hostname: trip.state.hostname, lock: lock.verdict, ...(lock.other ? { other: lock.other } : {}), ...(lock.holder ? { holder: lock.holder } : {}) });
  const out: NodeLock = { trip, lock };
  const locked = lock.verdict === 'acquired' || lock.verdict === 'taken';
  if (lock.verdict === 'held') out.refused = `${heldBy(lock)}; try again when it ends, or wait for it (--wait-lock)`;
  else if (lock.verdict === 'unfinished') out.refused = `decom run ${named(lock)} did not finish on this node (killed, or its connection was lost): finish it first by running it again`;
  else if (lock.verdict === 'taken' && lock.other) out.finishes = lock.other;
  else if (!locked && !o.check) throw new TransportError(t.host, 'exec', `could not take the node's lock (${(trip.sections.get('lock') ?? '').trim() || 'no answer'})`);
  return out;
}
