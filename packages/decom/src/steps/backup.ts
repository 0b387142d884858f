/**
 * Before anything is destroyed: the static manifests, /etc/kubernetes (kubeconfigs,
 * PKI), the kubelet's config and PKI, CNI config, dumps of both iptables backends (the
 * ones the probe read, sent back in the script) and the nftables ruleset go to
 * /var/backups/decom/RUN-ID (0700) on the node, and are copied to the operator over
 * the same connection (one archive, in chunks: transport/fetch-file.ts) and checked
 * against their SHA-256 sums. The node's file names are not trusted: only regular files
 * and dirs are extracted, and SHA256SUMS names only files of the copy's own dir. They
 * hold private keys: the operator's copy is 0700 too.
 */
import { createHash } from 'node:crypto';
import { chmodSync, createReadStream, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { extract as extractTar } from 'tar';
import { z } from 'zod';
import type { Step } from '../engine/step.js';
import type { NodeState } from '../probes/state.js';
import { findings, type Kind } from '../rules/residue.js';
import { fetchFile } from '../transport/fetch-file.js';
import { NODE_BACKUPS, PATH_GUARD, confine, deletePathCall, fileName } from '../util/confine.js';
import { hereDocument } from '../util/run.js';
import { CA_BUNDLE, NFT_TABLES } from '../probes/script.js';
import { q } from '../engine/sh.js';

/** Residue whose loss could not be undone without a copy. */
const WORTH_KEEPING: ReadonlySet<Kind> = new Set(['static-pod-manifest', 'kubernetes-config', 'kubelet-state', 'cni-config', 'iptables', 'nftables', 'ipset', 'etcd-config', 'credential', 'trust-anchor', 'installed-unit', 'installed-config', 'runtime-config', 'dns-config']);
const EXTRA: ReadonlySet<Kind> = new Set(['credential', 'trust-anchor', 'kubernetes-config', 'cni-config', 'installed-unit', 'installed-config', 'runtime-config', 'dns-config']);
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
                      kubespray's API proxy config, the resolver files kubespray edited
                      (resolv.conf, dhclient, systemd-resolved, NetworkManager); with --purge the
                      unit files and tool configs
*.rules               iptables-save of each backend and family before the reset
nftables.conf         the nftables tables of kube-proxy, Calico and Flannel before the reset (nft -f nftables.conf)
etcd data            the cluster's etcd data left on the node, if any, is archived on the node only:
                      ${etcdArchive(nodeDir)} (tar -C / -xzpf it)
ipsets.save           every ipset before the reset (ipset restore < ipsets.save)
SHA256SUMS            checked after the copy

Copied from the node as one tar archive in 8 MiB chunks, checked by its SHA-256; only its
regular files and dirs are taken here (a link, device or name outside this dir is refused,
and the step fails naming it).

To restore (on the node, as root):
  tar -C / -xzpf files.tar.gz
  iptables-nft-restore < iptables-nft-v4.rules        # one backend/family at a time
  systemctl enable --now kubelet
`;

/** The backup dir as one archive on the node (minus manifests/, which the static-pods step moves in later), fetched in chunks. */
const TRANSFER = 'transfer.tar';
/** What of the node's archive the operator's copy takes: regular files and dirs, never a link, device or FIFO. */
const TAKEN_TYPES: ReadonlySet<string> = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory']);

/** Why a member of the node's archive is refused (its name and why), or undefined when it is taken. */
export function refusedMember(path: string, type: string, linkpath?: string): string | undefined {
  if (type === 'SymbolicLink') return `${JSON.stringify(path)} (a symbolic link to ${JSON.stringify(linkpath ?? '')})`;
  if (type === 'Link') return `${JSON.stringify(path)} (a hard link to ${JSON.stringify(linkpath ?? '')})`;
  if (!TAKEN_TYPES.has(type)) return `${JSON.stringify(path)} (a ${type} member, not a file or dir)`;
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return `${JSON.stringify(path)} (an absolute name)`;
  if (path.split(/[/\\]/).includes('..')) return `${JSON.stringify(path)} (a name holding "..")`;
  return undefined;
}

/**
 * The node's archive extracted into `dir` by node-tar, each member judged first: a refused
 * one is not written, and named in the answer. Owners are not kept (the copy is the
 * operator's); a damaged archive fails whole (strict). The refused, by name.
 */
async function extractTaken(archive: string, dir: string): Promise<string[]> {
  const refused: string[] = [];
  try {
    await extractTar({
      file: archive,
      cwd: dir,
      strict: true,
      preserveOwner: false,
      filter: (path, entry) => {
        const why = 'type' in entry ? refusedMember(path, entry.type, entry.linkpath) : `${JSON.stringify(path)} (not an archive member)`;
        if (why) refused.push(why);
        return !why;
      },
    });
  } catch (e) {
    throw new Error(`extracting the node's backup into ${dir}: ${(e as Error).message}`);
  }
  return refused.sort();
}

