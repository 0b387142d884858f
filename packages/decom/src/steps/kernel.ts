/**
 * Kernel objects Kubernetes leaves: mounts (deepest first; one that will not go
 * fails the step and names its holder, and nothing below it is ever deleted), CNI
 * links by name, the routes the CNI's routing daemon left, then the cni-* network
 * namespaces.
 */
import { z } from 'zod';
import type { NodeState } from '../probes/index.js';
import { removeMounts } from '../engine/model.js';
import type { Action, Step } from '../engine/step.js';
import { cniRoutes, findings, type Finding } from '../rules/residue.js';
import { q } from '../engine/sh.js';

const NETNS_MOUNT = /^\/(var\/)?run\/netns\/cni-/;
const depth = (p: string) => p.split('/').length;

/** Prints who holds a mount target busy: processes with a cwd, root, open file or mapping below it. */
const HOLDERS = `
holders() {
  for d in /proc/[0-9]*; do
    hit=
    for f in "$d/cwd" "$d/root" "$d"/fd/*; do l=$(readlink "$f" 2>/dev/null) || continue; case $l in "$1"|"$1"/*) hit=1; break ;; esac; done
    [ -z "$hit" ] && grep -q -F " $1/" "$d/maps" 2>/dev/null && hit=1
    [ -n "$hit" ] && { read -r c < "$d/comm"; printf 'held by pid %s (%s)\\n' "\${d#/proc/}" "$c"; }
  done
}
`;

/** Unmounts one target; a mount gone already is done, a busy one fails naming its holders. */
export const unmountAction = (target: string): Action => ({
  what: `unmount ${target}`,
  script: `${HOLDERS}umount -- ${q(target)} 2>&1 || { mountpoint -q -- ${q(target)} || exit 0; holders ${q(target)}; exit 1; }`,
});

const mountFindings = (s: NodeState): Finding[] => findings(s).filter((f) => f.kind === 'mount' && !NETNS_MOUNT.test(f.subject));

export const mounts: Step = {
  name: 'mounts',
  description: 'unmount what Kubernetes mounted (pod volumes, CSI, container root filesystems), deepest first; a busy mount fails the step and names its holder',
  params: z.object({}),
  owns: (f) => f.kind === 'mount' && !NETNS_MOUNT.test(f.subject),
  views: ['mounts'],
  // Where the residue rules find Kubernetes' mounts (the runtime's state dirs by default).
  paths: ['/var/lib/kubelet', '/run/containerd', '/var/lib/containerd', '/run/netns', '/var/run/netns', '/run/k3s', '/var/lib/rancher/k3s'],
  follows: ['backup', 'containers', 'processes'],
  plan(s) {
    // Deepest first; of equal depth, the one mounted last (it may sit on the other).
    const order = mountFindings(s)
      .map((f, i) => ({ target: f.subject, i }))
      .sort((a, b) => depth(b.target) - depth(a.target) || b.i - a.i);
    return order.map(({ target }) => unmountAction(target));
  },
  after: (s) => removeMounts(s, mountFindings(s).map((f) => f.subject)),
};

const linkFirst = (name: string, master?: string) => (master || /^(veth|cali|lxc)/.test(name) ? 0 : 1);

/** Deletes one link by name; deleting one end of a veth pair takes the other with it, so gone is done. */
export const deleteLinkAction = (name: string): Action => ({
  what: `delete link ${name}`,
  script: `ip link show dev ${q(name)} >/dev/null 2>&1 || exit 0; ip link delete dev ${q(name)}`,
});

export const links: Step = {
  name: 'links',
  description: 'delete CNI and kube-proxy links by name (cni0, flannel.*, vxlan.calico, cali*, veths on cni0…), never by type',
  params: z.object({}),
  owns: (f) => f.kind === 'cni-link',
  views: ['links'],
  paths: [],
  follows: ['backup', 'containers'],
  plan(s) {
    // Pod-side veths first: a bridge deleted first would leave them unattached, and no longer recognisable.
    const names = findings(s)
      .filter((f) => f.kind === 'cni-link')
      .map((f) => ({ name: f.subject, first: linkFirst(f.subject, s.links.find((l) => l.name === f.subject)?.master) }))
      .sort((a, b) => a.first - b.first);
    return names.map(({ name }) => deleteLinkAction(name));
  },
  after(s) {
    const gone = new Set(findings(s).filter((f) => f.kind === 'cni-link').map((f) => f.subject));
    return { ...s, links: s.links.filter((l) => !gone.has(l.name)) };
  },
};

/** Routes the CNI's routing daemon installed (BIRD's pod routes and blackholes, kube-router's BGP routes); routes through a deleted link went with it. */
export const routes: Step = {
  name: 'routes',
  description: "delete the routes Calico's BIRD and Felix and kube-router's BGP installed (by their protocol number, where the CNI's state shows it ran), never a default route or one of the kernel's, the OS's or a user's",
  params: z.object({}),
  owns: (f) => f.kind === 'route',
  views: ['links'],
  paths: [],
  follows: ['backup', 'containers', 'links'],
  plan(s) {
    return cniRoutes(s).map((r) => ({
      what: `delete route ${r.spec}${r.via ? ` via ${r.via}` : ''}`,
      // The protocol is part of the match: a user's route to the same prefix is never hit.
      // Gone already (its link went with the links step) is done: the kernel says ESRCH.
      script: `out=$(ip${r.family === 6 ? ' -6' : ''} route del ${r.spec.split(' ').map(q).join(' ')} 2>&1) || case $out in *'No such process'*) ;; *) printf '%s\\n' "$out"; exit 1 ;; esac`,
    }));
  },
  after: (s) => {
    const gone = new Set(cniRoutes(s));
    return { ...s, routes: s.routes.filter((r) => !gone.has(r)) };
  },
};

/** Deletes one network namespace by name; one the runtime's CNI DEL removed since the plan was made is done. */
export const deleteNetnsAction = (n: string): Action => ({ what: `delete network namespace ${n}`, script: `[ -e /run/netns/${q(n)} ] || exit 0; ip netns delete ${q(n)}` });

export const netns: Step = {
  name: 'netns',
  description: 'delete the cni-* network namespaces (never another name)',
  params: z.object({}),
  owns: (f) => f.kind === 'netns' || (f.kind === 'mount' && NETNS_MOUNT.test(f.subject)),
  views: ['netns', 'mounts'],
  paths: ['/run/netns', '/var/run/netns'],
  follows: ['backup', 'containers', 'links'],
  plan(s) {
    return s.netns.filter((n) => n.startsWith('cni-')).map(deleteNetnsAction);
  },
  after(s) {
    const gone = s.netns.filter((n) => n.startsWith('cni-'));
    return { ...s, netns: s.netns.filter((n) => !gone.includes(n)), mounts: s.mounts.filter((m) => !NETNS_MOUNT.test(m.target)) };
  },
};
