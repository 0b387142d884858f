// The reset through ansible_become on a 2-node sandbox (kubespray-leftovers; docker-runtime on
// node2), the password never shown. Real sudo (Debian's, installed by the set-up), as users
// log in on real nodes: a deploy user with NOPASSWD, an ops user who must type a password.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, down, nodes, ssh, STATE_DIR, up } from '../helpers/sandbox.js';
import { leftovers, userObjects } from '../helpers/residue.js';
import { tempDir } from '../helpers/temp.js';

const PASSWORD = 'S3cr3t-pa55-decom';

describe('reset through real sudo (ansible_become), with and without a password, Docker included', () => {
  const dir = tempDir('decom-become-');
  const before = new Map<string, string>();
  let out = '';
  let code = -1;
  beforeAll(() => {
    up(['--nodes', '2', '--scenario', 'kubespray-leftovers,docker-runtime']); // node2: Docker's API through sudo socat
    const [n1, n2] = nodes();
    for (const [node, user, rule] of [
      ['node1', 'deploy', 'deploy ALL=(ALL) NOPASSWD: ALL'],
      ['node2', 'ops', 'ops ALL=(ALL) ALL'],
    ] as const) {
      ssh(
        node,
        `useradd -m -s /bin/sh ${user} && mkdir -p /home/${user}/.ssh && cp /root/.ssh/authorized_keys /home/${user}/.ssh/ && chown -R ${user}: /home/${user}/.ssh && echo '${rule}' > /etc/sudoers.d/${user} && chmod 0440 /etc/sudoers.d/${user}` +
          (user === 'ops' ? ` && echo 'ops:${PASSWORD}' | chpasswd` : ` && usermod -p '*' ${user}`), // a locked account cannot log in over SSH without PAM
      );
      before.set(node, userObjects(node));
      // Every 100 ms, every process's argv and environment, searched for the password
      // (read from a file written in a session of its own before: neither the sampler's
      // command line nor the one that starts it holds it).
      ssh(node, `printf '%s\\n' '${PASSWORD}' > /root/.pw`);
      ssh(node, `(setsid sh -c 'while :; do cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -F -f /root/.pw >> /root/leaks; sleep 0.1; done' </dev/null >/dev/null 2>&1 & echo $! > /root/sampler.pid)`);
    }
    const key = join(STATE_DIR, 'id_ed25519');
    const inventory = join(dir, 'hosts.yaml');
    writeFileSync(
      inventory,
      `all:
  hosts:
    node1: {ansible_host: ${n1!.addr}, ansible_user: deploy}
    node2: {ansible_host: ${n2!.addr}, ansible_user: ops, ansible_become_password: ${PASSWORD}}
  vars:
    ansible_become: true
    ansible_ssh_private_key_file: ${key}
    ansible_ssh_common_args: -o UserKnownHostsFile=${join(STATE_DIR, 'known_hosts')}
`,
    );
    const r = decom(['run', inventory, 'node1', 'node2', '--playbook', 'reset', '--yes', '--output', 'json', '--state-dir', join(dir, 'state')]);
    code = r.code;
    out = r.stdout + r.stderr;
    for (const n of ['node1', 'node2']) ssh(n, 'kill "$(cat /root/sampler.pid)"');
  });
  afterAll(() => down());

  it('resets both nodes as cleanly as a root login does', () => {
    expect(code, out).toBe(0);
    const report = JSON.parse(out.slice(0, out.lastIndexOf('}') + 1)) as { hosts: { host: string; clean: boolean }[] };
    expect(report.hosts.map((h) => [h.host, h.clean])).toEqual([['node1', true], ['node2', true]]);
    for (const n of ['node1', 'node2']) {
      expect(leftovers(n), n).toEqual([]);
      expect(userObjects(n), n).toBe(before.get(n));
    }
  });

  it('never shows the password: not in the output, the journal, any process list or environment on the node', () => {
    expect(out).not.toContain(PASSWORD);
    const journal = /journal ([^\s]+\.jsonl)/.exec(out)?.[1] ?? JSON.parse(out.slice(0, out.lastIndexOf('}') + 1)).journal;
    expect(readFileSync(journal, 'utf8')).not.toContain(PASSWORD);
    for (const n of ['node1', 'node2']) expect(ssh(n, 'cat /root/leaks 2>/dev/null; true'), n).toBe('');
  });
});
