import { loadInventory, resolveTargets, type Host } from '../inventory/index.js';
import { connector } from '../transport/connector.js';
import { kubeconfigPath, operatorIdentity } from '../cluster/kubeconfig.js';
import { etcdGroupOf } from '../cluster/node.js';
import { exitCode, renderJson, renderText, verify } from './verify.js';

export interface VerifyFlags {
  limit?: string;
  output: 'text' | 'json';
  connection: 'ssh' | 'local';
  knownHosts?: string;
  acceptNewHostKeys: boolean;
  kubeconfig?: string;
  details: boolean;
  purge: boolean;
}

export async function verifyCommand(inventoryFile: string, targets: string[], flags: VerifyFlags): Promise<number> {
  const inventory = await loadInventory(inventoryFile);
  const hosts = resolveTargets(inventory, targets, flags.limit);
  const kubeconfig = kubeconfigPath(flags.kubeconfig);
  const { connect, close } = await connector(hosts, flags);
  const cluster = kubeconfig
    ? async (hs: Host[]) => (await import('../cluster/node.js')).registeredNodes(kubeconfig, hs.map((h) => h.name))
    : undefined;
  const operator = kubeconfig ? await operatorIdentity(kubeconfig) : undefined;
  const reports = await verify(hosts, { connect, cluster, purge: flags.purge, etcdGroup: etcdGroupOf(inventory), ...(operator ? { operator } : {}) }).finally(close);
  process.stdout.write(flags.output === 'json' ? renderJson(reports) : renderText(reports, { details: flags.details }));
  return exitCode(reports);
}
