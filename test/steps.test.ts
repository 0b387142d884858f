import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { NodeState } from '../src/probes/index.js';
import { emptyState as blank } from '../src/probes/index.js';
import type { StepContext } from '../src/engine/step.js';
import { STEPS } from '../src/steps/index.js';
import { etcdInterlock } from '../src/steps/services.js';
import { parseIptablesSave } from '../src/probes/parse.js';
import { findings } from '../src/verify/rules.js';

const state = (over: Partial<NodeState> = {}): NodeState => ({ ...blank(), hostname: 'node1', machineId: 'm', pid1: 'systemd', ...over });
const ctx = (params: Record<string, unknown> = {}): StepContext => ({
  runId: 'R', backupDir: '/var/backups/decom/R', host: 'node1', vars: {}, params, operatorBackupDir: '/tmp/b', before: new Set(),
});
const plan = (step: string, s: NodeState, params: Record<string, unknown> = {}) =>
  STEPS[step]!.plan(s, ctx({ ...(STEPS[step]!.params.parse({}) as object), ...params }));
/** Runs an action's script through dash with every command stubbed as an echo: what it would run, argv by argv. */
const argvOf = (script: string, cmds: string[]) =>
  execFileSync('dash', ['-c', `${cmds.map((c) => `${c}() { printf '%s|' ${c} "$@"; echo; }`).join('\n')}\n${script}`], { encoding: 'utf8' });

describe('steps plan from the state alone', () => {
  it('unmounts deepest first, and quotes any target literally', () => {
    const mounts = ['/var/lib/kubelet/pods/u/volumes/a', '/var/lib/kubelet/pods/u/volumes/a/b c\nd', '/srv/appdata', '/run/netns/cni-1'].map((target) => ({ target, source: 'tmpfs', fstype: 'tmpfs' }));
    const actions = plan('mounts', state({ mounts }));
    expect(actions.map((a) => a.what)).toEqual(['unmount /var/lib/kubelet/pods/u/volumes/a/b c\nd', 'unmount /var/lib/kubelet/pods/u/volumes/a']);
    expect(argvOf(actions[0]!.script, ['umount', 'mountpoint'])).toBe('umount|--|/var/lib/kubelet/pods/u/volumes/a/b c\nd|\n');
  });

  it('never deletes a path with a mount below it, and deletes only the topmost paths', () => {
    const paths = [
      { kind: 'kubelet-state' as const, path: '/var/lib/kubelet/pods' },
      { kind: 'kubelet-state' as const, path: '/var/lib/kubelet/pods/u' },
      { kind: 'kubelet-state' as const, path: '/var/lib/kubelet/plugins' },
      { kind: 'cni-config' as const, path: "/etc/cni/net.d/it's \"odd\".conf" },
    ];
    const mounts = [{ target: '/var/lib/kubelet/pods/u/volumes/x', source: 's', fstype: 'tmpfs' }];
    const actions = plan('files', state({ paths, mounts }));
    expect(actions.map((a) => a.what)).toEqual(['delete /var/lib/kubelet/plugins', "delete /etc/cni/net.d/it's \"odd\".conf"]);
    expect(argvOf(actions[1]!.script, ['rm'])).toBe("rm|-rf|--one-file-system|--|/etc/cni/net.d/it's \"odd\".conf|\n");
  });

  it('deletes pod-side links before the bridge, by name only', () => {
    const links = [{ name: 'cni0' }, { name: 'veth1', master: 'cni0' }, { name: 'eth0' }, { name: 'app-veth0' }, { name: 'cali123456' }];
    expect(plan('links', state({ links })).map((a) => a.what)).toEqual(['delete link veth1', 'delete link cali123456', 'delete link cni0']);
  });

  it('deletes cni-* network namespaces only', () => {
    expect(plan('netns', state({ netns: ['cni-a', 'app-vpn'] })).map((a) => a.what)).toEqual(['delete network namespace cni-a']);
  });

  it('waits for the kubelet only while it is healthy, and says the node decides', () => {
    const s = state({
      paths: [{ kind: 'static-pod-manifest', path: '/etc/kubernetes/manifests/kube-apiserver.yaml' }],
      staticPods: [{ file: '/etc/kubernetes/manifests/kube-apiserver.yaml', name: 'kube-apiserver', namespace: 'kube-system' }],
      containers: [{ id: 'abc', runtime: 'containerd', kind: 'sandbox', pod: 'kube-system/kube-apiserver-node1' }],
    });
    expect(plan('static-pods', s).map((a) => a.nodeDecides !== undefined)).toEqual([false]);
    const healthy = plan('static-pods', { ...s, kubeletHealthy: true });
    expect(healthy.map((a) => a.what)).toEqual(['move 1 manifest to /var/backups/decom/R/manifests: kube-apiserver.yaml', 'wait up to 60s for the kubelet to stop kube-system/kube-apiserver-node1']);
    expect(healthy[1]!.nodeDecides).toBeDefined();
    // --check: the next step sees the static pod's sandbox gone only when the kubelet will remove it
    expect(STEPS['static-pods']!.after({ ...s, kubeletHealthy: true }, ctx({ timeoutSec: 60 })).containers).toEqual([]);
    expect(STEPS['static-pods']!.after(s, ctx({ timeoutSec: 60 })).containers).toHaveLength(1);
  });

  it('removes Kubernetes chains in one restore per backend and family, nothing else', () => {
    const iptables = parseIptablesSave(
      '*filter\n:INPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n:APP-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A INPUT -j APP-FIREWALL\nCOMMIT\n',
      'legacy',
      4,
    );
    const [a, ...rest] = plan('firewall', state({ iptables }));
    expect(rest).toEqual([]);
    expect(a!.script).toContain('iptables-legacy-restore --wait=10 --noflush');
    expect(a!.script).toMatch(/-D INPUT -j KUBE-FIREWALL\n/);
    expect(a!.script).not.toMatch(/APP-FIREWALL/);
  });

  it('never takes a user chain or rule that only mentions Kubernetes in its name or comment', () => {
    const iptables = parseIptablesSave(
      '*filter\n:INPUT ACCEPT [0:0]\n:ALLOW-KUBE-API - [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -m comment --comment "office to KUBE-API" -j ALLOW-KUBE-API\n-A INPUT -j KUBE-FIREWALL\n-A ALLOW-KUBE-API -p tcp --dport 6443 -j ACCEPT\nCOMMIT\n',
      'nft',
      4,
    );
    expect(findings(state({ iptables })).map((f) => f.subject)).toEqual(['KUBE-FIREWALL', 'INPUT']);
    const [a] = plan('firewall', state({ iptables }));
    expect(a!.script).not.toContain('ALLOW-KUBE-API');
    expect(a!.script).toContain('-D INPUT -j KUBE-FIREWALL');
  });

  it('never takes a process named like a property of a plain object', () => {
    const processes = new Map([[7, { pid: 7, ppid: 1, name: 'constructor', args: 'constructor', start: 1 }]]);
    expect(plan('kubelet', state({ processes }))).toEqual([]);
  });

  it('stops the kubelet through systemd on systemd nodes, by signal otherwise', () => {
    const processes = new Map([[42, { pid: 42, ppid: 1, name: 'kubelet', args: '/usr/bin/kubelet', start: 777 }]]);
    expect(plan('kubelet', state({ processes, runningUnits: new Set(['kubelet.service']) })).map((a) => a.what)).toEqual([
      'systemctl disable --now kubelet.service',
      'stop kubelet (42) if systemd left it running',
    ]);
    const plain = plan('kubelet', state({ processes, pid1: 'tini' }));
    expect(plain.map((a) => a.what)).toEqual(['stop kubelet (42)']);
    expect(plain[0]!.script).toContain('stop_procs 10 42:777');
  });
});

