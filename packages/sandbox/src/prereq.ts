/** What the sandbox needs before it starts: root, and the programs it runs, each named with the Debian package that ships it. */
import { accessSync, constants } from 'node:fs';
import { inputError } from 'decom/errors';

/** Programs the sandbox runs, and the Debian package that ships each. */
const PROGRAMS: Record<string, { path: string; pkg: string }> = {
  unshare: { path: '/usr/bin/unshare', pkg: 'util-linux' },
  nsenter: { path: '/usr/bin/nsenter', pkg: 'util-linux' },
  setpriv: { path: '/usr/bin/setpriv', pkg: 'util-linux' },
  ip: { path: '/usr/sbin/ip', pkg: 'iproute2' },
  sshd: { path: '/usr/sbin/sshd', pkg: 'openssh-server' },
  'ssh-keygen': { path: '/usr/bin/ssh-keygen', pkg: 'openssh-client' },
  tini: { path: '/usr/bin/tini', pkg: 'tini' },
  containerd: { path: '/usr/bin/containerd', pkg: 'containerd' },
  runc: { path: '/usr/sbin/runc', pkg: 'runc' },
  busybox: { path: '/bin/busybox', pkg: 'busybox-static' },
  iptables: { path: '/usr/sbin/iptables', pkg: 'iptables' },
  'iptables-legacy': { path: '/usr/sbin/iptables-legacy', pkg: 'iptables' },
  'iptables-nft-restore': { path: '/usr/sbin/iptables-nft-restore', pkg: 'iptables' },
  nft: { path: '/usr/sbin/nft', pkg: 'nftables' },
  openssl: { path: '/usr/bin/openssl', pkg: 'openssl' },
  systemd: { path: '/lib/systemd/systemd', pkg: 'systemd' },
  etcd: { path: '/usr/bin/etcd', pkg: 'etcd-server' },
  etcdctl: { path: '/usr/bin/etcdctl', pkg: 'etcd-client' },
  dockerd: { path: '/usr/sbin/dockerd', pkg: 'docker.io' },
  ipset: { path: '/usr/sbin/ipset', pkg: 'ipset' },
  bpftool: { path: '/usr/sbin/bpftool', pkg: 'bpftool' },
  mmdebstrap: { path: '/usr/bin/mmdebstrap', pkg: 'mmdebstrap' },
  buildah: { path: '/usr/bin/buildah', pkg: 'buildah' },
};

export type Program = keyof typeof PROGRAMS;

export function requireRoot(what: string): void {
  if (process.getuid?.() !== 0) {
    throw inputError(`${what} needs root: it creates namespaces, links, mounts and cgroups (run it with sudo)`);
  }
}

/** One clear line naming every missing Debian package, before anything is built. */
export function requirePrograms(names: readonly string[]): void {
  const missing = new Set<string>();
  for (const name of names) {
    const p = PROGRAMS[name];
    if (!p) throw new Error(`unknown program ${name}`);
    try {
      accessSync(p.path, constants.X_OK);
    } catch {
      missing.add(p.pkg);
    }
  }
  if (missing.size) {
    const pkgs = [...missing].sort().join(' ');
    throw inputError(`missing Debian package${missing.size > 1 ? 's' : ''}: ${pkgs} (apt-get install -y ${pkgs})`);
  }
}
