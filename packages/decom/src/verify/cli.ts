/** `decom verify`'s command: the inventory read, the targets resolved, the API asked when a kubeconfig is found, the hosts verified and the report printed. */
import { askedPassword, etcdGroupOf, connectionOverridesOf, loadInventory, vaultSourcesOf, reachHosts, resolveTargets, type ReachFlags, type Host } from '../inventory/index.js';
import { EarlyDials, connector, loadSshTransports, maxOutputOf } from '../transport/connector.js';
import { apiSource, kubeconfigFiles, operatorIdentity } from '../cluster/kubeconfig.js';
import { forksOf } from '../util/pool.js';

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
  const forks = forksOf(flags.forks);
  const maxOutputMiB = maxOutputOf(flags.maxOutput);
  const connectFlags = { ...flags, maxOutputMiB };
  // The cluster: the first file place of KUBECONFIG_ORDER that holds one (KUBECONFIG_FILES_ORDER); --context. Asked only when there is a file.
  // A --kubeconfig that does not exist is refused here, before any host is dialed.
  const source = apiSource(inventoryFile, targeted, flags);
  // Where each host is, as ssh computes it (ssh -G, with the OpenSSH config). The pool's first
  // wave is dialed as each host's ssh -G answers, and the probe's and the SSH library's
  // modules load while the others run: the nodes' sshd start before decom has loaded.
  const early = new EarlyDials<Host>(connectFlags);
  const ready = async () => {
    const password = await askedPassword(flags);
    const reaching = flags.connection === 'local' ? Promise.resolve(targeted) : reachHosts(targeted, { ...password, onReached: (h, i) => i < forks && early.dial(h) });
    const verifying = import('./verify.js');
    if (flags.connection === 'ssh') loadSshTransports().catch(() => {}); // its failure is the connector's to say
    const hosts = await reaching;
    const operator = await operatorIdentity(source);
    const { connect, close } = await connector(hosts.slice(0, forks), connectFlags, early); // the pool's first wave, dialed early
    return { hosts, operator, connect, close, ...(await verifying) };
  };
  const { hosts, operator, connect, close, exitCode, renderJson, renderText, verify } = await ready().catch((e: unknown) => {
    early.close(); // a failure before connecting: no socket dialed early stays open
    throw e;
  });
  const cluster = kubeconfigFiles(source).length
    ? async (hs: Host[]) => (await import('../cluster/node.js')).registeredNodes(source, hs.map((h) => h.name))
    : undefined;
  const reports = await verify(hosts, { connect, forks, cluster, purge: flags.purge, etcdGroup: etcdGroupOf(inventory), ...(operator ? { operator } : {}) }).finally(close);
  process.stdout.write(flags.output === 'json' ? renderJson(reports) : renderText(reports, { details: flags.details }));
  return exitCode(reports);
}
