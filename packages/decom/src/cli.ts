#!/usr/bin/env node
/** The `decom` command: its subcommands (verify, run, audit, audit-report, journal, ping, hosts trust, sandbox) and their flags; each one's work is imported only when it runs. */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Command, Option, type OptionValues } from '@commander-js/extra-typings';
import { SSH_CLIENTS } from './transport/ssh-client.js';
import { helpFooter, oneLineUsageErrors, pagePath } from './util/command-line.js';
import { exitOnError, inputError } from './util/errors.js';
import { VERSION } from './util/version.js';
import { exitCodesLine } from './util/exit-codes.js';
import { KUBECONFIG_FILES_ORDER, kubeconfigDefault } from './cluster/kubeconfig.js';

/** A flag given more than once: each value, in order. */
const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** Where this package is installed (dist's parent): its pages are under docs/ there, or in the checkout. */
const PACKAGE_DIR = join(import.meta.dirname, '..');

/** --ssh, the same for every command that reaches hosts (transport/connector.ts). */
const sshClientOption = () =>
  new Option('--ssh <client>', "openssh: reach every host through this machine's ssh (default: ssh2, built in; the system's ssh for a host that needs a user certificate, a hardware key, PKCS#11, GSSAPI or a @cert-authority)").choices(SSH_CLIENTS);

/** The end of a command's --help: exit codes, examples, and its page in docs/commands/. */
const footer = (page: string, exitCodes: string, examples: readonly string[]) => () =>
  helpFooter({ exitCodes, examples, page: pagePath(PACKAGE_DIR, `commands/${page}`) });

/** The inventory and the targets, as Ansible takes them: INVENTORY TARGET… or -i INVENTORY TARGET…; `all` when none, for the audit. */
const positionals = <O extends OptionValues>(cmd: Command<[], O>, targets: 'required' | 'all when none') =>
  cmd
    .usage(`[options] INVENTORY ${targets === 'required' ? 'TARGET...' : '[TARGET...]'}`)
    .argument('[inventory]', "decom's inventory, or kubespray's/Ansible's hosts.yaml, INI or inventory directory (or give it with -i)")
    .argument('[targets...]', `host names, group names, or "all"${targets === 'required' ? '' : ' (default: all)'}`);

/** The inventory as Ansible takes it (-i) and the targets narrowed (-l): every command that reads an inventory. */
const inventoryOptions = <A extends unknown[], O extends OptionValues>(cmd: Command<A, O>) =>
  cmd
    .option('-i, --inventory <file>', 'the inventory, as ansible -i: every argument is then a target')
    .option('-l, --limit <pattern>', 'narrow the targets, as Ansible --limit (a,b  !host  &group)');

/** The vault passwords that open what the inventory keeps with ansible-vault. */
const vaultOptions = <A extends unknown[], O extends OptionValues>(cmd: Command<A, O>) =>
  cmd
    .option('--vault-password-file <file>', 'a vault password: a file, or an executable that prints it (again for more vault IDs)', collect, [] as string[])
    .option('--vault-id <[label@]source>', 'a vault password by vault ID: a file, an executable, or "prompt" (again for more)', collect, [] as string[])
    .option('--ask-vault-pass', 'ask for the vault password on the terminal', false);

/**
 * How hosts are reached, the same on every command that reaches them: the inventory,
 * the targets narrowed, host keys, the SSH client, login and become (Ansible's flags,
 * each below the inventory's own variable unless it is -e), vault passwords, the pool.
 */
function reachOptions<A extends unknown[], O extends OptionValues>(cmd: Command<A, O>) {
  return vaultOptions(inventoryOptions(cmd))
    .option('--known-hosts <file>', "known_hosts file to check host keys against (instead of the inventory's or ~/.ssh/known_hosts)")
    .option('--accept-new-host-keys', 'record the key of a host seen for the first time (a changed key is always refused)', false)
    .addOption(sshClientOption())
    .option('-u, --user <name>', "log in as this user where the inventory names none (the inventory's ansible_user wins, as in Ansible)")
    .option('--private-key <file>', "log in with this key where the inventory names none (the inventory's ansible_ssh_private_key_file wins)")
    .option('-k, --ask-pass', 'ask for the SSH login password on the terminal (for the hosts whose inventory gives none)', false)
    .option('-b, --become', "become root through sudo where the inventory does not say (the inventory's ansible_become wins)", false)
    .option('--become-user <name>', "the user to become (default root; the inventory's ansible_become_user wins)")
    .option('-K, --ask-become-pass', "ask for the sudo password on the terminal (for the hosts whose inventory gives none); it goes to sudo's stdin", false)
    .option('-e, --extra-vars <vars>', 'the variables decom reads (connection, Node identity, decom_*), over the inventory: key=value, @file.yml or JSON; repeatable (a password only from @file)', collect, [] as string[])
    .option('-f, --forks <n>', 'hosts worked on at once, so at most this many SSH connections are open (default: 50)')
    .option('--max-output <MiB>', 'the most one host may answer to one command, in MiB: past it decom stops reading, and that host fails as not checked (default: 64)')
    .option('--context <name>', 'the kubeconfig context to use');
}

/** The inventory and targets of INVENTORY TARGET… or -i INVENTORY TARGET… (no target: the command says whether that means all). */
function inventoryAndTargets(command: string, first: string | undefined, rest: string[], inventoryFlag: string | undefined): [string, string[]] {
  const [inventory, targets] = inventoryFlag !== undefined ? [inventoryFlag, first === undefined ? rest : [first, ...rest]] : [first, rest];
  if (inventory === undefined) throw inputError(`no inventory given: decom ${command} INVENTORY TARGET... (or -i INVENTORY)`);
  return [inventory, targets];
}

// Subcommands are imported lazily: `decom --help` must not pay for what it does not run.
const program = new Command('decom')
  .description('Take Kubernetes nodes out of service and leave them provably clean, over SSH.')
  .version(VERSION);

positionals(reachOptions(program.command('verify')), 'required')
  .description('pre-rejoin gate: report every piece of Kubernetes residue on the hosts; exit 0 only if nothing is left')
  .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json'] as const).default('text' as const))
  .addOption(new Option('--connection <how>', 'ssh to each host, or run the probe on this machine').choices(['ssh', 'local'] as const).default('ssh' as const))
  .option('--kubeconfig <file>', `also report a Node object still registered (${kubeconfigDefault(KUBECONFIG_FILES_ORDER)})`)
  .option('--details', 'text output: one line per finding, with its detail (default: per kind, the count and the first subjects)', false)
  .option('--purge', "also report the installation footprint: binaries, units and configs kubespray or kubeadm installed, containerd's k8s.io images, and what an administrator may have written for the runtime (static CDI specs, NRI plugins, containerd conf.d drop-ins)", false)
  .addHelpText(
    'after',
    footer('verify.md', exitCodesLine('verify'), [
      'decom verify inventory/mycluster/hosts.yaml node3',
      'decom verify -i inventory/mycluster/hosts.yaml all -o json',
      'decom verify hosts.yaml node3 --purge --details',
    ]),
  )
  .action(async (first, rest, o) => {
    const { verifyCommand } = await import('./verify/cli.js');
    process.exitCode = await verifyCommand(...inventoryAndTargets('verify', first, rest, o.inventory), o);
  });

positionals(reachOptions(program.command('run')), 'required')
  .description('decommission hosts (default): drain, volumes detached, etcd member removed, node reset and verified, Node deleted; or run another playbook (--playbook reset: the node side only)')
  .option('--playbook <name|path>', 'a shipped playbook by name (decommission, reset) or a playbook file', 'decommission')
  .option('-C, --check', 'plan only: print every action for every host, cluster side included (evictions as server-side dry runs), change nothing', false)
  .option('--tags <tags>', 'run only the steps with one of these tags (comma-separated)')
  .option('--skip-tags <tags>', 'skip the steps with one of these tags')
  .option('--wait-lock <duration>', "when another decom run or fix holds a node's lock, wait this long for it (300, 90s, 2m) instead of refusing")
  .option('--serial <n|p%>', 'roll in batches of this many hosts (or percent of them)')
  .option('--max-fail-percent <p>', 'stop the roll when more than this percentage of a batch failed')
  .option('--yes', 'do not ask to type the host names', false)
  .option('--allow-many', 'allow a group or "all" as a target', false)
  .option('--purge', "also remove the installation footprint (binaries, units, configs kubespray or kubeadm installed; containerd's k8s.io images; static CDI specs, NRI plugins and containerd conf.d drop-ins, backed up first): for a node that leaves for good. The decommission does it unless --keep-installed", false)
  .option('--keep-installed', 'decommission: keep the binaries, units and images, for a node that will rejoin', false)
  .option('--keep-backup-on-node', "keep the node's copy of the backup after the operator's copy is verified", false)
  .option('--remove-etcd-archive', "once the node is proven clean, remove the etcd data archives on it (the etcd step keeps one: it holds every Secret of the cluster)", false)
  .option('--state-dir <dir>', 'where journals and backups go (default: $DECOM_STATE_DIR, $XDG_STATE_HOME/decom, ~/.local/state/decom)')
  .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json'] as const).default('text' as const))
  .option('--details', 'list every finding left, not a summary per kind', false)
  .addOption(new Option('--connection <how>', 'ssh to each host, or run on this machine (only on the node itself)').choices(['ssh', 'local'] as const).default('ssh' as const))
  .option('--kubeconfig <file>', `the cluster's API (${kubeconfigDefault()}); with --playbook reset: say whether the Node is still registered`)
  .option('--drain-timeout <duration>', 'how long evictions are retried and pods and volumes waited for: 300, 90s, 5m', '300s')
  .option('--force', "drain: evict pods no controller manages, and pods of a deleted DaemonSet (kubectl drain's --force)", false)
  .option('--delete-emptydir-data', 'drain: evict pods with emptyDir volumes (their data is lost)', false)
  .option('--disable-eviction', 'drain: delete pods instead of evicting them: PodDisruptionBudgets are not asked', false)
  .option('--grace-period <seconds>', "drain: the pods' termination grace period (default: each pod's own; kubectl drain's --grace-period)")
  .option('--pod-selector <selector>', "drain: only the pods this label selector selects (kubectl drain's --pod-selector)")
  .option('--skip-wait-for-delete-timeout <seconds>', "drain: a pod deleted longer ago than this is neither evicted nor waited for, as on a dead kubelet (kubectl drain's flag; 0: off)", '0')
  .option('--allow-pending', "drain even when its pods have nowhere to go (no other Node Ready, schedulable and tolerated): they go Pending", false)
  .option('--node-is-down', "the host is confirmed off: taint its Node out-of-service instead of draining, remove its etcd member and Node; its node side is not touched", false)
  .option('--allow-quorum-loss', "remove an etcd member even when the cluster loses quorum, or its last member", false)
  .option('--allow-last-control-plane', "remove the cluster's last control-plane node", false)
  .option('--allow-local-data', 'decommission a node that holds the only copy of local PersistentVolumes (local, hostPath, or pinned by hostname): they are named, not refused; their data leaves with the node', false)
  .addHelpText(
    'after',
    footer(
      'run.md',
      exitCodesLine('run'),
      [
        'decom run inventory/mycluster/hosts.yaml node3 --check',
        'decom run inventory/mycluster/hosts.yaml node3',
        'decom run -i hosts.yaml node3 --playbook reset -b -K',
      ],
    ),
  )
  .action(async (first, rest, o) => {
    const { runCommand } = await import('./run/cli.js');
    process.exitCode = await runCommand(...inventoryAndTargets('run', first, rest, o.inventory), o);
  });

positionals(reachOptions(program.command('audit')), 'all when none')
  .description('fleet hygiene, read-only unless --fix applies the safe remedies: phantom pods, orphaned pod dirs, cgroups, netns, veths and IPAM leases, pods and namespaces stuck Terminating, stale Nodes, etcd members, VolumeAttachments and local PersistentVolumes')
  .addOption(new Option('-o, --output <format>', 'what to print').choices(['table', 'json', 'prometheus', 'junit'] as const).default('table' as const))
  .option('--textfile <file>', "also write the Prometheus metrics to this file, atomically (node-exporter's textfile collector reads *.prom)")
  .option('--junit <file>', 'also write a JUnit XML report (a test case per host and kind)')
  .option('--html <file>', 'also write a self-contained HTML report: hosts x kinds heat map, each finding with its evidence')
  .option('--details', 'table: every finding, not the first 5 per host and kind, and a legend of the columns', false)
  .option('--stale-after <duration>', 'a Node NotReady this long is stale', '1h')
  .option('--stuck-after <duration>', 'a pod or namespace Terminating this long past its deadline, or any other object this long in deletion, is stuck', '5m')
  .option('--finished-pods <n>', "more Succeeded and Failed pods than this are a finding (kube-controller-manager's garbage collection waits for 12500)", '1000')
  .option('--shard <I/N>', "audit share I of N of the hosts (an Indexed Job's JOB_COMPLETION_INDEX and completions); cluster-wide findings in share 0")
  .addOption(new Option('--connection <how>', 'ssh to each host, or probe this machine (a DaemonSet pod with the host mounted)').choices(['ssh', 'local'] as const).default('ssh' as const))
  .option('--kubeconfig <file>', `the cluster's API (${kubeconfigDefault()})`)
  .option('--no-api', 'do not ask the API: node-side kinds only (the report says which kinds were not checked)')
  .option('--fix <kinds>', 'fix findings of these kinds (comma-separated) with their safe remedies, each re-checked on the node and in the API first and proven gone after')
  .option('--force-finalize <namespace>', 'finalize this namespace stuck Terminating (empty its spec.finalizers); repeatable', collect, [] as string[])
  .option('--from <report.json>', 'fix the findings of this earlier `--output json` report (those the re-check still finds), not a fresh audit\'s')
  .option('-C, --check', 'with --fix: print what would be done, change nothing', false)
  .option('--yes', 'with --fix: do not ask for confirmation', false)
  .option('--wait-lock <duration>', "with --fix: when a decom run or another fix holds a node's lock, wait this long for it (300, 90s, 2m) instead of refusing")
  .option('--state-dir <dir>', 'with --fix: where its journal goes (default: $DECOM_STATE_DIR, $XDG_STATE_HOME/decom, ~/.local/state/decom)')
  .option('--listen <[host:]port>', 'serve the metrics of the last audit at /metrics (with --every; the DaemonSet\'s mode)')
  .option('--every <duration>', 'audit again this often, serving the metrics (with --listen)')
  .option('--host-root <dir>', "--connection local: the host's / as this pod mounts it (the probe runs chrooted there)")
  .option('--print-systemd-timer', 'print a systemd service and timer pair that runs this audit (the same arguments) on a schedule', false)
  .option('--on-calendar <spec>', "with --print-systemd-timer: the timer's OnCalendar", 'hourly')
  .addHelpText(
    'after',
    footer('audit.md', exitCodesLine('audit'), [
      'decom audit inventory/mycluster/hosts.yaml',
      'decom audit hosts.yaml --details --html audit.html',
      'decom audit hosts.yaml --fix orphan-netns --check',
    ]),
  )
  .action(async (first, rest, o) => {
    const { auditCommand } = await import('./audit/cli.js');
    process.exitCode = await auditCommand(...inventoryAndTargets('audit', first, rest, o.inventory), o);
  });

program
  .command('audit-report')
  .description("merge the JSON reports of an audit's shards (an Indexed Job's) into one, written in any of the audit's formats")
  .argument('<reports...>', 'the shards\' `decom audit --output json` reports')
  .option('--expect <n>', 'refuse unless exactly this many reports are given (the number of shards)')
  .addOption(new Option('-o, --output <format>', 'what to print').choices(['table', 'json', 'prometheus', 'junit'] as const).default('table' as const))
  .option('--textfile <file>', 'also write the Prometheus metrics to this file, atomically')
  .option('--junit <file>', 'also write a JUnit XML report')
  .option('--html <file>', 'also write the self-contained HTML report')
  .option('--details', 'table: every finding, and a legend of the columns', false)
  .addHelpText(
    'after',
    footer('audit-report.md', exitCodesLine('audit-report'), [
      'decom audit-report --expect 3 shard-0.json shard-1.json shard-2.json',
      'decom audit-report shard-*.json -o prometheus --textfile /var/lib/node_exporter/decom.prom',
    ]),
  )
  .action(async (reports, o) => {
    const { reportCommand } = await import('./audit/cli.js');
    process.exitCode = reportCommand(reports, o);
  });

program
  .command('journal')
  .description('what runs and fixes did: the recent ones (newest first), or one event by event (each host\'s lock, every action and how it ended)')
  .argument('[run-id]', 'the run to show (its ID, or the start of it)')
  .option('--state-dir <dir>', 'where the journals are (default: $DECOM_STATE_DIR, $XDG_STATE_HOME/decom, ~/.local/state/decom)')
  .option('--last <n>', 'how many runs to list', '20')
  .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json'] as const).default('text' as const))
  .addHelpText(
    'after',
    footer('journal.md', exitCodesLine('journal'), ['decom journal', 'decom journal 20261128T2330 -o json']),
  )
  .action(async (runId, o) => {
    const { journalCommand } = await import('./journal/cli.js');
    process.exitCode = journalCommand(runId, o);
  });

positionals(reachOptions(program.command('ping')), 'required')
  .description('check each host as ansible -m ping does, changing nothing: login, become, the right machine (hostname, machine-id) and the Node it maps to')
  .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json'] as const).default('text' as const))
  .option('--kubeconfig <file>', `the cluster whose Nodes the hosts map to; with none found, the Node is not checked (${kubeconfigDefault(KUBECONFIG_FILES_ORDER)})`)
  .addHelpText(
    'after',
    footer('ping.md', exitCodesLine('ping'), [
      'decom ping inventory/mycluster/hosts.yaml all',
      'decom ping -i inventory/mycluster/hosts.yaml node3 -o json',
      'decom ping hosts.yaml all --known-hosts ./known_hosts -f 10',
    ]),
  )
  .action(async (first, rest, o) => {
    const { pingCommand } = await import('./ping/cli.js');
    process.exitCode = await pingCommand(...inventoryAndTargets('ping', first, rest, o.inventory), o);
  });

const hostsExamples = ['decom hosts trust inventory/mycluster/hosts.yaml all', 'decom hosts trust -i inventory/mycluster/hosts.yaml node3 --known-hosts ./known_hosts --yes'];
const hosts = program
  .command('hosts')
  .description('the hosts themselves: trust records the SSH host keys of new hosts, after one typed confirmation')
  .addHelpText('after', footer('hosts.md', exitCodesLine('hosts trust'), hostsExamples))
  // `decom hosts` alone, or with a command it does not have: one line, as every input error.
  .allowExcessArguments()
  .action((_o, cmd) => {
    throw inputError(cmd.args.length ? `unknown command '${cmd.args[0]}' (see decom hosts --help)` : 'no command given: decom hosts trust INVENTORY TARGET... (see decom hosts --help)');
  });
positionals(vaultOptions(inventoryOptions(hosts.command('trust'))), 'required')
  .description('show the key fingerprint of each host whose key is new, and record the keys after one typed confirmation in the known_hosts file decom checks; a changed key is never recorded')
  .option('--known-hosts <file>', "known_hosts file to check host keys against and record them in (instead of the inventory's or ~/.ssh/known_hosts)")
  .option('--yes', 'record the new keys without asking', false)
  .option('-u, --user <name>', "the user for jump hosts where the inventory names none (the inventory's ansible_user wins, as in Ansible)")
  .option('--private-key <file>', "the key for jump hosts where the inventory names none (the inventory's ansible_ssh_private_key_file wins)")
  .option('-e, --extra-vars <vars>', 'the variables decom reads (connection, Node identity, decom_*), over the inventory: key=value, @file.yml or JSON; repeatable', collect, [] as string[])
  .option('-f, --forks <n>', 'hosts read at once (default: 50)')
  .addHelpText(
    'after',
    footer('hosts.md', exitCodesLine('hosts trust'), hostsExamples),
  )
  .action(async (first, rest, o) => {
    const { trustCommand } = await import('./hosts/cli.js');
    process.exitCode = await trustCommand(...inventoryAndTargets('hosts trust', first, rest, o.inventory), o);
  });

// The sandbox comes with a checkout: `decom --help` lists it only where it is installed.
program
  .command('sandbox', { hidden: !sandboxInstalled() })
  .description("decom's test cluster on this machine (real namespaced nodes): the decom-sandbox package's command, run through decom")
  .argument('[args...]', 'what to pass to decom-sandbox (up, down, status, api, scenarios, image, ssh; --help)')
  .helpOption(false)
  .allowUnknownOption()
  .allowExcessArguments()
  .action(async (args) => {
    process.exitCode = await runSandbox(args);
  });

oneLineUsageErrors(program);
if (process.argv.length <= 2) {
  // `decom` alone: the overview on stdout, and the one line that says what is missing.
  process.stdout.write(program.helpInformation());
  exitOnError('decom', inputError('no command given (see decom --help)'));
}

await program.parseAsync().catch((e: unknown) => exitOnError('decom', e));

/** The decom-sandbox package's manifest beside this decom (a checkout's workspace), or undefined. */
function sandboxManifest(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve('decom-sandbox/package.json');
  } catch {
    return undefined;
  }
}
function sandboxInstalled(): boolean {
  return sandboxManifest() !== undefined;
}

/**
 * `decom sandbox ARGS` runs the decom-sandbox package's command when that package is
 * installed beside decom (a checkout's workspace), as a child with the terminal and
 * signals passed through, named `decom sandbox` in its help and errors; decom imports
 * nothing from it.
 */
async function runSandbox(args: string[]): Promise<number> {
  const [{ spawn }, { existsSync, readFileSync }, { dirname }, { constants }] = await Promise.all([
    import('node:child_process'),
    import('node:fs'),
    import('node:path'),
    import('node:os'),
  ]);
  const manifest = sandboxManifest();
  if (manifest === undefined) {
    throw inputError('the sandbox is its own package, decom-sandbox, not installed beside this decom: it comes with a checkout of decom (`npm ci && npm run build` there)');
  }
  const bin = join(dirname(manifest), (JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> }).bin['decom-sandbox'] as string);
  if (!existsSync(bin)) throw inputError(`the sandbox package (${dirname(manifest)}) is not built: run \`npm run build\` in the checkout`);
  const child = spawn(process.execPath, [bin, ...args], { stdio: 'inherit', env: { ...process.env, DECOM_SANDBOX_PROGRAM: 'decom sandbox' } });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, forward);
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 1))));
}
