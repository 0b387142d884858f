// Ansible's and kubectl's short flags on decom's command line: each one parsed as its long
// form (the same answer, byte for byte, from the built CLI), the inventory taken by -i,
// and -e's inline secrets refused before anything is read; -u and --private-key under the
// inventory's own user and key, as in Ansible. And the help around them:
// each command's ends with examples and its page.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decom } from '../test/helpers/sandbox.js';
import { freePort, makeKey } from '../test/helpers/sshd.js';
import { tempDir } from '../test/helpers/temp.js';

const dir = tempDir('decom-cli-flags-');
/** Hosts on loopback ports nothing listens on: every command answers at once, the same way each time. */
const closedInventory = async () => {
  const file = join(dir, `hosts-${await freePort()}.yaml`);
  const [p1, p2] = [await freePort(), await freePort()];
  writeFileSync(file, `all:\n  hosts:\n    node1: {ansible_host: 127.0.0.1, ansible_port: ${p1}}\n    node2: {ansible_host: 127.0.0.1, ansible_port: ${p2}}\n`);
  return file;
};
/** A run's JSON report without what differs between two runs (its ID, its journal's path). */
const runReport = (stdout: string) => JSON.parse(stdout.replace(/\d{8}T\d{6}Z-[0-9a-f]{6}/g, 'RUN')) as unknown;
const answer = (r: { code: number; stdout: string; stderr: string }) => [r.code, r.stdout, r.stderr];

describe('short flags: each the same as its long form', () => {
  it('-i INVENTORY makes every argument a target; -l, -o and -f are --limit, --output and --forks (verify)', async () => {
    const inv = await closedInventory();
    const long = decom(['verify', inv, 'all', '--limit', 'node2', '--output', 'json', '--forks', '1']);
    expect(long.code).toBe(3);
    expect((JSON.parse(long.stdout) as { hosts: { host: string }[] }).hosts.map((h) => h.host)).toEqual(['node2']);
    expect(answer(decom(['verify', '-i', inv, 'all', '-l', 'node2', '-o', 'json', '-f', '1']))).toEqual(answer(long));
    expect(answer(decom(['verify', 'all', '-i', inv, '-lnode2', '-ojson', '-f1']))).toEqual(answer(long));
  });

  it('the same flags refuse the same bad values in the same words', async () => {
    const inv = await closedInventory();
    for (const [short, long] of [
      [['-f', '0'], ['--forks', '0']],
      [['-l', 'nothere'], ['--limit', 'nothere']],
      [['-o', 'yaml'], ['--output', 'yaml']],
    ]) {
      const l = decom(['verify', inv, 'all', ...long!]);
      expect(l.code, long!.join(' ')).toBe(2);
      expect(answer(decom(['verify', inv, 'all', ...short!])).map((x) => String(x).replace(/\(see decom verify --help\)/, ''))).toEqual(answer(l).map((x) => String(x).replace(/\(see decom verify --help\)/, '')));
    }
  });

  it('-C is --check: a reset planned on hosts that do not answer; with audit, it goes with --fix', async () => {
    const inv = await closedInventory();
    const state = join(dir, 'state');
    const long = decom(['run', inv, 'node1', '--playbook', 'reset', '--check', '--output', 'json', '--state-dir', state]);
    const short = decom(['run', inv, 'node1', '--playbook', 'reset', '-C', '-o', 'json', '--state-dir', state]);
    expect(long.code).toBe(3);
    expect([short.code, runReport(short.stdout)]).toEqual([long.code, runReport(long.stdout)]);
    expect(answer(decom(['audit', inv, '-C']))).toEqual(answer(decom(['audit', inv, '--check'])));
    expect(decom(['audit', inv, '-C']).stderr).toBe('decom: --from, --check and --yes go with --fix or --force-finalize\n');
  });

  it('-o is --output on audit-report and journal too', () => {
    const state = join(dir, 'empty-state');
    expect(answer(decom(['journal', '-o', 'json', '--state-dir', state]))).toEqual(answer(decom(['journal', '--output', 'json', '--state-dir', state])));
    expect(answer(decom(['audit-report', '-o', 'yaml', 'x.json']))[0]).toBe(2);
  });

  it('-K and -k ask on the terminal: without one, one line naming the flag, nothing contacted', async () => {
    const inv = await closedInventory();
    const k = decom(['verify', inv, 'all', '-K']);
    expect([k.code, k.stderr]).toEqual([2, 'decom: --ask-become-pass: no terminal to ask on; give the password another way (a file)\n']);
    expect(answer(decom(['verify', inv, 'all', '--ask-become-pass']))).toEqual(answer(k));
  });
});

