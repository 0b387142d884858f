/**
 * `decom run INVENTORY TARGET...`: resolve the hosts (explicitly: a group or `all`
 * only with --allow-many), load the playbook (the decommission by default), reach
 * the cluster's API when its steps need it, confirm, and hand them to the engine.
 */
import { join } from 'node:path';
import { addressesOf, askedPassword, etcdGroupOf, hostOf, connectionOverridesOf, loadInventory, vaultSourcesOf, nodeNamed, nodeNameOf, reachHosts, resolveTargets, type ReachFlags, type Host } from '../inventory/index.js';
import { connector, maxOutputOf } from '../transport/connector.js';
import { inputError, UserError } from '../util/errors.js';
import { EXIT } from '../util/exit-codes.js';
import { countOrPercent, duration, percent, seconds } from '../util/flags.js';
import { confirm, confirmable } from '../util/prompt.js';
import { listPageSize } from '../cluster/pages.js';
import { forksOf } from '../util/pool.js';
import { apiSource, kubeClients, kubeconfigOrder, operatorIdentity } from '../cluster/kubeconfig.js';
import type { ClusterContext } from '../cluster/context.js';
import { registeredNodes } from '../cluster/node.js';
import type { Transport } from '../transport/types.js';
import { Journal, newRunId, operatorName, stateDir } from '../engine/journal.js';
import { runExitCode, runFleet, type PlannedStep } from '../engine/engine.js';
import { STEPS, shellStep } from '../steps/index.js';
import { evalWhen, loadPlaybook, selectSteps } from '../playbook/index.js';
import { liveReporter, plainReporter, renderRunJson, renderRunText, type Reporter } from './report.js';

export interface RunFlags extends ReachFlags {
  playbook: string;
  check: boolean;
  output: 'text' | 'json';
  details: boolean;
  connection: 'ssh' | 'local';
  kubeconfig?: string;
  waitLock?: string;
  serial?: string;
  maxFailPercent?: string;
  tags?: string;
  skipTags?: string;
  yes: boolean;
  allowMany: boolean;
  keepBackupOnNode: boolean;
  removeEtcdArchive: boolean;
  stateDir?: string;
  purge: boolean;
  keepInstalled: boolean;
  drainTimeout: string;
  force: boolean;
  deleteEmptydirData: boolean;
  disableEviction: boolean;
  gracePeriod?: string;
  podSelector?: string;
  skipWaitForDeleteTimeout: string;
  allowPending: boolean;
  nodeIsDown: boolean;
  allowQuorumLoss: boolean;
  allowLastControlPlane: boolean;
  allowLocalData: boolean;
}

/** Targets that name several hosts at once (a group, `all`) need --allow-many: a reset is not a fleet operation by accident. */
function checkMany(targets: string[], hostsOf: (t: string) => number, isHost: (t: string) => boolean, allowMany: boolean): void {
  if (allowMany) return;
  const wide = targets.filter((t) => !isHost(t) && hostsOf(t) > 1);
  if (wide.length) {
    throw inputError(`${wide.map((t) => JSON.stringify(t)).join(', ')} name${wide.length === 1 ? 's' : ''} several hosts: name the hosts one by one, or pass --allow-many`);
  }
}

/** The hosts' names typed back, unless --yes. */
function confirmHosts(hosts: Host[], decommission: boolean, yes: boolean): Promise<void> {
  const names = hosts.map((h) => h.name).join(' ');
  const verb = decommission ? 'decommission' : 'reset';
  const what = decommission
    ? 'drained, its etcd member removed, Kubernetes torn down and its files deleted (backed up first), and its Node deleted from the cluster'
    : 'Kubernetes is torn down and its files deleted (backed up first)';
  return confirm({
    yes,
    action: `${verb} ${names}`,
    question: `This ${verb}s ${hosts.map((h) => `${h.name} (${h.address})`).join(', ')}: ${what}.\nType the host name${hosts.length === 1 ? '' : 's'} to go on (${names}): `,
    expect: names,
  });
}

