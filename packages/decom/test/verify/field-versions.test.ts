/**
 * What the field runs, on a systemd sandbox of real components (force-deleted-pods: a
 * runtime that lost its state beside a live pod, on each of three nodes; node1 and
 * node2 on containerd 2, node3 on Debian 12's 1.6):
 * - the fixtures of the versions the sandbox runs (containerd 2.x and 1.6.20, CNI
 *   plugins 1.9 and 1.1.1) are what its components write, so the version matrix
 *   cannot drift from them;
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
import { decom, down, ssh, STATE_DIR, up } from '../helpers/sandbox.js';
import { CRI_IDENTITY } from '../../src/probes/script.js';

const INVENTORY = join(STATE_DIR, 'hosts.yaml');
const V = join(import.meta.dirname, '..', 'fixtures', 'versions');
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
  beforeAll(() => up(['--nodes', '3', '--scenario', 'force-deleted-pods', '--containerd', '2,2,1.6']));
  afterAll(() => down());

  const keys = (text: string) => [...new Set([...text.matchAll(/"(io\.kubernetes\.cri\.[a-z.-]+)"/g)].map((m) => m[1] as string))].sort();
  // The sandbox-cpu and -memory annotations come only with the resources a real kubelet sends (fixtures README).
  const sized = /sandbox-(cpu|memory)/;
  /** The live pod's sandbox and container bundles (config.json, one line each) on a node. */
  const bundles = (node: string) => {
    const real = ssh(node, `for d in ${TASKS}/*/; do printf '%s\\n' "$(cat "$d/config.json")"; done`);
    return ['sandbox', 'container'].map((t) => lines(real).find((l) => l.includes(`"io.kubernetes.cri.container-type":"${t}"`)) as string);
  };
  const cgroupShape = (cfg: string) => /"cgroupsPath":"([^"]*)"/.exec(cfg)?.[1]?.replace(/[0-9a-f]{64}/g, 'ID').replace(/pod[0-9a-f_]{36}/, 'podUID').replace(/-(besteffort|burstable)-/, '-QOS-');
  const infoKeys = (text: string) => [...new Set([...text.matchAll(new RegExp(CRI_IDENTITY, 'g'))].map((m) => m[1] as string))].sort();
  const hostLocalLease = (node: string, id: string) => {
    // host-local 0.8+: "ID\r\nIFNAME", no newline at the end.
    const lease = ssh(node, `f=$(grep -l -r ${id} /var/lib/cni/networks/cbr0); od -An -c "$f" | tr -s ' \\n' ' '`);
    expect(lease.replace(id.split('').join(' '), 'ID').trim()).toBe('ID \\r \\n e t h 0');
    expect(readFileSync(join(V, 'host-local', '0.8+', '10.244.1.7'), 'utf8')).toMatch(/^[0-9a-f]{64}\r\neth0$/);
  };
  /**
   * A version's fixtures and the live pod's bundles on a node running it, whose CRI
   * annotations must be the fixtures', by name: what every version's check starts with.
   */
  const annotatedBundles = (node: string, version: string) => {
    const fixture = (f: string) => readFileSync(join(V, 'containerd', version, f), 'utf8');
    console.log(`${node}: ${ssh(node, 'containerd --version').trim()}`);
    const [sandbox, container] = bundles(node) as [string, string];
    expect(keys(sandbox)).toEqual(keys(fixture('sandbox-config.json')).filter((k) => !sized.test(k)));
    expect(keys(container)).toEqual(keys(fixture('container-config.json')));
    return { fixture, sandbox, container };
  };
  /** The keys of `real` that the fixture also has, in the order `real` has them: the fixture leaves fields out, never reorders. */
  const orderOf = (real: Record<string, unknown>, fixture: Record<string, unknown>) => Object.keys(real).filter((k) => k in fixture);

  it("the 2.x fixtures are what the sandbox's containerd 2 writes: bundles, annotations, `ctr containers info`, ctr's flags before arguments", () => {
    const { fixture, sandbox, container } = annotatedBundles('node1', '2.0');
    // The bundle: one compact line, fields in the runtime-spec's order, the namespaces as the fixture has them.
    for (const [real, f] of [[sandbox, 'sandbox-config.systemd.json'], [container, 'container-config.systemd.json']] as const) {
      const r = JSON.parse(real) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      const x = JSON.parse(fixture(f)) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(real, f).toBe(JSON.stringify(r));
      expect(orderOf(r, x), f).toEqual(Object.keys(x));
      expect(orderOf(r.linux, x.linux), f).toEqual(Object.keys(x.linux));
      // 2.0 vendors runtime-spec 1.2.0, 2.1 writes 1.2.1 (fixtures README): the same spec family.
      expect(r.ociVersion, f).toMatch(/^1\.2\.\d+$/);
      const ns = (n: { type: string; path?: string }[]) => n.map((e) => `${e.type}${e.path ? ` ${e.path.replace(/cni-[0-9a-f-]{36}$/, 'cni-UUID').replace(/\/proc\/\d+\//, '/proc/PID/')}` : ''}`);
      expect(ns(r.linux.namespaces), f).toEqual(ns(x.linux.namespaces));
      expect(cgroupShape(real), f).toBe(cgroupShape(fixture(f)));
    }
    // `ctr containers info`: 4-space JSON, the fields in the fixture's order, SandboxID as the fixture has it.
    const sandboxId = /"io\.kubernetes\.cri\.sandbox-id":"([0-9a-f]{64})"/.exec(sandbox)![1] as string;
    const containerId = /"cgroupsPath":"[^"]*:cri-containerd:([0-9a-f]{64})"/.exec(container)![1] as string;
    for (const [id, f] of [[sandboxId, 'ctr-info-sandbox.json'], [containerId, 'ctr-info-container.json']] as const) {
      const text = ssh('node1', `ctr -n k8s.io containers info ${id}`);
      const r = JSON.parse(text) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      const x = JSON.parse(fixture(f)) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(text, f).toMatch(/^\{\n {4}"ID": "[0-9a-f]{64}",\n {4}"Labels": \{\n {8}"/);
      expect(Object.keys(r), f).toEqual(Object.keys(x));
      expect(Object.keys(r.Extensions), f).toEqual(Object.keys(x.Extensions));
      expect(r.Extensions[Object.keys(x.Extensions)[0] as string].type_url, f).toBe(x.Extensions[Object.keys(x.Extensions)[0] as string].type_url);
      expect(r.Runtime.Name, f).toBe(x.Runtime.Name);
      expect(r.Runtime.Options?.type_url, f).toBe(x.Runtime.Options.type_url);
      expect(r.SandboxID, f).toBe(x.SandboxID === '' ? '' : sandboxId);
      expect(infoKeys(text), f).toEqual(infoKeys(fixture(f)));
    }
    // 2.x's ctr takes its flags before its arguments: after one, a flag is an argument (here, a filter ctr refuses).
    expect(lines(ssh('node1', `ctr -n k8s.io containers ls -q 'id==${sandboxId}'`))).toEqual([sandboxId]);
    expect(ssh('node1', `ctr -n k8s.io containers ls 'id==${sandboxId}' -q 2>&1 >/dev/null; echo "exit $?"`)).not.toMatch(/exit 0\n$/);
    hostLocalLease('node1', sandboxId);
  });

  it("the 1.6.11+ fixtures are what the sandbox's Debian 12 containerd 1.6.20 writes, with its CNI plugins 1.1.1", () => {
    const { fixture, sandbox } = annotatedBundles('node3', '1.6.11+');
    // The systemd driver's cgroupsPath, as the fixture writes it.
    expect(cgroupShape(sandbox)).toBe(cgroupShape(fixture('sandbox-config.systemd.json')));
    // `ctr containers info` names the pod with the same keys.
    const id = /"io\.kubernetes\.cri\.sandbox-id":"([0-9a-f]{64})"/.exec(sandbox)![1] as string;
    expect(infoKeys(ssh('node3', `ctr -n k8s.io containers info ${id}`))).toEqual(infoKeys(fixture('ctr-info-sandbox.json')));
    hostLocalLease('node3', id);
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