/** A file's SHA-256, read as a stream: a backup file of any size is never in memory whole. */
const sha256Of = (file: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file).on('error', reject).on('data', (b) => hash.update(b)).on('end', () => resolve(hash.digest('hex')));
  });

/**
 * The copy checked against the node's SHA256SUMS. Each name is taken as one file name in
 * `dir` (fileName, confine): a name that is not is refused (pushed to `refused`) and never
 * read. Answers how many files matched, and one line per file that does not.
 */
async function checkSums(dir: string, refused: string[]): Promise<{ checked: number; mismatched: string[] }> {
  const sumsFile = confine(dir, 'SHA256SUMS');
  if (!existsSync(sumsFile)) return { checked: 0, mismatched: [`the copy of the node's backup holds no SHA256SUMS to check it by`] };
  const mismatched: string[] = [];
  let checked = 0;
  for (const line of readFileSync(sumsFile, 'utf8').split('\n').filter(Boolean)) {
    const m = /^([0-9a-f]{64}) [ *](.*)$/.exec(line);
    if (!m) {
      refused.push(`SHA256SUMS line ${JSON.stringify(line)} (not a sum and a name)`);
      continue;
    }
    const [, sum, name] = m as unknown as [string, string, string];
    let file: string;
    try {
      file = confine(dir, fileName(name, 'SHA256SUMS'));
    } catch {
      refused.push(`SHA256SUMS's name ${JSON.stringify(name)} (not a plain file name)`);
      continue;
    }
    if (!lstatSync(file, { throwIfNoEntry: false })?.isFile()) mismatched.push(`the copy has no file ${name}, which SHA256SUMS names`);
    else if ((await sha256Of(file)) !== sum) mismatched.push(`the copy of ${name} does not match its SHA-256 sum on the node`);
    else checked++;
  }
  return { checked, mismatched };
}

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
    const dir = ctx.operatorBackupDir;
    const nodeArchive = `${ctx.backupDir}/${TRANSFER}`;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    // The archive's local copy sits beside the backup dir, not in it: no member of the archive can be written over it.
    const work = mkdtempSync(join(dirname(dir), '.transfer-'));
    let problems: string[];
    const removeArchive = `${PATH_GUARD}${deletePathCall(NODE_BACKUPS, nodeArchive)}`;
    let removed = false;
    try {
      const local = join(work, TRANSFER);
      // The archive made, read and removed in as few sessions as its size allows: one, up to FETCH_CHUNK.
      removed = (await fetchFile(exec, nodeArchive, local, {
        before: `cd ${q(ctx.backupDir)} && rm -f ${TRANSFER} && umask 077 && tar --exclude=./manifests --exclude=./${TRANSFER} -cf ${TRANSFER} .`,
        after: removeArchive,
      })).after;
      problems = await extractTaken(local, dir);
    } finally {
      rmSync(work, { recursive: true, force: true });
      if (!removed) await exec(removeArchive).catch(() => {});
    }
    const { checked, mismatched } = await checkSums(dir, problems);
    const refused = problems.length ? [`the copy of the node's backup refuses ${problems.join(', ')}: none of it is in ${dir}`] : [];
    if (refused.length || mismatched.length) throw new Error([...refused, ...mismatched].join('; '));
    writeFileSync(join(dir, 'README.txt'), README(ctx.host, ctx.runId, ctx.backupDir), { mode: 0o600 });
    return `copied and checked ${checked} file${checked === 1 ? '' : 's'} to ${dir}`;
  },
};
