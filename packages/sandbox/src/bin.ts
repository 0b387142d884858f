#!/usr/bin/env node
/** The `decom-sandbox` command (also run as `decom sandbox`): its subcommands and their flags. */
import { Argument, Command, Option } from '@commander-js/extra-typings';
import { oneLineUsageErrors } from 'decom/command-line';
import { exitOnError, inputError } from 'decom/errors';
import { createRequire } from 'node:module';

// decom's test cluster, as its own command (`decom sandbox …` runs it too). Subcommands
// are imported lazily: `--help` must not pay for what it does not run.
/** Which sandbox a subcommand acts on: several can run side by side, each with its own names and subnet. */
const instanceOption = () =>
  new Option('--instance <name>', 'the sandbox instance (1 to 7 lower-case letters or digits; default: DECOM_SANDBOX_INSTANCE, else the default instance)');

// Run through `decom sandbox`, it is named so in its help and errors.
const program = new Command(process.env.DECOM_SANDBOX_PROGRAM ?? 'decom-sandbox')
  .description('a cluster of real namespaced nodes on this machine, to watch decom work and try playbooks safely')
  .version((createRequire(import.meta.url)('../package.json') as { version: string }).version);
program
  .command('up')
  .description('boot sandbox nodes (systemd, sshd, containerd, a kubelet stand-in) and plant a scenario')
  .option('--nodes <n>', 'how many nodes', '3')
  .option('--control-planes <k>', 'how many of them are control plane + etcd (the first K)', '1')
  .option('--init <init[,init…]>', "the nodes' PID 1: systemd or none; several, comma-separated: one per node, in turn", 'systemd')
  .option(
    '--containerd <version[,version…]>',
    "the nodes' containerd: 2 (Debian testing's), 1.7 (trixie's) or 1.6 (Debian 12's, this host's); several, comma-separated: one per node, in turn. docker-runtime nodes keep 1.6, the one Docker runs with",
    '2',
  )
  .option(
    '--containerd-paths <paths[,paths…]>',
    "where containerd keeps its root, state and socket: default (/var/lib/containerd, /run/containerd) or moved (/var/lib/containerd-moved, /run/containerd-moved, set in a conf.d drop-in its config imports; containerd 2 and 1.7 nodes only); several, comma-separated: one per node, in turn",
    'default',
  )
  .option('--scenario <name[,name…]>', 'residue to plant on every node; several, comma-separated: one per node, in turn (see `decom sandbox scenarios`)')
  .option('--etcd', 'run a real etcd cluster (Debian etcd-server) on the etcd nodes', false)
  .option(
    '--services <n>',
    "load N kube-proxy Services (iptables mode: 2 chains, 5 rules each) into every node's iptables-nft, after the scenario; another app's chains too if the scenario planted none (0 to 50000)",
    '0',
  )
  .option('--api', "run the sandbox's Kubernetes API (real kubectl accepts it) and join every node's kubelet to it; kubeconfig beside the inventory (implied by the cluster scenarios)", false)
  .option('--node-monitor-grace-period <seconds>', "how long the API waits for a node's Lease before marking it NotReady (kube-controller-manager's flag)", '50')
  .addOption(instanceOption())
  .action(async (o) => {
    const { upCommand } = await import('./commands.js');
    await upCommand(o);
  });

program
  .command('down')
  .description('stop every node of the instance and remove everything it made on this host (other instances are left running)')
  .addOption(instanceOption())
  .option('--all', 'every instance on this host, the default one included', false)
  .action(async (o) => {
    const { downCommand } = await import('./commands.js');
    await downCommand(o);
  });

program
  .command('status')
  .description('the nodes, their addresses, roles and state')
  .addOption(new Option('--output <format>', 'output format').choices(['text', 'json'] as const).default('text' as const))
  .addOption(instanceOption())
  .action(async (o) => {
    const { statusCommand } = await import('./commands.js');
    await statusCommand(o.output, o.instance);
  });

program
  .command('api')
  .description("start or stop the sandbox's Kubernetes API (its objects are kept across a stop), or say whether it runs")
  .addArgument(new Argument('<action>', 'what to do').choices(['start', 'stop', 'status'] as const))
  .addOption(instanceOption())
  .action(async (action, o) => {
    const { apiCommand } = await import('./commands.js');
    process.exitCode = await apiCommand(action, o.instance);
  });

program
  .command('scenarios')
  .description('list the scenarios `up --scenario` can plant')
  .action(async () => {
    const { scenariosCommand } = await import('./commands.js');
    scenariosCommand();
  });

program
  .command('versions')
  .description("the container runtimes, CNI plugins and kubectl the nodes and tests can use: this host's and what scripts/setup fetched into the runtime cache, with their exact versions")
  .addOption(new Option('--output <format>', 'output format').choices(['text', 'json'] as const).default('text' as const))
  .option('--which <program>', 'print only the path of a fetched program (kubectl), for scripts')
  .action(async (o) => {
    const { versionsCommand } = await import('./commands.js');
    versionsCommand(o);
  });

program
  .command('image')
  .description("build decom's audit image (packages/decom/deploy/Dockerfile) here (its base made from Debian's packages and this machine's Node.js 20: no registry, no daemon) and export it as an OCI archive for `ctr images import`")
  .option('--no-cache', 'from nothing: make the base again and rebuild every layer')
  .addOption(new Option('--output <format>', 'output format').choices(['text', 'json'] as const).default('text' as const))
  .action(async (o) => {
    const { imageCommand } = await import('./commands.js');
    await imageCommand(o);
  });

program
  .command('ssh')
  .description('open a shell (or run a command) on a sandbox node with the sandbox key and pinned host key')
  .argument('<node>', 'node name, e.g. node1')
  .argument('[command...]', 'command to run instead of a shell')
  .addOption(instanceOption())
  .action(async (node, command, o) => {
    const { sshCommand } = await import('./commands.js');
    process.exitCode = await sshCommand(node, command, o.instance);
  });

// Its errors are decom's when decom runs it: one shape, `decom: …`.
const errorPrefix = process.env.DECOM_SANDBOX_PROGRAM ? 'decom' : program.name();
oneLineUsageErrors(program, errorPrefix);
if (process.argv.length <= 2) {
  // Alone: the overview on stdout, and the one line that says what is missing.
  process.stdout.write(program.helpInformation());
  exitOnError(errorPrefix, inputError(`no command given (see ${program.name()} --help)`));
}
await program.parseAsync().catch((e: unknown) => exitOnError(errorPrefix, e));
