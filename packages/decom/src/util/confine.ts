/**
 * Paths built from outside data (an etcd member's name, a node's file names, a config
 * anyone on the node may have written), confined to the root they belong under. Judged
 * twice: here, as written, before a script or a local file is made from one (`confine`);
 * and on the node, as resolved there, where the path is used (PATH_GUARD). A spelling
 * (`/usr//bin`, `/etc/.`) or a symlink can fool the first; only the second sees the node.
 */
import { posix } from 'node:path';
import { shQuote } from './run.js';

/**
 * Dirs that hold far more than Kubernetes' files: never taken whole, and never deleted
 * or deleted above, whatever a config or a name says (a `conf_dir = "/etc"` must not
 * make /etc residue).
 */
export const SYSTEM_DIRS: readonly string[] = [
  '/', '/bin', '/sbin', '/boot', '/dev', '/etc', '/home', '/lib', '/lib64', '/opt', '/proc', '/root', '/run', '/srv', '/sys', '/tmp', '/usr', '/var',
  '/usr/bin', '/usr/sbin', '/usr/lib', '/usr/lib64', '/usr/libexec', '/usr/local', '/usr/local/bin', '/usr/local/sbin', '/usr/local/lib', '/usr/share',
  '/var/lib', '/var/run', '/var/log', '/var/tmp', '/var/backups', '/etc/systemd', '/etc/default',
];

/** Where decom keeps what it writes on a node (backups, the etcd snapshot on a peer): every path it writes or removes there is confined below it. */
export const NODE_BACKUPS = '/var/backups/decom';

/** Why a path from outside data is refused: names the path, its root and the reason. */
export class ConfinedPathError extends Error {
  constructor(
    readonly path: string,
    readonly root: string,
    why: string,
  ) {
    super(`${JSON.stringify(path)} is refused below ${root}: ${why}`);
    this.name = 'ConfinedPathError';
  }
}

/** An absolute path with `//`, `/./` and a trailing `/` collapsed, as the kernel reads it; undefined when relative or with a `..`. */
export function normalPath(p: string): string | undefined {
  if (!p.startsWith('/') || p.includes('\0') || p.split('/').includes('..')) return undefined;
  return posix.normalize(p).replace(/(.)\/$/, '$1');
}

/** Whether a normalized path is a system dir, or above one (deleting it deletes one). */
export const holdsSystemDir = (normal: string): boolean => SYSTEM_DIRS.some((d) => d === normal || d.startsWith(normal === '/' ? '/' : `${normal}/`));

/**
 * `path` (absolute, or relative to `root`) confined to `root`: normalized, strictly
 * below it, with no `..`, NUL or empty name, and neither a system dir nor above one.
 * Throws ConfinedPathError naming the path and why. Names never enter a path unchecked.
 */
export function confine(root: string, path: string): string {
  const refuse = (why: string) => new ConfinedPathError(path, root, why);
  if (!path) throw refuse('it is empty');
  if (path.includes('\0')) throw refuse('it holds a NUL byte');
  if (path.split('/').includes('..')) throw refuse('it holds a ".." component');
  const top = normalPath(root);
  if (!top) throw refuse('the root is not an absolute path');
  const full = normalPath(path.startsWith('/') ? path : `${top}/${path}`);
  if (!full) throw refuse('it does not resolve to an absolute path');
  if (full === top || !full.startsWith(top === '/' ? '/' : `${top}/`)) throw refuse(`it is not below ${top}`);
  if (holdsSystemDir(full)) throw refuse('it is, or holds, a system dir');
  return full;
}

/** A name taken as one file name in a dir: no `/`, no NUL, not `.` or `..`, not empty. */
export function fileName(name: string, where: string): string {
  if (!name || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) throw new ConfinedPathError(name, where, 'it is not a plain file name');
  return name;
}

/**
 * The on-node half, in POSIX sh, defined in every script decom sends (the probes' prelude,
 * probes/script.ts; a script sent on its own prefixes it). Judged as resolved on the node, at
 * the moment of use, with no fork unless a symlink is on the way:
 *
 * - `judge ROOT PATH [WANT]`: sets R to PATH with its dir resolved and its name kept (a
 *   symlink named last is the link, never what it points at), RD to that dir and RN to the
 *   name. Refuses, printing one line naming the path and why, when the path is relative,
 *   holds `..` or names no file; when a component of it is a symlink not owned by root (its
 *   owner could point it anywhere between the check and the use); when it is a link to a
 *   system dir; when R differs from WANT (where the probe saw it resolve); when R is outside
 *   ROOT resolved; when R is, or is above, a system dir.
 * - `judge_dir DIR`: sets JD to DIR fully resolved; refuses a system dir or one above it, in
 *   any spelling or through any symlink (a dir a config names, whose entries are taken).
 * - `delete_path ROOT PATH [WANT]`: judged, refused when a mount is at or below it, then
 *   deleted from inside its resolved dir (`cd -P`, checked), so a dir swapped for a link
 *   after the judgment cannot redirect the `rm`. A path already gone is no error. Below
 *   /var/lib/kubelet, should the `rm` fail, the immutable attribute is cleared (on that one
 *   filesystem) and it is tried again.
 */
