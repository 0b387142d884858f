/**
 * Kernel and runtime views of one node, gathered in one SSH round trip: the
 * evidence the scenario tests assert on. Each section is raw command output.
 */
import { join } from 'node:path';
import { ROOT, ssh } from './sandbox.js';

// ctr is asked only while containerd runs: without it, ctr waits out its timeout and can list nothing.
const SECTIONS = {
  listen: 'ss -Hltnp',
  netns: 'ip netns list | cut -d" " -f1',
  links: "ip -o link | awk -F': ' '{print $2}' | sed 's/@.*//'",
  cni0Ports: 'ip -o link show master cni0 2>/dev/null | awk -F": " "{print \\$2}" | sed "s/@.*//"',
  mountinfo: 'cat /proc/self/mountinfo',
  iptNft: 'iptables-save 2>/dev/null',
  iptLegacy: 'iptables-legacy-save 2>/dev/null',
  nftTables: 'nft list tables',
  k8sContainers: '! pgrep -x containerd >/dev/null || timeout 3 ctr -n k8s.io containers ls -q 2>/dev/null',
  k8sTasks: '! pgrep -x containerd >/dev/null || timeout 3 ctr -n k8s.io tasks ls 2>/dev/null | tail -n +2',
  dockerNames: 'docker ps --format "{{.Names}}" 2>/dev/null',
  shims: 'pgrep -f "^/usr/bin/containerd-shim" || true',
  k8sShims: 'pgrep -f "^/usr/bin/containerd-shim.* -namespace k8s\\.io " || true',
  k8sCgroupProcs: "grep -l -E 'kubepods|/k8s\\.io/' /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3",
  containerd: 'pgrep -x containerd || true',
  kubeletActive: 'systemctl is-active kubelet 2>/dev/null; true',
  kubeletEnabled: 'systemctl is-enabled kubelet 2>/dev/null; true',
  kubeletProc: 'pgrep -x kubelet || true',
  manifests: 'ls /etc/kubernetes/manifests 2>/dev/null',
  files: 'for f in /etc/kubernetes/admin.conf /etc/kubernetes/kubelet.conf /etc/kubernetes/pki/ca.crt /var/lib/kubelet/config.yaml /var/lib/kubelet/pki/kubelet-client-current.pem /etc/cni/net.d/10-containerd-net.conflist /var/lib/etcd/member/wal /etc/systemd/system/kubelet.service /etc/app/app.conf /etc/ssl/etcd /etc/etcd.env /var/lib/etcd-events /root/.kube/config /var/log/pods/* /var/log/containers/* /var/lib/calico /etc/calico /var/lib/kube-router /usr/local/share/ca-certificates/kube-ca.crt /usr/local/share/ca-certificates/etcd-ca.crt /etc/nginx/nginx.conf /sys/fs/bpf/tc/globals/cilium_* /etc/cni/net.d/* /etc/sysctl.d/99-zzz-override_cilium.conf /var/run/cdi/*; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done; true',
  bundleTrustsCluster: 'grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt >/dev/null; for f in /etc/kubernetes/pki/ca.crt /etc/ssl/etcd/ssl/ca.pem /root/cluster-ca-copy.crt; do [ -f "$f" ] && openssl verify -CAfile /etc/ssl/certs/ca-certificates.crt "$f" >/dev/null 2>&1 && echo "$f"; done; true',
  // host-local >= 0.8 writes "<sandbox id>\r\n<ifname>".
  leases: 'for f in /var/lib/cni/networks/cbr0/10.*; do [ -e "$f" ] && echo "$f $(head -1 "$f" | tr -d "\\r")"; done; true',
  cniResults: 'ls /var/lib/cni/results 2>/dev/null; true',
  // The kubelet's cgroup tree in any hierarchy (cgroupfs: kubepods/…; systemd: kubepods.slice/…), and its slices as systemd knows them.
  podCgroups: 'for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/kubepods.slice /sys/fs/cgroup/kubepods /sys/fs/cgroup/kubepods.slice; do [ -d "$d" ] && find "$d" -type d; done; true',
  slices: "systemctl list-units --all --plain --no-legend 'kubepods*' 2>/dev/null | cut -d' ' -f1; true",
  // What containerd's CRI plugin itself says (over its socket, with decom's CRI client): "sandbox-id namespace/name state".
  criPods: `! pgrep -x containerd >/dev/null || node --input-type=module -e "import { CriClient, unixDial } from '${join(ROOT, 'dist', 'cri', 'client.js')}'; const c = await CriClient.connect(unixDial(process.env.CONTAINERD_ADDRESS || '/run/containerd/containerd.sock')); for (const p of await c.listPodSandbox()) console.log(p.id, p.metadata.namespace + '/' + p.metadata.name, p.state); await c.close();"`,
  podDirs: 'ls /var/lib/kubelet/pods 2>/dev/null',
  // By protocol: Calico's BIRD (12), kube-router (17), Calico's Felix (80).
  cniRoutes: 'for p in 12 17 80; do ip route show table all proto $p; done',
  ipsets: 'ipset list -n',
  // The purge tier, by kubespray's paths (the package-owned /usr/bin ones are not kubespray's to remove).
  installed: 'for f in /usr/local/bin/kubelet /usr/local/bin/kubeadm /usr/local/bin/kubectl /usr/local/bin/etcd /usr/local/bin/etcdctl /usr/local/bin/helm /usr/local/bin/calicoctl /usr/local/bin/nerdctl /opt/cni/bin /usr/libexec/kubernetes /etc/systemd/system/kubelet.service /etc/systemd/system/kubelet.service.d /etc/systemd/system/k8s-certs-renew.timer /etc/systemd/system/timers.target.wants/k8s-certs-renew.timer /etc/systemd/system/containerd.service.d/http-proxy.conf /etc/crictl.yaml /etc/modules-load.d/kubespray-br_netfilter.conf /etc/bash_completion.d/kubectl; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done; true',
  k8sImages: '! pgrep -x containerd >/dev/null || timeout 3 ctr -n k8s.io images ls -q 2>/dev/null',
  userData: 'cat /srv/appdata/important.db 2>/dev/null',
} as const satisfies Record<string, string>;