export async function runCommand(inventoryFile: string, targets: string[], flags: RunFlags): Promise<number> {
  const inventory = await loadInventory(inventoryFile, { vault: vaultSourcesOf(flags), overrides: await connectionOverridesOf(flags) });
  let hosts = resolveTargets(inventory, targets, flags.limit);
  checkMany(targets, (t) => inventory.groups.get(t)?.length ?? 0, (t) => inventory.hosts.has(t), flags.allowMany);
  const playbook = await loadPlaybook(flags.playbook, STEPS);
  const split = (v?: string) => (v ? v.split(',').map((x) => x.trim()).filter(Boolean) : undefined);
  const { steps: selected, unknownTags } = selectSteps(playbook.steps, { tags: split(flags.tags), skipTags: split(flags.skipTags) });
  if (unknownTags.length) throw inputError(`no step of ${playbook.file} has the tag${unknownTags.length === 1 ? '' : 's'} ${unknownTags.join(', ')}`);
  const forks = forksOf(flags.forks);
  const maxOutputMiB = maxOutputOf(flags.maxOutput);
  const waitLockSec = flags.waitLock !== undefined ? duration('--wait-lock', flags.waitLock, 0) : undefined;
  const maxFailPercent = percent('--max-fail-percent', flags.maxFailPercent);
  const serial = countOrPercent('--serial', flags.serial, hosts.length);
  // The cluster side (the decommission's steps) needs the API; the reset alone only says whether the Node is still there.
  const clusterSide = selected.some((s) => s.kind === 'builtin' && STEPS[s.name]?.cluster);
  if (flags.keepInstalled && flags.purge) throw inputError('--keep-installed and --purge contradict each other');
  if (!clusterSide) {
    const only = ['--force', '--delete-emptydir-data', '--disable-eviction', '--grace-period', '--pod-selector', '--allow-pending', '--node-is-down', '--allow-quorum-loss', '--allow-last-control-plane', '--allow-local-data', '--keep-installed'];
    const given = only.filter((f) => flags[f.slice(2).replace(/-(\w)/g, (_, c: string) => c.toUpperCase()) as keyof RunFlags]);
    if (given.length) throw inputError(`${given.join(', ')}: only for playbooks with cluster steps (the decommission); ${playbook.file} has none`);
  }
  // Without a terminal to confirm on, refused before any host or the API is asked anything.
  if (!flags.check) confirmable({ yes: flags.yes, action: `${clusterSide ? 'decommission' : 'reset'} ${hosts.map((h) => h.name).join(' ')}` });
  // Where each host is, as ssh computes it (ssh -G, with the OpenSSH config): the targets, and the etcd peers the cluster side asks.
  const etcdNames = clusterSide ? (inventory.groups.get('etcd') ?? []) : [];
  const wanted = new Map([...(flags.connection === 'local' ? [] : hosts), ...etcdNames.map((n) => inventory.hosts.get(n)!)].map((h) => [h.name, h]));
  const reached = new Map((await reachHosts([...wanted.values()], await askedPassword(flags))).map((h) => [h.name, h]));
  hosts = hosts.map((h) => reached.get(h.name) ?? h);
  const drainTimeoutSec = duration('--drain-timeout', flags.drainTimeout);
  const gracePeriodSec = flags.gracePeriod !== undefined ? seconds('--grace-period', flags.gracePeriod) : undefined;
  const skipWaitForDeleteTimeoutSec = seconds('--skip-wait-for-delete-timeout', flags.skipWaitForDeleteTimeout);
  // --pod-selector is the API's to parse (set-based terms included), as kubectl leaves it: a bad one fails the drain with its message.
  if (flags.podSelector !== undefined && !flags.podSelector.trim()) throw inputError('--pod-selector: empty; give a label selector, e.g. app=web or "tier in (web,api)"');
  // The one cluster of the run: the first place of KUBECONFIG_ORDER that holds one; --context. The decommission's clients,
  // the reset's Node check and the operator's CA all come from it.
  const source = apiSource(inventoryFile, hosts, flags);
  if (clusterSide) listPageSize(); // the cluster steps list (pods, Nodes, VolumeAttachments): a bad DECOM_LIST_PAGE_SIZE is bad input now
  const kube = clusterSide ? await kubeClients(source) : undefined;
  if (clusterSide && !kube) {
    throw inputError(`${playbook.file} works on the cluster through its API, and no kubeconfig was found (${kubeconfigOrder()}); for the node side alone pass --playbook reset`);
  }
  // The API must outlive the hosts: through a control plane this run removes, the Node could not be deleted at the end.
  const apiHost = kube ? hostOf(kube.server) : undefined;
  const onTarget = apiHost ? hosts.find((h) => addressesOf(h).has(apiHost)) : undefined;
  if (onTarget && kube) {
    throw new UserError(`the cluster's API at ${kube.server} is on ${onTarget.name}, which this run removes: its Node could not be deleted once its control plane is gone; reach the API through another control plane or the load balancer (--kubeconfig, --context)`, EXIT.refused);
  }
  // The reset alone asks the API only when told where it is (--kubeconfig, decom_kubeconfig, $KUBECONFIG, --context), never of
  // whatever cluster ~/.kube/config happens to name. What the operator's kubeconfig says the cluster is: said before any host is touched.
  const asksApi = clusterSide || source.kubeconfig !== undefined || source.inventoryKubeconfig !== undefined || source.context !== undefined || !!process.env.KUBECONFIG;
  const operator = asksApi ? await operatorIdentity(source) : undefined;
  const purge = flags.purge || (clusterSide && !flags.keepInstalled && !flags.nodeIsDown);
  if (!flags.check) await confirmHosts(hosts, clusterSide, flags.yes);

  // `when:` is judged per host, now: a condition on an undefined variable is bad input, before anything runs.
  const stepsOf = new Map<string, PlannedStep[]>();
  for (const h of hosts) {
    const vars = { ...h.vars, inventory_hostname: h.name, group_names: h.groups.filter((g) => g !== 'all') };
    stepsOf.set(
      h.name,
      selected.map((s): PlannedStep => {
        let holds: boolean;
        try {
          holds = evalWhen(s.when, vars);
        } catch (e) {
          throw e instanceof UserError ? inputError(`${h.name}: ${e.message}`) : e;
        }
        const step = s.kind === 'builtin' ? STEPS[s.name]! : shellStep(s.label, s.shell, s.check, s.timeoutSec);
        return { step, label: s.label, params: s.kind === 'builtin' ? s.params : {}, ...(s.parallel ? { parallel: s.parallel } : {}), ...(holds ? {} : { skip: `when: ${s.when?.map((c) => c.text).join(' and ')} is false here` }) };
      }),
    );
  }

  const runId = newRunId();
  const dir = stateDir(flags.stateDir);
  const journal = new Journal(dir, runId);
  journal.write({ event: 'run-start', command: 'run', playbook: playbook.file, check: flags.check, purge, hosts: hosts.map((h) => h.name), argv: process.argv.slice(2), ...(kube ? { api: kube.server } : {}) });
  process.stderr.write(`decom: run ${runId}${flags.check ? ' (check: nothing will be changed)' : ''}, journal ${journal.file}\n`);

  const etcdHosts = (inventory.groups.get('etcd') ?? []).map((n) => reached.get(n) ?? inventory.hosts.get(n)).filter((h): h is Host => h !== undefined);
  const { connect, close } = await connector(flags.nodeIsDown ? [] : hosts.slice(0, Math.min(forks, serial ?? forks)), { ...flags, maxOutputMiB }); // dialed early: the pool's first wave
  // An etcd peer's one connection, over SSH (also with --connection local: the peer is another machine), with no
  // socket of the targets' own; shared by the hosts that ask it, forgotten when it fails, closed at the end.
  const peerConnector = clusterSide && etcdHosts.length ? await connector<Host>([], { ...flags, maxOutputMiB, connection: 'ssh' }) : undefined;
  const peers = new Map<string, Promise<Transport>>();
  const peer = (h: Host) => {
    if (!peers.has(h.name)) peers.set(h.name, peerConnector!.connect(h).catch((e: unknown) => (peers.delete(h.name), Promise.reject(e))));
    return peers.get(h.name) as Promise<Transport>;
  };
  let etcdQueue: Promise<unknown> = Promise.resolve();
  const etcdSerial = <T>(work: () => Promise<T>): Promise<T> => {
    const next = etcdQueue.then(work, work);
    etcdQueue = next.catch(() => {});
    return next;
  };
  const leaving = new Set(hosts.map(nodeNameOf));
  const options = {
    drainTimeoutSec, force: flags.force, deleteEmptyDirData: flags.deleteEmptydirData, disableEviction: flags.disableEviction,
    ...(gracePeriodSec !== undefined ? { gracePeriodSec } : {}), ...(flags.podSelector ? { podSelector: flags.podSelector.trim() } : {}),
    skipWaitForDeleteTimeoutSec, allowPending: flags.allowPending,
    nodeIsDown: flags.nodeIsDown, allowQuorumLoss: flags.allowQuorumLoss, allowLastControlPlane: flags.allowLastControlPlane, allowLocalData: flags.allowLocalData,
  };
  const cluster = (h: Host, log: (line: string) => void): ClusterContext => ({
    kube: kube!, host: h, nodeName: nodeNameOf(h), nodeNamed: nodeNamed(h),
    options, leaving, check: flags.check, runId, operatorBackupDir: join(dir, 'backups', runId, h.name), log, connect: peer, etcdSerial,
    etcdLeaving: etcdHosts.filter((e) => e.name !== h.name && hosts.some((t) => t.name === e.name)),
    // Members that stay are asked first; one this run removes later still answers until then.
    etcdPeers: etcdHosts.filter((e) => e.name !== h.name).sort((a, b) => Number(leaving.has(nodeNameOf(a))) - Number(leaving.has(nodeNameOf(b)))),
  });
  const closeAll = async () => {
    close();
    peerConnector?.close();
    await Promise.all([...peers.values()].map((p) => p.then((t) => t.close()).catch(() => {})));
  };

  const live = flags.output === 'text' && process.stderr.isTTY && !process.env.CI;
  const reporter: Reporter = live ? await liveReporter(hosts.map((h) => h.name)) : plainReporter(process.stderr, flags.check);
  const results = await runFleet(hosts, {
    runId,
    holder: { runId, command: 'run', operator: operatorName(), since: new Date().toISOString() },
    ...(waitLockSec ? { waitLockSec } : {}),
    check: flags.check,
    connect,
    journal,
    emit: (e) => reporter.event(e),
    steps: (h) => stepsOf.get(h.name)!,
    operatorBackupDir: (h) => join(dir, 'backups', runId, h),
    keepBackupOnNode: flags.keepBackupOnNode,
    removeEtcdArchive: flags.removeEtcdArchive,
    purge,
    ...(kube ? { cluster } : {}),
    ...(operator ? { operator } : {}),
    etcdGroup: etcdGroupOf(inventory),
    forks,
    ...(serial !== undefined ? { serial } : {}),
    ...(maxFailPercent !== undefined ? { maxFailPercent } : {}),
  }).finally(closeAll);
  await reporter.done();
  if (!clusterSide && asksApi && !flags.check) {
    const nodes = await registeredNodes(source, results.filter((r) => r.clean).map((r) => r.host));
    for (const r of results) {
      for (const f of nodes.findings.get(r.host) ?? []) r.warnings.push(`${f.detail}: the reset leaves the Node object; delete it (kubectl delete node ${r.host}) or run the decommission`);
      r.warnings.push(...(nodes.warnings.get(r.host) ?? []));
    }
  }
  const code = runExitCode(results, flags.check);
  journal.write({ event: 'run-end', exit: code, clean: results.filter((r) => r.clean).map((r) => r.host) });
  process.stdout.write(
    flags.output === 'json'
      ? renderRunJson(results, { runId, journal: journal.file, check: flags.check })
      : renderRunText(results, { check: flags.check, details: flags.details, journal: journal.file }),
  );
  return code;
}