describe('the etcd interlock', () => {
  const members = [
    { id: 'a', name: 'node1', isLearner: false, peerURLs: [], clientURLs: [] },
    { id: 'b', name: 'node2', isLearner: false, peerURLs: [], clientURLs: [] },
    { id: 'c', name: 'node3', isLearner: false, peerURLs: [], clientURLs: [] },
  ];
  const health = (n: number) => members.map((m, i) => ({ endpoint: m.name, healthy: i < n }));
  const s = (etcd: NodeState['etcd']) => state({ ...(etcd ? { etcd } : {}) });

  it('refuses a voting member of a healthy cluster of more than one', () => {
    expect(etcdInterlock(s({ endpoint: 'e', memberId: 'a', members, health: health(3) }))).toMatch(/voting member of a healthy 3-member cluster/);
    expect(etcdInterlock(s({ endpoint: 'e', memberId: 'a', members, health: health(2) }))).toMatch(/voting member/);
  });

  it('lets a single member, a learner, a cluster without quorum and a node without etcd go', () => {
    expect(etcdInterlock(s(undefined))).toBeUndefined();
    expect(etcdInterlock(s({ endpoint: 'e', memberId: 'a', members: [members[0]!], health: health(1) }))).toBeUndefined();
    expect(etcdInterlock(s({ endpoint: 'e', memberId: 'a', members: [{ ...members[0]!, isLearner: true }, members[1]!, members[2]!], health: health(3) }))).toBeUndefined();
    expect(etcdInterlock(s({ endpoint: 'e', memberId: 'a', members, health: health(1) }))).toBeUndefined();
  });

  it('refuses when etcd runs but cannot be asked', () => {
    expect(etcdInterlock(s({ endpoint: 'e', members: [], health: [], error: 'etcdctl could not reach the local member' }))).toMatch(/could not tell/);
  });
});
