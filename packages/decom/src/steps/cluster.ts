/**
 * The decommission's cluster-side steps (playbooks/decommission.yaml): drain, volumes
 * detached, etcd member, Node removal. They work through the API and an etcd member
 * that stays; their interlocks run before anything changes anywhere, and each step
 * reads the cluster again when it runs, so a second run finds nothing to do. Every
 * cluster step refuses a host that is not the Node's machine, or the last control
 * plane (nodeInterlock): whichever of them a playbook runs, the Node is checked first.
 */
import { z } from 'zod';
import type { ClusterOutcome, ClusterWork, Step } from '../engine/step.js';
import type { ClusterContext } from '../cluster/context.js';
import { attachmentsOf, attachmentsOfVolume, checkDrain, claimsOf, drainNode, DrainError, graceOf, otherAttachments, singleNode, waitDetached, type DrainCheck, type MovedClaim } from '../cluster/drain.js';
import { askPeers, memberOf, membersOf, quorumVerdict, removeMember, saveSnapshot } from '../cluster/etcd.js';
import type { NodeState } from '../probes/index.js';
import { codeOf, errorLine } from '../cluster/kubeconfig.js';
import { cannotTake, homeless, isControlPlane, listNodes, readNode, removeNode } from '../cluster/node.js';
import { localDataVerdict, type LocalDataVerdict } from '../cluster/local-data.js';
import { otherMachine, otherNodeName } from '../rules/machine.js';
import type { V1Node } from '@kubernetes/client-node';

