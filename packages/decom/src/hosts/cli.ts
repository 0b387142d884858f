/**
 * `decom hosts trust`'s command: the inventory read, the targets resolved, each host's
 * key read in the one host pool without logging in, the unknown ones shown and recorded
 * after one typed confirmation (or --yes) in the known_hosts file decom checks.
 */
import { connectionOverridesOf, loadInventory, reachHosts, resolveTargets, vaultSourcesOf, type ConnectionFlags, type Host } from '../inventory/index.js';
import { vouchedByCertAuthority, withKnownHosts } from '../transport/connector.js';
import { TransportError } from '../transport/types.js';
import { UserError } from '../util/errors.js';
import { EXIT, foldExit } from '../util/exit-codes.js';
import { forksOf, pool } from '../util/pool.js';
import { confirm, confirmable } from '../util/prompt.js';
import { classify, exitCode, question, record, renderChanged, renderText, toRecord, type Scanned } from './trust.js';

/** The connection flags that say where a host is and how its jump hosts are logged in to (-u, --private-key, -e): no become, no password. */
export interface TrustFlags extends Pick<ConnectionFlags, 'user' | 'privateKey' | 'extraVars'> {
  limit?: string;
  knownHosts?: string;
  yes: boolean;
  vaultPasswordFile: string[];
  vaultId: string[];
  askVaultPass: boolean;
  forks?: string;
}

/** What to confirm, for the refusal without a terminal. */
const ACTION = 'record host keys';

/** One host's key, read as a connection reaches it (the same known_hosts files, jump hosts and ProxyCommand), without logging in. */
async function scan(h: Host, knownHosts: string | undefined): Promise<Scanned> {
  if (h.connection === 'local') return { notSsh: true };
  const ca = vouchedByCertAuthority(h, knownHosts);
  if (ca) return { certAuthority: `${ca.file}:${ca.line}` };
  const { scanHostKeys } = await import('../transport/ssh.js');
  try {
    return await scanHostKeys(withKnownHosts(h, knownHosts));
  } catch (e) {
    if (!(e instanceof TransportError)) throw e;
    return { keys: [], failed: e };
  }
}

export async function trustCommand(inventoryFile: string, targets: string[], flags: TrustFlags): Promise<number> {
  const inventory = await loadInventory(inventoryFile, { vault: vaultSourcesOf(flags), overrides: await connectionOverridesOf(flags) });
  const targeted = resolveTargets(inventory, targets, flags.limit);
  const forks = forksOf(flags.forks);
  // Without a terminal, nothing could be confirmed: refused before any host is contacted.
  confirmable({ yes: flags.yes, action: ACTION });
  // Where each host is, as ssh computes it (ssh -G, with the OpenSSH config).
  const hosts = await reachHosts(targeted);
  const trusts = (await pool(hosts, forks, (h) => scan(h, flags.knownHosts))).map((s, i) => classify(hosts[i] as Host, s));
  const keys = toRecord(trusts);
  process.stdout.write(renderText(trusts, keys));
  if (!keys.length) return exitCode(trusts);
  try {
    await confirm({ yes: flags.yes, action: ACTION, question: question(keys), expect: 'yes' });
  } catch (e) {
    if (!(e instanceof UserError) || e.exitCode !== EXIT.refused) throw e;
    process.stderr.write(`decom: ${e.message}\n`);
    return foldExit([exitCode(trusts), EXIT.refused]);
  }
  let recorded;
  try {
    recorded = record(keys);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new UserError(`cannot record the host keys${err.path ? ` in ${err.path}` : ''}: ${err.code ?? err.message}`, EXIT.input);
  }
  const { written, changed } = recorded;
  // A key whose file changed between the scan and the confirmation: its host named on a line of its own, never recorded.
  process.stdout.write(renderChanged(changed));
  const files = [...new Set(written.map((k) => k.file))];
  for (const f of files) {
    const n = written.filter((k) => k.file === f).length;
    process.stdout.write(`recorded ${n} host key${n === 1 ? '' : 's'} in ${f}\n`);
  }
  return exitCode(trusts, changed);
}
