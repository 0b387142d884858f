/**
 * The node's lock: one run at a time per node. It belongs to the run's session —
 * the first ancestor of the script that is not sh, timeout or sudo (sshd's session
 * process, or decom itself with --connection local), named by PID and start time —
 * and to its work: each step is its own round trip, so every round trip of the run
 * that holds the lock holds a shared flock on WORK_FILE on a descriptor all it starts
 * inherits (HOLD_WORK). The lock is live while the session or any such process is:
 * a run killed mid-step leaves work that the next run waits for (--wait-lock) or
 * refuses, naming it. A lock left by a run that died with no work left (decom
 * killed, SSH cut) is taken over, with a warning, and never waited on.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TransportError, type Transport } from '../transport/types.js';
import type { View } from '../probes/index.js';
import { roundTrip, type RoundTrip } from './round-trip.js';
import { PSTAT, q, STOP_STARTED_CONTAINERD } from './sh.js';

export const LOCK_FILE = '/run/decom.lock';

/** Never removed, so a run that died and the run after it lock the same file. */
export const WORK_FILE = `${LOCK_FILE}.work`;

/**
 * The head of every round trip of a run that holds the lock: a shared flock on
 * WORK_FILE, on descriptor 8, which every process the trip starts inherits (a child
 * of a killed run's action included), so a new run's exclusive try fails while any
 * runs. Nothing acts unlocked: a trip that cannot hold it stops there.
 */
export const HOLD_WORK = `exec 8>>${q(WORK_FILE)}; flock -s -w 10 8 || { echo "cannot hold the node's lock (flock -s on ${WORK_FILE})" >&2; exit 1; }\n`;

/** Redirections that close the lock's descriptors: for a daemon decom starts, which would hold the lock as long as it runs. */
export const CLOSE_LOCK_FDS = '8>&- 9>&-';

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
 * "held RUN-ID" (a live run's: nothing taken); "busy RUN-ID|- WORK" (a dead run's
 * processes still hold WORK_FILE, named in WORK: nothing taken); "unfinished RUN-ID"
 * (with `keepRuns`, a dead `decom run`'s lock is left for a run to finish: nothing
 * taken); "unlockable WHY" (no flock, or it timed out: nothing taken); with `check`,
 * only reads: "free [RUN-ID]", "held …" or "busy …". Each verdict naming another run
 * is followed by that run's command, operator and start, a line each. On "taken", a
 * containerd the dead run started and left is stopped (sh.ts STARTED_CONTAINERD), and
 * a `resumed` section says so.
 *
 * The file: "RUN-ID SESSION" on its first line (all an older decom wrote and reads),
 * then the command, the operator and the start time, a line each. It is created
 * exclusively (set -C), never written through a link planted in its place.
 */
export function acquireScript(me: LockHolder, check: boolean, keepRuns = false): string {
  const L = q(LOCK_FILE);
  const mine = `printf '%s %s\\n%s\\n%s\\n%s\\n' ${q(me.runId)} "$ME" ${q(plain(me.command))} ${q(plain(me.operator))} ${q(plain(me.since))}`;
  const decide = `old=; holder=; [ -r ${L} ] && read -r old holder < ${L}
if [ -n "$old" ] && alive_ref "$holder"; then echo "held $old"; lock_who
elif work_busy; then echo "busy \${old:--} $(work_pids)"; lock_who
elif ${check ? 'true' : 'false'}; then echo "free $old"; [ -z "$old" ] || lock_who
elif [ -n "$old" ] && ${keepRuns ? 'true' : 'false'} && [ "$(sed -n 2p ${L})" != ${q(FIX_COMMAND)} ]; then echo "unfinished $old"; lock_who
elif [ -n "$old" ]; then who=$(lock_who); rm -f ${L}.new; (set -C; ${mine} > ${L}.new) && mv -f ${L}.new ${L} && { echo "taken $old"; [ -z "$who" ] || printf '%s\\n' "$who"; s resumed; stop_started_containerd; }
else rm -f ${L}; (set -C; ${mine} > ${L}) && echo acquired
fi`;
  // One decision at a time: two runs finding the same dead lock must not both take it; a run that cannot be sure of that
  // takes nothing. (--check only reads, and leaves no file behind.)
  const guarded = check
    ? decide
    : `if ! command -v flock >/dev/null; then echo "unlockable flock is not installed on this node (not on PATH ${'$'}PATH)"
else
exec 9>>${L}.guard
if ! flock -w 10 9; then echo "unlockable flock -w 10 on ${LOCK_FILE}.guard gave up (another decom held it 10 s, or flock failed)"
else
${decide}
fi
exec 9>&-
fi`;
  return `${SESSION}${STOP_STARTED_CONTAINERD}
s lock
lock_who() { tail -n +2 ${L} 2>/dev/null | head -n 3; }
# Whether a process of a dead run still holds WORK_FILE (HOLD_WORK); never without flock, which --check does not require.
work_busy() { [ -e ${q(WORK_FILE)} ] && command -v flock >/dev/null && ! flock -n -x ${q(WORK_FILE)} true; }
# The processes holding it: those doing the work first (not the round trip's shells), up to 5, and how many in all.
work_pids() {
  all=0; named=0; shells=
  for f in /proc/[0-9]*/fd/8; do
    [ "$(readlink "$f" 2>/dev/null)" = ${q(WORK_FILE)} ] || continue
    p=\${f#/proc/}; p=\${p%%/*}; pstat "$p" || continue
    all=$((all + 1))
    case $C in
      sh|dash|bash|timeout|sudo) shells="$shells pid $p ($C)" ;;
      *) named=$((named + 1)); [ $named -gt 5 ] || printf 'pid %s (%s), ' "$p" "$C" ;;
    esac
  done
  [ $named -gt 0 ] || printf '%s, ' "\${shells# }"
  printf '%s process(es) in all' "$all"
}
${guarded}
`;
}

