// The kubelet's cgroup tree and host-local's leases, on what real components left on
// test nodes (test/fixtures/real-cri, recorded there): the
// probe's shell runs under dash on a copy of the recorded tree, its output goes through
// the parser, and the reset step's scripts run on that copy too.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyState } from '../probes/index.js';
import type { NodeState } from '../probes/state.js';
import { kubeCgroupLevel, parseKubeCgroups, parsePodTraces } from '../probes/parse.js';
import { IPAM_LEASES_PROBE, KUBE_CGROUPS_PROBE } from '../probes/script.js';
import { findings } from '../rules/residue.js';
import { knownPods, nodeFindings } from '../rules/audit.js';
import { STEPS } from './index.js';
import type { StepContext } from '../engine/step.js';
import { tempDir } from '../../test/helpers/temp.js';

const work = tempDir('decom-cgroups-');
afterAll(() => rmSync(work, { recursive: true, force: true }));
let trees = 0;

/** A recording's sections: "== NAME" headers, the lines below each. */
function recording(file: string): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let cur: string[] | undefined;
  for (const l of readFileSync(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'real-cri', file), 'utf8').split('\n')) {
    if (l.startsWith('== ')) sections.set(l.slice(3), (cur = []));
    else if (cur && l.trim()) cur.push(l);
  }
  return sections;
}

/** The recorded cgroups ("PATH  [h1,h2,…]"), each in every hierarchy it was in. */
const recordedCgroups = (r: Map<string, string[]>) =>
  (r.get('cgroups (kubepods, every hierarchy)') ?? []).map((l) => {
    const m = /^(\S+)\s+\[([^\]]*)\]$/.exec(l) as RegExpExecArray;
    return { path: m[1] as string, hierarchies: (m[2] as string).split(',') };
  });

/**
 * A copy of a node's /sys/fs/cgroup as plain directories: each hierarchy a directory,
 * each cgroup one below it. `controlFiles` adds files named as the kernel's (they keep a
 * plain directory from rmdir, so only the probe's tests have them); `busy` puts
 * processes in a cgroup (a cgroup.procs file: rmdir fails, as on a cgroup with a process).
 */
function cgroupTree(cgroups: { path: string; hierarchies: string[] }[], o: { controlFiles?: boolean; busy?: Record<string, number[]> } = {}): string {
  const root = join(work, `tree${trees++}`);
  const hierarchies = new Set(cgroups.flatMap((c) => c.hierarchies));
  for (const h of hierarchies) mkdirSync(join(root, h), { recursive: true });
  for (const c of cgroups) {
    for (const h of c.hierarchies) {
      const dir = join(root, h, c.path);
      mkdirSync(dir, { recursive: true });
      if (o.controlFiles) for (const f of ['cgroup.procs', 'cpu.shares', 'cpuset.cpus', 'blkio.weight', 'devices.list', 'freezer.state', 'tasks']) writeFileSync(join(dir, f), '');
      const pids = o.busy?.[c.path];
      if (pids) writeFileSync(join(dir, 'cgroup.procs'), pids.map((p) => `${p}\n`).join(''));
    }
  }
  return root;
}

