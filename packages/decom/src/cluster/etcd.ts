/**
 * A host's etcd membership, handled through a member that stays, over SSH, as an
 * operator would by hand: etcdctl with the connection settings the peer's own etcd
 * uses (kubespray's /etc/etcd.env and /etc/ssl/etcd/ssl, kubeadm's
 * /etc/kubernetes/pki/etcd, Debian's /etc/default/etcd; plain HTTP when TLS is off).
 * The member is found by its peer URL (kubespray names members etcd1, etcd2…, not
 * by host), its removal judged against quorum first, a snapshot saved and copied to
 * the operator before it, and the member list read again after it.
 */
import { chmodSync, mkdirSync } from 'node:fs';
import type { Host } from '../inventory/index.js';
import { addressesOf, hostOf } from '../inventory/identity.js';
import { parseEtcd } from '../probes/parse.js';
import { ETCDCTL_ENV } from '../probes/script.js';
import type { EtcdView } from '../probes/state.js';
import { fetchFile } from '../transport/fetch-file.js';
import type { Transport } from '../transport/types.js';
import { NODE_BACKUPS, PATH_GUARD, confine, deletePathCall, fileName } from '../util/confine.js';
import { shQuote as q } from '../util/run.js';
import type { ClusterContext } from './context.js';

type Member = EtcdView['members'][number];

const PRELUDE = `has() { command -v "$1" >/dev/null; }
has etcdctl || { echo 'etcdctl is not installed here' >&2; exit 3; }
`;

/** The members of the other hosts this run removes (by their peer URLs). */
export const membersOf = (view: EtcdView, hosts: readonly Host[]): Member[] => hosts.flatMap((h) => memberOf(view, h) ?? []);

/** This host's member: the one its own etcd says it is (the probe's member ID), else the one whose peer URL is at one of its addresses. */
export const memberOf = (view: EtcdView, h: Host, memberId?: string): Member | undefined =>
  (memberId ? view.members.find((m) => m.id === memberId) : undefined) ?? view.members.find((m) => m.peerURLs.some((u) => addressesOf(h).has(hostOf(u))));

/** Is a member's client URL among the endpoints that answered healthy? */
const healthy = (view: EtcdView, m: Member) =>
  view.health.some((e) => e.healthy && m.clientURLs.some((u) => u.replace(/\/$/, '') === e.endpoint.replace(/\/$/, '')));

/**
 * Why removing `m` would break the cluster, if it would: it is the last voting
 * member, or the members left (healthy ones) would not make a quorum of the smaller
 * cluster. A learner has no vote: removing it never breaks quorum.
 */
export function quorumVerdict(view: EtcdView, m: Member, alsoLeaving: readonly Member[] = []): string | undefined {
  if (m.isLearner) return undefined;
  const voters = view.members.filter((x) => !x.isLearner);
  if (voters.length <= 1) return `etcd member ${m.name || m.id} is the cluster's last voting member: removing it ends the cluster`;
  if (voters.every((x) => x.id === m.id || alsoLeaving.some((y) => y.id === x.id))) return `this run removes every voting etcd member (${voters.map((x) => x.name || x.id).join(', ')}): that ends the cluster`;
  const healthyNow = voters.filter((x) => healthy(view, x)).length;
  const quorumNow = Math.floor(voters.length / 2) + 1;
  if (healthyNow < quorumNow) return `etcd has no quorum (${healthyNow} of ${voters.length} members healthy, ${quorumNow} needed): a member cannot be removed`;
  // The other members this run removes count as gone: each removal is judged on what the whole run leaves.
  const left = voters.filter((x) => x.id !== m.id && !alsoLeaving.some((y) => y.id === x.id));
  const healthyLeft = left.filter((x) => healthy(view, x)).length;
  const quorumLeft = Math.floor(left.length / 2) + 1;
  if (healthyLeft < quorumLeft) {
    const others = alsoLeaving.filter((y) => y.id !== m.id && voters.some((x) => x.id === y.id));
    return `removing etcd member ${m.name || m.id}${others.length ? ` (with ${others.map((y) => y.name || y.id).join(', ')}, also removed by this run)` : ''} leaves ${left.length} members of which ${healthyLeft} healthy, fewer than the ${quorumLeft} a quorum needs`;
  }
  return undefined;
}

/** A member that stays, asked: its name and what it says of the cluster. */
export interface PeerView {
  peer: Host;
  t: Transport;
  view: EtcdView;
}

/** The first etcd peer that answers with a member list; the error names every peer tried and why it failed. */
export async function askPeers(c: ClusterContext): Promise<PeerView> {
  const why: string[] = [];
  for (const peer of c.etcdPeers) {
    try {
      const t = await c.connect(peer);
      const r = await t.exec(`${PRELUDE}${ETCDCTL_ENV}\netcd_view\n`, { sudo: peer.become, timeoutSec: 60 });
      const view = r.code === 0 ? parseEtcd(r.stdout) : undefined;
      if (view && !view.error && view.members.length) return { peer, t, view };
      why.push(`${peer.name}: ${view?.error ?? (r.stderr.trim().split('\n').pop() || `exit ${r.code}`)}`);
    } catch (e) {
      why.push((e as Error).message);
    }
  }
  if (!c.etcdPeers.length) throw new Error(`no other host of the inventory's etcd group to remove ${c.host.name}'s member through`);
  throw new Error(`no etcd member that stays could be asked (${why.join('; ')})`);
}


