// The reset's safety on a 5-node sandbox of kubespray-leftovers: a wrong hostname, a node
// another run holds, a busy mount, hostile names and symlinks, the on-node path guard under
// generated paths, a parent swapped for a symlink between probe and delete, a connection cut
// mid-run, and the reset run from the node itself (--connection local).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PATH_GUARD, SYSTEM_DIRS, holdsSystemDir } from '../../src/util/confine.js';
import { CLI, down, ssh, sshArgv, up } from '../helpers/sandbox.js';
import { leftovers, userObjects } from '../helpers/residue.js';
import { INVENTORY, runJson, startRun, until } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';
const journalOf = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

const jsonOf = (out: string) => JSON.parse(out.slice(out.indexOf('{\n'), out.lastIndexOf('}') + 1));

describe('reset safety on kubespray-leftovers: busy mounts, rolls, hostile names, wrong hosts, locks, lost connections', () => {
  const state = tempDir('decom-safety-');
  const dir = tempDir('decom-safety-books-');
  beforeAll(() => up(['--nodes', '5', '--scenario', 'kubespray-leftovers']));
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
    // links ran beside it (parallel: mounts-and-links) and says its own result; every step after the group is skipped.
    const after = n1!.steps.slice(n1!.steps.indexOf(mounts) + 1);
    expect(after[0]).toMatchObject({ name: 'links', parallel: 'mounts-and-links', status: 'changed' });
    expect(after.slice(1).every((s) => s.status === 'skipped')).toBe(true);
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
        // Immutable, as an administrator or a hardening role leaves them: one of the kubelet's, one of the user's own.
        'chattr +i /var/lib/kubelet/pki/kubelet-client.crt',
        'printf frozen > /srv/appdata/frozen.db && chattr +i /srv/appdata/frozen.db',
      ].join(' && '),
    );
    const r = runJson(['node2', '--playbook', 'reset', '--yes'], state);
    expect(r.code, JSON.stringify(r.report.hosts[0]!.steps.filter((s) => s.status === 'failed'))).toBe(0);
    expect(leftovers('node2')).toEqual([]);
    expect(ssh('node2', 'ls -d /var/lib/kubelet/pki 2>&1; true')).toMatch(/No such file or directory/);
    expect(userObjects('node2')).toBe(user);
    expect(ssh('node2', 'cat /srv/appdata/important.db /etc/app/app.conf')).toBe('user data: must survive\nlisten: 8080\n');
    // The user's immutable file keeps its attribute and its content.
    expect(ssh('node2', 'lsattr /srv/appdata/frozen.db | cut -c1-22; cat /srv/appdata/frozen.db; chattr -i /srv/appdata/frozen.db; rm /srv/appdata/frozen.db')).toBe('----i-----------------\nfrozen');
  });

  it('clears the immutable attribute below the kubelet\'s dir only on its own filesystem: a mount below still refuses the deletion, its immutable file kept', () => {
    const pod = '/var/lib/kubelet/pods/frozen-pod';
    ssh('node5', `mkdir -p ${pod}/volumes/v && mount -t tmpfs frozen ${pod}/volumes/v && printf kept > ${pod}/volumes/v/f && chattr +i ${pod}/volumes/v/f && touch ${pod}/own ${pod}/own2 && chattr +i ${pod}/own`);
    try {
      const refused = ssh('node5', `${PATH_GUARD}delete_path / ${pod}; echo "exit=$?"; lsattr ${pod}/volumes/v/f ${pod}/own | cut -c1-22; cat ${pod}/volumes/v/f`);
      expect(refused).toBe(`a mount is at or below ${pod}: nothing deleted\nexit=1\n----i-----------------\n----i-----------------\nkept`);
      // What delete_path runs once its rm fails there: the pod's own files unfrozen, the one on the mount below untouched (-xdev).
      const cleared = ssh('node5', `${PATH_GUARD}cd /var/lib/kubelet/pods && unfreeze_kubelet_files ${pod} ./frozen-pod; echo "exit=$?"; lsattr ${pod}/volumes/v/f ${pod}/own | cut -c1-22`);
      expect(cleared).toBe('exit=0\n----i-----------------\n----------------------\n');
      // Nowhere but below the kubelet's dir, however the name is spelled.
      const elsewhere = ssh('node5', `${PATH_GUARD}cd /var/lib/kubelet/pods && chattr +i ${pod}/own2 && unfreeze_kubelet_files /srv/frozen-pod ./frozen-pod; echo "exit=$?"; lsattr ${pod}/own2 | cut -c1-22`);
      expect(elsewhere).toBe('exit=1\n----i-----------------\n');
    } finally {
      ssh('node5', `chattr -i ${pod}/volumes/v/f ${pod}/own ${pod}/own2; umount ${pod}/volumes/v; rm -rf ${pod}`);
    }
  });

  it("judges generated paths on the node as resolved: none accepted escapes its root, every spelling of or link to a system dir is refused (fast-check)", async () => {
    // Planted on node5: a root with symlinks to system dirs, up out of it, within it, and one a user owns.
    const B = '/srv/decom-guard';
    const R = `${B}/root`;
    ssh('node5', [
      `rm -rf ${B}; mkdir -p ${R}/a/b ${R}/c ${R}/home-u ${B}/outside`,
      `ln -s /etc ${R}/to-etc; ln -s /usr/bin ${R}/to-usr-bin; ln -s / ${R}/to-root; ln -s /var ${R}/a/to-var`,
      `ln -s .. ${R}/a/up; ln -s ../.. ${R}/a/b/up2; ln -s ../../.. ${R}/a/b/up3; ln -s ${B}/outside ${R}/out; ln -s b ${R}/a/rel`,
      `ln -s ${R}/a ${R}/user-a; chown -h 65534 ${R}/user-a; chown 65534 ${R}/home-u; ln -s /etc ${R}/home-u/dot; chown -h 65534 ${R}/home-u/dot`,
    ].join('\n'));
    const guard = new NodeGuard('node5');
    try {
      const names = ['a', 'b', 'c', 'up', 'up2', 'up3', 'rel', 'to-etc', 'to-usr-bin', 'to-root', 'to-var', 'out', 'user-a', 'home-u', 'dot', 'x', '.', '', '..', 'etc', 'usr', 'bin', 'passwd'];
      const path = fc.tuple(fc.constantFrom(R, `${R}/`, `${R}//`, `${R}/.`, '/', '//', '/./'), fc.array(fc.constantFrom(...names), { maxLength: 5 })).map(([top, parts]) => `${top}/${parts.join('/')}`.replace(/^\/\/\//, '//'));
      // Confinement: whatever is accepted below the root resolves below it (as the node's own `cd -P` says too), never at or above a system dir.
      await fc.assert(
        fc.asyncProperty(path, async (p) => {
          const r = await guard.judge(R, p);
          if (!r.ok) return;
          expect(r.resolved.startsWith(`${R}/`), `${p} -> ${r.resolved}`).toBe(true);
          expect(holdsSystemDir(r.resolved), p).toBe(false);
          if (r.physicalDir) expect(r.resolved, p).toBe(`${r.physicalDir.replace(/\/$/, '')}/${p.slice(p.lastIndexOf('/') + 1)}`);
          expect(p.split('/').includes('..'), p).toBe(false);
          expect(p.startsWith(`${R}/user-a/`) || p.startsWith(`${R}//user-a/`), `${p}: through a link a user owns`).toBe(false);
        }),
        { numRuns: 400 },
      );
      // Any spelling of a system dir, or a path that reaches one through a link, is refused: deleted (judge) and taken whole (judge_dir) alike.
      const sep = fc.constantFrom('/', '//', '/./');
      const spelled = fc
        .tuple(fc.constantFrom(...SYSTEM_DIRS), fc.array(sep, { minLength: 4, maxLength: 4 }), fc.constantFrom('', '/.', `${R}/to-root`, `${R}/a/up/to-root`, `${R}/a/b/up2/to-root`))
        .map(([d, seps, lead]) => lead + (d === '/' ? (lead ? '' : '/') : d.split('/').slice(1).map((c, i) => `${seps[i]}${c}`).join('')) || '/');
      const linked = fc.constantFrom(`${R}/to-etc`, `${R}/to-usr-bin`, `${R}/a/to-var`, `${R}/to-root`, `${R}/a/up/to-etc`, `${R}/to-root/usr/./bin`, `${R}/a/to-var/lib`, `${R}/home-u/dot`);
      await fc.assert(
        fc.asyncProperty(fc.oneof(spelled, linked), async (p) => {
          expect((await guard.judge('/', p)).ok, `judge / ${p}`).toBe(false);
          expect((await guard.judgeDir(p)).ok, `judge_dir ${p}`).toBe(false);
        }),
        { numRuns: 300 },
      );
    } finally {
      await guard.close();
      ssh('node5', `rm -rf ${B}`);
    }
  });

  it("refuses to delete through a parent swapped for a user's symlink after the probe, naming the path, and deletes nothing outside the user's tree", () => {
    // bob keeps this cluster's kubeconfig (a credential the files step deletes); a shell step (it re-probes nothing)
    // then swaps his ~/.kube for a link of his own to a dir holding a file named config, as he could between probe and delete.
    ssh('node5', 'mkdir -p /home/bob/.kube && cp /root/.kube/config /home/bob/.kube/config && chown -R 65534 /home/bob && mkdir -p /srv/elsewhere && printf keep > /srv/elsewhere/config');
    const book = join(dir, 'swap.yaml');
    writeFileSync(book, ['apiVersion: decom/v1', 'kind: Playbook', 'steps:', '  - name: swap .kube for a link', "    shell: mv /home/bob/.kube /home/bob/.kube.real && ln -s /srv/elsewhere /home/bob/.kube && chown -h 65534 /home/bob/.kube", '  - files', ''].join('\n'));
    const r = runJson(['node5', '--playbook', book, '--yes'], state);
    expect(r.code).toBe(1);
    const files = r.report.hosts[0]!.steps.find((x) => x.name === 'files')!;
    expect(files.status).toBe('failed');
    expect(JSON.stringify(files)).toContain('refused /home/bob/.kube/config: /home/bob/.kube is a symbolic link owned by uid 65534, not root');
    expect(ssh('node5', 'cat /srv/elsewhere/config; ls /srv/elsewhere /home/bob/.kube.real')).toBe('keep/home/bob/.kube.real:\nconfig\n\n/srv/elsewhere:\nconfig\n');
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
    // The cut run's node work may still run (trust's rebuild beside the runtime's teardown holds the node's lock): the rerun waits for it.
    const again = runJson(['node3', '--playbook', 'reset', '--yes', '--wait-lock', '2m'], state);
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

/**
 * The on-node guard (util/confine.ts's PATH_GUARD) asked line by line over one ssh session: a
 * query per generated path, each answered with the verdict, the path resolved and, apart from
 * the guard, the node's own `cd -P` into its dir. Paths hold no tab or newline here.
 */
class NodeGuard {
  private readonly child;
  private readonly answers: ((line: string) => void)[] = [];
  constructor(node: string) {
    const loop = `${PATH_GUARD}
W=$(mktemp); TAB=$(printf '\t')
while IFS=$TAB read -r mode root p; do
  if [ "$mode" = d ]; then if judge_dir "$p"; then printf 'ok\t%s\t\n' "$JD"; else printf 'no\t\t\n'; fi; continue; fi
  if judge "$root" "$p" >"$W"; then
    phys=$(cd -P -- "\${p%/*}/" 2>/dev/null && pwd -P)
    printf 'ok\t%s\t%s\n' "$R" "$phys"
  else printf 'no\t%s\t\n' "$(tr '\n\t' '  ' < "$W")"; fi
done
rm -f "$W"`;
    this.child = spawn('ssh', sshArgv(node, loop), { stdio: ['pipe', 'pipe', 'inherit'] });
    createInterface({ input: this.child.stdout }).on('line', (l) => this.answers.shift()?.(l));
  }
  private ask(line: string): Promise<{ ok: boolean; resolved: string; physicalDir: string }> {
    return new Promise((resolve) => {
      this.answers.push((l) => {
        const [v, resolved, physicalDir] = l.split('\t');
        resolve({ ok: v === 'ok', resolved: resolved ?? '', physicalDir: physicalDir ?? '' });
      });
      this.child.stdin.write(`${line}\n`);
    });
  }
  judge = (root: string, p: string) => this.ask(`j\t${root}\t${p}`);
  judgeDir = (p: string) => this.ask(`d\t-\t${p}`);
  async close(): Promise<void> {
    this.child.stdin.end();
    await new Promise((r) => this.child.once('exit', r));
  }
}
