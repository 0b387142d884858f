/**
 * Kubernetes' files, after everything that used them is gone: CNI config and state,
 * the kubelet's state, /etc/kubernetes, etcd's certificates and environment, pod logs,
 * and this cluster's credentials elsewhere (users' kubeconfigs judged by content). Deleted with one-file-system semantics and
 * never through a symlink; a path with a mount below it is not touched at all.
 */
import { z } from 'zod';
import type { NodeState } from '../probes/index.js';
import { removePaths } from '../engine/model.js';
import type { Step } from '../engine/step.js';
import { findings, type Kind } from '../verify/rules.js';
import { q } from '../engine/sh.js';

const KINDS: ReadonlySet<Kind> = new Set(['cni-config', 'cni-state', 'kubelet-state', 'kubernetes-config', 'etcd-config', 'pod-logs', 'credential']);

/**
 * Refuses at the last moment to delete a path with a mount at or below it, judged on
 * the path resolved (a symlinked /var/lib/kubelet shows in mountinfo under its real
 * name), with mountinfo's escapes for space, tab and backslash (passed through the
 * environment: awk -v would undo them).
 */
const GUARD = `
mounted_below() {
  # The parent resolved, the name kept: a symlink itself is deleted, never what it points at.
  d=$(dirname -- "$1") && d=$(readlink -f -- "$d") || return 1
  r=\${d%/}/$(basename -- "$1")
  e=$(printf '%s' "$r" | sed 's/\\\\/\\\\134/g; s/ /\\\\040/g; s/\t/\\\\011/g')
  P=$e awk 'BEGIN { p = ENVIRON["P"] } $5 == p || index($5, p "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo
}
`;

const mountedAt = (s: NodeState, p: string) => s.mounts.some((m) => m.target === p || m.target.startsWith(`${p}/`));

export const files: Step = {
  name: 'files',
  description: "delete CNI config and state, kubelet state, /etc/kubernetes, etcd's certificates, pod logs and this cluster's credentials (backed up first), never below a mount",
  params: z.object({}),
  owns: (f) => KINDS.has(f.kind),
  views: ['files', 'mounts'],
  plan(s) {
    const paths = findings(s).filter((f) => KINDS.has(f.kind)).map((f) => f.subject);
    // The topmost paths only: deleting a directory deletes what the probe listed below it.
    const tops = paths.filter((p) => !paths.some((o) => o !== p && p.startsWith(`${o}/`)));
    return tops
      .filter((p) => !mountedAt(s, p))
      .map((p) => ({
        what: `delete ${p}`,
        script: `${GUARD}if mounted_below ${q(p)}; then echo "a mount is at or below $r: nothing deleted"; exit 1; fi\nrm -rf --one-file-system -- ${q(p)}`,
      }));
  },
  after: (s) => removePaths(s, findings(s).filter((f) => KINDS.has(f.kind) && !mountedAt(s, f.subject)).map((f) => f.subject)),
};
