/**
 * The kubelet's cgroup tree (/kubepods, or /kubepods.slice on the systemd driver):
 * what is left once the runtime and the kubelet are stopped — the kubelet removes a
 * pod's cgroup only while it runs, and a killed shim leaves its container's. A
 * rejoining kubelet and cAdvisor read what is left as pods.
 *
 * Bottom-up, in every hierarchy (a cgroup can linger in one only): containers', then
 * pods', then — only once no kubelet runs, or it makes them again at once — the QoS
 * level and the root. rmdir only: a cgroup with a process in it cannot go (the
 * processes step stops them before), and the step fails naming it and its PIDs. On
 * the systemd driver the slices are systemd's units: stopped through it first, so
 * none is left "active" over a removed cgroup, then what systemd leaves (the v1
 * hierarchies it does not manage) is removed.
 */
import { z } from 'zod';
import type { KubeCgroup, NodeState } from '../probes/state.js';
import type { Action, Step } from '../engine/step.js';
import { q, systemdNode } from '../engine/sh.js';
import { CGROUP_HIERARCHIES } from '../probes/script.js';

/**
 * `rm_cgroups PATH...` (paths below a hierarchy's root): each cgroup and every cgroup
 * below it, deepest first, in every hierarchy, one rmdir per hierarchy; a cgroup
 * already gone is fine. Then prints each one still there with the processes in it,
 * and returns 1.
 */
export const RM_CGROUPS = `${CGROUP_HIERARCHIES}
# cg_below DIR: appends DIR to CGL after every cgroup below it (post-order: deepest first).
cg_below() { for c in "$1"/*/; do [ -d "$c" ] && cg_below "\${c%/}"; done; CGL="$CGL
$1"; }
has_below() { for c in "$1"/*/; do [ -d "$c" ] && return 0; done; return 1; }
rm_cgroups() {
  for h in $CGH; do
    CGL=; for p in "$@"; do [ -d "$h$p" ] && cg_below "$h$p"; done
    # One name per line (a cgroup name may hold a space), never globbed.
    [ -z "$CGL" ] || { set -f; IFS='
'; rmdir -- $CGL 2>/dev/null; unset IFS; set +f; }
  done
  CG_LEFT=0
  for h in $CGH; do
    CGL=; for p in "$@"; do [ -d "$h$p" ] && cg_below "$h$p"; done
    set -f; IFS='
'
    for d in $CGL; do
      unset IFS; set +f # the list is split: globs (has_below) work again
      [ -d "$d" ] || continue
      CG_LEFT=1; P=; while read -r x; do P="$P $x"; done 2>/dev/null < "$d/cgroup.procs"
      # The one a process keeps is named; its parents stay only because of it.
      if [ -n "$P" ]; then echo "cgroup $d still holds processes$P"; elif ! has_below "$d"; then echo "cgroup $d could not be removed"; fi
    done
    unset IFS; set +f
  done
  return $CG_LEFT
}
`;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A systemd slice's unit name: the last part of its cgroup path. */
export const sliceUnit = (path: string): string => path.slice(path.lastIndexOf('/') + 1);
const unitOf = (c: KubeCgroup): string => sliceUnit(c.path);

/** Removes these cgroups and every cgroup below them, deepest first, in every hierarchy (rmdir only). */
export const removeCgroupsAction = (paths: readonly string[], what: string): Action => ({ what, script: `${RM_CGROUPS}rm_cgroups ${paths.map(q).join(' ')}` });

/** Stops systemd slices, tier after tier (pods before the QoS slices above them); one systemd no longer has is fine. */
export const stopSlicesAction = (tiers: readonly (readonly string[])[]): Action => ({
  what: `systemctl stop ${tiers.map((units) => (units.length > 3 ? `${plural(units.length, 'slice')} (${units[0]}, …)` : units.join(' '))).join(', then ')}`,
  script: `${tiers.map((units) => `systemctl stop -- ${units.map(q).join(' ')}`).join('\n')}\nexit 0`,
});

/** The kubelet runs, or systemd is about to start it again: it would make its QoS tree again at once. */
function kubeletRuns(s: NodeState): boolean {
  const unit = s.units.get('kubelet.service');
  return (
    [...s.processes.values()].some((p) => p.name === 'kubelet') ||
    s.runningUnits.has('kubelet.service') ||
    unit?.active === 'active' ||
    unit?.active === 'activating'
  );
}

const isTree = (c: KubeCgroup): boolean => c.level === 'root' || c.level === 'qos';

export const cgroups: Step = {
  name: 'cgroups',
  description: "remove the kubelet's cgroup tree bottom-up in every hierarchy (containers', pods', then the QoS level and the root once no kubelet runs): rmdir only, slices stopped through systemd",
  params: z.object({}),
  owns: (f) => f.kind === 'pod-cgroup',
  views: ['cgroups', 'processes'],
  follows: ['kubelet', 'containers', 'processes'],
  plan(s) {
    const kube = s.cgroups.kube;
    if (!kube.length) return [];
    const actions: Action[] = [];
    const treeToo = !kubeletRuns(s);
    const pods = kube.filter((c) => c.level === 'pod');
    const containers = kube.filter((c) => c.level === 'container');
    const tree = kube.filter(isTree);
    const roots = kube.filter((c) => c.level === 'root');

    if (systemdNode(s.pid1)) {
      // Stopping a slice stops what is below it; pods, then the QoS slices, then kubepods.slice.
      // A slice systemd no longer has fails "not loaded": its cgroups are removed below all the same.
      const tiers = [pods, ...(treeToo ? [tree.filter((c) => c.level === 'qos'), roots] : [])]
        .map((cs) => cs.filter((c) => c.path.endsWith('.slice')).map(unitOf))
        .filter((units) => units.length > 0);
      if (tiers.length) {
        actions.push(stopSlicesAction(tiers));
      }
    }
    if (pods.length) {
      actions.push(removeCgroupsAction(pods.map((c) => c.path), `remove ${plural(pods.length, 'pod cgroup')}${containers.length ? ` and the ${plural(containers.length, 'container cgroup')} below them` : ''}, deepest first, in every hierarchy`));
    }
    if (tree.length && treeToo) {
      actions.push(removeCgroupsAction((roots.length ? roots : tree).map((c) => c.path), `remove the kubelet's QoS cgroups and its root ${roots.map((c) => c.path).join(', ') || tree.map((c) => c.path).join(', ')}, in every hierarchy`));
    } else if (tree.length) {
      actions.push({
        what: `leave ${tree.map((c) => c.path).join(', ')}: the kubelet runs and would make them again`,
        script: `echo "the kubelet runs: it keeps ${tree.map((c) => c.path).join(', ')}; stop it first (the kubelet step)"; exit 1`,
      });
    }
    return actions;
  },
  after(s) {
    // What goes: all of it once no kubelet runs, else all but the QoS tree; a cgroup a process is still in stays, and its parents.
    const treeToo = !kubeletRuns(s);
    const procCgroups = [...s.k8sCgroups.values()];
    const busy = (c: KubeCgroup) => procCgroups.some((p) => p === c.path || p.startsWith(`${c.path}/`));
    return { ...s, cgroups: { ...s.cgroups, kube: s.cgroups.kube.filter((c) => busy(c) || (isTree(c) && !treeToo)) } };
  },
  timeoutSec: () => 120,
};
