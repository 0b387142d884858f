/**
 * Before anything is destroyed: the static manifests, /etc/kubernetes (kubeconfigs,
 * PKI), the kubelet's config and PKI, CNI config, dumps of both iptables backends (the
 * ones the probe read, sent back in the script) and the nftables ruleset go to
 * /var/backups/decom/RUN-ID (0700) on the node, and are copied to the operator over
 * the same connection and checked against their SHA-256 sums. They hold private keys:
 * the operator's copy is 0700 too.
 */
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Step } from '../engine/step.js';
import type { NodeState } from '../probes/state.js';
import { findings, type Kind } from '../rules/residue.js';
import { hereDocument, runOk } from '../util/run.js';
import { CA_BUNDLE, NFT_TABLES } from '../probes/script.js';
import { q } from '../engine/sh.js';

/** Residue whose loss could not be undone without a copy. */
const WORTH_KEEPING: ReadonlySet<Kind> = new Set(['static-pod-manifest', 'kubernetes-config', 'kubelet-state', 'cni-config', 'iptables', 'nftables', 'ipset', 'etcd-config', 'credential', 'trust-anchor', 'installed-unit', 'installed-config', 'runtime-config']);
const EXTRA: ReadonlySet<Kind> = new Set(['credential', 'trust-anchor', 'kubernetes-config', 'cni-config', 'installed-unit', 'installed-config', 'runtime-config']);
/**
 * The cluster's etcd data, archived by the etcd step once no etcd of the cluster runs
 * (a copy of a live database is torn), just before it removes it: on the node only (it
 * can be gigabytes), in a dir of its own beside the run's backup, which a clean run
 * does not remove.
 */
export const etcdArchive = (backupDir: string): string => `${backupDir}-etcd-data/etcd-data.tar.gz`;
/**
 * The iptables dumps, by backend and family: each file, and how the node saves it when
 * the state holds no dump the probe read (the firewall view not probed, or partly read
 * again since). The same choice of program as the probe's: legacy tables only when the
 * kernel has them loaded (reading must not load modules).
 */
const IPTABLES_FILES = [
  { backend: 'nft', family: 4, file: 'iptables-nft-v4.rules', save: (f: string) => `if has iptables-nft-save; then dump iptables-nft-save ${f}; else dump iptables-save ${f}; fi` },
  { backend: 'nft', family: 6, file: 'iptables-nft-v6.rules', save: (f: string) => `if has ip6tables-nft-save; then dump ip6tables-nft-save ${f}; else dump ip6tables-save ${f}; fi` },
  { backend: 'legacy', family: 4, file: 'iptables-legacy-v4.rules', save: (f: string) => `v=; read -r v < /proc/net/ip_tables_names 2>/dev/null || true; [ -z "$v" ] || dump iptables-legacy-save ${f}` },
  { backend: 'legacy', family: 6, file: 'iptables-legacy-v6.rules', save: (f: string) => `v=; read -r v < /proc/net/ip6_tables_names 2>/dev/null || true; [ -z "$v" ] || dump ip6tables-legacy-save ${f}` },
] as const;

/**
 * The firewall part of the backup: the dumps the probe already read, written from the
 * script (a node of 20,000 Services takes 8 s per iptables-save: the run saves once);
 * an empty dump (no table, or no such backend) writes no file.
 */
function iptablesBackup(s: NodeState, dir: string): string {
  return IPTABLES_FILES.map((x) => {
    const dump = s.iptablesDumps.find((d) => d.backend === x.backend && d.family === x.family);
    if (!dump) return x.save(x.file);
    return dump.text ? hereDocument(`cat > ${dir}/${x.file}`, dump.text, `DECOM_${x.backend.toUpperCase()}_V${x.family}_EOF`) : '';
  })
    .filter(Boolean)
    .join('\n');
}

const FILES = ['etc/kubernetes', 'var/lib/kubelet/config.yaml', 'var/lib/kubelet/kubeadm-flags.env', 'var/lib/kubelet/pki', 'etc/cni/net.d', 'etc/ssl/etcd', 'etc/etcd.env'];

