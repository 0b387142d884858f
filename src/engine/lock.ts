/**
 * The node's lock: one run at a time per node. It belongs to the run's session —
 * the first ancestor of the script that is not sh, timeout or sudo (sshd's session
 * process, or decom itself with --connection local), named by PID and start time —
 * so a lock left by a run that died (decom killed, SSH cut) is taken over, with a
 * warning, and never waited on.
 */
import { q } from '../steps/sh.js';

export const LOCK_FILE = '/run/decom.lock';

/** Sets ME to this session's "pid:start"; alive_ref PID:START says whether that very process still runs. */
const SESSION = `
pstat() { l=; read -r l < "/proc/$1/stat" 2>/dev/null || return 1; C=\${l#*\\(}; C=\${C%\\)*}; set -- \${l##*) }; PSTATE=$1 PPARENT=$2 PSTART=\${20}; }
me=$$; ME=
while pstat "$me"; do
  case $C in sh|dash|bash|timeout|sudo) me=$PPARENT ;; *) ME="$me:$PSTART"; break ;; esac
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
  return `${SESSION}
s lock
old=; holder=; [ -r ${L} ] && read -r old holder < ${L}
if [ -n "$old" ] && alive_ref "$holder"; then echo "held $old"
elif ${check ? 'true' : 'false'}; then echo "free $old"
elif [ -n "$old" ]; then ${mine} > ${L}.new && mv -f ${L}.new ${L} && echo "taken $old"
elif (set -C; ${mine} > ${L}) 2>/dev/null; then echo acquired
else old=; read -r old holder < ${L}; echo "held $old"
fi
`;
}

/** Removes the lock if this run still holds it. */
export const releaseScript = (runId: string): string =>
  `old=; [ -r ${q(LOCK_FILE)} ] && read -r old _ < ${q(LOCK_FILE)}; [ "$old" = ${q(runId)} ] && rm -f ${q(LOCK_FILE)}; true`;
