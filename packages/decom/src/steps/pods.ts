/**
 * Pods, in the order that frees what they hold: static pods through the kubelet
 * (it respawns what is killed under it), then what the runtime still knows, then the
 * processes no runtime knows any more, then proof that the ports are free.
 */
import { z } from 'zod';
import type { Container, NodeState, Proc } from '../probes/index.js';
import { killProcesses, removeContainers, removePaths, stopSandboxes } from '../engine/model.js';
import { k8sBundles } from '../probes/script.js';
import type { Action, Step } from '../engine/step.js';
import { dockerRemove } from './docker.js';
import { criTeardown } from './cri.js';
import { CONTAINERD_CONFIG } from '../cri/containerd-config.js';
import { findings } from '../rules/residue.js';
import { etcdInterlock } from './services.js';
import { PSTAT, q, STARTED_CONTAINERD, STOP_STARTED_CONTAINERD, stopProcsScript, systemdNode } from '../engine/sh.js';
import { CLOSE_LOCK_FDS } from '../engine/lock.js';


/**
 * The pods the kubelet makes of the manifests: NAME-NODE in the manifest's namespace,
 * NODE being the Node's name (kubespray's --hostname-override) or, on kubeadm nodes,
 * the OS hostname; and, where crictl shows the kubelet's annotations, every pod of a
 * manifest's name whose sandbox says `kubernetes.io/config.source: file`.
 */
function staticPodContainers(s: NodeState, node: string | undefined): Container[] {
  const nodes = new Set([s.hostname, node ?? ''].map((n) => n.toLowerCase()).filter(Boolean));
  const manifests = s.staticPods.filter((p) => p.name);
  const pods = new Set(manifests.flatMap((p) => [...nodes].map((n) => `${p.namespace}/${p.name}-${n}`)));
  const fromFile = new Set(
    s.containers.filter((c) => c.kind === 'sandbox' && c.configSource === 'file' && manifests.some((p) => c.pod?.startsWith(`${p.namespace}/${p.name}-`))).map((c) => c.id),
  );
  return s.containers.filter((c) => (c.pod !== undefined && pods.has(c.pod)) || fromFile.has(c.id) || (c.sandboxId !== undefined && fromFile.has(c.sandboxId)));
}

/** A sh test that holds while the runtime still runs the container: containerd's task bundle, Docker's word. */
const stillRunning = (c: Container, state: string): string =>
  c.runtime === 'docker' ? `[ "$(docker inspect -f '{{.State.Running}}' -- ${q(c.id)} 2>/dev/null)" = true ]` : `[ -e ${q(k8sBundles(state))}${q(c.id)} ]`;

export const staticPods: Step = {
  name: 'static-pods',
  description: 'move the static-pod manifests into the backup folder while the kubelet runs, and wait until it has stopped their pods',
  params: z.object({ timeoutSec: z.number().int().positive().default(60).describe('how long to wait for the kubelet to stop the pods') }),
  owns: (f) => f.kind === 'static-pod-manifest',
  // Of the files, the manifests alone: what it moves.
  views: ['static-pod-manifests', 'kubelet', 'containers', 'processes', 'sockets', 'mounts'],
  follows: ['backup'],
  plan(s, ctx) {
    const manifests = s.paths.filter((p) => p.kind === 'static-pod-manifest').map((p) => p.path);
    if (!manifests.length) return [];
    const dest = `${ctx.backupDir}/manifests`;
    const actions: Action[] = [
      {
        what: `move ${manifests.length} manifest${manifests.length === 1 ? '' : 's'} to ${dest}: ${manifests.map((m) => m.slice(m.lastIndexOf('/') + 1)).join(', ')}`,
        script: `umask 077; mkdir -p ${q(dest)} && mv -f -- ${manifests.map(q).join(' ')} ${q(dest)}/`,
      },
    ];
    const pods = staticPodContainers(s, ctx.node);
    if (s.kubeletHealthy && pods.length) {
      const names = [...new Set(pods.map((c) => c.pod))].join(', ');
      const t = Number(ctx.params.timeoutSec);
      actions.push({
        what: `wait up to ${t}s for the kubelet to stop ${names}`,
        nodeDecides: 'the kubelet stops these pods once their manifests are gone; what it leaves, the containers step removes',
        // Watched through the runtime that runs them: containerd's bundle directory goes when it deletes the task.
        script: `n=${t * 10}\n${pods.map((c) => `while ${stillRunning(c, s.containerd.state)} && [ "$n" -gt 0 ]; do n=$((n - 1)); sleep 0.1; done`).join('\n')}\n[ "$n" -gt 0 ] || echo "the kubelet had not stopped every pod after ${t}s"`,
      });
    }
    return actions;
  },
  after(s, ctx) {
    const gone = new Set(staticPodContainers(s, ctx.node).map((c) => c.id));
    const next = removePaths(s, s.paths.filter((p) => p.kind === 'static-pod-manifest').map((p) => p.path));
    return { ...(s.kubeletHealthy ? removeContainers(next, (c) => gone.has(c.id)) : next), staticPods: [] };
  },
  // The kubelet stops a kubeadm etcd with its manifest: the etcd interlock guards this step too
  // (unless the decommission removed the member through one that stays, first).
  refuse: (s, ctx) => (ctx.before.has('etcd-member') ? undefined : etcdInterlock(s)),
  timeoutSec: (ctx) => Number(ctx.params.timeoutSec) + 30,
};

