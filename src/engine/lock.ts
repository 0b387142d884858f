/**
 * The node's lock: one run at a time per node. It belongs to the run's session —
 * the first ancestor of the script that is not sh, timeout or sudo (sshd's session
 * process, or decom itself with --connection local), named by PID and start time —
 * so a lock left by a run that died (decom killed, SSH cut) is taken over, with a
 * warning, and never waited on.
 */
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

/**
 * Prints a `lock` section: "acquired", "taken RUN-ID" (a dead run's lock), "held
 * RUN-ID" (a live run's; nothing taken). With `check`, only reads: "free [RUN-ID]".
 */
export function acquireScript(runId: string, check: boolean): string {
  const L = q(LOCK_FILE);
  const mine = `printf '%s %s\\n' ${q(runId)} "$ME"`;
  // One decision at a time: two runs finding the same dead lock must not both take it.
  // (--check only reads, and leaves no file behind.)
  const guard = check ? '' : `exec 9>>${L}.guard\ncommand -v flock >/dev/null && flock -w 10 9\n`;
  return `${SESSION}
s lock
${guard}old=; holder=; [ -r ${L} ] && read -r old holder < ${L}
if [ -n "$old" ] && alive_ref "$holder"; then echo "held $old"
elif ${check ? 'true' : 'false'}; then echo "free $old"
elif [ -n "$old" ]; then ${mine} > ${L}.new && mv -f ${L}.new ${L} && echo "taken $old"
else ${mine} > ${L} && echo acquired
fi
${check ? '' : 'exec 9>&-'}
`;
}

/** Removes the lock if this run still holds it. */
export const releaseScript = (runId: string): string =>
  `old=; [ -r ${q(LOCK_FILE)} ] && read -r old _ < ${q(LOCK_FILE)}; [ "$old" = ${q(runId)} ] && rm -f ${q(LOCK_FILE)}; true`;
