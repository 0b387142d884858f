/**
 * The node's Kubernetes daemons: the kubelet (and the Kubernetes-only runtimes,
 * cri-dockerd and CRI-O), and etcd when it runs outside a pod. Through systemd when
 * it is PID 1 — `disable --now`, or `Restart=always` brings a killed kubelet back in
 * ten seconds — and by signal otherwise or for what systemd does not own.
 */
import { z } from 'zod';
import type { NodeState } from '../probes/index.js';
import { killProcesses, removePaths } from '../engine/model.js';
import type { Action, Step } from '../engine/step.js';
import { clusterEtcd, foreignEtcd, foreignEtcdData, hostEtcd, kubeletUnitState } from '../rules/residue.js';
import { deletePathScript, q, stopProcsScript, systemdNode } from '../engine/sh.js';
import { etcdArchive } from './backup.js';

const K8S_DAEMONS: Record<string, string> = { kubelet: 'kubelet.service', 'cri-dockerd': 'cri-docker.service', crio: 'crio.service' };

const daemons = (s: NodeState) => [...s.processes.values()].filter((p) => Object.hasOwn(K8S_DAEMONS, p.name));

export const kubelet: Step = {
  name: 'kubelet',
  description: 'stop and disable the kubelet (and cri-dockerd, CRI-O) so nothing re-registers the Node or restarts pods',
  params: z.object({ graceSec: z.number().int().nonnegative().default(10) }),
  owns: (f) => f.kind === 'kubelet-process' || f.kind === 'kubelet-service' || f.kind === 'runtime-daemon',
  views: ['processes', 'units', 'sockets'],
  follows: ['backup', 'static-pods'],
  plan(s, ctx) {
    const actions: Action[] = [];
    const procs = daemons(s);
    if (systemdNode(s.pid1)) {
      const units = [...new Set(procs.map((p) => K8S_DAEMONS[p.name] as string))];
      if (kubeletUnitState(s) && !units.includes('kubelet.service')) units.unshift('kubelet.service');
      if (units.length) {
        // --no-reload (a daemon-reload costs ~0.1 s of CPU per node) only while the kubelet runs: the probe
        // then never asked systemd for its unit file state. Once asked (a stopped kubelet: `systemctl show`),
        // systemd caches that state until a reload, and would still say "enabled" after the disable.
        const noReload = s.runningUnits.has('kubelet.service') ? ' --no-reload' : '';
        actions.push({
          what: `systemctl disable --now ${units.join(' ')}`,
          // `disable` of a unit whose file is gone fails; `stop` must still happen.
          script: `rc=0; for u in ${units.map(q).join(' ')}; do systemctl disable --now${noReload} "$u" 2>&1 || { systemctl stop "$u" 2>&1 || rc=1; }; done; exit $rc`,
        });
      }
    }
    if (procs.length) {
      actions.push({
        what: `stop ${procs.map((p) => `${p.name} (${p.pid})`).join(', ')}${systemdNode(s.pid1) ? ' if systemd left it running' : ''}`,
        script: stopProcsScript(procs, Number(ctx.params.graceSec)),
      });
    }
    return actions;
  },
  after(s) {
    const units = new Map(s.units);
    const u = units.get('kubelet.service');
    if (u) units.set('kubelet.service', { ...u, active: 'inactive', fileState: u.fileState === 'enabled' ? 'disabled' : u.fileState });
    const runningUnits = new Set([...s.runningUnits].filter((x) => x !== 'kubelet.service'));
    return { ...killProcesses(s, daemons(s).map((p) => p.pid)), units, runningUnits, kubeletHealthy: false };
  },
  timeoutSec: (ctx) => Number(ctx.params.graceSec) + 60,
};

/** The cluster's etcd outside a pod (a pod's goes with its manifest): never an etcd nothing ties to the cluster. */
const etcdProcs = (s: NodeState) => (clusterEtcd(s) ? hostEtcd(s) : []);

