/** `decom ping`'s command: the inventory read, the targets resolved, the API's client made when a kubeconfig is found, every host pinged and the report printed. */
import { askedPassword, connectionOverridesOf, loadInventory, reachHosts, resolveTargets, vaultSourcesOf, type ReachFlags } from '../inventory/index.js';
import { connector, maxOutputOf } from '../transport/connector.js';
import { apiSource, errorLine, kubeClients, kubeconfigFiles } from '../cluster/kubeconfig.js';
import { forksOf } from '../util/pool.js';
import { exitCode, ping, renderJson, renderText, type NodesAnswer } from './ping.js';

export interface PingFlags extends ReachFlags {
  output: 'text' | 'json';
  kubeconfig?: string;
}

export async function pingCommand(inventoryFile: string, targets: string[], flags: PingFlags): Promise<number> {
  const inventory = await loadInventory(inventoryFile, { vault: vaultSourcesOf(flags), overrides: await connectionOverridesOf(flags) });
  const targeted = resolveTargets(inventory, targets, flags.limit);
  const forks = forksOf(flags.forks);
  const maxOutputMiB = maxOutputOf(flags.maxOutput);
  const password = await askedPassword(flags);
  // The cluster: the first file place of KUBECONFIG_ORDER that holds one (KUBECONFIG_FILES_ORDER); --context.
  // Its client is made before any host is contacted: a kubeconfig or context that cannot be used is bad input.
  const source = apiSource(inventoryFile, targeted, flags);
  const [hosts, kube] = await Promise.all([
    // Where each host is, as ssh computes it (ssh -G, with the OpenSSH config).
    reachHosts(targeted, password),
    kubeconfigFiles(source).length ? kubeClients(source) : Promise.resolve(undefined),
  ]);
  const nodes = kube
    ? async (names: string[]): Promise<NodesAnswer> => {
        const { readNodes } = await import('../cluster/node.js');
        return readNodes(kube, names).then(
          (read) => ({ asked: true, read }),
          (e: unknown) => ({ asked: true, failed: errorLine(e) }),
        );
      }
    : undefined;
  const { connect, close } = await connector(hosts.slice(0, forks), { connection: 'ssh', ...flags, maxOutputMiB }); // dialed early: the pool's first wave
  const reports = await ping(hosts, { connect, forks, ...(nodes ? { nodes } : {}) }).finally(close);
  process.stdout.write(flags.output === 'json' ? renderJson(reports) : renderText(reports));
  return exitCode(reports);
}
