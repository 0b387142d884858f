#!/usr/bin/env node
/** The `decom` command: its subcommands (verify, run, audit, audit-report, journal, sandbox) and their flags; each one's work is imported only when it runs. */
import { Command, Option } from '@commander-js/extra-typings';
import { SSH_CLIENTS } from './transport/ssh-client.js';
import { exitOnError } from './util/errors.js';
import { EXIT } from './util/exit-codes.js';
import { VERSION } from './util/version.js';

/** A flag given more than once: each value, in order. */
const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** --ssh, the same for every command that reaches hosts (transport/connector.ts). */
const sshClientOption = () =>
  new Option('--ssh <client>', "openssh: reach every host through this machine's ssh (default: ssh2, built in; the system's ssh for a host that needs a user certificate, a hardware key, PKCS#11, GSSAPI or a @cert-authority)").choices(SSH_CLIENTS);

// Subcommands are imported lazily: `decom --help` must not pay for what it does not run.
const program = new Command('decom')
  .description('Take Kubernetes nodes out of service and leave them provably clean, over SSH.')
  .version(VERSION)
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride((err) => {
    // commander's own usage errors (unknown flag, bad choice) are input errors: exit 2
    process.exit(err.exitCode === 0 ? EXIT.clean : EXIT.input);
  });

program
  .command('verify')
  .description('pre-rejoin gate: report every piece of Kubernetes residue on the hosts; exit 0 only if nothing is left')
  .argument('<inventory>', "decom's inventory, or kubespray's/Ansible's hosts.yaml or INI")
  .argument('[targets...]', 'host names, group names, or "all"')
  .option('--limit <pattern>', 'narrow the targets, as Ansible --limit (a,b  !host  &group)')
  .addOption(new Option('--output <format>', 'output format').choices(['text', 'json'] as const).default('text' as const))
  .addOption(new Option('--connection <how>', 'ssh to each host, or run the probe on this machine').choices(['ssh', 'local'] as const).default('ssh' as const))
  .option('--known-hosts <file>', 'known_hosts file to check host keys against (instead of the inventory\'s or ~/.ssh/known_hosts)')
  .option('--accept-new-host-keys', 'record the key of a host seen for the first time (a changed key is always refused)', false)
  .addOption(sshClientOption())
  .option('--vault-password-file <file>', 'a vault password: a file, or an executable that prints it (again for more vault IDs)', collect, [] as string[])
  .option('--vault-id <[label@]source>', 'a vault password by vault ID: a file, an executable, or "prompt" (again for more)', collect, [] as string[])
  .option('--ask-vault-pass', 'ask for the vault password on the terminal', false)
  .option('-k, --ask-pass', 'ask for the SSH login password on the terminal (for the hosts whose inventory gives none)', false)
  .option('--kubeconfig <file>', "also report a Node object still registered (default: the inventory's decom_kubeconfig, $KUBECONFIG, ~/.kube/config)")
  .option('--context <name>', 'the kubeconfig context to use')
  .option('--details', 'text output: one line per finding, with its detail (default: per kind, the count and the first subjects)', false)
  .option('--purge', "also report the installation footprint: binaries, units and configs kubespray or kubeadm installed, containerd's k8s.io images, and what an administrator may have written for the runtime (static CDI specs, NRI plugins, containerd conf.d drop-ins)", false)
  .option('--forks <n>', 'hosts worked on at once, so at most this many SSH connections are open (default: 50)')
  .option('--max-output <MiB>', "the most one host may answer to one command, in MiB: past it decom stops reading, and that host fails as not checked (default: 64)")
  .addHelpText(
    'after',
    '\nExit codes: 0 every host clean, 1 residue found, 2 bad input, 3 a host could not be checked.',
  )
  .action(async (inventory, targets, o) => {
    const { verifyCommand } = await import('./verify/cli.js');
    process.exitCode = await verifyCommand(inventory, targets, o);
  });