/** Why resetting this node would take a vote from a healthy etcd cluster, if it would (only the cluster's etcd is asked about). */
export function etcdInterlock(s: NodeState): string | undefined {
  if (!clusterEtcd(s)) return undefined;
  const e = s.etcd;
  if (!e) {
    // It runs (as a service or a static pod) but the node has no etcdctl to ask it: assume the worst.
    const running = [...s.processes.values()].find((p) => p.name === 'etcd');
    return running
      ? `etcd runs here (pid ${running.pid}) and the node has no etcdctl to tell whether it is a voting member of a healthy cluster; install etcdctl, or remove the member first (decom run without --playbook)`
      : undefined;
  }
  if (e.error || !e.memberId) {
    return `etcd runs here but etcdctl could not tell whether it is a member of a healthy cluster (${e.error ?? 'no member id'} at ${e.endpoint}); remove the member first (decom run without --playbook), or stop etcd yourself if the cluster is gone`;
  }
  const me = e.members.find((m) => m.id === e.memberId);
  const voters = e.members.filter((m) => !m.isLearner);
  const healthy = e.health.filter((h) => h.healthy).length;
  if (!me || me.isLearner || voters.length <= 1) return undefined;
  if (healthy <= voters.length / 2) return undefined; // no quorum: nothing left to protect
  return `etcd member ${me.name || me.id} is a voting member of a healthy ${voters.length}-member cluster (${healthy} healthy); resetting it would take a vote away and lose its data. Remove the member first: decom run without --playbook (the decommission) does that`;
}

/** The cluster's etcd data: every etcd data path, less what may be a foreign etcd's own. */
const clusterEtcdData = (s: NodeState): string[] => {
  const theirs = foreignEtcdData(s);
  return s.paths.filter((p) => p.kind === 'etcd-data' && !theirs.includes(p.path)).map((p) => p.path);
};

export const etcd: Step = {
  name: 'etcd',
  description: "stop and disable etcd.service (its static pod goes with the manifests) and remove its data (backed up first) — refused while it is a voting member of a healthy cluster; beside an etcd nothing ties to the cluster, only the cluster's data, judged by the data dir that etcd uses",
  params: z.object({ graceSec: z.number().int().nonnegative().default(10) }),
  owns: (f) => f.kind === 'etcd-process' || f.kind === 'etcd-data',
  views: ['processes', 'units', 'sockets', 'files', 'etcd'],
  follows: ['backup', 'etcd-member'],
  refuse: (s, ctx) => (ctx.before.has('etcd-member') ? undefined : etcdInterlock(s)),
  plan(s, ctx) {
    const actions: Action[] = [];
    const procs = etcdProcs(s);
    if (systemdNode(s.pid1) && s.runningUnits.has('etcd.service') && clusterEtcd(s)) {
      actions.push({ what: 'systemctl disable --now etcd.service', script: 'systemctl disable --now --no-reload etcd.service 2>&1 || systemctl stop etcd.service' });
    }
    if (procs.length) actions.push({ what: `stop etcd (${procs.map((p) => p.pid).join(', ')})`, script: stopProcsScript(procs, Number(ctx.params.graceSec)) });
    // Beside an etcd nothing ties to the cluster, only what is not at or around the data dir it uses.
    const data = clusterEtcdData(s);
    if (data.length) {
      // Archived first, on the node (see etcdArchive): by now no etcd of the cluster writes to it.
      const archive = ctx.backupDir ? etcdArchive(ctx.backupDir) : undefined;
      const keep = archive ? `umask 077; mkdir -p ${q(archive.slice(0, archive.lastIndexOf('/')))} && tar -C / --one-file-system -czf ${q(archive)} ${data.map((p) => q(p.slice(1))).join(' ')} || exit 1\n` : '';
      const remove = data.map((p) => `${deletePathScript(p, { resolved: s.resolved.get(p) })} || exit 1`).join('\n');
      actions.push({ what: `${archive ? `archive etcd data to ${archive}, then ` : ''}remove etcd data ${data.join(', ')}`, script: `${keep}${remove}` });
    }
    return actions;
  },
  after(s) {
    if (foreignEtcd(s).length) return removePaths(s, clusterEtcdData(s));
    const next = killProcesses(s, etcdProcs(s).map((p) => p.pid));
    const runningUnits = new Set([...s.runningUnits].filter((x) => x !== 'etcd.service'));
    const { etcd: _gone, ...rest } = removePaths(next, clusterEtcdData(s));
    return { ...rest, runningUnits };
  },
  timeoutSec: (ctx) => Number(ctx.params.graceSec) + 60,
};
