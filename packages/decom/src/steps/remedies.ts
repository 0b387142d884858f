/**
 * The audit's node remedies (`decom audit --fix`), for a node that stays in service.
 * Each one's actions are the reset's own, from the builder its step uses for the same
 * object; the only addition is a guard, asked on the node at the moment of acting,
 * that the object is still the orphan the audit found (a live node changes under us).
 * A guard that says no prints why, or `gone` when the object went meanwhile.
 */
import type { Container, NodeState, Proc } from '../probes/index.js';
import { kubeCgroupLevel } from '../probes/parse.js';
import { CGROUP_HIERARCHIES } from '../probes/script.js';
import type { Action } from '../engine/step.js';
import { q, systemdNode } from '../engine/sh.js';
import { removeCgroupsAction, sliceUnit, stopSlicesAction } from './cgroups.js';
import { deletePathAction } from './files.js';
import { deleteLinkAction, deleteNetnsAction, unmountAction } from './kernel.js';
import { PROCESS_GRACE_SEC, runtimeRemoval, stopProcessesAction } from './pods.js';

/** What a guard prints when the object it guards is already gone: the remedy's outcome is "gone", not a failure. */
export const GONE = 'gone';


const guarded = (a: Action, guard: string): Action => ({ ...a, guard });

/** A netns only while no process is in it (one that entered since the audit keeps it). */
export function netnsRemedy(name: string): Action[] {
  const n = q(name);
  const guard = `[ -e /run/netns/${n} ] || { echo ${GONE}; exit 1; }
ino=$(stat -L -c %i /run/netns/${n}) || exit 1
# One stat for every process (not one each): a busy node has thousands.
stat -L -c %i /proc/[0-9]*/ns/net 2>/dev/null | grep -q -x "$ino" && { echo "a process is in it now"; exit 1; }
exit 0`;
  return [guarded(deleteNetnsAction(name), guard)];
}

/** A host veth only while its peer is still in the netns the audit saw it in (else it is another pod's now). */
export function vethRemedy(link: string, netns: string): Action[] {
  const l = q(link);
  const guard = `ip -o link show dev ${l} >/dev/null 2>&1 || { echo ${GONE}; exit 1; }
case " $(ip -o link show dev ${l}) " in *" link-netns "${q(netns)}" "*) exit 0 ;; esac
echo "its peer is elsewhere now"; exit 1`;
  return [guarded(deleteLinkAction(link), guard)];
}

/** A host-local lease only while it still names the dead sandbox (its first line, without host-local 0.8's \r): the address may have been handed out again. */
export function leaseRemedy(file: string, sandbox: string): Action[] {
  const f = q(file);
  const guard = `[ -f ${f} ] || { echo ${GONE}; exit 1; }
v=; read -r v < ${f}; CR=$(printf '\\r'); v=\${v%"$CR"}
[ "$v" = ${q(sandbox)} ] || { echo "the address was handed out again"; exit 1; }`;
  // Below host-local's dir only, whatever a report names (a fix can come from an earlier report's JSON).
  return [guarded(deletePathAction(file, undefined, '/var/lib/cni/networks'), guard)];
}

/**
 * A pod dir: its mounts unmounted deepest first (a busy one fails naming its holder),
 * then the dir deleted, which deletePathScript refuses while anything is still mounted
 * at or below it. Never through a link: a dir that is a symlink now is left.
 */
export function podDirRemedy(dir: string, mounts: readonly string[]): Action[] {
  const d = q(dir);
  const guard = `[ -e ${d} ] || [ -L ${d} ] || { echo ${GONE}; exit 1; }
[ -L ${d} ] && { echo "it is a symbolic link now"; exit 1; }
exit 0`;
  const deepest = [...mounts].sort((a, b) => b.split('/').length - a.split('/').length || b.length - a.length);
  return [...deepest.map(unmountAction), deletePathAction(dir, undefined, '/var/lib/kubelet/pods')].map((a) => guarded(a, guard));
}

/** Why these cgroups are not all a pod's own, if they are not: a live node's QoS tree is the running kubelet's. */
export function notPodCgroups(paths: readonly string[]): string | undefined {
  const bad = paths.filter((c) => kubeCgroupLevel(c)?.level !== 'pod');
  return !paths.length || bad.length ? `not a pod's cgroup: ${bad.join(', ') || '(none named)'}` : undefined;
}

/**
 * A pod's cgroups (never the QoS tree, refused by notPodCgroups before any action):
 * the processes still in them stopped, the pod's slice stopped through systemd on the
 * systemd driver, then the cgroups removed bottom-up in every hierarchy.
 */
export function podCgroupRemedy(s: NodeState, paths: readonly string[], procs: readonly Proc[]): Action[] {
  const ps = paths.map(q).join(' ');
  const guard = `for h in $CGH; do for p in ${ps}; do [ -d "$h$p" ] && exit 0; done; done; echo ${GONE}; exit 1`;
  const slices = paths.filter((c) => c.endsWith('.slice')).map(sliceUnit);
  const actions = [
    ...(procs.length ? [stopProcessesAction([...procs], PROCESS_GRACE_SEC)] : []),
    ...(systemdNode(s.pid1) && slices.length ? [stopSlicesAction([slices])] : []),
    removeCgroupsAction(paths, `remove the pod cgroup${paths.length === 1 ? '' : 's'} ${paths.join(', ')} and the containers' below, in every hierarchy`),
  ];
  return actions.map((a) => guarded(a, `${CGROUP_HIERARCHIES}\n${guard}`));
}

/**
 * A phantom pod: its sandboxes and containers removed through their runtime, exactly
 * as the reset's containers step removes them (the CRI's StopPodSandbox runs the CNI
 * DEL), but only these; then the processes still in its cgroup stopped. A containerd
 * that is down is not started on a live node: its processes are stopped, its records
 * go with the next reset.
 */
export function phantomRemedy(s: NodeState, containers: readonly Container[], procs: readonly Proc[]): Action[] {
  return [...runtimeRemoval(s, containers, { only: true, startStopped: false }), ...(procs.length ? [stopProcessesAction([...procs], PROCESS_GRACE_SEC)] : [])];
}