/** Runs a node script under dash with /sys/fs/cgroup at `root`. */
const onTree = (script: string, root: string, prelude = '') => {
  const r = spawnSync('dash', ['-c', `${prelude}\n${script.replaceAll('/sys/fs/cgroup', root)}`], { encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
};

/** What a probe section's shell prints on a copy of the node's tree (its exit status is no part of a probe). */
const sh = (script: string) => spawnSync('dash', ['-c', script], { encoding: 'utf8' }).stdout;
/** The kube-cgroups section of a tree, as printed. */
const kubeCgroupsOn = (root: string) => sh(KUBE_CGROUPS_PROBE.replaceAll('/sys/fs/cgroup', root));

/** What the probe's kube-cgroups section says of a tree, parsed, with the hierarchies by name. */
function probeCgroups(root: string) {
  const parsed = parseKubeCgroups(kubeCgroupsOn(root));
  const name = (h: string) => h.slice(root.length + 1);
  return { ...parsed, hierarchies: parsed.hierarchies.map(name), kube: parsed.kube.map((c) => ({ ...c, hierarchies: c.hierarchies.map(name) })) };
}

/** The recording's processes ("PID ppid=N ARGS | CGROUP") in a Kubernetes cgroup, as the probe's cgroups section gives them. */
const recordedK8sCgroups = (r: Map<string, string[]>) =>
  new Map(
    (r.get('processes') ?? []).flatMap((l) => {
      const m = /^(\d+) ppid=\d+ (.*?)\s+\| (\/kubepods\S*)$/.exec(l);
      return m ? [[Number(m[1]), m[3] as string] as const] : [];
    }),
  );

const sorted = <T>(xs: T[]) => [...xs].sort();

describe("the probe's listing of the kubelet's cgroups", () => {
  for (const file of ['cgroupfs-live.txt', 'systemd-driver-live.txt']) {
    it(`finds every recorded cgroup in every hierarchy, and nothing else (${file})`, () => {
      const recorded = recordedCgroups(recording(file));
      const root = cgroupTree(recorded, { controlFiles: true });
      // A co-mounted controller's other name is a link to the same hierarchy: not a hierarchy of its own.
      symlinkSync('cpu', join(root, 'cpu,cpuacct'));
      // Not the kubelet's: another tree, and a user's cgroup named like a pod below the root of a hierarchy.
      mkdirSync(join(root, 'pids', 'system.slice', 'kubepods'), { recursive: true });
      mkdirSync(join(root, 'memory', 'app-pod1234'), { recursive: true });
      const got = probeCgroups(root);
      expect(sorted(got.hierarchies)).toEqual(['blkio', 'cpu', 'cpuacct', 'cpuset', 'devices', 'freezer', 'memory', 'pids', 'systemd', 'unified']);
      expect(sorted(got.kube.map((c) => `${c.path} [${sorted(c.hierarchies).join(',')}]`))).toEqual(sorted(recorded.map((c) => `${c.path} [${c.hierarchies.join(',')}]`)));
    });
  }

  it('knows the levels of both drivers: root, QoS, pods (Guaranteed ones right below the root), containers', () => {
    const uid = 'd6391ae8-6f84-4d2e-beff-ec63f7b77fb7';
    const cid = '876ea24aabad7c5ab79ffdcf6d3190337b38db55a1632e43ae6b37b6ac0c945a';
    const levels = (paths: string[]) => paths.map((p) => `${p}: ${kubeCgroupLevel(p)?.level ?? 'not the kubelet\'s'}${kubeCgroupLevel(p)?.uid ? ` ${kubeCgroupLevel(p)?.uid}` : ''}`);
    expect(levels(['/kubepods', '/kubepods/burstable', `/kubepods/besteffort/pod${uid}`, `/kubepods/besteffort/pod${uid}/${cid}`, `/kubepods/pod${uid}`, `/kubepods/pod${uid}/crio-${cid}`, '/system.slice/kubelet.service', '/kubepodsX'])).toEqual([
      '/kubepods: root',
      '/kubepods/burstable: qos',
      `/kubepods/besteffort/pod${uid}: pod ${uid}`,
      `/kubepods/besteffort/pod${uid}/${cid}: container ${uid}`,
      `/kubepods/pod${uid}: pod ${uid}`,
      `/kubepods/pod${uid}/crio-${cid}: container ${uid}`,
      "/system.slice/kubelet.service: not the kubelet's",
      "/kubepodsX: not the kubelet's",
    ]);
    const u = uid.replaceAll('-', '_');
    expect(levels(['/kubepods.slice', '/kubepods.slice/kubepods-besteffort.slice', `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${u}.slice`, `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${u}.slice/cri-containerd-${cid}.scope`, `/kubepods.slice/kubepods-pod${u}.slice`])).toEqual([
      '/kubepods.slice: root',
      '/kubepods.slice/kubepods-besteffort.slice: qos',
      `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${u}.slice: pod ${uid}`,
      `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${u}.slice/cri-containerd-${cid}.scope: container ${uid}`,
      `/kubepods.slice/kubepods-pod${u}.slice: pod ${uid}`,
    ]);
  });

  it('finds a Guaranteed pod, a CRI-O container and a cgroup left in one hierarchy only', () => {
    const uid = '0b0b0b0b-1111-4222-8333-444444444444';
    const root = cgroupTree([
      { path: `/kubepods/pod${uid}/crio-abc`, hierarchies: ['pids', 'memory'] },
      { path: '/kubepods/besteffort', hierarchies: ['cpuset'] },
    ]);
    const got = probeCgroups(root);
    expect(sorted(got.kube.map((c) => `${c.level} ${c.path} [${sorted(c.hierarchies).join(',')}]`))).toEqual([
      `container /kubepods/pod${uid}/crio-abc [memory,pids]`,
      `pod /kubepods/pod${uid} [memory,pids]`,
      'qos /kubepods/besteffort [cpuset]',
      'root /kubepods [cpuset,memory,pids]',
    ]);
  });

  it('reads a pure cgroup v2 node at /sys/fs/cgroup itself, never its children as hierarchies', () => {
    const root = cgroupTree([{ path: '/kubepods.slice/kubepods-besteffort.slice', hierarchies: ['.'] }]);
    writeFileSync(join(root, 'cgroup.controllers'), 'cpu memory pids\n');
    mkdirSync(join(root, 'system.slice'));
    expect(parseKubeCgroups(kubeCgroupsOn(root))).toEqual({
      hierarchies: [root],
      kube: [
        { path: '/kubepods.slice', hierarchies: [root], level: 'root' },
        { path: '/kubepods.slice/kubepods-besteffort.slice', hierarchies: [root], level: 'qos' },
      ],
    });
  });
});

describe("host-local's leases, both formats", () => {
  /** What the probe's ipam-leases section says of these lease files (network cbr0 or the recording's). */
  function probeLeases(files: Record<string, string>): string {
    const dir = join(work, `cni${trees++}`);
    for (const [rel, content] of Object.entries(files)) {
      mkdirSync(join(dir, rel, '..'), { recursive: true });
      writeFileSync(join(dir, rel), content);
    }
    return sh(IPAM_LEASES_PROBE.replaceAll('/var/lib/cni/networks', dir)).replaceAll(dir, '/var/lib/cni/networks');
  }
  const leasesOf = (out: string) => parsePodTraces('', '', '', out).leases.map((l) => `${l.network} ${l.ip} ${l.sandbox}`);

  for (const file of ['cgroupfs-live.txt', 'systemd-driver-live.txt', 'after-runtime-kill-containerd-down.txt']) {
    it(`reads every lease the recording holds, as host-local wrote it (${file})`, () => {
      const r = recording(file);
      const truth = (r.get('TRUTH') ?? []).filter((l) => l.startsWith('TRUTH ipam-lease ')).map((l) => l.split(' ').slice(2) as [string, string]);
      const sizes = new Map((r.get('/var/lib/cni') ?? []).map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))] as const));
      const files: Record<string, string> = {};
      for (const [path, id] of truth) {
        // host-local >= 0.8: "ID\r\nIFNAME" (70 bytes with eth0); the recording's 69-byte one was planted by hand as "ID\neth0".
        const content = sizes.get(path) === 70 ? `${id}\r\neth0` : `${id}\neth0`;
        expect(content.length).toBe(sizes.get(path));
        // The recording shows each file's first 48 bytes as od -c prints them.
        const od = (r.get('leases') ?? []).find((l) => l.startsWith(`${path}: `)) as string;
        expect(od.slice(path.length + 2).replace(/\d{7} ?/g, '').replaceAll(' ', '')).toBe(content.slice(0, 48));
        files[path.slice('/var/lib/cni/networks/'.length)] = content;
      }
      files[`${truth[0]![0].split('/')[5]}/last_reserved_ip.0`] = '10.244.30.3';
      files[`${truth[0]![0].split('/')[5]}/lock`] = '';
      expect(sorted(leasesOf(probeLeases(files)))).toEqual(sorted(truth.map(([path, id]) => `containerd-net ${path.slice(path.lastIndexOf('/') + 1)} ${id}`)));
    });
  }

  it('reads a lease of host-local before 0.8 (the ID alone, no newline) and after (ID\\r\\nIFNAME)', () => {
    const id = 'c01a9db4'.repeat(8);
    const out = probeLeases({ 'cbr0/10.244.1.2': id, 'cbr0/10.244.1.3': `${id}\r\neth0`, 'cbr0/fd00::5': `${id}\r\neth1`, 'cbr0/lock': '' });
    expect(sorted(leasesOf(out))).toEqual([`cbr0 10.244.1.2 ${id}`, `cbr0 10.244.1.3 ${id}`, `cbr0 fd00::5 ${id}`]);
  });
});