/** The `lock` section, read: the verdict, the other run's ID, and who that run is (or was). */
export interface LockVerdict {
  verdict: 'acquired' | 'taken' | 'held' | 'busy' | 'free' | 'unfinished' | 'unlockable' | 'none';
  /** The holder's (held) or the dead run's (busy, taken, unfinished, free) run ID. */
  other?: string;
  holder?: Partial<LockHolder>;
  /** busy: the dead run's processes still at work ("pid 812 (sleep) …"); unlockable: why. */
  detail?: string;
}

export function parseLock(section: string): LockVerdict {
  const [first = '', command, operator, since] = section.trim().split('\n');
  const [verdict, ...rest] = first.trim().split(' ');
  const v: LockVerdict = { verdict: (['acquired', 'taken', 'held', 'busy', 'free', 'unfinished', 'unlockable'] as const).find((x) => x === verdict) ?? 'none' };
  if (v.verdict === 'unlockable') return { ...v, detail: rest.join(' ') };
  const [id, ...work] = rest;
  // busy with no lock file: a run released its lock while its work still ran.
  const other = id === '-' ? undefined : id;
  if (work.join(' ').trim()) v.detail = work.join(' ').trim();
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

/** The refusal's words for a dead run's work: "decom run ID (…) was cut off, but its work still runs on this node: pid 812 (sleep)". */
const workOf = (v: LockVerdict): string =>
  `${v.other ? `decom run ${named(v)} was cut off (killed, or its connection was lost), but its` : 'the'} work still runs on this node: ${v.detail?.trim() || 'a process holds ' + WORK_FILE}`;

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
  /** What taking it over stopped of the dead run's (a containerd it had started). */
  stopped?: string;
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
  let sections = trip.sections;
  let lock = parseLock(sections.get('lock') ?? '');
  const deadline = Date.now() + (o.waitSec ?? 0) * 1000;
  let waited = false;
  const busy = () => lock.verdict === 'held' || lock.verdict === 'busy';
  while (busy() && Date.now() < deadline) {
    if (!waited) o.journal({ event: 'lock-wait', holder: lock.holder, ...(lock.detail ? { work: lock.detail } : {}) });
    waited = true;
    await sleep(Math.min(LOCK_POLL_MS, deadline - Date.now()));
    sections = (await ask(new Set())).sections;
    lock = parseLock(sections.get('lock') ?? '');
  }
  if (waited && !busy()) trip = await roundTrip(t, { actions: [], views: o.views, sudo: o.sudo, timeoutSec: 60 });
  o.journal({ event: 'host-start', check: o.check, hostname: trip.state.hostname, lock: lock.verdict, ...(lock.other ? { other: lock.other } : {}), ...(lock.holder ? { holder: lock.holder } : {}), ...(lock.detail ? { detail: lock.detail } : {}) });
  const out: NodeLock = { trip, lock };
  const stopped = sections.get('resumed')?.trim();
  if (stopped) out.stopped = stopped;
  const locked = lock.verdict === 'acquired' || lock.verdict === 'taken';
  if (lock.verdict === 'held') out.refused = `${heldBy(lock)}; try again when it ends, or wait for it (--wait-lock)`;
  else if (lock.verdict === 'busy') out.refused = `${workOf(lock)}; try again when it ends, or wait for it (--wait-lock)`;
  else if (lock.verdict === 'unlockable') out.refused = `cannot take the node's lock: ${lock.detail ?? '?'}; nothing was changed`;
  else if (lock.verdict === 'unfinished') out.refused = `decom run ${named(lock)} did not finish on this node (killed, or its connection was lost): finish it first by running it again`;
  else if (lock.verdict === 'taken' && lock.other) out.finishes = lock.other;
  else if (!locked && !o.check) throw new TransportError(t.host, 'exec', `could not take the node's lock (${(trip.sections.get('lock') ?? '').trim() || 'no answer'})`);
  return out;
}
