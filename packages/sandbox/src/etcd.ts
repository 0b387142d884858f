/** The sandbox's etcd (`up --etcd`): a real etcd cluster started on its etcd nodes. */
import type { SandboxNode, SandboxState } from './types.js';
import { runNodeScript } from './scenarios/index.js';

const TOKEN = 'decom-sandbox';

/**
 * A real etcd cluster (Debian's etcd-server, TLS off) on the etcd nodes, set up as
 * kubespray's "host" deployment runs it: etcd.service reading its environment file,
 * data in /var/lib/etcd. All members start together (a new cluster needs quorum),
 * then the first one checks the health of every member.
 */
export async function startEtcd(state: SandboxState): Promise<void> {
  const members = state.nodes.filter((n) => n.roles.includes('etcd'));
  const cluster = members.map((m) => `${m.name}=http://${m.addr}:2380`).join(',');
  const env = (m: SandboxNode) =>
    [
      `ETCD_NAME=${m.name}`,
      'ETCD_DATA_DIR=/var/lib/etcd',
      `ETCD_LISTEN_PEER_URLS=http://${m.addr}:2380`,
      `ETCD_LISTEN_CLIENT_URLS=http://${m.addr}:2379,http://127.0.0.1:2379`,
      `ETCD_ADVERTISE_CLIENT_URLS=http://${m.addr}:2379`,
      `ETCD_INITIAL_ADVERTISE_PEER_URLS=http://${m.addr}:2380`,
      `ETCD_INITIAL_CLUSTER=${cluster}`,
      'ETCD_INITIAL_CLUSTER_STATE=new',
      `ETCD_INITIAL_CLUSTER_TOKEN=${TOKEN}`,
    ].join('\n');
  await Promise.all(
    members.map((m) =>
      runNodeScript(
        m,
        state,
        'starting etcd',
        `cat > /etc/default/etcd <<'EOF'\n${env(m)}\nEOF\nmkdir -p /var/lib/etcd && chown etcd:etcd /var/lib/etcd 2>/dev/null || true\nchmod 700 /var/lib/etcd\nsvc_start etcd\n`,
      ),
    ),
  );
  const [first] = members;
  if (!first) return;
  const endpoints = members.map((m) => `http://${m.addr}:2379`).join(',');
  await runNodeScript(
    first,
    state,
    'checking etcd health',
    `n=100; until ETCDCTL_API=3 etcdctl --endpoints=${endpoints} endpoint health >/dev/null 2>&1; do
  n=$((n - 1)); [ $n -gt 0 ] || { ETCDCTL_API=3 etcdctl --endpoints=${endpoints} endpoint health >&2; exit 1; }; sleep 0.2; done`,
  );
}