describe("verify's and the audit's one rule", () => {
  const live = (file: string, over: Partial<NodeState> = {}): NodeState => {
    const r = recording(file);
    return { ...emptyState(), hostname: 'n30', pid1: 'tini', runtimes: [{ name: 'containerd', running: true, answered: true }], cgroups: probeCgroups(cgroupTree(recordedCgroups(r))), k8sCgroups: recordedK8sCgroups(r), ...over };
  };

  it('verify reports every cgroup of the tree, QoS parents and root included, with the processes in it', () => {
    const s = live('cgroupfs-live.txt');
    const f = findings(s).filter((x) => x.kind === 'pod-cgroup');
    expect(f).toHaveLength(12);
    expect(f.map((x) => x.subject)).toEqual(expect.arrayContaining(['/kubepods', '/kubepods/besteffort', '/kubepods/burstable', '/kubepods/besteffort/podd6391ae8-6f84-4d2e-beff-ec63f7b77fb7']));
    expect(f.find((x) => x.subject === '/kubepods/burstable')?.detail).toBe("the kubelet's QoS cgroup burstable, in all 10 hierarchies");
    expect(f.find((x) => x.subject.endsWith('/26a904c95bc381c1aa55ca573f4d01b8490200abadd6f8a07c2bcd77234ff005'))?.detail).toBe(
      'container cgroup of pod d6391ae8-6f84-4d2e-beff-ec63f7b77fb7, in all 10 hierarchies; processes in it: 459 ?',
    );
    const systemd = findings(live('systemd-driver-live.txt')).filter((x) => x.kind === 'pod-cgroup');
    expect(systemd.map((x) => x.subject)).toEqual(expect.arrayContaining(['/kubepods.slice', '/kubepods.slice/kubepods-besteffort.slice', '/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podb5201d96_bedb_4939_b969_522bcb8ff829.slice']));
  });

  it('verify names the hierarchies a cgroup lingers in when it is not in all', () => {
    const root = cgroupTree([{ path: '/kubepods', hierarchies: ['pids', 'memory', 'cpuset'] }, { path: '/kubepods/besteffort/pod0b0b0b0b-1111-4222-8333-444444444444', hierarchies: ['cpuset'] }]);
    const f = findings({ ...emptyState(), cgroups: probeCgroups(root) }).filter((x) => x.kind === 'pod-cgroup');
    expect(f.map((x) => `${x.subject}: ${x.detail}`)).toEqual(
      expect.arrayContaining(['/kubepods/besteffort/pod0b0b0b0b-1111-4222-8333-444444444444: cgroup of pod 0b0b0b0b-1111-4222-8333-444444444444, in cpuset only (of 3 hierarchies)']),
    );
  });

  it("the audit's orphans are pod cgroups only: never the running kubelet's QoS tree, never a container's on its own", () => {
    const s = live('cgroupfs-live.txt');
    const orphans = nodeFindings(s, knownPods([])).findings.filter((x) => x.kind === 'orphan-pod-cgroup');
    expect(sorted(orphans.map((x) => x.subject))).toEqual([
      '/kubepods/besteffort/podd6391ae8-6f84-4d2e-beff-ec63f7b77fb7',
      '/kubepods/burstable/pod0ee4b95f-cc8f-48dd-99f8-b8a924ca311a',
      '/kubepods/burstable/poddf85a8c0bbfd0f90234cee44060144c1',
    ]);
    const web = orphans.find((x) => x.subject.includes('d6391ae8'));
    expect(web?.target.cgroups).toEqual(['/kubepods/besteffort/podd6391ae8-6f84-4d2e-beff-ec63f7b77fb7']);
    expect(web?.detail).toBe('pod cgroup of no known pod, 2 processes still in it');
    const systemd = nodeFindings(live('systemd-driver-live.txt'), knownPods([])).findings.filter((x) => x.kind === 'orphan-pod-cgroup');
    expect(systemd.map((x) => x.subject).every((p) => /-pod[0-9a-f_]+\.slice$/.test(p))).toBe(true);
    expect(systemd).toHaveLength(3);
  });
});

