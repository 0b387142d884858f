// Command lines cut on the node: the probe's cut (CUT_CMDLINES, run here on grep lines
// written by the test, with each awk this machine has), its mark read by parseProcs, and
// every reader of a flag (probes/proc-flags.ts) answering "unknown", never "absent", for
// what the cut may have taken: etcd's data dir, kube-proxy's mode, the shims' namespace and id.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseProcs } from './parse.js';
import { CMDLINE_BYTES, CUT_CMDLINES } from './script.js';
import { UNKNOWN_FLAG, procFlag } from './proc-flags.js';
import { emptyState } from './index.js';
import type { NodeState, Proc } from './state.js';
import { etcdDataDir, findings, notes } from '../rules/residue.js';
import { hostFacts } from '../rules/facts.js';
import { removeContainers } from '../engine/model.js';

/** What `grep -a -H '' /proc/[0-9]*\/cmdline` prints for these argvs. */
const grepLines = (argvs: Record<number, string[]>): string =>
  Object.entries(argvs)
    .flatMap(([pid, argv]) => `${argv.join('\0')}\0`.split('\n').map((l) => `/proc/${pid}/cmdline:${l}`))
    .map((l) => `${l}\n`)
    .join('');
const statLines = (pids: number[]): string => pids.map((pid) => `/proc/${pid}/stat:${pid} (x) S 1 ${pid} ${pid} 0 -1 4194560\n`).join('');

/** The probe's cut run by `awk`, the first awk in PATH, as on a node. */
function cutOnNode(lines: string, awkDir?: string): string {
  const env = { ...process.env, LC_ALL: 'C', ...(awkDir ? { PATH: `${awkDir}:${process.env.PATH}` } : {}) };
  const r = spawnSync('/bin/sh', ['-c', CUT_CMDLINES], { input: lines, env, encoding: 'latin1' });
  if (r.status !== 0) throw new Error(`the cut failed: ${r.stderr}`);
  return r.stdout;
}

const proc = (args: string, cut?: boolean): Proc => ({ pid: 10, ppid: 1, name: args.split(' ')[0]!, args, start: 1, ...(cut ? { cut } : {}) });
const withProcs = (...ps: Proc[]): NodeState => ({ ...emptyState(), processes: new Map(ps.map((p) => [p.pid, p])) });

describe('command lines cut on the node', () => {
  const huge = 'z'.repeat(100_000);
  const argvs = {
    1: ['/sbin/init'],
    20: ['etcd', '--name=m1', '--data-dir', '/var/lib/etcd', huge],
    // An argument holding a line break, and in it a line that looks like the mark for pid 1.
    30: ['evil', `x\n#cut 1\n/proc/1/cmdline:--forged`, huge],
    40: ['sh', 'with\u0001byte'],
  };

  // busybox's awk (./scripts/setup installs busybox-static) turns a NUL into a line break; mawk keeps it.
  const busybox = mkdtempSync(join(tmpdir(), 'decom-awk-'));
  symlinkSync('/usr/bin/busybox', join(busybox, 'awk'));
  afterAll(() => rmSync(busybox, { recursive: true, force: true }));

  it.each([['mawk', undefined], ["busybox's", busybox]])(`keeps ${CMDLINE_BYTES} bytes of each, marks the cut ones, and no argument forges a line (%s awk)`, (_, awkDir) => {
    const out = cutOnNode(grepLines(argvs), awkDir);
    expect(Buffer.byteLength(out, 'latin1')).toBeLessThan(4 * (CMDLINE_BYTES + 64));
    const procs = parseProcs(statLines([1, 20, 30, 40]), out);
    expect(procs.get(1)).toMatchObject({ args: '/sbin/init' });
    expect(procs.get(1)?.cut).toBeUndefined();
    expect(procs.get(20)).toMatchObject({ cut: true, args: expect.stringMatching(/^etcd --name=m1 --data-dir \/var\/lib\/etcd z+$/) });
    expect(procs.get(20)!.args.length).toBe(CMDLINE_BYTES); // its NULs turned spaces, cut inside the last argument
    expect(procs.get(30)).toMatchObject({ cut: true });
    expect(procs.get(30)!.args).toContain('#cut 1\n/proc/1/cmdline:--forged');
    // An argument's own \001 comes back as a NUL: it only splits that argument.
    expect(procs.get(40)).toMatchObject({ args: 'sh with byte' });
  });

  it('reads the mark alone: a "#cut" inside an argument is that argument', () => {
    const procs = parseProcs(statLines([1, 2]), '/proc/1/cmdline:init\0\n/proc/2/cmdline:x\0\n/proc/2/cmdline:#cut 1\0\n#cut 2\n');
    expect(procs.get(1)?.cut).toBeUndefined();
    expect(procs.get(2)?.cut).toBe(true);
  });
});

