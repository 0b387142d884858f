/** `decom verify`'s command: the inventory read, the targets resolved, the API asked when a kubeconfig is found, the hosts verified and the report printed. */
import { askedPassword, etcdGroupOf, connectionOverridesOf, loadInventory, vaultSourcesOf, reachHosts, resolveTargets, type ReachFlags, type Host } from '../inventory/index.js';
import { connector, maxOutputOf } from '../transport/connector.js';
import { apiSource, kubeconfigFiles, operatorIdentity } from '../cluster/kubeconfig.js';
import { forksOf } from '../util/pool.js';
import { exitCode, renderJson, renderText, verify } from './verify.js';

export interface VerifyFlags extends ReachFlags {
  output: 'text' | 'json';
  connection: 'ssh' | 'local';
  kubeconfig?: string;
  details: boolean;
  purge: boolean;
}

export async function verifyCommand(inventoryFile: string, targets: string[], flags: VerifyFlags): Promise<number> {
  const inventory = await loadInventory(inventoryFile, { vault: vaultSourcesOf(flags), overrides: await connectionOverridesOf(flags) });
  const targeted = resolveTargets(inventory, targets, flags.limit);
  // Where each host is, as ssh computes it (ssh -G, with the OpenSSH config).
  const hosts = flags.connection === 'local' ? targeted : await reachHosts(targeted, await askedPassword(flags));
  // The cluster: the first file place of KUBECONFIG_ORDER that holds one (KUBECONFIG_FILES_ORDER); --context. Asked only when there is a file.
  const source = apiSource(inventoryFile, hosts, flags);
  const operator = await operatorIdentity(source);
  const cluster = kubeconfigFiles(source).length
    ? async (hs: Host[]) => (await import('../cluster/node.js')).registeredNodes(source, hs.map((h) => h.name))
    : undefined;
  const forks = forksOf(flags.forks);
  const maxOutputMiB = maxOutputOf(flags.maxOutput);
  const { connect, close } = await connector(hosts.slice(0, forks), { ...flags, maxOutputMiB }); // dialed early: the pool's first wave
  const reports = await verify(hosts, { connect, forks, cluster, purge: flags.purge, etcdGroup: etcdGroupOf(inventory), ...(operator ? { operator } : {}) }).finally(close);
  process.stdout.write(flags.output === 'json' ? renderJson(reports) : renderText(reports, { details: flags.details }));
  return exitCode(reports);
}