export const PATH_GUARD = `
SYSD=${shQuote(SYSTEM_DIRS.join(' '))}
# js: the system dir at or below $1, if there is one.
# (The prefix is expanded first: bash matches no "\${1%/}"/* pattern when $1 is /.)
sysdir_in() { jp=\${1%/}; for js in $SYSD; do case $js/ in "$jp"/*) return 0 ;; esac; done; return 1; }
# jc: $1 with empty and . components dropped; jl: set when a component is a symlink; jo: why, when one is not root's.
walk() {
  jc= jl= jo= jr=$1/
  while [ -n "$jr" ]; do
    jx=\${jr%%/*} jr=\${jr#*/}
    case $jx in ''|.) continue ;; esac
    jc=$jc/$jx
    [ -L "$jc" ] || continue
    jl=1; [ -z "$jo" ] || continue
    ju=$(stat -c %u -- "$jc") || ju=?
    [ "$ju" = 0 ] || jo="$jc is a symbolic link owned by uid $ju, not root"
  done
  jc=\${jc:-/}
}
judge() {
  R= RD= RN=
  case $2 in /*) ;; *) echo "refused $2: not an absolute path"; return 1 ;; esac
  case /$2/ in */../*) echo "refused $2: it holds a .. component"; return 1 ;; esac
  RN=\${2##*/}
  case $RN in ''|.) echo "refused $2: it names no file (it ends in / or .)"; return 1 ;; esac
  walk "$2"
  [ -z "$jo" ] || { echo "refused $2: $jo"; return 1; }
  # A link named last is deleted itself; one to a system dir is left all the same (nothing of Kubernetes' is one).
  if [ -L "$2" ] && jf=$(readlink -f -- "$2") && sysdir_in "$jf"; then echo "refused $2: it links to $jf, which is or holds the system dir $js"; return 1; fi
  RD=\${jc%/*}; RD=\${RD:-/}
  if [ -n "$jl" ]; then RD=$(readlink -f -- "$RD") || { echo "refused $2: its dir does not resolve"; return 1; }; fi
  R=\${RD%/}/$RN
  [ -z "$3" ] || [ "$R" = "$3" ] || { echo "refused $2: it resolves to $R now, not to $3 as probed"; return 1; }
  jt=/; [ "$1" = / ] || jt=$(readlink -f -- "$1") || { echo "refused $2: its root $1 does not resolve"; return 1; }
  jt=\${jt%/}; case $R in "$jt"/*) ;; *) echo "refused $2: $R is outside $1"; return 1 ;; esac
  if sysdir_in "$R"; then echo "refused $2: $R is or holds the system dir $js"; return 1; fi
}
judge_dir() {
  case /$1/ in */../*) return 1 ;; esac
  walk "$1"; JD=$jc
  if [ -n "$jl" ]; then JD=$(readlink -f -- "$jc") || return 1; fi
  ! sysdir_in "$JD"
}
mounted_below() {
  e=$(printf '%s' "$1" | sed 's/\\\\/\\\\134/g; s/ /\\\\040/g; s/\t/\\\\011/g')
  P=$e awk 'BEGIN { p = ENVIRON["P"] } $5 == p || index($5, p "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo
}
# unfreeze_kubelet_files RESOLVED NAME: clears the immutable attribute (chattr +i) below NAME, in the
# current dir, where RESOLVED is below the kubelet's dir as it resolves, as kubespray's reset does
# there: elsewhere nothing is cleared. -xdev: nothing on a mount below is touched; find never follows a link.
unfreeze_kubelet_files() {
  kd=$(readlink -f /var/lib/kubelet) || return 1
  case $1 in "$kd"/?*) ;; *) return 1 ;; esac
  command -v chattr >/dev/null || return 1
  find "$2" -xdev \\( -type f -o -type d \\) -exec chattr -f -i -- {} + 2>/dev/null
  return 0
}
delete_path() {
  [ -e "$2" ] || [ -L "$2" ] || return 0
  judge "$@" || return 1
  if mounted_below "$R"; then echo "a mount is at or below $R: nothing deleted"; return 1; fi
  ( cd -P -- "$RD" && [ "$PWD" = "$RD" ] || { echo "refused $2: its dir $RD moved while it was judged"; exit 1; }
    # Only where rm failed is an immutable file looked for: a kubelet dir of many files is not walked twice.
    rm -rf --one-file-system -- "./$RN" 2>/dev/null || { unfreeze_kubelet_files "$R" "./$RN"; rm -rf --one-file-system -- "./$RN"; } )
}
`;

/** `delete_path ROOT PATH [WANT]` as one line of a node script (PATH_GUARD defines it). */
export const deletePathCall = (root: string, path: string, want?: string): string =>
  `delete_path ${shQuote(root)} ${shQuote(path)}${want ? ` ${shQuote(want)}` : ''}`;
