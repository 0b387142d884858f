/**
 * Kubernetes' files, after everything that used them is gone: CNI config and state
 * (containerd's conf dirs, Cilium's sysctl override and the configs it renamed aside), the
 * transient CDI specs drivers wrote,
 * the kubelet's state, /etc/kubernetes, etcd's certificates and environment, pod logs,
 * kubespray's API proxy config (judged by content), Cilium's BPF pins, and this
 * cluster's credentials elsewhere (users' kubeconfigs judged by content). Deleted with one-file-system semantics and
 * never through a symlink; a path with a mount below it is not touched at all.
 */
import { z } from 'zod';
import type { NodeState } from '../probes/index.js';
import { removePaths } from '../engine/model.js';
import type { Action, Step } from '../engine/step.js';
import { findings, type Kind } from '../rules/residue.js';
import { deletePathScript } from '../engine/sh.js';

const KINDS: ReadonlySet<Kind> = new Set(['cni-config', 'cni-state', 'cdi-spec', 'kubelet-state', 'kubernetes-config', 'etcd-config', 'pod-logs', 'credential', 'bpf-pin']);

/**
 * Deletes a path and what is below it, never through a mount and never following a
 * symlink; refused on the node when it resolves elsewhere than `resolved` (where the probe
 * saw it) or outside `root`.
 */
export const deletePathAction = (p: string, resolved?: string, root = '/'): Action => ({ what: `delete ${p}`, script: deletePathScript(p, { root, resolved }) });

const mountedAt = (s: NodeState, p: string) => s.mounts.some((m) => m.target === p || m.target.startsWith(`${p}/`));

export const files: Step = {
  name: 'files',
  description: "delete CNI config and state (Cilium's too), the drivers' transient CDI specs, kubelet state, /etc/kubernetes, etcd's certificates, pod logs, the API proxy config, Cilium's BPF pins and this cluster's credentials (backed up first), never below a mount",
  params: z.object({}),
  owns: (f) => KINDS.has(f.kind),
  views: ['files', 'mounts'],
  follows: ['backup', 'trust', 'dns', 'kubelet', 'containers', 'processes', 'etcd', 'mounts'],
  plan(s) {
    // The evidence last: users' kubeconfigs are this cluster's by the CA and server in /etc/kubernetes and etcd's
    // certificates, so those go after them. A run interrupted in between leaves its rerun what it judges by.
    const found = findings(s).filter((f) => KINDS.has(f.kind));
    const evidence = (k: Kind) => (k === 'kubernetes-config' || k === 'etcd-config' ? 1 : 0);
    const paths = found.sort((a, b) => evidence(a.kind) - evidence(b.kind)).map((f) => f.subject);
    // The topmost paths only: deleting a directory deletes what the probe listed below it.
    const tops = paths.filter((p) => !paths.some((o) => o !== p && p.startsWith(`${o}/`)));
    return tops
      .filter((p) => !mountedAt(s, p))
      .map((p) => deletePathAction(p, s.resolved.get(p)));
  },
  after: (s) => removePaths(s, findings(s).filter((f) => KINDS.has(f.kind) && !mountedAt(s, f.subject)).map((f) => f.subject)),
};