/**
 * Where the snapshot is kept on the peer while it is copied, and its name on the operator:
 * by the member's ID, which must be hex (parseEtcd writes IDs so). The member's name is
 * the member's own word and the host's name the inventory's: neither enters a path.
 */
function snapshotPaths(c: ClusterContext, m: Member): { dir: string; file: string; name: string } {
  if (!/^[0-9a-f]{1,16}$/.test(m.id)) throw new Error(`etcd member ${JSON.stringify(m.name)} has the ID ${JSON.stringify(m.id)}, not a hex number: no snapshot is named after it`);
  const name = fileName(`etcd-snapshot-${m.id}.db`, c.operatorBackupDir);
  const dir = confine(NODE_BACKUPS, fileName(`${c.runId}-etcd-${m.id}`, NODE_BACKUPS));
  return { dir, file: confine(NODE_BACKUPS, `${dir}/${name}`), name };
}

/**
 * `etcdctl snapshot save` on the peer, into a 0700 folder of this run and member's own
 * (judged on the peer as it resolves there first), then copied to the operator's backup
 * folder by fetchFile (chunks, checked by SHA-256), and that folder removed from the
 * peer through the on-node guard. Returns the operator's path.
 */
export async function saveSnapshot(c: ClusterContext, p: PeerView, m: Member): Promise<string> {
  const { dir, file, name } = snapshotPaths(c, m);
  const exec = async (script: string, what: string, timeoutSec: number) => {
    const r = await p.t.exec(`${PRELUDE}set -e\n${script}`, { sudo: p.peer.become, timeoutSec });
    if (r.code !== 0) throw new Error(`${p.peer.name}: ${what} failed: ${(r.stderr.trim() || r.stdout.trim()).split('\n').pop() || `exit ${r.code}`}`);
    return r.stdout;
  };
  try {
    await exec(
      `${PATH_GUARD}${ETCDCTL_ENV}
umask 077; mkdir -p ${q(NODE_BACKUPS)}
judge ${q(NODE_BACKUPS)} ${q(dir)} >&2
if [ -L "$R" ] || { [ -e "$R" ] && [ ! -d "$R" ]; }; then echo "refused $R: it is there already, and not a dir" >&2; exit 1; fi
mkdir -p -- "$R"; chmod 0700 -- "$R"
ET_TIMEOUT=600 ET_CMD_TIMEOUT=590s et snapshot save "$R"/${q(name)} >&2
`,
      'etcdctl snapshot save',
      900,
    );
    mkdirSync(c.operatorBackupDir, { recursive: true, mode: 0o700 });
    chmodSync(c.operatorBackupDir, 0o700);
    const out = confine(c.operatorBackupDir, name);
    await fetchFile((script) => exec(script, 'reading the etcd snapshot', 120), file, out);
    return out;
  } finally {
    // The snapshot holds every Secret of the cluster: none stays on the peer, whatever happened to the copy.
    const r = await p.t.exec(`${PATH_GUARD}${deletePathCall(NODE_BACKUPS, dir)}\n`, { sudo: p.peer.become, timeoutSec: 30 }).catch((e: unknown) => ({ code: -1, stdout: '', stderr: (e as Error).message }));
    if (r.code !== 0) c.log(`${p.peer.name}: ${dir} (the etcd snapshot) was not removed: ${(r.stdout.trim() || r.stderr.trim()).split('\n').pop() || `exit ${r.code}`}`);
  }
}

/** `etcdctl member remove`, then the member list read again: the member must be gone from it. */
export async function removeMember(p: PeerView, m: Member, log: (line: string) => void): Promise<void> {
  // etcd refuses a removal ("unhealthy cluster") until every other member has been connected for 5 s: a member
  // that just came back is retried for, not failed on.
  const script = `${PRELUDE}${ETCDCTL_ENV}
n=0; until out=$(et member remove ${q(m.id)} 2>&1); do
  case $out in *"unhealthy cluster"*) n=$((n + 1)); [ $n -lt 15 ] || break; echo "etcd says: unhealthy cluster; retrying" >&2; sleep 2 ;; *) break ;; esac
done
printf '%s\n' "$out" >&2; case $out in *"removed from cluster"*) ;; *) exit 1 ;; esac
etcd_view
`;
  log(`removing etcd member ${m.name || m.id} through ${p.peer.name}`);
  // 15 tries of up to 8 s and 2 s apart, then the last member list.
  const r = await p.t.exec(script, { sudo: p.peer.become, timeoutSec: 180 });
  if (r.code !== 0) throw new Error(`${p.peer.name}: etcdctl member remove ${m.id} failed: ${r.stderr.trim().split('\n').pop() ?? `exit ${r.code}`}`);
  const after = parseEtcd(r.stdout);
  if (after?.members.some((x) => x.id === m.id)) throw new Error(`${p.peer.name}: etcd member ${m.name || m.id} is still listed after its removal`);
}
