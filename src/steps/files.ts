/**
 * Kubernetes' files, after everything that used them is gone: CNI config and state,
 * the kubelet's state, /etc/kubernetes. Deleted with one-file-system semantics and
 * never through a symlink; a path with a mount below it is not touched at all.
 */
import { z } from 'zod';
import { removePaths } from '../engine/model.js';
import type { Step } from '../engine/step.js';
import { findings, type Kind } from '../verify/rules.js';
import { q } from './sh.js';

const KINDS: ReadonlySet<Kind> = new Set(['cni-config', 'cni-state', 'kubelet-state', 'kubernetes-config']);

export const files: Step = {
  name: 'files',
  description: 'delete CNI config and state, kubelet state and /etc/kubernetes (backed up first), never below a mount',
  params: z.object({}),
  owns: (f) => KINDS.has(f.kind),
  views: ['files', 'mounts'],
  plan(s) {
    const paths = findings(s).filter((f) => KINDS.has(f.kind)).map((f) => f.subject);
    // The topmost paths only: deleting a directory deletes what the probe listed below it.
    const tops = paths.filter((p) => !paths.some((o) => o !== p && p.startsWith(`${o}/`)));
    const mounted = (p: string) => s.mounts.some((m) => m.target === p || m.target.startsWith(`${p}/`));
    return tops
      .filter((p) => !mounted(p))
      .map((p) => ({ what: `delete ${p}`, script: `rm -rf --one-file-system -- ${q(p)}` }));
  },
  after(s) {
    const mounted = (p: string) => s.mounts.some((m) => m.target === p || m.target.startsWith(`${p}/`));
    return removePaths(s, findings(s).filter((f) => KINDS.has(f.kind) && !mounted(f.subject)).map((f) => f.subject));
  },
};