describe('-u and --private-key: for the hosts whose inventory names none, never over it (as in Ansible)', () => {
  /**
   * node1 silent on its user and key, node2 with its own user, node3 with its own key: on
   * closed loopback ports, offered no key but the ones named (no OpenSSH config, no agent,
   * a home of no keys), so each login fails before any connection, naming its user or its key.
   */
  const inventory = async () => {
    const file = join(dir, `own-${await freePort()}.yaml`);
    const [p1, p2, p3] = [await freePort(), await freePort(), await freePort()];
    writeFileSync(
      file,
      `all:\n  vars:\n    ansible_ssh_common_args: -F /dev/null\n  hosts:\n` +
        `    node1: {ansible_host: 127.0.0.1, ansible_port: ${p1}}\n` +
        `    node2: {ansible_host: 127.0.0.1, ansible_port: ${p2}, ansible_user: bob}\n` +
        `    node3: {ansible_host: 127.0.0.1, ansible_port: ${p3}, ansible_ssh_private_key_file: /nonexistent/inventory-key}\n`,
    );
    return file;
  };
  /** Each host's error in ping's JSON report. */
  const errors = (args: string[]) => {
    const r = decom(['ping', ...args, '-o', 'json'], { env: { SSH_AUTH_SOCK: '', KUBECONFIG: '', HOME: tempDir('decom-home-') } });
    expect(r.code, r.stdout + r.stderr).toBe(3);
    return (JSON.parse(r.stdout) as { hosts: { host: string; error: string }[] }).hosts.map((h) => [h.host, h.error]);
  };

  it("-u alice is the login user where the inventory names none; node2's ansible_user wins", async () => {
    expect(errors([await inventory(), 'all', '-u', 'alice'])).toEqual([
      ['node1', expect.stringMatching(/^auth: no key to offer as alice: /)],
      ['node2', expect.stringMatching(/^auth: no key to offer as bob: /)],
      ['node3', 'auth: cannot read private key /nonexistent/inventory-key: ENOENT'],
    ]);
  });

  it("--private-key is the key where the inventory names none; node3's ansible_ssh_private_key_file wins", async () => {
    expect(errors([await inventory(), 'all', '--private-key', '/nonexistent/key'])).toEqual([
      ['node1', 'auth: cannot read private key /nonexistent/key: ENOENT'],
      ['node2', 'auth: cannot read private key /nonexistent/key: ENOENT'],
      ['node3', 'auth: cannot read private key /nonexistent/inventory-key: ENOENT'],
    ]);
  });
});

describe('-e: connection and decom variables only, a secret only from a file', () => {
  it('refuses a password inline (it would show in ps and in a timer unit), and a variable decom does not read', async () => {
    const inv = await closedInventory();
    const secret = decom(['verify', inv, 'all', '-e', 'ansible_become_password=hunter2']);
    expect(secret.code).toBe(2);
    expect(secret.stderr).toMatch(/^decom: .*ansible_become_password.*@/);
    expect(secret.stderr).not.toContain('hunter2');
    const other = decom(['verify', inv, 'all', '-e', 'kube_version=v1.31.0']);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/^decom: .*kube_version/);
  });

  it('beats the inventory: -e ansible_port reaches the port it names', async () => {
    const inv = await closedInventory();
    const port = await freePort();
    const key = makeKey(dir, 'id_ed25519');
    const r = decom(['verify', inv, 'node1', '-e', `ansible_port=${port}`, '-e', `{"ansible_ssh_private_key_file": "${key}"}`, '-o', 'json']);
    expect(r.code).toBe(3);
    expect((JSON.parse(r.stdout) as { hosts: { error: string }[] }).hosts[0]!.error).toContain(`127.0.0.1:${port}:`);
  });
});

describe('help: examples and the page at the end of every command', () => {
  it("each command's --help ends with two or three examples of itself, then the path of its page, which exists", () => {
    for (const command of [['verify'], ['run'], ['audit'], ['audit-report'], ['journal'], ['ping'], ['hosts', 'trust']]) {
      const help = decom([...command, '--help']);
      expect(help.code).toBe(0);
      const tail = /\nExamples:\n((?: {2}.*\n)+)\nMore: (.+)\n$/.exec(help.stdout);
      expect(tail, command.join(' ')).not.toBeNull();
      const examples = tail![1]!.trimEnd().split('\n');
      expect(examples.length, command.join(' ')).toBeGreaterThanOrEqual(2);
      expect(examples.length, command.join(' ')).toBeLessThanOrEqual(3);
      for (const e of examples) expect(`${e.trim()} `.startsWith(`decom ${command.join(' ')} `), e).toBe(true);
      expect(tail![2]!.endsWith(`/docs/commands/${command[0]}.md`), tail![2]).toBe(true);
      expect(existsSync(tail![2]!), tail![2]).toBe(true);
    }
  });

  it('a missing or unknown command is one line on stderr, exit 2; alone, the overview goes to stdout', () => {
    const alone = decom([]);
    expect([alone.code, alone.stderr]).toEqual([2, 'decom: no command given (see decom --help)\n']);
    expect(alone.stdout).toMatch(/^Usage: decom /);
    expect(answer(decom(['frob']))).toEqual([2, '', "decom: unknown command 'frob' (see decom --help)\n"]);
    expect(answer(decom(['hosts']))).toEqual([2, '', 'decom: no command given: decom hosts trust INVENTORY TARGET... (see decom hosts --help)\n']);
    expect(answer(decom(['hosts', 'frob']))).toEqual([2, '', "decom: unknown command 'frob' (see decom hosts --help)\n"]);
    expect(answer(decom(['verify', 'x.yaml', '--nope']))).toEqual([2, '', "decom: unknown option '--nope' (see decom verify --help)\n"]);
  });

  it("audit's help says in its first line that --fix changes things", () => {
    const description = decom(['audit', '--help']).stdout.split('\n')[2]!;
    expect(description).toMatch(/^fleet hygiene, read-only unless --fix /);
  });
});
