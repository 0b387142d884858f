// First contact that changes nothing, on a 3-node sandbox with its Kubernetes API (`--api`,
// the cheapest cluster whose inventory names a kubeconfig): `decom ping` logs in, becomes
// root through real sudo with the inventory's password, asks the machine interlocks and the
// Node, and leaves every node as it was (nodeSnapshot, and `find -newer` a marker made just
// before); a wrong machine exits 4, an unreachable host or a failed become 3; -u, -b and -K
// stand in where the inventory is silent, the sudo password typed at its prompt. `decom
// hosts trust` records unknown keys after a confirmation typed on a pseudo-terminal, refuses
// without one, and never records a changed key, found by the scan or after it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ok, requireKubectl } from '../helpers/kubectl.js';
import { nodeSnapshot } from '../helpers/residue.js';
import { INVENTORY } from '../helpers/run.js';
import { CHECKOUT, CLI, addrOf, decom, down, ssh, subnetAddr, up } from '../helpers/sandbox.js';
import { onTerminal, shellLine } from '../helpers/terminal.js';
import { tempDir } from '../helpers/temp.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const NODES = ['node1', 'node2', 'node3'];
const PASSWORD = 'S3cr3t-ping-pa55';
const MARKER = '/run/decom-ping-marker';
const dir = tempDir('decom-first-contact-');

/** The sandbox's inventory with `edit` applied, written to a file of its own. */
function inventoryWith(name: string, edit: (doc: Any) => void): string {
  const doc = parse(readFileSync(INVENTORY, 'utf8')) as Any;
  edit(doc);
  const file = join(dir, name);
  writeFileSync(file, stringify(doc));
  return file;
}