program
  .command('run')
  .description('decommission hosts (default): drain, volumes detached, etcd member removed, node reset and verified, Node deleted; or run another playbook (--playbook reset: the node side only)')
  .argument('<inventory>', "decom's inventory, or kubespray's/Ansible's hosts.yaml or INI")
  .argument('<targets...>', 'host names (a group or "all" only with --allow-many)')
  .option('--playbook <name|path>', 'a shipped playbook by name (decommission, reset) or a playbook file', 'decommission')
  .option('--check', 'plan only: print every action for every host, cluster side included (evictions as server-side dry runs), change nothing', false)
  .option('--limit <pattern>', 'narrow the targets, as Ansible --limit (a,b  !host  &group)')
  .option('--tags <tags>', 'run only the steps with one of these tags (comma-separated)')
  .option('--skip-tags <tags>', 'skip the steps with one of these tags')
  .option('--forks <n>', 'hosts worked on at once, so at most this many SSH connections are open (default: 50)')
  .option('--max-output <MiB>', "the most one host may answer to one command, in MiB: past it decom stops reading, and that host fails as not checked (default: 64)")
  .option('--wait-lock <duration>', "when another decom run or fix holds a node's lock, wait this long for it (300, 90s, 2m) instead of refusing")
  .option('--serial <n|p%>', 'roll in batches of this many hosts (or percent of them)')
  .option('--max-fail-percent <p>', 'stop the roll when more than this percentage of a batch failed')
  .option('--yes', 'do not ask to type the host names', false)
  .option('--allow-many', 'allow a group or "all" as a target', false)
  .option('--purge', "also remove the installation footprint (binaries, units, configs kubespray or kubeadm installed; containerd's k8s.io images; static CDI specs, NRI plugins and containerd conf.d drop-ins, backed up first): for a node that leaves for good (the decommission's default)", false)
  .option('--keep-installed', 'decommission: keep the binaries, units and images, for a node that will rejoin', false)
  .option('--keep-backup-on-node', "keep the node's copy of the backup after the operator's copy is verified", false)
  .option('--remove-etcd-archive', "once the node is proven clean, remove the etcd data archives on it (the etcd step keeps one: it holds every Secret of the cluster)", false)
  .option('--state-dir <dir>', 'where journals and backups go (default: $DECOM_STATE_DIR, $XDG_STATE_HOME/decom, ~/.local/state/decom)')
  .addOption(new Option('--output <format>', 'output format').choices(['text', 'json'] as const).default('text' as const))
  .option('--details', 'list every finding left, not a summary per kind', false)
  .addOption(new Option('--connection <how>', 'ssh to each host, or run on this machine (only on the node itself)').choices(['ssh', 'local'] as const).default('ssh' as const))
  .option('--known-hosts <file>', "known_hosts file to check host keys against (instead of the inventory's or ~/.ssh/known_hosts)")
  .option('--accept-new-host-keys', 'record the key of a host seen for the first time (a changed key is always refused)', false)
  .addOption(sshClientOption())
  .option('--vault-password-file <file>', 'a vault password: a file, or an executable that prints it (again for more vault IDs)', collect, [] as string[])
  .option('--vault-id <[label@]source>', 'a vault password by vault ID: a file, an executable, or "prompt" (again for more)', collect, [] as string[])
  .option('--ask-vault-pass', 'ask for the vault password on the terminal', false)
  .option('-k, --ask-pass', 'ask for the SSH login password on the terminal (for the hosts whose inventory gives none)', false)
  .option('--kubeconfig <file>', "the cluster's API (default: the inventory's decom_kubeconfig, $KUBECONFIG, ~/.kube/config, the pod's service account); with --playbook reset: say whether the Node is still registered")
  .option('--context <name>', 'the kubeconfig context to use')
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
  .addHelpText(
    'after',
    '\nExit codes: 0 every host clean (and decommissioned), 1 a host not clean or a step failed, 2 bad input, 3 a host unreachable, lost mid-run or past --max-output, 4 refused by an interlock (nothing changed).',
  )
  .action(async (inventory, targets, o) => {
    const { runCommand } = await import('./run/cli.js');
    process.exitCode = await runCommand(inventory, targets, o);
  });

