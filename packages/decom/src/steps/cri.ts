/**
 * Pods torn down through containerd's CRI, over the host's connection, on a node
 * without crictl: StopPodSandbox runs the CNI DEL, so the pod's IP lease, veth, netns
 * and per-pod firewall rules are released by their owner; RemovePodSandbox takes the
 * pod's containers with it. ctr only for k8s.io containers the CRI does not know
 * (made by hand, or by a runtime whose CRI state was lost). A stopped containerd is
 * started for this (its CRI recovers the sandboxes it had, as not ready, and can
 * still run their CNI DEL) and stopped again, waited for until it is gone.
 */
import { CriClient, isNotFound } from '../cri/client.js';
import { CONTAINERD_DEFAULTS } from '../cri/containerd-config.js';
import type { NodeIo } from '../engine/step.js';
import { shQuote as q } from '../util/run.js';

/** How this node starts and stops containerd when the teardown must start it. */
export interface Bracket {
  start: string;
  stop: string;
}

const short = (id: string) => id.slice(0, 13);

/** Runs a script on the node; fails with its last line of output. */
async function must(node: NodeIo, script: string, what: string): Promise<string> {
  const r = await node.exec(script, 60);
  if (r.code !== 0) throw new Error(`${what}: exit ${r.code}: ${(r.stderr || r.stdout).trim().split('\n').pop() ?? ''}`);
  return r.stdout;
}

/**
 * The CRI, once it serves: a containerd just started answers its own API before its
 * CRI plugin has recovered its sandboxes ("server is not initialized yet").
 */
async function connectWhenReady(node: NodeIo, address: string): Promise<CriClient> {
  for (let tries = 100; ; tries--) {
    try {
      return await CriClient.connect(() => node.openUnixSocket(address));
    } catch (e) {
      if (tries <= 0 || !/not initialized/.test((e as Error).message)) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** With `only`, the teardown touches exactly these sandboxes and containers (an audit's phantom pod); else all of k8s.io (the reset). */
export async function criTeardown(node: NodeIo, address: string, bracket: Bracket | undefined, only?: ReadonlySet<string>): Promise<string> {
  const mine = (id: string) => !only || only.has(id);
  const done: string[] = [];
  // ctr reaches containerd where its config puts the socket.
  const ctr = address === CONTAINERD_DEFAULTS.address ? 'ctr' : `CONTAINERD_ADDRESS=${q(address)} ctr`;
  if (bracket) {
    // Journaled at once, before and after, not with the step's actions: a run killed before it stops containerd again
    // says it started one (which one, the node's record says: the run that takes over the lock stops it, engine/lock.ts).
    node.journal?.({ event: 'daemon-start', daemon: 'containerd' });
    const started = await must(node, `${bracket.start}\nn=100; until [ -S ${q(address)} ] && ${ctr} version >/dev/null 2>&1; do n=$((n - 1)); [ $n -gt 0 ] || { echo "containerd did not start" >&2; exit 1; }; sleep 0.1; done`, 'starting containerd');
    node.journal?.({ event: 'daemon-started', daemon: started.trim().split('\n').pop() || 'containerd' });
    done.push('started containerd');
  }
  try {
    const cri = await connectWhenReady(node, address);
    try {
      // Pods one after another: each StopPodSandbox waits for its CNI DEL, and a
      // failure names its pod while the rest are still known.
      for (const s of (await cri.listPodSandbox()).filter((x) => mine(x.id))) {
        const pod = `${s.metadata?.namespace ?? '?'}/${s.metadata?.name ?? '?'}`;
        await cri.stopPodSandbox(s.id).catch((e: unknown) => {
          if (!isNotFound(e)) throw e;
        });
        await cri.removePodSandbox(s.id).catch((e: unknown) => {
          if (!isNotFound(e)) throw e;
        });
        done.push(`CRI ${cri.apiVersion} StopPodSandbox, RemovePodSandbox ${short(s.id)} (${pod})`);
      }
      // Containers whose sandbox was already gone.
      for (const c of (await cri.listContainers()).filter((x) => mine(x.id))) {
        await cri.removeContainer(c.id).catch((e: unknown) => {
          if (!isNotFound(e)) throw e;
        });
        done.push(`CRI ${cri.apiVersion} RemoveContainer ${short(c.id)} (${c.metadata?.name ?? '?'})`);
      }
    } finally {
      await cri.close();
    }
    // What is left in k8s.io, the CRI never knew. Listed now: the CRI removed the rest.
    const left = (await must(node, `${ctr} -n k8s.io containers ls -q`, 'listing k8s.io containers')).split('\n').map((l) => l.trim()).filter((id) => id && mine(id));
    if (left.length) {
      const ids = `-- ${left.map(q).join(' ')}`;
      // Two ctr calls for all of them (each costs a Go start-up): `task rm -f` kills and deletes.
      await must(node, `${ctr} -n k8s.io task rm -f ${ids} >/dev/null 2>&1; ${ctr} -n k8s.io container rm ${ids}`, 'removing k8s.io containers with ctr');
      done.push(`ctr -n k8s.io: removed ${left.map(short).join(' ')} (unknown to the CRI)`);
    }
  } finally {
    if (bracket) {
      await must(node, bracket.stop, 'stopping containerd again');
      done.push('stopped containerd again');
    }
  }
  return done.join('\n') || 'nothing left to remove';
}
