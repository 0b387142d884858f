/**
 * What the field runs, on a systemd sandbox of real components (force-deleted-pods: a
 * runtime that lost its state beside a live pod, on each of two nodes):
 * - the fixtures of the versions the sandbox runs (containerd 1.6.20, plugins 1.1.1)
 *   are what its components write, so the version matrix cannot drift from them;
 * - unknown is never orphan: with containerd stopped under running pods, and with a
 *   live pod's bundles written as containerd 1.4 to 1.6.10 write them, the audit calls
 *   nothing of the live pod an orphan and `--fix` of every kind leaves it as it was,
 *   while the traces the node alone proves dead are still reported;
 * - Debian's own etcd.service (a package's etcd serving no cluster) beside a worker's
 *   residue: the reset leaves it running with its data, verify warns, the audit is silent.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, down, ssh, STATE_DIR, up } from './helpers/sandbox.js';
import { CRI_IDENTITY } from '../src/probes/script.js';

const INVENTORY = join(STATE_DIR, 'hosts.yaml');
const V = join(import.meta.dirname, 'fixtures', 'versions');
const TASKS = '/run/containerd/io.containerd.runtime.v2.task/k8s.io';
const NODE_KINDS = 'orphan-veth,orphan-netns,orphan-pod-dir,orphan-ipam-lease,orphan-pod-cgroup';

interface Finding { kind: string; subject: string }
interface Report { hosts: { host: string; findings: Finding[]; warnings?: string[] }[] }
/** `decom audit --no-api` of one node (a --fix acts on that node only). */
function audit(node: string, ...args: string[]): { code: number; report: Report; stderr: string } {
  const r = decom(['audit', INVENTORY, node, '--no-api', '--output', 'json', ...args]);
  try {
    return { code: r.code, report: JSON.parse(r.stdout) as Report, stderr: r.stderr };
  } catch {
    throw new Error(`decom audit ${args.join(' ')}: exit ${r.code}: ${r.stderr}${r.stdout}`);
  }
}
const hostOf = (r: Report, node: string) => r.hosts.find((h) => h.host === node)!;
const lines = (s: string) => s.split('\n').filter(Boolean);

/** The live pod as the node holds it, read without decom or containerd: its tasks and their processes, netns, lease, pod dir and cgroups. */
const LIVE = `for d in ${TASKS}/*/; do id=$(basename "$d"); p=$(cat "$d/init.pid"); [ -d /proc/$p ] && echo "task $id $p $(readlink /proc/$p/ns/net)"; done | sort
S=$(for d in ${TASKS}/*/; do grep -q '"io.kubernetes.cri.container-type":"sandbox"' "$d/config.json" && basename "$d"; done)
for f in /var/lib/cni/networks/cbr0/*; do case $f in */lock|*/last_reserved*) continue;; esac; head -n1 "$f" | tr -d '\\r' | grep -q -x "$S" && echo "lease \${f##*/}"; done
u=$(grep -o -E 'pod[0-9a-f_]{36}\\.slice' ${TASKS}/$S/config.json | head -n1 | sed 's/^pod//; s/\\.slice$//; s/_/-/g')
echo "uid $u"; [ -d /var/lib/kubelet/pods/$u ] && echo "dir $u"
find /sys/fs/cgroup/pids/kubepods.slice -type d -name "*pod$(echo $u | tr - _)*" | sed 's|^/sys/fs/cgroup/pids||' | sort | sed 's/^/cgroup /'`;
const uidOf = (live: string) => /^uid (\S+)$/m.exec(live)?.[1] as string;

