/**
 * The built-in steps, by the name playbooks use. The reset order
 * (docs/design.md#the-order-of-a-reset) is playbooks/reset.yaml's, the
 * decommission's (cluster side around it) playbooks/decommission.yaml's; each step
 * only plans from what the probe shows, so any order a user writes is safe, if not
 * always effective.
 */
import { z } from 'zod';
import type { Step } from '../engine/step.js';
import { backup } from './backup.js';
import { cgroups } from './cgroups.js';
import { deleteNode, drain, etcdMember, volumes } from './cluster.js';
import { dns } from './dns.js';
import { files } from './files.js';
import { firewall } from './firewall.js';
import { links, mounts, netns, routes } from './kernel.js';
import { images, installed } from './purge.js';
import { containers, ports, processes, staticPods } from './pods.js';
import { etcd, kubelet } from './services.js';
import { trust } from './trust.js';
import { verify } from './verify.js';

export const STEPS: Record<string, Step> = Object.fromEntries(
  [drain, volumes, etcdMember, backup, staticPods, kubelet, containers, processes, cgroups, etcd, ports, mounts, links, routes, netns, firewall, dns, trust, files, installed, images, verify, deleteNode].map((s) => [s.name, s]),
);

/** A playbook's `shell:` step: runs when its `check:` says there is work (always, without one); owns no residue. */
export function shellStep(label: string, shell: string, check: string | undefined, timeoutSec: number): Step {
  return {
    name: label,
    description: `shell: ${shell}`,
    params: z.object({}),
    owns: () => false,
    views: [],
    mustSucceed: true,
    plan: () => [{ what: label, script: shell, ...(check ? { guard: check, nodeDecides: `runs only if \`${check}\` exits 0 on the node` } : {}) }],
    after: (s) => s,
    timeoutSec: () => timeoutSec,
  };
}