program
  .command('audit')
  .description('fleet hygiene, read-only: phantom pods, orphaned pod dirs, cgroups, netns, veths and IPAM leases, pods and namespaces stuck Terminating, stale Nodes, etcd members and VolumeAttachments')
  .argument('<inventory>', "decom's inventory, or kubespray's/Ansible's hosts.yaml or INI")
  .argument('[targets...]', 'host names, group names, or "all" (default: all)')
  .option('--limit <pattern>', 'narrow the targets, as Ansible --limit (a,b  !host  &group)')
  .addOption(new Option('--output <format>', 'what to print').choices(['table', 'json', 'prometheus', 'junit'] as const).default('table' as const))
  .option('--textfile <file>', "also write the Prometheus metrics to this file, atomically (node-exporter's textfile collector reads *.prom)")
  .option('--junit <file>', 'also write a JUnit XML report (a test case per host and kind)')
  .option('--html <file>', 'also write a self-contained HTML report: hosts x kinds heat map, each finding with its evidence')
  .option('--details', 'table: every finding, not the first 5 per host and kind', false)
  .option('--stale-after <duration>', 'a Node NotReady this long is stale', '1h')
  .option('--stuck-after <duration>', 'a pod or namespace Terminating this long past its deadline, or any other object this long in deletion, is stuck', '5m')
  .option('--finished-pods <n>', "more Succeeded and Failed pods than this are a finding (kube-controller-manager's garbage collection waits for 12500)", '1000')
  .option('--shard <I/N>', "audit share I of N of the hosts (an Indexed Job's JOB_COMPLETION_INDEX and completions); cluster-wide findings in share 0")
  .addOption(new Option('--connection <how>', 'ssh to each host, or probe this machine (a DaemonSet pod with the host mounted)').choices(['ssh', 'local'] as const).default('ssh' as const))
  .option('--known-hosts <file>', "known_hosts file to check host keys against (instead of the inventory's or ~/.ssh/known_hosts)")
  .option('--accept-new-host-keys', 'record the key of a host seen for the first time (a changed key is always refused)', false)
  .addOption(sshClientOption())
  .option('--vault-password-file <file>', 'a vault password: a file, or an executable that prints it (again for more vault IDs)', collect, [] as string[])
  .option('--vault-id <[label@]source>', 'a vault password by vault ID: a file, an executable, or "prompt" (again for more)', collect, [] as string[])
  .option('--ask-vault-pass', 'ask for the vault password on the terminal', false)
  .option('-k, --ask-pass', 'ask for the SSH login password on the terminal (for the hosts whose inventory gives none)', false)
  .option('--kubeconfig <file>', "the cluster's API (default: the inventory's decom_kubeconfig, $KUBECONFIG, ~/.kube/config, the pod's service account)")
  .option('--context <name>', 'the kubeconfig context to use')
  .option('--no-api', 'do not ask the API: node-side kinds only (the report says which kinds were not checked)')
  .option('--fix <kinds>', 'fix findings of these kinds (comma-separated) with their safe remedies, each re-checked on the node and in the API first and proven gone after')
  .option('--force-finalize <namespace>', 'finalize this namespace stuck Terminating (empty its spec.finalizers); repeatable', (v: string, prev: string[]) => [...prev, v], [] as string[])
  .option('--from <report.json>', 'fix the findings of this earlier `--output json` report (those the re-check still finds), not a fresh audit\'s')
  .option('--check', 'with --fix: print what would be done, change nothing', false)
  .option('--yes', 'with --fix: do not ask for confirmation', false)
  .option('--wait-lock <duration>', "with --fix: when a decom run or another fix holds a node's lock, wait this long for it (300, 90s, 2m) instead of refusing")
  .option('--state-dir <dir>', 'with --fix: where its journal goes (default: $DECOM_STATE_DIR, $XDG_STATE_HOME/decom, ~/.local/state/decom)')
  .option('--forks <n>', 'hosts worked on at once, so at most this many SSH connections are open (default: 50)')
  .option('--max-output <MiB>', "the most one host may answer to one command, in MiB: past it decom stops reading, and that host fails as not checked (default: 64)")
  .option('--listen <[host:]port>', 'serve the metrics of the last audit at /metrics (with --every; the DaemonSet\'s mode)')
  .option('--every <duration>', 'audit again this often, serving the metrics (with --listen)')
  .option('--host-root <dir>', "--connection local: the host's / as this pod mounts it (the probe runs chrooted there)")
  .option('--print-systemd-timer', 'print a systemd service and timer pair that runs this audit (the same arguments) on a schedule', false)
  .option('--on-calendar <spec>', "with --print-systemd-timer: the timer's OnCalendar", 'hourly')
  .addHelpText(
    'after',
    '\nExit codes: 0 nothing found, 1 residue found, 2 bad input, 3 a host or the API could not be checked, 4 --fix refused (its re-check disagrees).',
  )
  .action(async (inventory, targets, o) => {
    const { auditCommand } = await import('./audit/cli.js');
    process.exitCode = await auditCommand(inventory, targets, o);
  });

