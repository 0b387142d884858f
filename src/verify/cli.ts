import { loadInventory } from '../inventory/load.js';
import { resolveTargets } from '../inventory/targets.js';
import type { Host } from '../inventory/types.js';
import { connectSsh, localTransport } from '../transport/index.js';
import { kubeconfigPath } from '../cluster/kubeconfig.js';
import { exitCode, renderJson, renderText, verify } from './verify.js';

export interface VerifyFlags {
  limit?: string;
  output: 'text' | 'json';
  connection: 'ssh' | 'local';
  knownHosts?: string;
  acceptNewHostKeys: boolean;
  kubeconfig?: string;
}

export async function verifyCommand(inventoryFile: string, targets: string[], flags: VerifyFlags): Promise<number> {
  const inventory = await loadInventory(inventoryFile);
  const hosts = resolveTargets(inventory, targets, flags.limit);
  const kubeconfig = kubeconfigPath(flags.kubeconfig);
  const connect = (h: Host) =>
    flags.connection === 'local'
      ? Promise.resolve(localTransport(h.name))
      : connectSsh(flags.knownHosts ? { ...h, knownHostsFile: flags.knownHosts } : h, { acceptNewHostKeys: flags.acceptNewHostKeys });
  const cluster = kubeconfig
    ? async (hs: Host[]) => (await import('../cluster/nodes.js')).registeredNodes(kubeconfig, hs.map((h) => h.name))
    : undefined;
  const reports = await verify(hosts, { connect, cluster });
  process.stdout.write(flags.output === 'json' ? renderJson(reports) : renderText(reports));
  return exitCode(reports);
}