describe('a flag of a cut command line', () => {
  it('is its value when it shows whole, absent only on a whole line, unknown otherwise', () => {
    expect(procFlag(proc('etcd --data-dir /d --name n'), 'data-dir')).toBe('/d');
    expect(procFlag(proc('etcd --data-dir=/d'), 'data-dir')).toBe('/d');
    expect(procFlag(proc('etcd --name n'), 'data-dir')).toBeUndefined();
    expect(procFlag(proc('etcd --data-dir /d --name n', true), 'data-dir')).toBe('/d');
    // Not seen: it may have fallen off. Running to the cut: it may be longer.
    expect(procFlag(proc('etcd --name n', true), 'data-dir')).toBe(UNKNOWN_FLAG);
    expect(procFlag(proc('etcd --name n --data-dir /var/li', true), 'data-dir')).toBe(UNKNOWN_FLAG);
    expect(procFlag(proc('etcd --name n --data-dir', true), 'data-dir')).toBe(UNKNOWN_FLAG);
  });

  it("etcd's data dir cannot be told when --data-dir, --name or --config-file may be past the cut", () => {
    const judged = (args: string, cut?: boolean) => {
      const etcd = { ...proc(args, cut), name: 'etcd' };
      return etcdDataDir({ ...withProcs(etcd), etcdDirs: new Map([[etcd.pid, { cwd: '/var/lib', env: {} }]]) }, etcd);
    };
    expect(judged('etcd --name m1 --listen-client-urls http://127.0.0.1:2379')).toBe('/var/lib/m1.etcd');
    expect(judged('etcd --data-dir /srv/etcd --name m1')).toBe('/srv/etcd');
    // The same lines cut: a --config-file (which overrides every flag) or a --data-dir may follow.
    expect(judged('etcd --name m1 --listen-client-urls http://127.0.0.1:2379', true)).toBeUndefined();
    expect(judged('etcd --data-dir /srv/etcd --name m1', true)).toBeUndefined();
  });

  it("kube-proxy's mode is unknown when its --proxy-mode may be past the cut", () => {
    const kp = (args: string, cut?: boolean) => withProcs({ ...proc(args, cut), name: 'kube-proxy' });
    expect(hostFacts(kp('kube-proxy --proxy-mode=ipvs --v=2')).kubeProxy).toBe('ipvs');
    expect(hostFacts(kp('kube-proxy --proxy-mode=ipvs --v=2', true)).kubeProxy).toBe('ipvs');
    expect(hostFacts(kp('kube-proxy --v=2 --proxy-mode=ip', true)).kubeProxy).toBe('unknown');
    expect(hostFacts(kp('kube-proxy --v=2', true)).kubeProxy).toBe('unknown');
  });

  it("a shim whose -namespace or Docker's -id was cut off is not called Kubernetes', and a note says its line was cut", () => {
    const shim = (pid: number, args: string, cut?: boolean): Proc => ({ ...proc(args, cut), pid, name: 'containerd-shim-runc-v2' });
    const s = withProcs(
      shim(11, 'containerd-shim-runc-v2 -namespace k8s.io -id aaa -address /run/containerd/containerd.sock', true),
      shim(12, 'containerd-shim-runc-v2 -namespace k8s', true),
      shim(13, 'containerd-shim-runc-v2 -namespace moby -id b', true),
      shim(14, 'containerd-shim-runc-v2 -namespace k8s.io -id', true),
    );
    expect(findings(s).filter((f) => f.kind === 'shim-process')).toEqual([
      { kind: 'shim-process', subject: '11', detail: 'containerd-shim-runc-v2 -namespace k8s.io -id aaa' },
      { kind: 'shim-process', subject: '14', detail: 'containerd-shim-runc-v2 -namespace k8s.io -id (cut off)' },
    ]);
    expect(notes(s)).toContainEqual(
      "containerd shims whose command line was cut on the node before its -namespace or -id showed, not counted as Kubernetes': pid 12, 13",
    );
    expect(notes(withProcs(shim(11, 'containerd-shim-runc-v2 -namespace k8s.io -id aaa -address /x', true))).join('\n')).not.toContain('cut');
  });

  it("the model of a container's removal takes a shim along only when its -id shows whole", () => {
    const shim = (pid: number, args: string): Proc => ({ ...proc(args, true), pid, name: 'containerd-shim-runc-v2' });
    const s: NodeState = {
      ...withProcs(shim(11, 'containerd-shim-runc-v2 -namespace k8s.io -id aaa -address /x'), shim(12, 'containerd-shim-runc-v2 -namespace k8s.io -id aa')),
      containers: [{ id: 'aaa', runtime: 'containerd', kind: 'sandbox' }, { id: 'aa', runtime: 'containerd', kind: 'sandbox' }],
    };
    expect([...removeContainers(s, () => true).processes.keys()]).toEqual([12]);
  });
});