describe('the cgroups step', () => {
  const ctx: StepContext = { runId: 'R', backupDir: '/var/backups/decom/R', host: 'n', vars: {}, params: {}, operatorBackupDir: '/tmp/b', before: new Set() };
  const step = STEPS.cgroups!;
  /** A node after the processes step: the recorded tree, no process left in it. */
  const reset = (file: string, over: Partial<NodeState> = {}, busy?: Record<string, number[]>) => {
    const root = cgroupTree(recordedCgroups(recording(file)), busy ? { busy } : {});
    return { root, s: { ...emptyState(), hostname: 'n', pid1: file.startsWith('systemd') ? 'systemd' : 'tini', cgroups: probeCgroups(root), ...over } as NodeState };
  };
  /** The probe's view of the tree with its real hierarchy paths (what the step's scripts act on). */
  const reprobe = (root: string) => parseKubeCgroups(kubeCgroupsOn(root));
  const left = (root: string) => reprobe(root).kube.map((c) => c.path);
  const SYSTEMCTL_LOG = join(work, 'systemctl.log');
  const stubs = `systemctl() { printf '%s\\n' "$*" >> ${SYSTEMCTL_LOG}; }`;

  it('removes a cgroupfs tree bottom-up in every hierarchy once no kubelet runs, and plans nothing after', () => {
    const { root, s } = reset('cgroupfs-live.txt');
    const plan = step.plan(s, ctx);
    expect(plan.map((a) => a.what)).toEqual([
      'remove 3 pod cgroups and the 6 container cgroups below them, deepest first, in every hierarchy',
      "remove the kubelet's QoS cgroups and its root /kubepods, in every hierarchy",
    ]);
    for (const a of plan) expect(onTree(a.script, root)).toEqual({ code: 0, out: '' });
    expect(left(root)).toEqual([]);
    expect(readdirSync(join(root, 'pids'))).toEqual([]);
    // --check's prediction is what the node shows; a second run plans nothing, and its scripts find nothing to do.
    expect(step.after(s, ctx).cgroups.kube).toEqual([]);
    expect(step.plan({ ...s, cgroups: reprobe(root) }, ctx)).toEqual([]);
    for (const a of plan) expect(onTree(a.script, root)).toEqual({ code: 0, out: '' });
  });

  it('leaves the QoS tree while a kubelet runs (it would make it again), and says so', () => {
    const kubelet = new Map([[42, { pid: 42, ppid: 1, name: 'kubelet', args: '/usr/bin/kubelet', start: 1 }]]);
    const { root, s } = reset('cgroupfs-live.txt', { processes: kubelet });
    const plan = step.plan(s, ctx);
    expect(plan.map((a) => a.what)).toEqual([
      'remove 3 pod cgroups and the 6 container cgroups below them, deepest first, in every hierarchy',
      'leave /kubepods, /kubepods/besteffort, /kubepods/burstable: the kubelet runs and would make them again',
    ]);
    expect(onTree(plan[0]!.script, root).code).toBe(0);
    expect(sorted(left(root))).toEqual(['/kubepods', '/kubepods/besteffort', '/kubepods/burstable']);
    expect(sorted(step.after(s, ctx).cgroups.kube.map((c) => c.path))).toEqual(['/kubepods', '/kubepods/besteffort', '/kubepods/burstable']);
    expect(onTree(plan[1]!.script, root)).toEqual({ code: 1, out: 'the kubelet runs: it keeps /kubepods, /kubepods/besteffort, /kubepods/burstable; stop it first (the kubelet step)\n' });
    // Enabled but not running is no kubelet: systemd starts it only at boot.
    const enabled = { ...s, processes: new Map(), units: new Map([['kubelet.service', { id: 'kubelet.service', load: 'loaded', active: 'inactive', fileState: 'enabled' }]]) };
    expect(step.plan(enabled, ctx).map((a) => a.what)[1]).toMatch(/^remove the kubelet's QoS cgroups/);
  });

  it('fails naming the cgroup a process keeps, and its PIDs; the rest goes', () => {
    const web = '/kubepods/besteffort/podd6391ae8-6f84-4d2e-beff-ec63f7b77fb7/26a904c95bc381c1aa55ca573f4d01b8490200abadd6f8a07c2bcd77234ff005';
    const { root, s } = reset('cgroupfs-live.txt', { k8sCgroups: new Map([[459, web], [460, web]]) }, { [web]: [459, 460] });
    const [pods, tree] = step.plan(s, ctx);
    const r = onTree(pods!.script, root);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`cgroup ${root}/pids${web} still holds processes 459 460\n`);
    expect(r.out.split('\n').filter(Boolean)).toHaveLength(10); // once per hierarchy, nothing about its parents
    expect(onTree(tree!.script, root).code).toBe(1);
    expect(sorted(left(root))).toEqual(['/kubepods', '/kubepods/besteffort', '/kubepods/besteffort/podd6391ae8-6f84-4d2e-beff-ec63f7b77fb7', web]);
    // --check predicts the same: the busy cgroup and its parents stay.
    expect(sorted(step.after(s, ctx).cgroups.kube.map((c) => c.path))).toEqual(sorted(left(root)));
  });

  it('removes a cgroup left in one hierarchy only, and one below a container the probe does not list', () => {
    const pod = '/kubepods/besteffort/pod0b0b0b0b-1111-4222-8333-444444444444';
    const root = cgroupTree([{ path: `${pod}/abcdef0123/nested`, hierarchies: ['cpuset'] }, { path: '/kubepods', hierarchies: ['pids', 'memory'] }]);
    const s: NodeState = { ...emptyState(), pid1: 'tini', cgroups: probeCgroups(root) };
    for (const a of step.plan(s, ctx)) expect(onTree(a.script, root)).toEqual({ code: 0, out: '' });
    expect(left(root)).toEqual([]);
  });

  it('stops the slices through systemd on the systemd driver (pods, then QoS, then kubepods.slice), then removes what it left', () => {
    const { root, s } = reset('systemd-driver-live.txt');
    const plan = step.plan(s, ctx);
    expect(plan.map((a) => a.what)).toEqual([
      'systemctl stop kubepods-besteffort-podb5201d96_bedb_4939_b969_522bcb8ff829.slice kubepods-burstable-pod45d076c8_f7ed_4ab2_8239_a2ad65319c26.slice kubepods-burstable-pode4f9dcb5c9ecd45bbd3241f086cc06ec.slice, then kubepods-besteffort.slice kubepods-burstable.slice, then kubepods.slice',
      'remove 3 pod cgroups and the 6 container cgroups below them, deepest first, in every hierarchy',
      "remove the kubelet's QoS cgroups and its root /kubepods.slice, in every hierarchy",
    ]);
    rmSync(SYSTEMCTL_LOG, { force: true });
    for (const a of plan) expect(onTree(a.script, root, stubs)).toEqual({ code: 0, out: '' });
    expect(readFileSync(SYSTEMCTL_LOG, 'utf8')).toBe(
      [
        'stop -- kubepods-besteffort-podb5201d96_bedb_4939_b969_522bcb8ff829.slice kubepods-burstable-pod45d076c8_f7ed_4ab2_8239_a2ad65319c26.slice kubepods-burstable-pode4f9dcb5c9ecd45bbd3241f086cc06ec.slice',
        'stop -- kubepods-besteffort.slice kubepods-burstable.slice',
        'stop -- kubepods.slice',
        '',
      ].join('\n'),
    );
    expect(left(root)).toEqual([]);
    // With a kubelet running only the pods' slices are stopped: stopping kubepods.slice would stop every pod on the node.
    const running = step.plan({ ...s, runningUnits: new Set(['kubelet.service']) }, ctx);
    expect(running[0]!.script).not.toMatch(/kubepods(-besteffort|-burstable)?\.slice/);
    // systemd is not PID 1 (a node's view from a container): no systemctl, rmdir only.
    expect(step.plan({ ...s, pid1: 'tini' }, ctx).map((a) => a.what)[0]).toMatch(/^remove 3 pod cgroups/);
  });

  it('plans nothing on a node without the tree', () => {
    expect(step.plan(emptyState(), ctx)).toEqual([]);
    expect(existsSync(work)).toBe(true);
  });
});
