/** Shell building blocks the steps' actions share. POSIX sh: a node's /bin/sh may be dash. */
import { ConfinedPathError, confine, deletePathCall } from '../util/confine.js';
import { shQuote } from '../util/run.js';
import type { Proc } from '../probes/state.js';

export const q = shQuote;

/**
 * `pstat PID` reads /proc/PID/stat: C (its name), PSTATE, PPARENT, PSTART (start time
 * in clock ticks); false when the process is gone. A process named with a ")" cannot
 * fool it: the name is cut at the last one.
 */
export const PSTAT = `
pstat() { l=; { read -r l < "/proc/$1/stat"; } 2>/dev/null || return 1; C=\${l#*\\(}; C=\${C%\\)*}; set -- \${l##*) }; PSTATE=$1 PPARENT=$2 PSTART=\${20}; }
`;

/**
 * Stops processes named as PID:START (the start time the probe saw, so a PID reused
 * since is never hit): TERM, then KILL those still there after GRACE seconds. A
 * zombie counts as gone. Prints what it killed hard.
 */
export const STOP_PROCS = `${PSTAT}
started() { pstat "$1" && [ "$PSTATE" != Z ] && printf '%s' "$PSTART"; }
stop_procs() {
  g=$1; shift; live=
  for ps in "$@"; do [ "$(started "\${ps%:*}")" = "\${ps#*:}" ] && kill -TERM "\${ps%:*}" 2>/dev/null && live="$live $ps"; done
  n=$((g * 10))
  while [ -n "$live" ] && [ "$n" -gt 0 ]; do
    left=; for ps in $live; do [ "$(started "\${ps%:*}")" = "\${ps#*:}" ] && left="$left $ps"; done
    live=$left; [ -n "$live" ] && { n=$((n - 1)); sleep 0.1; }
  done
  for ps in $live; do kill -KILL "\${ps%:*}" 2>/dev/null && echo "killed \${ps%:*} (no exit \${g}s after TERM)"; done
  [ -z "$live" ] || sleep 0.2
}
`;

/**
 * Where decom records a containerd it started for a CRI teardown (steps/pods.ts): its
 * PID:START on init-less nodes, `systemd` where systemd runs it. The teardown stops it
 * again; a run killed in between leaves the record, and the run that takes over its
 * lock stops it (engine/lock.ts).
 */
export const STARTED_CONTAINERD = '/run/decom-containerd.pid';

/**
 * `stop_started_containerd`: stops the containerd recorded in STARTED_CONTAINERD (by
 * PID and start time, so a PID reused since is never hit) and removes the record;
 * prints what it did. No record: nothing to do. False when it is still running.
 */
export const STOP_STARTED_CONTAINERD = `${STOP_PROCS}
stop_started_containerd() {
  ref=; { read -r ref < ${STARTED_CONTAINERD}; } 2>/dev/null || return 0
  case $ref in
    systemd) systemctl stop containerd || return 1; said="stopped containerd (systemd's), which decom had started" ;;
    *[0-9]:[0-9]*)
      if [ "$(started "\${ref%:*}")" = "\${ref#*:}" ]; then
        stop_procs 10 "$ref"; [ "$(started "\${ref%:*}")" != "\${ref#*:}" ] || { echo "containerd $ref is still running" >&2; return 1; }; said="stopped containerd $ref, which decom had started"
      else said="containerd $ref, which decom had started, is gone already"; fi ;;
    *) said="left containerd $ref alone: its record has no start time to check the PID against" ;;
  esac
  rm -f ${STARTED_CONTAINERD}; echo "$said"
}
`;

const procRef = (p: Proc): string => `${p.pid}:${p.start}`;

/** `stop_procs GRACE pid:start…` as one action script. */
export const stopProcsScript = (procs: Proc[], graceSec: number): string =>
  `${STOP_PROCS}stop_procs ${graceSec} ${procs.map(procRef).join(' ')}`;

/** Whether PID 1 is systemd: then services are stopped through it, or Restart=always brings them back. */
export const systemdNode = (pid1: string): boolean => pid1 === 'systemd';

/**
 * Deletes a path (a directory with what is below it), judged twice: as written here
 * (confine: below `root`, no `..`, never a system dir or above one), then on the node at
 * that moment (delete_path, util/confine.ts): resolved again and refused when it resolves
 * elsewhere than `resolved` (what the probe saw), when a symlink on its way is not root's,
 * when a mount is at or below it. A symlink named last is deleted itself, never followed.
 */
export function deletePathScript(p: string, o: { root?: string; resolved?: string | undefined } = {}): string {
  const root = o.root ?? '/';
  try {
    confine(root, p);
  } catch (e) {
    if (!(e instanceof ConfinedPathError)) throw e;
    return `echo ${shQuote(`refused: ${e.message}`)}; exit 1`;
  }
  return deletePathCall(root, p, o.resolved);
}