/**
 * Removes containers through their runtime: containerd's through crictl where it talks
 * to containerd, else through the CRI over the host's connection (ctr for what the CRI
 * does not know); Docker's through the Docker API. With `only`, exactly these
 * containers and sandboxes (an audit's phantom pod), else everything of k8s.io (the
 * reset). With `startStopped`, a stopped containerd is started for its CNI DEL and
 * stopped again (the reset); else its containers are left to the processes' removal.
 */
export function runtimeRemoval(s: NodeState, cs: readonly Container[], o: { only: boolean; startStopped: boolean }): Action[] {
  const actions: Action[] = [];
  const cd = cs.filter((c) => c.runtime === 'containerd');
  const containerdUp = [...s.processes.values()].some((p) => p.name === 'containerd');
  // IDs come from the node: after `--`, none can pass for an option.
  const ids = (xs: Container[]) => `-- ${xs.map((c) => q(c.id)).join(' ')}`;
  const named = (xs: Container[]) => xs.map((c) => `${c.id.slice(0, 13)} (${c.pod ?? c.kind})`).join(', ');
  // crictl only where it talks to containerd (on a cri-dockerd node it would reach Docker's pods).
  if (cd.length && s.tools.has('crictl') && s.crictl.runtime === 'containerd' && containerdUp) {
    const pods = cd.filter((x) => x.kind === 'sandbox');
    // Removing a sandbox removes its containers: crictl would fail on them (NotFound).
    const removed = new Set(pods.map((p) => p.id));
    const rest = cd.filter((x) => x.kind !== 'sandbox' && !(x.sandboxId && removed.has(x.sandboxId)));
    if (pods.length) {
      actions.push({ what: `stop and remove ${pods.length} pod sandbox${pods.length === 1 ? '' : 'es'} with crictl: ${named(pods)}`, script: `crictl stopp ${ids(pods)}; crictl rmp -f ${ids(pods)}` });
    }
    if (rest.length) actions.push({ what: `remove ${rest.length} container${rest.length === 1 ? '' : 's'} left with crictl`, script: `crictl rm -f ${ids(rest)}` });
  } else if (cd.length && (containerdUp || o.startStopped)) {
    // Started by us, stopped by us (and waited for): recorded on the node first (STARTED_CONTAINERD), on init-less
    // nodes as the PID and start time we started, so a run killed in between leaves it for the next run to stop.
    const config = s.containerd.files[0] !== undefined && s.containerd.files[0] !== CONTAINERD_CONFIG ? s.containerd.files[0] : undefined;
    const bracket = containerdUp
      ? undefined
      : {
          start: systemdNode(s.pid1)
            ? `echo systemd > ${STARTED_CONTAINERD} && systemctl start containerd && echo "containerd systemd"`
            : // With the config it was started with, when that is not the default one; without the lock's descriptors, or
              // the daemon would hold the node's lock for as long as it runs.
              `${PSTAT}setsid containerd${config ? ` --config ${q(config)}` : ''} </dev/null >>/var/log/containerd.log 2>&1 ${CLOSE_LOCK_FDS} & p=$!; pstat "$p" && echo "$p:$PSTART" > ${STARTED_CONTAINERD} && echo "containerd $p:$PSTART"`,
          stop: `${STOP_STARTED_CONTAINERD}stop_started_containerd`,
        };
    const only = o.only ? new Set(cd.map((c) => c.id)) : undefined;
    actions.push({
      what: `stop and remove ${only ? 'these pods' : "the pods of containerd's k8s.io namespace"} through its CRI${containerdUp ? '' : ' (containerd is stopped: started for this, then stopped again)'}, ctr for containers the CRI does not know: ${named(cd)}`,
      script: `(CRI over the SSH connection, ${s.containerd.address}) StopPodSandbox and RemovePodSandbox of ${only ? 'each of these sandboxes' : 'every sandbox'}, RemoveContainer of what is left; then ctr -n k8s.io task rm -f / container rm of the containers the CRI does not know`,
      client: (node) => criTeardown(node, s.containerd.address, bracket, only),
    });
  }
  const dk = cs.filter((c) => c.runtime === 'docker');
  if (dk.length) {
    actions.push({
      what: `remove ${dk.length} Docker k8s_* container${dk.length === 1 ? '' : 's'} through the Docker API: ${dk.map((c) => c.name).join(', ')}`,
      script: `(Docker API over the SSH connection) DELETE /containers/ID?force=true for ${dk.map((c) => c.id.slice(0, 12)).join(' ')}`,
      client: (node) => dockerRemove(node, 'containers', dk.map((c) => c.id)),
    });
  }
  return actions;
}

