/**
 * The client's model of what an action does to a node: pure edits of a NodeState.
 * --check plans each step on the state the steps before it will leave; these are
 * the edits the steps' `after` use. A real run never plans on them: it re-probes.
 */
import type { Container, NodeState } from '../probes/index.js';

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

/** containerd's task bundles of the k8s.io namespace: a task's directory goes when the runtime deletes it. */
export const K8S_TASKS = '/run/containerd/io.containerd.runtime.v2.task/k8s.io/';

/** Containers removed through their runtime: their processes, shims and task mounts go with them. */
export function removeContainers(s: NodeState, gone: (c: Container) => boolean): NodeState {
  const ids = new Set(s.containers.filter(gone).map((c) => c.id));
  if (ids.size === 0) return s;
  const pids = s.containers.filter((c) => ids.has(c.id) && c.pid !== undefined).map((c) => c.pid as number);
  const shims = [...s.processes.values()]
    .filter((p) => /^containerd-shim/.test(p.name) && ids.has(/\s-id\s+(\S+)/.exec(p.args)?.[1] ?? ''))
    .map((p) => p.pid);
  const next = killProcesses(s, [...pids, ...shims]);
  return {
    ...next,
    containers: s.containers.filter((c) => !ids.has(c.id)),
    mounts: next.mounts.filter((m) => !(m.target.startsWith(K8S_TASKS) && ids.has(m.target.slice(K8S_TASKS.length).split('/')[0] ?? ''))),
  };
}

const below = (path: string, top: string) => path === top || path.startsWith(`${top}/`);

/** Files deleted: every view of a file below them goes (state paths, kubeconfigs, certificates). */
export function removePaths(s: NodeState, paths: readonly string[]): NodeState {
  const kept = <T extends { path: string }>(xs: T[]) => xs.filter((x) => !paths.some((top) => below(x.path, top)));
  return { ...s, paths: kept(s.paths), kubeconfigs: kept(s.kubeconfigs), clusterCAs: kept(s.clusterCAs), anchors: kept(s.anchors) };
}

export const removeMounts = (s: NodeState, targets: readonly string[]): NodeState => ({
  ...s,
  mounts: s.mounts.filter((m) => !targets.includes(m.target)),
});