program
  .command('audit-report')
  .description("merge the JSON reports of an audit's shards (an Indexed Job's) into one, written in any of the audit's formats")
  .argument('<reports...>', 'the shards\' `decom audit --output json` reports')
  .option('--expect <n>', 'refuse unless exactly this many reports are given (the number of shards)')
  .addOption(new Option('--output <format>', 'what to print').choices(['table', 'json', 'prometheus', 'junit'] as const).default('table' as const))
  .option('--textfile <file>', 'also write the Prometheus metrics to this file, atomically')
  .option('--junit <file>', 'also write a JUnit XML report')
  .option('--html <file>', 'also write the self-contained HTML report')
  .option('--details', 'table: every finding', false)
  .addHelpText('after', '\nExit codes: as decom audit (0 nothing found, 1 residue found, 2 bad input, 3 something could not be checked).')
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
  .addOption(new Option('--output <format>', 'output format').choices(['text', 'json'] as const).default('text' as const))
  .addHelpText('after', '\nExit codes: 0 shown, 2 bad input (no such run).')
  .action(async (runId, o) => {
    const { journalCommand } = await import('./journal/cli.js');
    process.exitCode = journalCommand(runId, o);
  });

program
  .command('sandbox')
  .description("decom's test cluster on this machine (real namespaced nodes): the decom-sandbox package's command, run through decom")
  .argument('[args...]', 'what to pass to decom-sandbox (up, down, status, api, scenarios, image, ssh; --help)')
  .helpOption(false)
  .allowUnknownOption()
  .allowExcessArguments()
  .action(async (args) => {
    process.exitCode = await runSandbox(args);
  });

await program.parseAsync().catch((e: unknown) => exitOnError('decom', e));

/**
 * `decom sandbox ARGS` runs the decom-sandbox package's command when that package is
 * installed beside decom (a checkout's workspace), as a child with the terminal and
 * signals passed through; decom imports nothing from it.
 */
async function runSandbox(args: string[]): Promise<number> {
  const [{ spawn }, { createRequire }, { existsSync, readFileSync }, { dirname, join }, { constants }] = await Promise.all([
    import('node:child_process'),
    import('node:module'),
    import('node:fs'),
    import('node:path'),
    import('node:os'),
  ]);
  let manifest: string;
  try {
    manifest = createRequire(import.meta.url).resolve('decom-sandbox/package.json');
  } catch {
    process.stderr.write(
      'decom: the sandbox is its own package, decom-sandbox, and it is not installed beside this decom.\n' +
        'It comes with a checkout of decom: `npm ci && npm run build` there, then `decom sandbox …` or `decom-sandbox …` from it.\n',
    );
    return EXIT.input;
  }
  const bin = join(dirname(manifest), (JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> }).bin['decom-sandbox'] as string);
  if (!existsSync(bin)) {
    process.stderr.write(`decom: the sandbox package (${dirname(manifest)}) is not built: run \`npm run build\` in the checkout\n`);
    return EXIT.input;
  }
  const child = spawn(process.execPath, [bin, ...args], { stdio: 'inherit' });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, forward);
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 1))));
}
