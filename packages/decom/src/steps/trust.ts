/**
 * The cluster's CAs in the system trust store. Removing the anchor file is not enough:
 * the built bundle keeps trusting the CA until it is rebuilt. Runs before `files`,
 * while the cluster CA it judges anchors against is still on the node.
 */
import { z } from 'zod';
import type { Step } from '../engine/step.js';
import { clusterAnchors } from '../rules/residue.js';
import { deletePathScript } from '../engine/sh.js';
import { ANCHOR_DIRS } from '../probes/script.js';

export const trust: Step = {
  name: 'trust',
  description: "remove the cluster's CAs from the system trust store (judged by content: a user's CA stays) and rebuild the bundle",
  params: z.object({}),
  owns: (f) => f.kind === 'trust-anchor',
  views: ['trust-store'],
  // The anchors' stores, and what rebuilding the bundle writes (its hooks: Java's keystore below /etc/ssl/certs).
  paths: [...ANCHOR_DIRS, '/etc/ssl/certs', '/etc/pki/ca-trust', '/etc/ca-certificates'],
  follows: ['backup'],
  plan(s) {
    const anchors = clusterAnchors(s).map((a) => a.path);
    if (!anchors.length && !s.bundleTrusts.length) return [];
    return [
      {
        what: `remove ${anchors.length ? anchors.join(', ') : 'no anchor file (the bundle is stale)'} and rebuild the trust bundle`,
        // Debian's tool, or RHEL's. Not --fresh: the bundle is rebuilt either way, and --fresh
        // costs ~2.5 s of CPU per node relinking every CA (the removed anchor's links dangle, trusted by nothing).
        // Each anchor judged on the node as it is deleted: below its store's dir, where the probe saw it.
        script: `${anchors.map((a) => `${deletePathScript(a, { root: ANCHOR_DIRS.find((d) => a.startsWith(`${d}/`)) ?? ANCHOR_DIRS[0], resolved: s.resolved.get(a) })} || exit 1\n`).join('')}if command -v update-ca-certificates >/dev/null; then update-ca-certificates >/dev/null; elif command -v update-ca-trust >/dev/null; then update-ca-trust extract; else echo "no update-ca-certificates or update-ca-trust to rebuild the bundle"; exit 1; fi`,
      },
    ];
  },
  after(s) {
    const gone = new Set(clusterAnchors(s).map((a) => a.path));
    return { ...s, anchors: s.anchors.filter((a) => !gone.has(a.path)), bundleTrusts: [] };
  },
};
