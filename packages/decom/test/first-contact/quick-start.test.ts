// The README's quick start, run as written: its code block read from the README itself,
// each command run under a pseudo-terminal (helpers/terminal.ts) in a folder where the block's
// inventory path is a sandbox cluster's inventory whose node keys no known_hosts holds
// yet (as kubespray leaves them), the confirmations typed, and each command's exit code
// held to the one the README states beside it.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECKOUT, CLI, STATE_DIR, down, up } from '../helpers/sandbox.js';
import { onTerminal, shellLine } from '../helpers/terminal.js';
import { tempDir } from '../helpers/temp.js';

interface QuickStartCommand {
  line: number;
  command: string;
  exit: number;
}

/** The first sh block after `## Quick start`: its commands, each with the `# exit N` beside it, and the line it ends on. */
function quickStart(readme: string): { commands: QuickStartCommand[]; endLine: number } {
  const lines = readme.split('\n');
  const heading = lines.indexOf('## Quick start');
  if (heading < 0) throw new Error('README.md has no "## Quick start" heading');
  const open = lines.findIndex((l, i) => i > heading && l.startsWith('```sh'));
  const close = lines.findIndex((l, i) => i > open && l.startsWith('```'));
  if (open < 0 || close < 0) throw new Error('README.md: no ```sh block under "## Quick start"');
  const commands: QuickStartCommand[] = [];
  for (let i = open + 1; i < close; i++) {
    const text = lines[i]!;
    if (!text.trim() || text.trim().startsWith('#')) continue;
    const exit = /#\s*exit (\d)\b/.exec(text);
    if (!exit) throw new Error(`README.md:${i + 1}: a quick-start command without "# exit N" beside it: ${text}`);
    commands.push({ line: i + 1, command: text.slice(0, text.indexOf('#')).trim(), exit: Number(exit[1]) });
  }
  return { commands, endLine: close + 1 };
}

/** What a confirmation asks to be typed: `yes` for the keys `hosts trust` records, the host names for a run that changes nodes. */
function answerFor(command: string): string {
  const words = command.split(/\s+/);
  if (words[1] === 'hosts' && words[2] === 'trust') return 'yes\n';
  if (words[1] === 'run' && !words.some((w) => ['--check', '-C', '--yes'].includes(w))) return `${words.slice(3).filter((w) => !w.startsWith('-')).join(' ')}\n`;
  return '';
}

const README = readFileSync(join(CHECKOUT, 'README.md'), 'utf8');

// kubespray's ansible.cfg, where the quick start runs: host keys unchecked, and none recorded.
const KUBESPRAY_ANSIBLE_CFG = `[ssh_connection]
pipelining=True
ssh_args = -o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100 -o UserKnownHostsFile=/dev/null
[defaults]
host_key_checking=False
`;

describe('the README quick start', () => {
  it('ends before line 40, every command with the exit code it ends with', () => {
    const { commands, endLine } = quickStart(README);
    expect(endLine).toBeLessThan(40);
    expect(commands.map((c) => c.command.split(/\s+/).slice(0, 2).join(' '))).toEqual(['decom hosts', 'decom ping', 'decom verify', 'decom run', 'decom run', 'decom journal']);
    // The npm package's README shows the same quick start, word for word.
    const packaged = quickStart(readFileSync(join(CHECKOUT, 'packages', 'decom', 'README.md'), 'utf8'));
    expect(packaged.commands.map((c) => [c.command, c.exit])).toEqual(commands.map((c) => [c.command, c.exit]));
  });

  describe('on a sandbox cluster whose node keys are not known yet', () => {
    const work = tempDir('decom-quick-start-');
    const home = join(work, 'home');
    const bin = join(work, 'bin');
    beforeAll(() => {
      up(['--nodes', '3', '--etcd', '--scenario', 'cluster']);
      // The sandbox's inventory, as kubespray leaves one: no known_hosts of its own.
      const inventory = readFileSync(join(STATE_DIR, 'hosts.yaml'), 'utf8').replace(/^\s*ansible_ssh_common_args:.*\n/m, '');
      mkdirSync(join(work, 'inventory', 'mycluster'), { recursive: true });
      writeFileSync(join(work, 'inventory', 'mycluster', 'hosts.yaml'), inventory);
      writeFileSync(join(work, 'ansible.cfg'), KUBESPRAY_ANSIBLE_CFG);
      mkdirSync(home);
      mkdirSync(bin);
      writeFileSync(join(bin, 'decom'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} "$@"\n`);
      chmodSync(join(bin, 'decom'), 0o755);
    }, 300_000);
    afterAll(down);

    /** A command line as the user types it, on a terminal, in the folder, with the answer typed. */
    const typed = (command: string) => {
      const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}:${process.env.PATH}`, HOME: home };
      for (const v of ['KUBECONFIG', 'DECOM_STATE_DIR', 'XDG_STATE_HOME', 'SSH_AUTH_SOCK']) delete env[v];
      return onTerminal(command, { cwd: work, env, input: answerFor(command), timeoutMs: 280_000 });
    };

    it('runs as written: each command ends with the exit code the README states beside it', async () => {
      const { commands } = quickStart(README);
      // Why the first step is there: without it, no host is reached.
      const ping = commands.find((c) => c.command.startsWith('decom ping'))!;
      expect((await typed(ping.command)).code).toBe(3);
      for (const c of commands) {
        const r = await typed(c.command);
        expect(r.code, `README.md:${c.line}: ${c.command}\n${r.out}`).toBe(c.exit);
      }
      expect(readFileSync(join(home, '.ssh', 'known_hosts'), 'utf8').trim().split('\n')).toHaveLength(3);
    });

    it("Ansible's flags of habit, together, give what the long forms give; -u loses to the inventory's ansible_user", async () => {
      const inventory = join('inventory', 'mycluster', 'hosts.yaml');
      // The sandbox's own known_hosts, which holds the nodes' keys: this case needs nothing the one above records.
      const known = shellLine([join(STATE_DIR, 'known_hosts')]);
      const long = await typed(`decom verify ${inventory} all --limit node2 --output json --forks 2 --known-hosts ${known}`);
      const short = await typed(`decom verify -i ${inventory} all -l node2 -o json -f 2 -u nobody --known-hosts ${known}`);
      expect(long.code).toBe(1);
      const hosts = (out: string) => (JSON.parse(out.slice(out.indexOf('{'))) as { hosts: { host: string }[] }).hosts;
      expect(hosts(long.out).map((h) => h.host)).toEqual(['node2']);
      expect([short.code, hosts(short.out)]).toEqual([long.code, hosts(long.out)]);
    });
  });
});