/**
 * containerd's k8s.io pods through crictl when the node has it (its command lines
 * in the journal are what an SRE can run again by hand), else through the CRI
 * itself over the host's connection (cri.ts), ctr only for what the CRI does not
 * know. Either way StopPodSandbox runs the CNI DEL: the pod network is released by
 * its owner, and the steps after this one plan on a fresh look at it. Docker's
 * k8s_* containers by id, through the Docker API.
 */
export const containers: Step = {
  name: 'containers',
  description: "remove Kubernetes' pod sandboxes and containers through their runtime (never another namespace's or a non-k8s_ Docker container)",
  params: z.object({}),
  owns: (f) => f.kind === 'pod-sandbox' || f.kind === 'container',
  // What the CNI DEL of a stopped sandbox changes is looked at again, for the steps after this one.
  views: ['containers', 'processes', 'sockets', 'mounts', 'netns', 'links', 'cni-firewall'],
  // The runtime's state, and what the CNI plugins' DEL releases (leases, netns, their daemons' state).
  paths: ['/run/containerd', '/var/lib/containerd', '/var/lib/cni', '/run/netns', '/var/run/netns', '/run/flannel', '/run/calico', '/var/lib/calico', '/var/run/calico'],
  follows: ['backup', 'static-pods', 'kubelet'],
  plan: (s) => runtimeRemoval(s, s.containers, { only: false, startStopped: true }),
  // The runtime's teardown of its sandboxes takes their pod networks with them (CNI DEL).
  after: (s) => removeContainers(stopSandboxes(s, s.containers.filter((c) => c.runtime === 'containerd' && c.kind === 'sandbox')), () => true),
  timeoutSec: () => 120,
};

/** Shims and every process in a Kubernetes cgroup: a killed shim's container keeps its ports. */
function leftoverProcesses(s: NodeState) {
  const pids = new Set<number>(s.k8sCgroups.keys());
  for (const f of findings(s)) if (f.kind === 'shim-process' || f.kind === 'orphan-container-process') pids.add(Number(f.subject));
  return [...pids].map((pid) => s.processes.get(pid)).filter((p) => p !== undefined);
}

/** Seconds a process gets between TERM and KILL, by default (the processes step, the audit's remedies). */
export const PROCESS_GRACE_SEC = 10;

/** Stops processes (TERM, then KILL after the grace period), each named by PID and start time so a reused PID is never hit. */
export const stopProcessesAction = (procs: Proc[], graceSec: number): Action => ({
  what: `stop ${procs.length} process${procs.length === 1 ? '' : 'es'}: ${procs.map((p) => `${p.name} (${p.pid})`).join(', ')}`,
  script: stopProcsScript(procs, graceSec),
});

export const processes: Step = {
  name: 'processes',
  description: 'stop the shims and container processes no runtime knows any more, found by command line and cgroup (TERM, then KILL)',
  params: z.object({ graceSec: z.number().int().nonnegative().default(PROCESS_GRACE_SEC).describe('seconds between TERM and KILL') }),
  owns: (f) => f.kind === 'shim-process' || f.kind === 'orphan-container-process',
  views: ['processes', 'sockets'],
  follows: ['backup', 'kubelet', 'containers'],
  plan(s, ctx) {
    const procs = leftoverProcesses(s);
    if (!procs.length) return [];
    return [stopProcessesAction(procs, Number(ctx.params.graceSec))];
  },
  after: (s) => killProcesses(s, leftoverProcesses(s).map((p) => p.pid)),
  timeoutSec: (ctx) => Number(ctx.params.graceSec) + 30,
};

export const ports: Step = {
  name: 'ports',
  description: "prove Kubernetes' ports free (6443, 2379-2381, 10248-10259): a port still held fails and names its holder",
  params: z.object({}),
  owns: (f) => f.kind === 'listening-port',
  views: ['sockets'],
  follows: ['kubelet', 'containers', 'processes', 'etcd'],
  plan: () => [],
  after: (s) => s,
};