/** A path's modification time (nanoseconds) and size, as coreutils' stat prints them; the node runs this machine's own stat. */
const STAT_LINE = "stat -c '%.9Y %s' --";
const hostStat = (path: string): string => {
  const r = spawnSync('sh', ['-c', `${STAT_LINE} "$1"`, 'sh', path], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : 'absent here';
};

/**
 * What changed on a node since the marker: every path newer than it on the root's filesystem
 * (-xdev: other mounts are not descended into), and on /tmp, /var/tmp and /dev/shm, searched
 * each on its own (/tmp and /dev/shm are mounts of their own). Not /run, where the marker is:
 * journald's journal there records every SSH login, the test's own `ssh` too (with no ping at
 * all, `find /run -newer` lists it and nothing else). Left out, only what the node writes by
 * itself whether or not anyone logs in: the prometheus service its machine image enables writes
 * its WAL every few seconds (`find` twice with nothing in between finds its WAL segment and
 * nothing else). And the checkout, bound read-only into every node (packages/sandbox/src/node-init.sh):
 * -xdev still lists its mount point, with the times of this machine's writes in it.
 * A node's root is an overlay whose lower layer is this machine's root (node-init.sh), so a
 * file this machine writes meanwhile (a CI job's log) shows on the node too: a path whose time
 * and size on the node are this machine's own, to the nanosecond, is this machine's write. A
 * write on the node is copied up and can no longer carry them.
 */
const newSinceMarker = (node: string): string[] =>
  ssh(
    node,
    `{ find / -xdev -newer ${MARKER} -not -path '/var/lib/prometheus/*' -not -path ${shellLine([CHECKOUT])}; find /tmp /var/tmp /dev/shm -xdev -newer ${MARKER}; } 2>/dev/null | sort -u | ` +
      `while IFS= read -r p; do printf '%s\t%s\n' "$(${STAT_LINE} "$p" 2>/dev/null)" "$p"; done`,
  )
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t') as [string, string])
    .filter(([seen, p]) => seen === '' || seen !== hostStat(p))
    .map(([, p]) => `${node}: ${p}`);

const machineIdOf = (node: string) => ssh(node, 'cat /etc/machine-id').trim();

/** The public half of the host key a node's sshd serves, derived from its private key (the .pub beside it is the machine image's, the same on every node). */
const SERVED_KEY = 'ssh-keygen -y -f /etc/ssh/ssh_host_ed25519_key';

/** decom's command line, for the pseudo-terminal. */
const decomLine = (args: string[]) => shellLine([process.execPath, CLI, ...args]);

/** The public key a node's sshd serves, as a known_hosts line's type and key. */
const servedKey = (n: string) => ssh(n, `${SERVED_KEY} | cut -d" " -f1,2`).trim();
/** Its fingerprint, as the node's own ssh-keygen prints it. */
const fingerprintOf = (n: string) => ssh(n, `${SERVED_KEY} | ssh-keygen -lf -`).split(' ')[1]!;

describe('first contact on three sandbox nodes: decom ping and decom hosts trust', () => {
  /** node2 reached as `ops`, who types a password for sudo, as the inventory gives it. */
  let becoming = '';
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--api']);
    // Each node's init ends its boot first: its last boot jobs write on the node's own (the runlevel record in /var/log/wtmp).
    for (const n of NODES) ssh(n, 'systemctl is-system-running --wait >/dev/null; true');
    ssh(
      'node2',
      `useradd -m -s /bin/sh ops && mkdir -p /home/ops/.ssh && cp /root/.ssh/authorized_keys /home/ops/.ssh/ && chown -R ops: /home/ops/.ssh && ` +
        `echo 'ops ALL=(ALL) ALL' > /etc/sudoers.d/ops && chmod 0440 /etc/sudoers.d/ops && echo 'ops:${PASSWORD}' | chpasswd`,
    );
    becoming = inventoryWith('becoming.yaml', (d) => {
      Object.assign(d.all.hosts.node2, { ansible_user: 'ops', ansible_become: true, ansible_become_password: PASSWORD });
      // Logged in as root and asked to become root: it becomes (without sudo), and says so.
      d.all.hosts.node3.ansible_become = true;
    });
  }, 300_000);
  afterAll(() => down());

  it('every host answers (login, become through sudo, hostname, machine-id, its Node), exit 0, and no node changes', () => {
    const before = NODES.map(nodeSnapshot);
    for (const n of NODES) ssh(n, `touch ${MARKER}`);
    // What this machine writes meanwhile (a CI job's log) shows on every node through its overlay's lower layer, and is not the node's.
    const hostWrite = mkdtempSync('/var/tmp/decom-host-write-');
    writeFileSync(join(hostWrite, 'ci.log'), 'this machine\'s\n');
    const text = decom(['ping', becoming, 'all']);
    const json = decom(['ping', becoming, 'all', '--output', 'json']);
    const found = NODES.flatMap(newSinceMarker);
    expect(ssh('node1', `cat ${hostWrite}/ci.log`)).toBe('this machine\'s\n');
    rmSync(hostWrite, { recursive: true });
    expect(NODES.map(nodeSnapshot)).toEqual(before);
    expect(found).toEqual([]);
    // The same look finds a file written after the marker, on each filesystem it searches (then removed).
    const planted = ['/var/lib/decom-planted', '/tmp/decom-planted', '/var/tmp/decom-planted', '/dev/shm/decom-planted'];
    ssh('node1', `touch ${planted.join(' ')}`);
    expect(newSinceMarker('node1')).toEqual(expect.arrayContaining(planted.map((p) => `node1: ${p}`)));
    ssh('node1', `rm ${planted.join(' ')}`);

    expect([text.code, text.stderr], text.stdout).toEqual([0, '']);
    const line = (n: string, login: string, become: string) =>
      `${n}: ok: login ${login}@${addrOf(n)}:22, ${become}, hostname ${n}, machine-id ${machineIdOf(n)}, Node ${n}: registered, same machine-id`;
    expect(text.stdout.split('\n')).toEqual([line('node1', 'root', 'no become (uid 0)'), line('node2', 'ops', 'become root (uid 0)'), line('node3', 'root', 'become root (uid 0)'), '']);
    expect(text.stdout).not.toContain(PASSWORD);

    expect(json.code).toBe(0);
    const hosts = (JSON.parse(json.stdout) as { hosts: Any[] }).hosts;
    expect(hosts.map((h) => [h.host, h.status, h.become, h.uid, h.node.registered])).toEqual([
      ['node1', 'ok', undefined, 0, true], ['node2', 'ok', 'root', 0, true], ['node3', 'ok', 'root', 0, true],
    ]);
    // What the API holds for each Node, read with kubectl.
    for (const h of hosts) expect(h.node.machineId).toBe(ok('get', 'node', h.host, '-o', 'jsonpath={.status.nodeInfo.machineID}'));
  });

  it('says the Node is not checked when no kubeconfig is found', () => {
    const home = tempDir('decom-home-');
    const bare = inventoryWith('no-kubeconfig.yaml', (d) => delete d.all.vars.decom_kubeconfig);
    const r = decom(['ping', bare, 'node1'], { env: { HOME: home, KUBECONFIG: '' } });
    expect([r.code, r.stdout]).toEqual([0, `node1: ok: login root@${addrOf('node1')}:22, no become (uid 0), hostname node1, machine-id ${machineIdOf('node1')}, Node: not checked (no kubeconfig found)\n`]);
  });

  it('a wrong machine exits 4: an address that is another node, and a Node whose machine-id is another machine\'s', () => {
    // node2 points at node3's address; node1 says it is the Node node3.
    const wrong = inventoryWith('wrong.yaml', (d) => {
      d.all.hosts.node2.ansible_host = addrOf('node3');
      d.all.hosts.node1.decom_node_name = 'node3';
    });
    const r = decom(['ping', wrong, 'all']);
    expect(r.code, r.stdout + r.stderr).toBe(4);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(
      `node1: WRONG MACHINE at ${addrOf('node1')}: has machine-id ${machineIdOf('node1')}, but Node node3 reports ${machineIdOf('node3')}: the inventory address is another machine than the Node: ` +
        `login root@${addrOf('node1')}:22, no become (uid 0), hostname node1, machine-id ${machineIdOf('node1')}, Node node3: registered, machine-id ${machineIdOf('node3')}`,
    );
    expect(lines[1]).toMatch(new RegExp(`^node2: WRONG MACHINE at ${addrOf('node3').replaceAll('.', '\\.')}: says its hostname is "node3", not "node2": refusing `));
    expect(lines[2]).toMatch(/^node3: ok: /);
  });

  it('an unreachable host and a failed become exit 3, each named once; the others still answer', () => {
    const broken = inventoryWith('broken.yaml', (d) => {
      d.all.hosts.node4 = { ansible_host: subnetAddr(250) }; // no node holds it
      d.all.hosts.node2 = { ...d.all.hosts.node2, ansible_user: 'ops', ansible_become: true, ansible_become_password: 'not-the-password' };
    });
    const r = decom(['ping', broken, 'all']);
    expect(r.code, r.stdout + r.stderr).toBe(3);
    const byHost = new Map(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf(':')), l]));
    expect([...byHost.keys()].sort()).toEqual(['node1', 'node2', 'node3', 'node4']);
    expect(byHost.get('node4')).toBe(`node4: UNREACHABLE: connect: cannot connect to ${subnetAddr(250)}:22: EHOSTUNREACH (host unreachable)`);
    expect(byHost.get('node2')).toMatch(new RegExp(`^node2: BECOME FAILED: sudo: ops@${addrOf('node2').replaceAll('.', '\\.')} could not sudo to root: `));
    for (const n of ['node2', 'node4']) expect(byHost.get(n)!.split(n).length - 1, byHost.get(n)).toBe(1); // a failure names its host once
    expect(byHost.get('node1')).toMatch(/^node1: ok: /);
    expect(byHost.get('node3')).toMatch(/^node3: ok: /);
    expect(r.stdout).not.toContain('not-the-password');
  });

  it('-u, -b and -K where the inventory is silent on them: login as ops, root through sudo with the password typed at its prompt; without -b no become, without -K sudo refuses', async () => {
    // node2 with no ansible_user and no become settings of its own or its groups'; the others keep root.
    const silent = inventoryWith('silent.yaml', (d) => {
      delete d.all.vars.ansible_user;
      for (const n of ['node1', 'node3']) d.all.hosts[n].ansible_user = 'root';
    });
    expect(parse(readFileSync(silent, 'utf8')).all.hosts.node2).toEqual({ ansible_host: addrOf('node2'), ip: addrOf('node2'), access_ip: addrOf('node2') });
    const prefix = `node2: ok: login ops@${addrOf('node2')}:22, `;
    const asked = await onTerminal(decomLine(['ping', silent, 'node2', '-u', 'ops', '-b', '-K']), { answers: [{ after: 'BECOME password: ', type: `${PASSWORD}\n` }] });
    expect([asked.code, asked.answered], asked.out).toEqual([0, ['BECOME password: ']]);
    expect(asked.out).toContain(`${prefix}become root (uid 0), hostname node2, machine-id ${machineIdOf('node2')}, Node node2: registered, same machine-id`);
    expect(asked.out).not.toContain(PASSWORD); // typed after the prompt, echo off

    const plain = decom(['ping', silent, 'node2', '-u', 'ops']);
    expect([plain.code, plain.stdout.slice(0, plain.stdout.indexOf(', hostname'))]).toEqual([0, `${prefix}no become (uid ${ssh('node2', 'id -u ops').trim()})`]);
    const noPassword = decom(['ping', silent, 'node2', '-u', 'ops', '-b']);
    expect([noPassword.code, noPassword.stdout], noPassword.stderr).toEqual([3, expect.stringMatching(/^node2: BECOME FAILED: sudo: ops@/)]);
  });

  it('hosts trust: refused without a terminal, declined changes nothing, confirmed records the keys that ping then checks', async () => {
    const known = join(dir, 'known_hosts');
    // Without it, no host is reached: their keys are in no known_hosts.
    expect(decom(['ping', INVENTORY, 'all', '--known-hosts', known]).code).toBe(3);
    const batch = decom(['hosts', 'trust', INVENTORY, 'all', '--known-hosts', known]);
    expect([batch.code, batch.stdout, batch.stderr]).toEqual([2, '', 'decom: refusing to record host keys without confirmation: no terminal to ask on; pass --yes\n']);
    expect(existsSync(known)).toBe(false);

    const declined = await onTerminal(decomLine(['hosts', 'trust', INVENTORY, 'all', '--known-hosts', known]), { input: 'no\n' });
    expect(declined.code, declined.out).toBe(4);
    expect(existsSync(known)).toBe(false);

    const trusted = await onTerminal(decomLine(['hosts', 'trust', INVENTORY, 'all', '--known-hosts', known]), { input: 'yes\n' });
    expect(trusted.code, trusted.out).toBe(0);
    // Each fingerprint as the node's own ssh-keygen prints it for the key its sshd serves.
    const fingerprints = NODES.map(fingerprintOf);
    expect(trusted.out.split(/\r?\n/).filter((l) => /^node\d /.test(l))).toEqual(NODES.map((n, i) => `${n} ssh-ed25519 ${fingerprints[i]}`));
    expect(trusted.out).toContain(`Type "yes" to record them: `);
    expect(readFileSync(known, 'utf8').trim().split('\n').map((l) => l.split(' ')[0])).toEqual(NODES.map(addrOf));
    // ping checks them: no --accept-new-host-keys.
    const r = decom(['ping', INVENTORY, 'all', '--known-hosts', known]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it('hosts trust: a changed key is named, exit 4, and not recorded (the file byte for byte as before)', () => {
    const known = join(dir, 'known_hosts-changed');
    // node1's address recorded with node2's key: as after a reinstall, or an interception.
    writeFileSync(known, `${addrOf('node1')} ${servedKey('node2')}\n${addrOf('node2')} ${servedKey('node2')}\n${addrOf('node3')} ${servedKey('node3')}\n`);
    const before = readFileSync(known);
    const r = decom(['hosts', 'trust', INVENTORY, 'all', '--known-hosts', known, '--yes']);
    expect(r.code, r.stdout + r.stderr).toBe(4);
    expect(r.stdout.split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^node1: NOT RECORDED: HOST KEY CHANGED for ${addrOf('node1').replaceAll('.', '\\.')}: it offered ssh-ed25519 SHA256:`)),
      `node2: already trusted (${known}:2)`,
      `node3: already trusted (${known}:3)`,
      '',
    ]);
    expect(readFileSync(known).equals(before)).toBe(true);
  });

  it('hosts trust: a key that changes between the scan and the confirmation is named on a line of its own, exit 4, and not recorded', async () => {
    const known = join(dir, 'known_hosts-raced');
    // While the question waits, node1's address is recorded with node2's key (another trust, an ssh that accepted it).
    const meanwhile = `${addrOf('node1')} ${servedKey('node2')}\n`;
    const r = await onTerminal(decomLine(['hosts', 'trust', INVENTORY, 'node1', '--known-hosts', known]), {
      answers: [{ after: 'Type "yes" to record it: ', type: () => (writeFileSync(known, meanwhile), 'yes\n') }],
    });
    expect(r.code, r.out).toBe(4);
    expect(r.out.split(/\r?\n/).filter((l) => l.startsWith('node1'))).toEqual([
      `node1 ssh-ed25519 ${fingerprintOf('node1')}`,
      `node1: NOT RECORDED: HOST KEY CHANGED for ${addrOf('node1')} since it was read: it showed ssh-ed25519 ${fingerprintOf('node1')}, ` +
        `but ${known}:1 now records ssh-ed25519 ${fingerprintOf('node2')}; compare both with the host's own (ssh-keygen -lf on its public host key)`,
    ]);
    expect(r.out).not.toMatch(/recorded \d host key/);
    expect(readFileSync(known, 'utf8')).toBe(meanwhile);
  });
});