const OUT_OF_SERVICE = { key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute' };

/**
 * The cluster side's interlocks on the Node, before anything changes: the host behind
 * the inventory address is the machine the Node is (machine-id; the hostname unless
 * the inventory names the Node), and the Node is not the last control plane. A Node
 * already gone passes: the run finishes what is left. Reads the Node into `c.node`.
 */
async function nodeInterlock(c: ClusterContext, s: NodeState | undefined): Promise<string | undefined> {
  const node = await readNode(c);
  c.node = node;
  if (!node) {
    // Gone already (a second run) passes; but a host whose kubelet runs, or is configured, under another Node name does not.
    const kubelet = s && ([...s.processes.values()].some((p) => p.name === 'kubelet') || s.kubeconfigs.some((k) => k.path === '/etc/kubernetes/kubelet.conf'));
    return kubelet
      ? `${c.host.name} has a kubelet, but the API at ${c.kube.server} has no Node ${c.nodeName}: it is registered under another name (set decom_node_name in the inventory), or already deleted (then reset the node alone: --playbook reset)`
      : undefined;
  }
  if (s) {
    const other = otherMachine(c.host, c.nodeName, node, s);
    if (other) return `${other}; refusing to drain and delete it`;
    const named = otherNodeName(c.host, c.nodeName, c.nodeNamed, s);
    if (named) return named;
  }
  if (isControlPlane(node) && !c.options.allowLastControlPlane) {
    const nodes = await listNodes(c);
    const others = nodes.filter((n) => isControlPlane(n) && !c.leaving.has(n.metadata?.name ?? ''));
    if (!others.length) {
      return `Node ${c.nodeName} is the cluster's last control-plane node${c.leaving.size > 1 ? ' (the others are removed by this run too)' : ''}: removing it ends the cluster; pass --allow-last-control-plane if that is the intent`;
    }
  }
  return undefined;
}

/** The Node interlock, asked once per host (its ClusterContext): by the first of its cluster steps the engine asks. */
const asked = new WeakMap<ClusterContext, Promise<string | undefined>>();
const nodeRefusal = (c: ClusterContext, s: NodeState | undefined): Promise<string | undefined> => {
  let why = asked.get(c);
  if (!why) asked.set(c, (why = nodeInterlock(c, s)));
  return why;
};

/** The local-data interlock (cluster/local-data.ts), asked once per host after the Node interlock: whichever cluster steps run, the Node's local volumes are judged. */
const localAsked = new WeakMap<ClusterContext, Promise<LocalDataVerdict>>();
const localData = (c: ClusterContext): Promise<LocalDataVerdict> => {
  let verdict = localAsked.get(c);
  if (!verdict) localAsked.set(c, (verdict = localDataVerdict(c)));
  return verdict;
};
/** The hosts whose local volumes were named already (by their first cluster step to run). */
const localNamed = new WeakSet<ClusterContext>();

/**
 * Shared by every cluster step: nothing but the API and its own work. Its refusal is
 * the Node interlock's first, then the local-data interlock's, then the step's own
 * (which may read `c.node`). The first of them to run names the local volumes
 * --allow-local-data let go, in its warnings and the journal.
 */
const clusterStep = (s: Pick<Step, 'name' | 'description'> & { cluster: ClusterWork }): Step => ({
  ...s,
  params: z.object({}),
  owns: () => false,
  views: [],
  plan: () => [],
  after: (x) => x,
  cluster: {
    ...s.cluster,
    refuse: async (c, state) => (await nodeRefusal(c, state)) ?? (await localData(c)).refusal ?? (await s.cluster.refuse?.(c, state)),
    run: async (c, state) => {
      if (localNamed.has(c)) return s.cluster.run(c, state);
      localNamed.add(c);
      const named = (await localData(c)).warnings;
      for (const w of named) c.log(w);
      const out = await s.cluster.run(c, state);
      return named.length ? { ...out, warnings: [...named, ...(out.warnings ?? [])] } : out;
    },
  },
});

const ok = (actions: ClusterOutcome['actions'] = [], warnings: string[] = []): ClusterOutcome => ({ actions, warnings });

/** The pods of this drain that no other Node could take, each with why every Node cannot ("node1: cordoned"). */
async function nowhereToGo(c: ClusterContext, chk: DrainCheck): Promise<string[]> {
  // Finished pods need nowhere to go.
  const moving = chk.plan.evict.filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
  if (!moving.length) return [];
  let nodes: V1Node[];
  try {
    nodes = await listNodes(c);
  } catch (e) {
    throw new Error(`cannot tell whether the pods of ${c.nodeName} have a Node to go to: listing Nodes failed: ${errorLine(e)} (the drainer needs nodes list; or pass --allow-pending)`);
  }
  return homeless(moving, nodes, c.leaving).map((p) => {
    const why = nodes.filter((n) => n.metadata?.name !== c.nodeName).map((n) => `${n.metadata?.name}: ${cannotTake(n, p, c.leaving)}`);
    return `${p.metadata?.namespace}/${p.metadata?.name} (${why.join('; ') || 'no other Node'})`;
  });
}

/** Why the drain must not start: kubectl's refusals, a budget that never allows, or nowhere for its pods to go (unless --allow-pending). */
async function drainRefusal(c: ClusterContext, chk: DrainCheck): Promise<string | undefined> {
  if (chk.refusal) return chk.refusal;
  if (c.options.allowPending) return undefined;
  const stuck = await nowhereToGo(c, chk).catch((e: unknown) => [(e as Error).message]);
  if (!stuck.length) return undefined;
  if (stuck.length === 1 && stuck[0]?.startsWith('cannot tell')) return stuck[0];
  return `no Node this run leaves could take the pods of ${c.nodeName}: ${stuck.join(', ')}; add a node, or uncordon one, first, or pass --allow-pending to let them go Pending`;
}

const drainFlags = (c: ClusterContext) => ({
  force: c.options.force, deleteEmptyDirData: c.options.deleteEmptyDirData, disableEviction: c.options.disableEviction, skipWaitForDeleteTimeoutSec: c.options.skipWaitForDeleteTimeoutSec,
  ...(c.options.podSelector ? { podSelector: c.options.podSelector } : {}), ...(c.options.gracePeriodSec !== undefined ? { gracePeriodSec: c.options.gracePeriodSec } : {}),
});

export const drain = clusterStep({
  name: 'drain',
  description: "cordon the Node and evict its pods as `kubectl drain --ignore-daemonsets` does (PodDisruptionBudgets asked, 429 retried until --drain-timeout); DaemonSet pods are left to the node reset; with --node-is-down, the out-of-service taint instead",
  cluster: {
    // After the Node interlock (which read c.node): the budgets, or whether the host is really down.
    async refuse(c) {
      if (!c.node) return undefined;
      if (c.options.nodeIsDown) {
        // Unknown: the kubelet stopped posting. True or False: it still posts, so the host is up.
        const ready = c.node.status?.conditions?.find((x) => x.type === 'Ready')?.status ?? 'Unknown';
        return ready !== 'Unknown' ? `--node-is-down, but Node ${c.nodeName} is ${ready === 'True' ? 'Ready' : 'NotReady'} with its kubelet posting status: the host is not down` : undefined;
      }
      return drainRefusal(c, await checkDrain(c.kube, c.nodeName, drainFlags(c)));
    },
    async run(c) {
      const node = await readNode(c);
      if (!node) return ok([], [`Node ${c.nodeName} is not registered: nothing to drain`]);
      if (c.options.nodeIsDown) {
        if ((node.spec?.taints ?? []).some((t) => t.key === OUT_OF_SERVICE.key)) return ok();
        const action = { what: `taint Node ${c.nodeName} ${OUT_OF_SERVICE.key}=${OUT_OF_SERVICE.value}:${OUT_OF_SERVICE.effect} (its pods are deleted, its volumes detached)`, script: `PATCH /api/v1/nodes/${c.nodeName}` };
        if (!c.check) {
          // The taint list is written whole: with the resourceVersion read, so a change the node lifecycle
          // controller made meanwhile is a 409, and the list is read again.
          const { setHeaderOptions, PatchStrategy } = await import('@kubernetes/client-node');
          for (let current = node, tries = 1; ; tries++) {
            const taints = [...(current.spec?.taints ?? []), OUT_OF_SERVICE];
            const body = { metadata: { resourceVersion: current.metadata?.resourceVersion }, spec: { taints } };
            try {
              await c.kube.core.patchNode({ name: c.nodeName, body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
              break;
            } catch (e) {
              if (codeOf(e) !== 409 || tries >= 5) throw e;
              current = (await readNode(c)) ?? current;
            }
          }
        }
        return ok([action]);
      }
      let chk: DrainCheck;
      try {
        chk = await checkDrain(c.kube, c.nodeName, drainFlags(c));
      } catch (e) {
        if (e instanceof DrainError) return { actions: [], failed: `${e.message}; nothing was changed` };
        throw e;
      }
      const refusal = await drainRefusal(c, chk);
      if (refusal) return { actions: [], failed: refusal };
      const verb = c.options.disableEviction ? 'delete' : 'evict';
      const podAction = (p: (typeof chk.plan.evict)[number]) => {
        const spent = chk.spent.find((b) => b.pod === `${p.metadata?.namespace}/${p.metadata?.name}`);
        const grace = graceOf(p, c.options.gracePeriodSec);
        const slow = grace > c.options.drainTimeoutSec ? ` (its grace period ${grace}s is longer than --drain-timeout ${c.options.drainTimeoutSec}s: waited for up to ${grace}s)` : '';
        return {
          what: `${verb} pod ${p.metadata?.namespace}/${p.metadata?.name}${slow}${c.check ? (spent ? ` (dry run: ${spent.message}; retried until --drain-timeout)` : ' (dry run: allowed)') : ''}`,
          script: c.options.disableEviction ? `DELETE /api/v1/namespaces/${p.metadata?.namespace}/pods/${p.metadata?.name}` : `POST /api/v1/namespaces/${p.metadata?.namespace}/pods/${p.metadata?.name}/eviction`,
        };
      };
      const cordon = { what: `cordon Node ${c.nodeName}`, script: `PATCH /api/v1/nodes/${c.nodeName} {"spec":{"unschedulable":true}}` };
      const ds = chk.plan.skipped.filter((x) => x.why === 'DaemonSet-managed').map((x) => x.pod).sort();
      // kubectl's words; the node reset stops them.
      const pending = c.options.allowPending ? await nowhereToGo(c, chk).catch((e: unknown) => [(e as Error).message]) : [];
      const warnings = [
        ...chk.plan.warnings,
        ...(ds.length ? [`ignoring DaemonSet-managed Pods: ${ds.join(', ')}`] : []),
        ...(pending.length ? [`--allow-pending: these pods will be Pending, no other Node can take them: ${pending.join(', ')}`] : []),
      ];
      // The claims of the pods it moves, journaled before any goes: the volumes step (of this run, or of a rerun if this one is killed) waits for them.
      const recorded = new Set<string>();
      const recordClaims = async (pods: typeof chk.plan.evict) => {
        const fresh = pods.filter((p) => !recorded.has(`${p.metadata?.namespace}/${p.metadata?.name}`));
        for (const p of fresh) recorded.add(`${p.metadata?.namespace}/${p.metadata?.name}`);
        const claims = await claimsOf(c.kube, fresh);
        if (claims.length) c.record?.({ event: 'drain-volumes', node: c.nodeName, claims });
        return claims;
      };
      const claims = await recordClaims(chk.plan.evict);
      if (c.check) {
        const named = claims.map((m) => (m.pv ? volumeSaid(m) : `claim ${m.claim} of pod ${m.pod}${m.unread ? ` (${m.unread})` : ''}`));
        return ok([...(node.spec?.unschedulable ? [] : [cordon]), ...chk.plan.evict.map(podAction)], [...warnings, ...(named.length ? [`the claims of the pods it moves (the volumes step waits for their ReadWriteOnce and ReadWriteOncePod volumes): ${named.join('; ')}`] : [])]);
      }
      for (const b of chk.spent) c.log(`${b.pod}: ${b.message}: retrying until the drain timeout`);
      try {
        const done = await drainNode(c.kube, c.nodeName, { ...drainFlags(c), deadline: Date.now() + c.options.drainTimeoutSec * 1000 }, c.log);
        await recordClaims(done.plan.evict);
        return ok([...(done.cordoned ? [cordon] : []), ...done.plan.evict.map(podAction)], warnings);
      } catch (e) {
        if (e instanceof DrainError && !e.cordoned) return { actions: [], failed: `${e.message}; nothing was changed` };
        if (e instanceof DrainError) return { actions: [cordon], failed: `${e.message}; the node is left as it is (cordoned): run again once the pods can go, or uncordon it (kubectl uncordon ${c.nodeName})` };
        throw e;
      }
    },
  },
});

/** The claims the drain moved off this Node, as the journal holds them: this run's, and those of the killed runs it finishes. */
function movedClaims(c: ClusterContext): MovedClaim[] {
  const out = new Map<string, MovedClaim>();
  for (const e of c.recorded?.('drain-volumes') ?? []) {
    if (e.node !== c.nodeName) continue;
    for (const m of (e.claims ?? []) as MovedClaim[]) if (!out.has(`${m.pod} ${m.claim}`)) out.set(`${m.pod} ${m.claim}`, m);
  }
  return [...out.values()];
}

/** A moved volume, for the plan and the journal: "PV pv-a (claim default/data of pod default/web-1, ReadWriteOnce, driver csi.example.com)". */
const volumeSaid = (m: MovedClaim) => `PV ${m.pv} (${[`claim ${m.claim} of pod ${m.pod}`, ...(m.accessModes ?? []), ...(m.driver ? [`driver ${m.driver}`] : [])].join(', ')})`;

export const volumes = clusterStep({
  name: 'volumes',
  description: "wait, bounded by --drain-timeout, until the volumes of the pods the drain moved (read back from the journal on a rerun) are detached from the Node, those whose claim allows ReadWriteOnce or ReadWriteOncePod; every other attachment is named with its state, and goes with the Node",
  cluster: {
    async run(c) {
      // A Node gone already: what is left of its attachments is the delete-node step's (stale).
      if (!c.options.nodeIsDown && !(await readNode(c))) return ok();
      const moved = movedClaims(c);
      const now = await attachmentsOf(c.kube, c.nodeName);
      // With --node-is-down nothing is waited for: the out-of-service taint lets the attach/detach controller detach them.
      const waited = c.options.nodeIsDown ? [] : moved.filter((m, i) => m.pv && singleNode(m) && attachmentsOfVolume(now, m).length && moved.findIndex((x) => x.pv === m.pv) === i);
      const warnings = [
        ...moved.filter((m) => m.unread && !waited.includes(m)).map((m) => `claim ${m.claim} of pod ${m.pod}, which the drain moved: ${m.unread}; its volume is not waited for`),
        ...(await otherAttachments(c.kube, c.nodeName, { waited, moved, nodeIsDown: c.options.nodeIsDown })),
      ];
      const wait = (m: MovedClaim) => ({ what: `wait for ${volumeSaid(m)} to detach from Node ${c.nodeName}`, script: `GET /apis/storage.k8s.io/v1/volumeattachments, GET /api/v1/nodes/${c.nodeName}` });
      if (!waited.length) return ok([], warnings);
      if (c.check) return ok(waited.map(wait), warnings);
      const started = Date.now();
      c.log(`waiting for ${waited.map(volumeSaid).join(', ')} to detach from Node ${c.nodeName}`);
      const left = await waitDetached(c.kube, c.nodeName, waited, started + c.options.drainTimeoutSec * 1000, c.log);
      if (left.length) return { actions: waited.map(wait), failed: `still attached to Node ${c.nodeName} after ${c.options.drainTimeoutSec} s: ${left.map((l) => `PV ${l.volume.pv} (${l.left.join(', ')})`).join('; ')}`, warnings };
      return ok(waited.map((m) => ({ ...wait(m), what: `waited ${((Date.now() - started) / 1000).toFixed(1)} s for ${volumeSaid(m)} to detach from Node ${c.nodeName}` })), warnings);
    },
  },
});

/** An etcd host: in the inventory's etcd group, or etcd runs on it (a kubeadm control plane, say). */
const etcdHost = (c: ClusterContext, s: NodeState | undefined) => c.host.groups.includes('etcd') || (s !== undefined && [...s.processes.values()].some((p) => p.name === 'etcd'));

/**
 * The member this host is, as the members that stay see it, and whether removing it
 * is refused; `member` undefined when there is nothing to remove.
 */
async function judgeMember(c: ClusterContext, s: NodeState | undefined) {
  const p = await askPeers(c);
  const memberId = s?.etcd?.memberId;
  const m = memberOf(p.view, c.host, memberId);
  let refusal: string | undefined;
  if (!m && memberId) {
    refusal = `etcd here is member ${memberId}, which the members that stay (asked through ${p.peer.name}) do not list: it belongs to another etcd cluster; remove it by hand`;
  } else if (m) {
    const why = quorumVerdict(p.view, m, membersOf(p.view, c.etcdLeaving));
    if (why && !c.options.allowQuorumLoss) refusal = `${why} (asked through ${p.peer.name}); pass --allow-quorum-loss if that is the intent`;
  }
  return { p, m, refusal };
}

export const etcdMember = clusterStep({
  name: 'etcd-member',
  description: "for an etcd host: through a member that stays, check health and quorum, save a snapshot (copied to the operator), and remove this host's member by its peer URL",
  cluster: {
    async refuse(c, s) {
      if (!etcdHost(c, s)) return undefined;
      if (!c.etcdPeers.length) {
        return c.options.allowQuorumLoss ? undefined : `${c.host.name} is the inventory's only etcd host: removing it ends the etcd cluster and its data; pass --allow-quorum-loss if that is the intent`;
      }
      try {
        return (await judgeMember(c, s)).refusal;
      } catch (e) {
        return `${c.host.name} is an etcd host, and ${(e as Error).message}: its member cannot be removed safely`;
      }
    },
    async run(c, s) {
      if (!etcdHost(c, s)) return ok();
      if (!c.etcdPeers.length) return ok([], [`${c.host.name} is the only etcd host (--allow-quorum-loss): its data goes with the node reset, backed up first`]);
      // One membership change at a time in the whole run, each judged on the cluster as the one before left it.
      return c.etcdSerial(async () => {
        const { p, m, refusal } = await judgeMember(c, s);
        if (refusal) return { actions: [], failed: refusal };
        if (!m) return ok([], [`no etcd member has a peer URL at ${c.host.address} (asked through ${p.peer.name}): nothing to remove`]);
        const snapshot = { what: `save an etcd snapshot on ${p.peer.name} and copy it to ${c.operatorBackupDir}`, script: 'etcdctl snapshot save' };
        const remove = { what: `remove etcd member ${m.name || m.id} (${m.peerURLs.join(', ')}) through ${p.peer.name}`, script: `etcdctl member remove ${m.id}` };
        if (c.check) return ok([snapshot, remove]);
        const file = await saveSnapshot(c, p, m);
        snapshot.what = `saved an etcd snapshot on ${p.peer.name}, copied to ${file}`;
        await removeMember(p, m, c.log);
        return ok([snapshot, remove]);
      });
    },
  },
});

export const deleteNode = clusterStep({
  name: 'delete-node',
  description: 'delete the Node object, last, so its kubelet cannot register it again; then what the API still holds for it that is stale without it (VolumeAttachments, CSINode, Lease, the kubelet\'s CSRs)',
  cluster: {
    async run(c) {
      const actions = await removeNode(c, !c.check);
      return ok(actions.map((a) => ({ what: a.what, script: a.request })));
    },
  },
});
