// One mechanism changes nodes: `decom run` and `decom audit --fix` take the same node
// lock, name each other when refused (exit 4, nothing changed), wait for each other
// with --wait-lock, and leave journals `decom journal` reads back. Every command works
// on at most --forks hosts at once: counted at a TCP proxy in front of each node's sshd.
// On sandboxes of force-deleted-pods (4 nodes, no API) and etcd-restore-phantoms (3 nodes).
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { decom, down, nodes, ssh, STATE_DIR, up, addrOf } from '../helpers/sandbox.js';
import { leftovers } from '../helpers/residue.js';
import { requireKubectl } from '../helpers/kubectl.js';
import { INVENTORY, reportOf, runJson, startDecom, until } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

const tmp = tempDir('decom-lock-');
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const events = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
const journalIn = (stderr: string) => /journal (\S+\.jsonl)/.exec(stderr)?.[1] ?? '';
const lockOf = (node: string) => ssh(node, 'cat /run/decom.lock 2>/dev/null; true');

/**
 * A TCP proxy in front of each sandbox node's sshd, counting the connections open at
 * once, and an inventory that reaches the nodes through it.
 */
async function proxied(file: string) {
  const servers: net.Server[] = [];
  const stats = { open: 0, most: 0, total: 0 };
  const doc = parse(readFileSync(INVENTORY, 'utf8')) as { all: { hosts: Record<string, Record<string, unknown>>; vars: Record<string, unknown> } };
  const keys = readFileSync(join(STATE_DIR, 'known_hosts'), 'utf8').split('\n').filter(Boolean);
  const known: string[] = [];
  for (const n of nodes()) {
    const server = net.createServer((client) => {
      stats.open++;
      stats.total++;
      stats.most = Math.max(stats.most, stats.open);
      const up = net.connect(22, n.addr);
      client.pipe(up).pipe(client);
      const end = () => {
        client.destroy();
        up.destroy();
      };
      client.on('close', end);
      up.on('close', end);
      client.on('error', end);
      up.on('error', end);
    });
    // Closed when its FIN arrives (end) or it is torn down (close), whichever comes first: once.
    server.on('connection', (c) => {
      let gone = false;
      const bye = () => {
        if (!gone) (gone = true), stats.open--;
      };
      c.once('end', bye);
      c.once('close', bye);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    const port = (server.address() as net.AddressInfo).port;
    doc.all.hosts[n.name] = { ...doc.all.hosts[n.name], ansible_host: '127.0.0.1', ansible_port: port };
    for (const k of keys.filter((l) => l.startsWith(`${n.addr} `))) known.push(`[127.0.0.1]:${port} ${k.slice(n.addr.length + 1)}`);
  }
  const knownFile = `${file}.known_hosts`;
  writeFileSync(knownFile, `${known.join('\n')}\n`);
  doc.all.vars.ansible_ssh_common_args = `-o UserKnownHostsFile=${knownFile} -o StrictHostKeyChecking=yes`;
  writeFileSync(file, stringify(doc));
  return {
    inventory: file,
    /** Runs decom in the background (a synchronous spawn would stall the proxies), counting from zero. */
    measure: async (args: string[]) => {
      [stats.most, stats.total] = [0, 0];
      const r = await startDecom(args).done;
      return { ...r, most: stats.most, total: stats.total };
    },
    close: () => Promise.all(servers.map((x) => new Promise((r) => x.close(r)))),
  };
}

describe('the node lock between a reset and a fix, and the host pool, on force-deleted-pods (no API)', () => {
  const state = join(tmp, 'state-a');
  beforeAll(() => up(['--nodes', '4', '--scenario', 'force-deleted-pods']));
  afterAll(() => down());

  it("a fix never takes over the lock of a run that died: it refuses the node (exit 4) naming that run, and leaves the lock for a run to finish", () => {
    // The lock of a reset that was killed: its session (PID 1's "start time" 1 never matches) is gone.
    const dead = '20261126T000000Z-dead01 1:1\nrun\nroot@ops1\n2026-11-26T00:00:00.000Z\n';
    ssh('node1', `printf '%s' '${dead}' > /run/decom.lock`);
    const fix = decom(['audit', INVENTORY, 'node1', '--fix', 'orphan-netns', '--yes', '--state-dir', state]);
    expect(fix.code, fix.stderr).toBe(4);
    expect(fix.stderr).toMatch(/^node1: LEFT ALONE orphan-netns cni-\S+: decom run 20261126T000000Z-dead01: run, by root@ops1, since 2026-11-26T00:00:00.000Z did not finish on this node \(killed, or its connection was lost\): finish it first by running it again/m);
    expect(lockOf('node1')).toBe(dead);
    ssh('node1', 'rm -f /run/decom.lock');
  });

  it("a fix while a reset holds the node is refused (exit 4) naming the reset's run and command, acts on nothing, and the reset ends clean", async () => {
    // The reset, paused once it holds the lock (the lock is its SSH session's: it stays held), so the fix meets it whatever the timing.
    const reset = startDecom(['run', INVENTORY, 'node1', '--playbook', 'reset', '--yes', '--output', 'json', '--state-dir', state]);
    await until(() => lockOf('node1').split('\n')[1] === 'run', 30_000, 'the reset to take the lock');
    process.kill(reset.pid, 'SIGSTOP');
    const resetRun = lockOf('node1').split(' ')[0]!;

    const fix = decom(['audit', INVENTORY, 'node1', '--fix', 'orphan-netns,orphan-veth,orphan-pod-dir', '--yes', '--state-dir', state]);
    expect(fix.code, fix.stderr).toBe(4);
    expect(fix.stderr).toMatch(new RegExp(`^node1: LEFT ALONE orphan-netns cni-\\S+: another decom run \\(${resetRun}: run, by \\S+@\\S+, since \\S+\\) is working on this node now`, 'm'));
    const journal = events(journalIn(fix.stderr));
    expect(journal[0]).toMatchObject({ event: 'run-start', command: 'audit --fix', kinds: ['orphan-netns', 'orphan-veth', 'orphan-pod-dir'] });
    expect(journal.find((e) => e.event === 'host-start')).toMatchObject({ host: 'node1', lock: 'held', other: resetRun, holder: { command: 'run' } });
    // Nothing of the fix's acted (the node itself is the reset's to change meanwhile).
    expect(journal.filter((e) => e.event === 'action' || e.event === 'step-start')).toEqual([]);
    expect(journal.at(-1)).toMatchObject({ event: 'run-end', exit: 4 });

    process.kill(reset.pid, 'SIGCONT');
    const done = await reset.done;
    expect(done.code, done.out).toBe(0);
    expect(leftovers('node1')).toEqual([]);
    expect(lockOf('node1')).toBe('');
  });

  it("a run killed (SIGKILL) during a 20 s action leaves the node locked by that action: a rerun at once is refused (exit 4) naming it, with --wait-lock 2m it runs once the action has ended", async () => {
    const state = join(tmp, 'state-k');
    const book = (name: string, shell: string) => {
      const file = join(tmp, `${name}.yaml`);
      writeFileSync(file, `apiVersion: decom/v1\nkind: Playbook\nsteps:\n  - name: ${name}\n    shell: ${shell}\n`);
      return file;
    };
    ssh('node2', 'rm -f /root/slow-done');
    const slow = startDecom(['run', INVENTORY, 'node2', '--playbook', book('slow', 'sleep 20; touch /root/slow-done'), '--yes', '--state-dir', state]);
    await until(() => ssh('node2', "pgrep -x -f 'sleep 20'; true").trim() !== '', 30_000, 'the 20 s action to start');
    process.kill(slow.pid, 'SIGKILL');
    await slow.done;
    // The lock's session (sshd's, for the killed client's connection) is gone: only the action still holds the node.
    const [slowRun, session] = lockOf('node2').split('\n')[0]!.split(' ');
    await until(() => ssh('node2', `kill -0 ${session!.split(':')[0]} 2>/dev/null || echo gone`).trim() === 'gone', 10_000, "the killed run's session to end");

    const after = book('after', 'cat /root/slow-done');
    const refused = runJson(['node2', '--playbook', after, '--yes'], state);
    expect(refused.code, JSON.stringify(refused.report.hosts[0])).toBe(4);
    expect(refused.report.hosts[0]!.refused).toMatch(new RegExp(`^decom run ${slowRun}: run, by \\S+, since \\S+ was cut off \\(killed, or its connection was lost\\), but its work still runs on this node: .*pid \\d+ \\(sleep\\)`));
    expect(refused.report.hosts[0]!.steps).toEqual([]);

    const waited = runJson(['node2', '--playbook', after, '--yes', '--wait-lock', '2m'], state);
    const host = waited.report.hosts[0]!;
    // The playbook resets nothing (the host stays not clean, exit 1): its step ran, after the action (the file it makes was there).
    expect(host.steps.map((s) => [s.name, s.status, s.actions[0]?.code]), JSON.stringify(host)).toEqual([['after', 'changed', 0]]);
    expect(host.finishes).toBe(slowRun);
    const journal = events(waited.report.journal);
    expect(journal.find((e) => e.event === 'lock-wait')).toMatchObject({ host: 'node2', holder: { runId: slowRun }, work: expect.stringMatching(/pid \d+ \(sleep\)/) });
    expect(lockOf('node2')).toBe('');
  });

  it('refuses a node without flock (exit 4), naming why, changing nothing', () => {
    const look = () => ssh('node3', 'ls /etc/kubernetes/manifests /run/decom.lock 2>&1; iptables-save | grep -c KUBE; true');
    // Hidden on this node only (its root is its own overlay), and put back.
    ssh('node3', 'mv /usr/bin/flock /usr/bin/flock.hidden');
    try {
      expect(ssh('node3', 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; command -v flock || echo none').trim()).toBe('none');
      const before = look();
      const r = runJson(['node3', '--playbook', 'reset', '--yes'], join(tmp, 'state-n'));
      expect(r.code, JSON.stringify(r.report.hosts[0])).toBe(4);
      expect(r.report.hosts[0]!.refused).toMatch(/^cannot take the node's lock: flock is not installed on this node \(not on PATH \S+\); nothing was changed$/);
      expect(r.report.hosts[0]!.steps).toEqual([]);
      expect(look()).toBe(before);
    } finally {
      ssh('node3', 'mv /usr/bin/flock.hidden /usr/bin/flock');
    }
  });

  it('verify, audit, audit --fix and run, 4 hosts with --forks 2: never more than 2 connections at once, every host reached', async () => {
    const proxy = await proxied(join(tmp, 'proxied.yaml'));
    try {
      const verify = await proxy.measure(['verify', proxy.inventory, 'all', '--forks', '2', '--output', 'json']);
      expect(verify.code, verify.out).toBe(1); // nodes 2-4 have residue
      expect([verify.most, verify.total]).toEqual([2, 4]);

      const audit = await proxy.measure(['audit', proxy.inventory, '--forks', '2', '--output', 'json']);
      expect(audit.code, audit.out).toBe(1);
      expect([audit.most, audit.total]).toEqual([2, 4]);

      const fix = await proxy.measure(['audit', proxy.inventory, '--forks', '2', '--fix', 'orphan-ipam-lease', '--yes', '--state-dir', state]);
      for (const n of ['node2', 'node3', 'node4']) expect(fix.out).toMatch(new RegExp(`^${n}: fixed orphan-ipam-lease `, 'm'));
      expect(fix.most).toBe(2);
      // Each connection is closed after its part, as 4 hosts do not fit in 2: the audit (4), each host with a lease under its
      // lock (3: node1 was reset above), and node1 probed again for the report after the fix (1).
      expect(fix.total, fix.out).toBe(8);

      const run = await proxy.measure(['run', proxy.inventory, 'all', '--allow-many', '--playbook', 'reset', '--yes', '--forks', '2', '--output', 'json', '--state-dir', state]);
      expect(run.code, run.out).toBe(0);
      expect([run.most, run.total]).toEqual([2, 4]);
      for (const n of ['node1', 'node2', 'node3', 'node4']) expect(leftovers(n), n).toEqual([]);
    } finally {
      await proxy.close();
    }
  });
});

describe('a fix under the interlocks and the lock, on etcd-restore-phantoms', () => {
  const state = join(tmp, 'state-b');
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--scenario', 'etcd-restore-phantoms']);
  });
  afterAll(() => down());

  // The interlocks a run asks, asked by a fix too: the phantom judgement trusts that the host is the Node's machine.
  const withVar = (host: string, line: string) => {
    const file = join(tmp, `${host}-${line.split(':')[0]}.yaml`);
    writeFileSync(file, readFileSync(INVENTORY, 'utf8').replace(new RegExp(`(    ${host}:\n)`), `$1      ${line}\n`));
    return file;
  };
  const tasks = () => ssh('node2', "ctr -n k8s.io t ls | tail -n +2 | awk '{print $1}' | sort");

  it('refuses a host whose hostname is not the expected one (exit 4), changing nothing', () => {
    const before = tasks();
    const r = decom(['audit', withVar('node2', 'decom_expected_hostname: db-primary'), 'node2', '--fix', 'phantom-pod', '--yes', '--state-dir', join(tmp, 'state-i')]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(/^node2: LEFT ALONE phantom-pod default\/\S+: node2 \([\d.]+\) says its hostname is "node2", not "db-primary"/m);
    expect(r.stderr).toContain(`node2 (${addrOf('node2')}) says its hostname`);
    expect(tasks()).toBe(before);
  });

  it('refuses a host whose machine-id is not the one its Node reports (exit 4), changing nothing', () => {
    const before = tasks();
    const r = decom(['audit', withVar('node2', 'decom_node_name: node3'), 'node2', '--fix', 'phantom-pod', '--yes', '--state-dir', join(tmp, 'state-i')]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(/^node2: LEFT ALONE phantom-pod default\/\S+: node2 \([\d.]+\) has machine-id [0-9a-f]+, but Node node3 reports [0-9a-f]+: the inventory address is another machine than the Node/m);
    expect(r.stderr).toContain(`node2 (${addrOf('node2')}) has machine-id`);
    expect(tasks()).toBe(before);
  });


  it('refuses a run while the fix works (exit 4, naming it), a shorter --wait-lock runs out with exit 4, --wait-lock 2m runs once it ends; decom journal shows both', async () => {
    // The kubelet stand-in still runs the pods it last saw and would start them again once removed (the proof would then
    // rightly fail): it stops first; the phantoms keep running without it.
    ssh('node2', 'systemctl stop kubelet');
    // A process that ignores TERM in a phantom pod's cgroup: the fix stops it with TERM, and KILL only after its grace period.
    const audit = JSON.parse(decom(['audit', INVENTORY, 'node2', '--output', 'json']).stdout) as { hosts: { findings: { kind: string; subject: string; target: Record<string, string> }[] }[] };
    const phantom = audit.hosts[0]!.findings.find((f) => f.kind === 'phantom-pod' && f.subject.startsWith('default/metrics'))!;
    const uid = phantom.target.uid!;
    ssh(
      'node2',
      `d=$(find /sys/fs/cgroup/pids -type d \\( -name 'pod${uid}' -o -name '*pod${uid.replaceAll('-', '_')}.slice' \\) | head -n 1); rel=\${d#/sys/fs/cgroup/pids}
       [ -n "$rel" ] || { echo "no cgroup of pod ${uid}" >&2; exit 1; }
       setsid sh -c 'trap "" TERM; exec sleep 600' </dev/null >/dev/null 2>&1 & p=$!
       for h in /sys/fs/cgroup/*/; do [ -d "$h$rel" ] && echo $p > "$h$rel/cgroup.procs"; done; true`,
    );
    const fix = startDecom(['audit', INVENTORY, 'node2', '--fix', 'phantom-pod', '--yes', '--state-dir', state]);
    await until(() => lockOf('node2').split('\n')[1] === 'audit --fix', 30_000, 'the fix to take the lock');
    // Paused while the others meet its lock (its SSH session, which the lock belongs to, lives on), so no timing decides the test.
    process.kill(fix.pid, 'SIGSTOP');
    const fixRun = lockOf('node2').split(' ')[0]!;

    const refused = runJson(['node2', '--playbook', 'reset', '--yes'], state);
    expect(refused.code).toBe(4);
    expect(refused.report.hosts[0]!.refused).toMatch(new RegExp(`^another decom run \\(${fixRun}: audit --fix, by \\S+, since \\S+\\) is working on this node now`));
    expect(refused.report.hosts[0]!.steps).toEqual([]);

    const short = Date.now();
    const ranOut = runJson(['node2', '--playbook', 'reset', '--yes', '--wait-lock', '1s'], state);
    expect(ranOut.code).toBe(4);
    expect(Date.now() - short).toBeGreaterThanOrEqual(1000);
    expect(ranOut.report.hosts[0]!.refused).toContain(fixRun);

    const earlier = new Set(readdirSync(join(state, 'runs')));
    const waiting = startDecom(['run', INVENTORY, 'node2', '--playbook', 'reset', '--yes', '--wait-lock', '2m', '--output', 'json', '--state-dir', state]);
    const waits = () => readdirSync(join(state, 'runs')).filter((f) => !earlier.has(f)).some((f) => readFileSync(join(state, 'runs', f), 'utf8').includes('"event":"lock-wait"'));
    await until(waits, 30_000, 'the third run to wait for the lock');
    process.kill(fix.pid, 'SIGCONT');
    const fixed = await fix.done;
    const ended = await waiting.done;
    const waited = { code: ended.code, report: reportOf(ended.out) };
    expect(fixed.out).toMatch(/^node2: fixed phantom-pod default\/metrics-agent-\S+$/m);
    expect(waited.code, JSON.stringify(waited.report.hosts[0])).toBe(0);
    expect(leftovers('node2')).toEqual([]);
    const resetJournal = events(waited.report.journal);
    expect(resetJournal.find((e) => e.event === 'lock-wait')).toMatchObject({ host: 'node2', holder: { runId: fixRun, command: 'audit --fix' } });
    expect(resetJournal.find((e) => e.event === 'host-start')).toMatchObject({ lock: 'acquired' });
    // The reset started after the fix's remedies ended: its first step follows them.
    const fixJournal = events(journalIn(fixed.out));
    expect(String(resetJournal.find((e) => e.event === 'step-start')!.ts) >= String(fixJournal.find((e) => e.event === 'step' && e.step === 'fix')!.ts)).toBe(true);

    // The fix's journal: its command and kinds, the lock it took, each action with its command and exit, each host's end.
    expect(fixJournal[0]).toMatchObject({ event: 'run-start', command: 'audit --fix', kinds: ['phantom-pod'] });
    expect(fixJournal.find((e) => e.event === 'host-start')).toMatchObject({ host: 'node2', lock: 'acquired' });
    const actions = fixJournal.filter((e) => e.event === 'action');
    expect(actions.map((e) => e.action)).toEqual(expect.arrayContaining([expect.stringMatching(/^stop and remove these pods through its CRI/), expect.stringMatching(/^stop \d+ process/)]));
    expect(actions.every((e) => e.code === 0 && typeof e.command === 'string')).toBe(true);
    expect(fixJournal.some((e) => e.event === 'host-end' && e.host === 'node2')).toBe(true);
    expect(fixJournal.at(-1)).toMatchObject({ event: 'run-end' });

    // decom journal: the fix and the runs, newest first; one shown event by event.
    const list = decom(['journal', '--state-dir', state]);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines.find((l) => l.startsWith(fixRun))).toMatch(/audit --fix phantom-pod\s+node2\s+exit \d/);
    expect(lines.filter((l) => /^\S+\s+run\s+node2\s+exit [04]$/.test(l))).toHaveLength(3);
    const shown = decom(['journal', fixRun.slice(0, 21), '--state-dir', state]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/node2: started, lock acquired/);
    expect(shown.stdout).toMatch(/node2:\s+stop and remove these pods through its CRI.*: exit 0/);
    expect(decom(['journal', 'nosuchrun', '--state-dir', state])).toMatchObject({ code: 2, stderr: expect.stringMatching(/^decom: no run nosuchrun in /) });
  });
});