const README = (host: string, run: string, nodeDir: string) => `decom backup of ${host}, run ${run}

It holds private keys and credentials (kubeconfigs, the cluster's PKI): keep it 0700.

files.tar.gz          /etc/kubernetes (kubeconfigs, PKI, static-pod manifests), the kubelet's
                      config.yaml, kubeadm-flags.env and pki/, /etc/cni/net.d, /etc/ssl/etcd,
                      /etc/etcd.env, users' kubeconfigs for this cluster, its trust anchors,
                      kubespray's API proxy config; with --purge the unit files and tool configs
*.rules               iptables-save of each backend and family before the reset
nftables.conf         the nftables tables of kube-proxy, Calico and Flannel before the reset (nft -f nftables.conf)
etcd data            the cluster's etcd data left on the node, if any, is archived on the node only:
                      ${etcdArchive(nodeDir)} (tar -C / -xzpf it)
ipsets.save           every ipset before the reset (ipset restore < ipsets.save)
SHA256SUMS            checked after the copy

To restore (on the node, as root):
  tar -C / -xzpf files.tar.gz
  iptables-nft-restore < iptables-nft-v4.rules        # one backend/family at a time
  systemctl enable --now kubelet
`;

export const backup: Step = {
  name: 'backup',
  description: 'back up manifests, /etc/kubernetes, kubelet config and PKI, CNI config and the firewall on the node, and copy it to the operator (checksummed)',
  params: z.object({}),
  owns: () => false,
  views: [],
  mustSucceed: true,
  plan(s, ctx) {
    // Judged once: beside 20,000 Services that is 100,000 rules.
    const found = findings(s);
    const kinds = [...new Set(found.filter((f) => WORTH_KEEPING.has(f.kind)).map((f) => f.kind))];
    if (!kinds.length) return [];
    const B = q(ctx.backupDir);
    // Credentials and trust anchors outside the fixed paths (users' kubeconfigs, the trust store), relative to /.
    // Also kubespray's API proxy config (by content) and, with --purge, the units and tool configs.
    const extra = found
      .filter((f) => EXTRA.has(f.kind) && f.subject.startsWith('/') && f.subject !== CA_BUNDLE && !f.subject.startsWith('/etc/kubernetes/'))
      .map((f) => f.subject.slice(1))
      .filter((p) => !FILES.some((top) => p.startsWith(`${top}/`)));
    return [
      {
        what: `back up ${kinds.join(', ')} to ${ctx.backupDir} and copy it to ${ctx.operatorBackupDir}`,
        script: `set -e
umask 077; mkdir -p ${B}; chmod 0700 ${q(ctx.backupDir.slice(0, ctx.backupDir.lastIndexOf('/')))} ${B}
set --; for p in ${[...FILES, ...extra].map((p) => q(p)).join(' ')}; do [ -e "/$p" ] && set -- "$@" "$p"; done
[ $# -eq 0 ] || tar -C / --one-file-system -czf ${B}/files.tar.gz "$@"
dump() { if has "$1"; then "$1" > ${B}/"$2"; fi; }
${iptablesBackup(s, B)}
if has ipset; then ipset save > ${B}/ipsets.save; fi
# The cluster's nftables tables only, by name: the rest of the ruleset is not touched (and listing it all is slow).
if has nft; then for t in ${NFT_TABLES.map((t) => `${t.family}:${t.name}`).join(' ')}; do nft list table "\${t%%:*}" "\${t#*:}" >> ${B}/nftables.conf 2>/dev/null || true; done; fi
cd ${B}; rm -f SHA256SUMS; set -- *; sha256sum -- "$@" > SHA256SUMS`,
      },
    ];
  },
  after: (s) => s,
  async afterApply(exec, ctx) {
    // base64 over the exec channel: the same path with and without sudo (SFTP acts as the login user).
    const b64 = await exec(`cd ${q(ctx.backupDir)} && tar --exclude=./manifests -cf - . | base64 -w 0`);
    const dir = ctx.operatorBackupDir;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    await runOk('tar', ['-x', '-C', dir, '-f', '-'], { input: Buffer.from(b64.trim(), 'base64') });
    const sums = readFileSync(join(dir, 'SHA256SUMS'), 'utf8').trim().split('\n');
    for (const line of sums) {
      const [sum, name] = [line.slice(0, 64), line.slice(66)];
      const got = createHash('sha256').update(readFileSync(join(dir, name))).digest('hex');
      if (got !== sum) throw new Error(`the copy of ${name} does not match its SHA-256 sum on the node`);
    }
    writeFileSync(join(dir, 'README.txt'), README(ctx.host, ctx.runId, ctx.backupDir), { mode: 0o600 });
    return `copied and checked ${sums.length} file${sums.length === 1 ? '' : 's'} to ${dir}`;
  },
};
