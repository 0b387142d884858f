/**
 * The client's model of what an action does to a node: pure edits of a NodeState.
 * --check plans each step on the state the steps before it will leave; these are
 * the edits the steps' `after` use. A real run never plans on them: it re-probes.
 */
import type { Container, NodeState } from '../probes/index.js';
import { procFlag } from '../probes/proc-flags.js';

/** The processes and all their descendants. */
function withDescendants(s: NodeState, pids: Iterable<number>): Set<number> {
  const gone = new Set(pids);
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of s.processes.values()) if (!gone.has(p.pid) && gone.has(p.ppid)) (gone.add(p.pid), (grew = true));
  }
  return gone;
}

/** Processes end: with their children, their sockets and their cgroup membership. */
export function killProcesses(s: NodeState, pids: Iterable<number>): NodeState {
  const gone = withDescendants(s, pids);
  if (gone.size === 0) return s;
  return {
    ...s,
    processes: new Map([...s.processes].filter(([pid]) => !gone.has(pid))),
    k8sCgroups: new Map([...s.k8sCgroups].filter(([pid]) => !gone.has(pid))),
    listeners: s.listeners
      .map((l) => ({ ...l, holders: l.holders.filter((h) => !gone.has(h.pid)) }))
      .filter((l, i) => l.holders.length > 0 || (s.listeners[i]?.holders.length ?? 0) === 0),
  };
}

import { criSandboxes, k8sBundles, stateDirs } from '../probes/script.js';
import { within } from '../rules/residue.js';

/** A mount the runtime made for one of these containers: its task's rootfs, a sandbox's shm (in the CRI's per-sandbox dir, which RemovePodSandbox unmounts). */
const ownedBy = (state: string, target: string, ids: ReadonlySet<string>) =>
  stateDirs(state).flatMap((d) => [k8sBundles(d), criSandboxes(d)]).some((dir) => target.startsWith(dir) && ids.has(target.slice(dir.length).split('/')[0] ?? ''));

/** Containers removed through their runtime: their processes, shims and runtime mounts go with them. */
export function removeContainers(s: NodeState, gone: (c: Container) => boolean): NodeState {
  const ids = new Set(s.containers.filter(gone).map((c) => c.id));
  if (ids.size === 0) return s;
  const pids = s.containers.filter((c) => ids.has(c.id) && c.pid !== undefined).map((c) => c.pid as number);
  const shims = [...s.processes.values()]
    // A shim whose -id was cut off on the node is not known to be theirs: the model keeps it.
    .filter((p) => {
      const id = procFlag(p, 'id');
      return /^containerd-shim/.test(p.name) && typeof id === 'string' && ids.has(id);
    })
    .map((p) => p.pid);
  const next = killProcesses(s, [...pids, ...shims]);
  return {
    ...next,
    containers: s.containers.filter((c) => !ids.has(c.id)),
    mounts: next.mounts.filter((m) => !ownedBy(s.containerd.state, m.target, ids)),
  };
}

/** Files deleted: every view of a file below them goes (state paths, kubeconfigs, certificates). */
export function removePaths(s: NodeState, paths: readonly string[]): NodeState {
  const kept = <T extends { path: string }>(xs: T[]) => xs.filter((x) => !paths.some((top) => within(x.path, top)));
  return { ...s, paths: kept(s.paths), kubeconfigs: kept(s.kubeconfigs), clusterCAs: kept(s.clusterCAs), anchors: kept(s.anchors) };
}

export const removeMounts = (s: NodeState, targets: readonly string[]): NodeState => ({
  ...s,
  mounts: s.mounts.filter((m) => !targets.includes(m.target)),
});

/**
 * Sandboxes stopped through their runtime: its CNI DEL removes what the plugins made
 * for each (the netns containerd made, the veth into it, the host-local lease, the
 * rules that name the sandbox in their comment and the per-pod chains they jump to).
 */
export function stopSandboxes(s: NodeState, sandboxes: readonly Container[]): NodeState {
  const netns = new Set(sandboxes.flatMap((c) => (c.netns ? [c.netns] : [])));
  const ids = sandboxes.map((c) => c.id);
  if (!ids.length) return s;
  const names = (spec: string) => ids.some((id) => spec.includes(`id: \\"${id}\\"`));
  const iptables = s.iptables.map((t) => {
    const gone = new Set(t.rules.filter((r) => names(r.spec)).flatMap((r) => /-j (CNI-\S+)/.exec(r.spec)?.[1] ?? []));
    return { ...t, chains: t.chains.filter((c) => !gone.has(c)), rules: t.rules.filter((r) => !names(r.spec) && !gone.has(r.chain)) };
  });
  const leases = s.pods.leases.filter((l) => ids.includes(l.sandbox));
  const next = removePaths(s, leases.map((l) => l.file));
  return {
    ...next,
    iptables,
    netns: s.netns.filter((n) => !netns.has(n)),
    mounts: next.mounts.filter((m) => !netns.has(m.target.slice(m.target.lastIndexOf('/') + 1)) || !/^\/(var\/)?run\/netns\//.test(m.target)),
    links: s.links.filter((l) => !(l.peerNetns && netns.has(l.peerNetns))),
    pods: { ...next.pods, leases: s.pods.leases.filter((l) => !ids.includes(l.sandbox)) },
  };
}