describe('field versions, on a systemd sandbox of real components', () => {
  beforeAll(() => up(['--nodes', '2', '--scenario', 'force-deleted-pods']));
  afterAll(() => down());

  it("the 1.6.20 and plugins-1.1.1 fixtures are what the sandbox's containerd and host-local write", () => {
    const keys = (text: string) => [...new Set([...text.matchAll(/"(io\.kubernetes\.cri\.[a-z-]+)"/g)].map((m) => m[1] as string))].sort();
    const fixture = (f: string) => readFileSync(join(V, 'containerd', '1.6.11+', f), 'utf8');
    // The sandbox-cpu and -memory annotations come only with the resources a real kubelet sends (fixtures README).
    const sized = /sandbox-(cpu|memory)/;
    const real = ssh('node1', `for d in ${TASKS}/*/; do printf '%s\\n' "$(cat "$d/config.json")"; done`);
    const [sandbox, container] = ['sandbox', 'container'].map((t) => lines(real).find((l) => l.includes(`"io.kubernetes.cri.container-type":"${t}"`)) as string);
    expect(keys(sandbox!)).toEqual(keys(fixture('sandbox-config.json')).filter((k) => !sized.test(k)));
    expect(keys(container!)).toEqual(keys(fixture('container-config.json')));
    // The systemd driver's cgroupsPath, as the fixture writes it.
    const shape = (cfg: string) => /"cgroupsPath":"([^"]*)"/.exec(cfg)?.[1]?.replace(/[0-9a-f]{64}/g, 'ID').replace(/pod[0-9a-f_]{36}/, 'podUID').replace(/-(besteffort|burstable)-/, '-QOS-');
    expect(shape(sandbox!)).toBe(shape(fixture('sandbox-config.systemd.json')));
    // `ctr containers info` names the pod with the same keys.
    const id = /"io\.kubernetes\.cri\.sandbox-id":"([0-9a-f]{64})"/.exec(sandbox!)![1] as string;
    const infoKeys = (text: string) => [...new Set([...text.matchAll(new RegExp(CRI_IDENTITY, 'g'))].map((m) => m[1] as string))].sort();
    expect(infoKeys(ssh('node1', `ctr -n k8s.io containers info ${id}`))).toEqual(infoKeys(fixture('ctr-info-sandbox.json')));
    // host-local 0.8+: "ID\r\nIFNAME", no newline at the end.
    const lease = ssh('node1', `f=$(grep -l -r ${id} /var/lib/cni/networks/cbr0); od -An -c "$f" | tr -s ' \\n' ' '`);
    const fixtureLease = readFileSync(join(V, 'host-local', '0.8+', '10.244.1.7'), 'utf8');
    expect(lease.replace(id!.split('').join(' '), 'ID').trim()).toBe('ID \\r \\n e t h 0');
    expect(fixtureLease).toMatch(/^[0-9a-f]{64}\r\neth0$/);
  });

  it('containerd stopped under running pods: nothing of the live pod is an orphan, its traces are unverified and named why; --fix of every kind leaves it as it was', () => {
    const before = ssh('node2', LIVE);
    const uid = uidOf(before);
    expect(before).toMatch(/^task [0-9a-f]{64} \d+ net:/m);
    expect(before).toMatch(/^lease /m);
    ssh('node2', 'systemctl stop containerd');
    try {
      const r = audit('node2');
      const h = hostOf(r.report, 'node2');
      expect(JSON.stringify(h.findings)).not.toContain(uid);
      // What the node alone proves dead still is: the lost sandboxes' netns no process is in, their veths.
      expect([...new Set(h.findings.map((f) => f.kind))].sort()).toEqual(['orphan-netns', 'orphan-veth']);
      // The lost pods' dirs, cgroups and leases cannot be judged: containerd would have to say.
      expect(h.warnings).toEqual([
        expect.stringMatching(/^2 pod dirs unverified \(.*\): containerd is not running, so no runtime proves their pods gone; audit again once it answers$/),
        expect.stringMatching(/^2 pod cgroups unverified/),
        expect.stringMatching(/^2 IPAM leases unverified/),
      ]);
      const fixed = audit('node2', '--fix', NODE_KINDS, '--yes');
      expect(fixed.code, fixed.stderr).toBe(0);
      expect(ssh('node2', LIVE)).toBe(before);
    } finally {
      ssh('node2', 'systemctl start containerd');
    }
  });

  for (const [as, strip] of [
    ['1.5 to 1.6.10 (no sandbox-uid)', 'sandbox-uid'],
    ['1.4 (no sandbox-uid, -name, -namespace)', 'sandbox-(uid|name|namespace)'],
  ] as const) {
    it(`a live pod's bundles as containerd ${as} writes them: the audit finds it, the lost pods' traces are orphans; --fix of every kind leaves it as it was`, () => {
      ssh('node1', `for f in ${TASKS}/*/config.json; do sed -i -E 's/"io\\.kubernetes\\.cri\\.${strip}":"[^"]*",?//g' "$f"; done`);
      expect(ssh('node1', `cat ${TASKS}/*/config.json`)).not.toMatch(new RegExp(`io\\.kubernetes\\.cri\\.${strip}`));
      const before = ssh('node1', LIVE);
      const r = audit('node1');
      const h = hostOf(r.report, 'node1');
      expect(JSON.stringify(h.findings)).not.toContain(uidOf(before));
      expect(h.warnings ?? []).toEqual([]);
      if (strip === 'sandbox-uid') {
        // The lost pods' traces, proven dead by a runtime that answers.
        expect([...new Set(h.findings.map((f) => f.kind))].sort()).toEqual(NODE_KINDS.split(',').sort());
      }
      const fixed = audit('node1', '--fix', NODE_KINDS, '--yes');
      expect(fixed.code, fixed.stderr).toBe(0);
      expect(ssh('node1', LIVE)).toBe(before);
    });
  }

  it("Debian's own etcd.service beside a worker's residue: the reset exits 0 and leaves it running with its data; verify warns, the audit is silent", () => {
    ssh('node2', 'systemctl start etcd && ETCDCTL_API=3 etcdctl put owner not-kubernetes >/dev/null');
    const verify = decom(['verify', INVENTORY, 'node2', '--output', 'json']);
    const v = JSON.parse(verify.stdout) as { hosts: { findings: Finding[]; warnings?: string[] }[] };
    // (kubespray's etcd client certificates of a worker are residue: not its etcd's.)
    expect(v.hosts[0]!.findings.filter((f) => f.kind === 'etcd-process' || f.kind === 'etcd-data' || ['2379', '2380'].includes(f.subject))).toEqual([]);
    expect(v.hosts[0]!.warnings).toContainEqual(expect.stringMatching(/^etcd runs here \(pid \d+\) and nothing ties it to this cluster .*: left running; its ports 2379, 2380 would collide with a control-plane rejoin$/));
    expect(JSON.stringify(audit('node2').report)).not.toMatch(/etcd/);
    const run = decom(['run', INVENTORY, 'node2', '--playbook', 'reset', '--yes']);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(ssh('node2', 'systemctl is-active etcd; ETCDCTL_API=3 etcdctl get owner --print-value-only').trim()).toBe('active\nnot-kubernetes');
    expect(ssh('node2', 'ls -d /var/lib/etcd/default/member')).toMatch(/member/);
  });
});
