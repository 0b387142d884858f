/**
 * The installation footprint, for a node that leaves for good (`--purge`): what
 * kubespray or kubeadm installed outside any package (binaries, unit files and
 * drop-ins, tool configs), what an administrator may have written for the runtime
 * (static CDI specs, NRI plugins and configs, containerd's conf.d drop-ins), then the images of containerd's k8s.io namespace through
 * the runtime. A path a Debian or RPM package owns is never found here: the rules
 * leave it to the package manager. Without --purge the probe does not look, so
 * these steps find nothing to do.
 */
import { z } from 'zod';
import type { Action, Step } from '../engine/step.js';
import { findings, kubernetesDockerImages, type Kind } from '../rules/residue.js';
import { dockerRemove } from './docker.js';
import { deletePathScript, q, systemdNode } from '../engine/sh.js';

const KINDS: ReadonlySet<Kind> = new Set(['installed-binary', 'installed-unit', 'installed-config', 'runtime-config']);

export const installed: Step = {
  name: 'installed',
  description: "with --purge: delete the binaries, unit files and drop-ins and tool configs kubespray or kubeadm installed (never a package-owned file), static CDI specs, NRI plugins and containerd's conf.d drop-ins, then reload systemd",
  params: z.object({}),
  owns: (f) => KINDS.has(f.kind),
  views: ['install', 'files'],
  follows: ['backup', 'kubelet', 'containers', 'etcd', 'files'],
  plan(s) {
    const found = findings(s).filter((f) => KINDS.has(f.kind));
    const paths = found.map((f) => f.subject);
    const tops = paths.filter((p) => !paths.some((o) => o !== p && p.startsWith(`${o}/`)));
    const actions: Action[] = tops.map((p) => ({ what: `delete ${p}`, script: deletePathScript(p, { resolved: s.resolved.get(p) }) }));
    if (found.some((f) => f.kind === 'installed-unit') && systemdNode(s.pid1)) {
      // Or systemd keeps the deleted units loaded, and a dangling wants link enabled.
      actions.push({ what: 'systemctl daemon-reload', script: 'systemctl daemon-reload' });
    }
    return actions;
  },
  after: (s) => ({ ...s, installed: s.installed.filter((i) => i.owner), paths: s.paths.filter((p) => p.kind !== 'runtime-config') }),
};

export const images: Step = {
  name: 'images',
  description: "with --purge: remove the images of containerd's k8s.io namespace through containerd (their content and snapshots go with them; other namespaces' images stay), and the Docker images only Kubernetes' containers used",
  params: z.object({}),
  owns: (f) => f.kind === 'image',
  views: ['install'],
  follows: ['backup', 'containers'],
  plan(s) {
    const actions: Action[] = [];
    if (s.images.length) {
      actions.push({
        what: `remove ${s.images.length} image${s.images.length === 1 ? '' : 's'} from containerd's k8s.io namespace: ${s.images.join(', ')}`,
        // --sync: the garbage collection of their content and snapshots is done when ctr returns.
        script: `ctr -n k8s.io images rm --sync ${s.images.map(q).join(' ')}`,
      });
    }
    const docker = kubernetesDockerImages(s).map((d) => d.ref);
    if (docker.length) {
      actions.push({
        what: `remove ${docker.length} Docker image reference${docker.length === 1 ? '' : 's'} through the Docker API: ${docker.join(', ')}`,
        script: `(Docker API over the SSH connection) DELETE /images/REF for ${docker.join(' ')}`,
        client: (node) => dockerRemove(node, 'images', docker),
      });
    }
    return actions;
  },
  after: (s) => {
    const gone = new Set(kubernetesDockerImages(s).map((d) => d.ref));
    return { ...s, images: [], dockerImages: s.dockerImages.filter((d) => !gone.has(d.ref)) };
  },
  timeoutSec: () => 300,
};
