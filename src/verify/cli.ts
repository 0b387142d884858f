import { loadInventory, resolveTargets, type Host } from '../inventory/index.js';
import { dial, type Dialed } from '../transport/dial.js';
import { kubeconfigPath } from '../cluster/kubeconfig.js';
import { exitCode, renderJson, renderText, verify } from './verify.js';

export interface VerifyFlags {
  limit?: string;
  output: 'text' | 'json';
  connection: 'ssh' | 'local';
  knownHosts?: string;
  acceptNewHostKeys: boolean;
  kubeconfig?: string;
  details: boolean;
}

export async function verifyCommand(inventoryFile: string, targets: string[], flags: VerifyFlags): Promise<number> {
  const inventory = await loadInventory(inventoryFile);
  const hosts = resolveTargets(inventory, targets, flags.limit);
  const kubeconfig = kubeconfigPath(flags.kubeconfig);
  // Every node's TCP connection first, then the SSH library: the nodes start up while it loads.
  const dialed = new Map<string, Dialed>();
  if (flags.connection === 'ssh') for (const h of hosts) if (!h.proxyJump.length) dialed.set(h.name, dial(h.address, h.port));
  const { connectSsh, localTransport } = await import('../transport/index.js');
  const connect = (h: Host) =>
    flags.connection === 'local'
      ? Promise.resolve(localTransport(h.name))
      : connectSsh(flags.knownHosts ? { ...h, knownHostsFile: flags.knownHosts } : h, {
          acceptNewHostKeys: flags.acceptNewHostKeys,
          ...(dialed.has(h.name) ? { dialed: dialed.get(h.name)! } : {}),
        });
  const cluster = kubeconfig
    ? async (hs: Host[]) => (await import('../cluster/nodes.js')).registeredNodes(kubeconfig, hs.map((h) => h.name))
    : undefined;
  const reports = await verify(hosts, { connect, cluster }).finally(() => {
    for (const d of dialed.values()) d.sock.destroy(); // each host's connection is closed by now; this is for an early failure
  });
  process.stdout.write(flags.output === 'json' ? renderJson(reports) : renderText(reports, { details: flags.details }));
  return exitCode(reports);
}
