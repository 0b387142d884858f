// The reset's safety on a 4-node sandbox of kubespray-leftovers: a wrong hostname, a node
// another run holds, a busy mount, hostile names and symlinks, a connection cut mid-run, and
// the reset run from the node itself (--connection local).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, down, ssh, up } from '../helpers/sandbox.js';
import { leftovers, userObjects } from '../helpers/residue.js';
import { INVENTORY, runJson, startRun, until } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';
const journalOf = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

const jsonOf = (out: string) => JSON.parse(out.slice(out.indexOf('{\n'), out.lastIndexOf('}') + 1));

describe('reset safety on kubespray-leftovers: busy mounts, rolls, hostile names, wrong hosts, locks, lost connections', () => {
  const state = tempDir('decom-safety-');
  const dir = tempDir('decom-safety-books-');
  beforeAll(() => up(['--nodes', '4', '--scenario', 'kubespray-leftovers']));
  afterAll(() => down());

  it('refuses a host whose hostname is not the expected one (exit 4), changing nothing', () => {
    const inv = join(dir, 'wrong.yaml');
    writeFileSync(inv, readFileSync(INVENTORY, 'utf8').replace(/(    node3:\n)/, '$1      decom_expected_hostname: db-primary\n'));
    const before = ssh('node3', 'ls /etc/kubernetes/manifests; iptables-save | grep -c KUBE; ls /run/decom.lock 2>&1; true');
    const r = runJson(['node3', '--playbook', 'reset', '--yes'], state, inv);
    expect(r.code).toBe(4);
    expect(r.report.hosts[0]!.refused).toMatch(/says its hostname is "node3", not "db-primary"/);
    expect(r.report.hosts[0]!.steps).toEqual([]);
    expect(ssh('node3', 'ls /etc/kubernetes/manifests; iptables-save | grep -c KUBE; ls /run/decom.lock 2>&1; true')).toBe(before);
  });

  it('refuses a second run on a node while another holds it (exit 4), never waiting', async () => {
    const book = join(dir, 'slow.yaml');
    writeFileSync(book, 'apiVersion: decom/v1\nkind: Playbook\nsteps:\n  - name: hold the node\n    shell: sleep 4\n');
    const first = startRun([INVENTORY, 'node3', '--playbook', book, '--yes', '--state-dir', state]);
    await until(() => ssh('node3', 'cat /run/decom.lock 2>/dev/null; true') !== '', 10_000, 'the first run to take the lock');
    const second = runJson(['node3', '--playbook', 'reset', '--yes'], state);
    expect(second.code).toBe(4);
    expect(second.report.hosts[0]!.refused).toMatch(/another decom run \(\S+: run, by \S+@\S+, since \S+\) is working on this node now/);
    const held = await first.done;
    expect(held.out).toMatch(/node3  hold the node changed/); // the playbook resets nothing: the host stays not clean (exit 1)
    expect(ssh('node3', 'ls /run/decom.lock 2>/dev/null; true')).toBe('');
  });

  it('fails on a mount a process holds, naming mount and holder, deletes nothing below it, and stops the roll', () => {
    const cache = ssh('node1', 'ls -d /var/lib/kubelet/pods/*/volumes/kubernetes.io~empty-dir/cache').trim();
    ssh('node1', `cd '${cache}' && (setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! > /root/holder.pid)`);
    const r = runJson(['node1', 'node2', 'node3', '--playbook', 'reset', '--yes', '--serial', '1', '--max-fail-percent', '0'], state);
    expect(r.code).toBe(1);
    const [n1, n2, n3] = r.report.hosts;
    const mounts = n1!.steps.find((s) => s.name === 'mounts')!;
    expect(mounts.status).toBe('failed');
    expect(mounts.reason).toContain(`unmount ${cache}`);
    expect(JSON.stringify(mounts)).toMatch(/held by pid \d+ \(sleep\)/);
    expect(n1!.steps.slice(n1!.steps.indexOf(mounts) + 1).every((s) => s.status === 'skipped')).toBe(true);
    // The data under the busy mount is intact, and nothing below /var/lib/kubelet was deleted.
    expect(ssh('node1', `cat '${cache}/data'; ls /var/lib/kubelet | sort | tr '\\n' ' '`)).toBe('cached\nconfig.yaml cpu_manager_state kubeadm-flags.env memory_manager_state pki plugins pods ');
    expect(n2!.notRun ?? '').toMatch(/1 of 1 hosts in the previous batch failed/);
    expect(n3!.notRun).toBeDefined();
    // The holder gone, a new run finishes the job.
    ssh('node1', 'kill "$(cat /root/holder.pid)"');
    const again = runJson(['node1', '--playbook', 'reset', '--yes'], state);
    expect(again.code).toBe(0);
    expect(leftovers('node1')).toEqual([]);
  });

  it('handles hostile names and never follows a symlink out of Kubernetes\' paths', () => {
    const user = userObjects('node2');
    ssh(
      'node2',
      [
        "d='/var/lib/kubelet/pods/x/volumes/kubernetes.io~empty-dir/a b\nc'; mkdir -p \"$d\" && mount -t tmpfs hostile \"$d\" && echo x > \"$d/f\"",
        'cp /etc/kubernetes/manifests/nginx-proxy.yaml "/etc/kubernetes/manifests/it\'s \\"quoted\\".yaml.off"',
        'ln -s /srv/appdata /var/lib/kubelet/pods/evil-link',
        'ln -s /etc/app /etc/cni/net.d/app-link',
        'mkdir -p /var/lib/kubelet/pods/y && ln -s /srv/appdata/important.db /var/lib/kubelet/pods/y/db',
      ].join(' && '),
    );
    const r = runJson(['node2', '--playbook', 'reset', '--yes'], state);
    expect(r.code, JSON.stringify(r.report.hosts[0]!.steps.filter((s) => s.status === 'failed'))).toBe(0);
    expect(leftovers('node2')).toEqual([]);
    expect(userObjects('node2')).toBe(user);
    expect(ssh('node2', 'cat /srv/appdata/important.db /etc/app/app.conf')).toBe('user data: must survive\nlisten: 8080\n');
  });

  it('reports a host whose connection is cut mid-run as lost (exit 3), finishes the others, and a rerun finishes it', async () => {
    const runs = () => (existsSync(join(state, 'runs')) ? readdirSync(join(state, 'runs')).map((f) => join(state, 'runs', f)) : []);
    const earlier = new Set(runs());
    const run = startRun([INVENTORY, 'node3', 'node2', '--playbook', 'reset', '--yes', '--output', 'json', '--state-dir', state]);
    // Cut node3's connection once its kubelet step is done: kill its sshd session, not ours.
    await until(() => runs().filter((f) => !earlier.has(f)).some((f) => readFileSync(f, 'utf8').includes('"host":"node3","event":"step","step":"kubelet"')), 60_000, 'node3 to finish its kubelet step');
    ssh('node3', 'for p in $(pgrep -f "^sshd: root@notty"); do [ "$p" != "$PPID" ] && kill -9 "$p"; done; true');
    const first = await run.done;
    const report = jsonOf(first.out);
    expect(first.code).toBe(3);
    const n3 = report.hosts.find((h: { host: string }) => h.host === 'node3');
    expect(n3.error).toMatch(/connection .* was lost/);
    expect(report.hosts.find((h: { host: string }) => h.host === 'node2').clean).toBe(true);
    const again = runJson(['node3', '--playbook', 'reset', '--yes'], state);
    expect(again.code).toBe(0);
    expect(again.report.hosts[0]!.finishes).toBe(report.run);
    expect(journalOf(again.report.journal).some((e) => e.event === 'resume' && e.finishes === report.run)).toBe(true);
    expect(journalOf(report.journal).some((e) => e.event === 'error' && e.host === 'node3')).toBe(true);
    expect(leftovers('node3')).toEqual([]);
  });

  it('resets a node from the node itself (--connection local), as cleanly', () => {
    const user = userObjects('node4');
    ssh('node4', `printf 'all:\\n  hosts:\\n    node4:\\n' > /root/local.yaml`);
    const out = ssh('node4', `node ${CLI} run /root/local.yaml node4 --connection local --playbook reset --yes --output json --state-dir /root/decom-state; echo "exit=$?"`);
    expect(out.trim().split('\n').pop()).toBe('exit=0');
    expect(JSON.parse(out.slice(0, out.lastIndexOf('}') + 1)).hosts[0].clean).toBe(true);
    expect(leftovers('node4')).toEqual([]);
    expect(userObjects('node4')).toBe(user);
  });
});