export type Facts = Record<keyof typeof SECTIONS, string>;

/** Where a node's containerd keeps its state and socket (the sandbox's --containerd-paths). */
export interface ContainerdAt {
  state: string;
  address: string;
}
export const DEFAULT_CONTAINERD: ContainerdAt = { state: '/run/containerd', address: '/run/containerd/containerd.sock' };
/** The sandbox's `--containerd-paths moved`: root, state and socket set in a conf.d import. */
export { MOVED_CONTAINERD } from '../../../sandbox/src/node.js';

/** The views, with ctr (and the CRI client) pointed at containerd's socket where the node keeps it. */
export function facts(node: string, at: ContainerdAt = DEFAULT_CONTAINERD): Facts {
  const script = [`export CONTAINERD_ADDRESS='${at.address}'`, ...Object.entries(SECTIONS).map(([k, cmd]) => `echo '### ${k}'; { ${cmd}; } 2>/dev/null`)].join('\n');
  const out = ssh(node, script);
  const f = {} as Record<string, string>;
  let cur = '';
  for (const line of out.split('\n')) {
    const m = /^### (\w+)$/.exec(line);
    if (m) f[(cur = m[1] as string)] = '';
    else if (cur) f[cur] += `${line}\n`;
  }
  return f as Facts;
}

export const lines = (s: string): string[] => s.split('\n').map((l) => l.trim()).filter(Boolean);

/** port -> the PID holding it, from `ss -p`. */
export function holders(listen: string): Map<number, number> {
  const m = new Map<number, number>();
  for (const l of lines(listen)) {
    const local = l.split(/\s+/)[3] ?? '';
    const pid = /pid=(\d+)/.exec(l)?.[1];
    if (pid) m.set(Number(local.slice(local.lastIndexOf(':') + 1)), Number(pid));
  }
  return m;
}

export { mountTargets as mounts } from './sandbox.js';

/** The command lines of a process's ancestors on the node, parent first, up to PID 1. */
export function ancestors(node: string, pid: number): string[] {
  const out = ssh(
    node,
    `p=${pid}; while [ "$p" -gt 1 ]; do p=$(awk '{print $4}' /proc/$p/stat); tr '\\0' ' ' < /proc/$p/cmdline; echo; done`,
  );
  return lines(out);
}
export const parentCmdline = (node: string, pid: number): string => ancestors(node, pid)[0] ?? '';
/** The shim a container process runs under, if any (a daemonized child sits below the container's init). */
export const shimOf = (node: string, pid: number): string | undefined => ancestors(node, pid).find((c) => c.includes('containerd-shim'));
