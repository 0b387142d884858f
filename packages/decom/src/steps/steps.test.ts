// The reset's steps (src/steps) planned from a node state alone, their scripts run under dash
// with every command stubbed; the etcd interlock, the Node interlock every cluster step asks
// (and the local-data interlock after it), and the backup of the firewall dumps the probe read.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { NodeState } from '../probes/index.js';
import { emptyState as blank, stateFromSections } from '../probes/index.js';
import { hereDocument } from '../util/run.js';
import type { StepContext } from '../engine/step.js';
import { STEPS } from './index.js';
import { etcdInterlock } from './services.js';
import { parseIptablesSave } from '../probes/parse.js';
import { clusterEtcd, findings, notes } from '../rules/residue.js';
import type { V1Node, V1PersistentVolume } from '@kubernetes/client-node';
import type { ClusterContext } from '../cluster/context.js';
import { tempDir } from '../../test/helpers/temp.js';

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
    // Judged and deleted on the node by delete_path (util/confine.ts), against the resolved path the probe gave.
    expect(argvOf(actions[1]!.script, ['delete_path'])).toBe("delete_path|/|/etc/cni/net.d/it's \"odd\".conf|\n");
    const judged = plan('files', state({ paths, mounts, resolved: new Map([['/var/lib/kubelet/plugins', '/data/kubelet/plugins']]) }));
    expect(argvOf(judged[0]!.script, ['delete_path'])).toBe('delete_path|/|/var/lib/kubelet/plugins|/data/kubelet/plugins|\n');
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
  // An etcd of this cluster: kubespray's environment file is here.
  const s = (etcd: NodeState['etcd']) => state({ ...(etcd ? { etcd } : {}), paths: [{ kind: 'etcd-config', path: '/etc/etcd.env' }] });

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

  it("an etcd is the cluster's only on evidence: a package's etcd serving no cluster is left running, its ports a warning", () => {
    const etcd = { pid: 700, ppid: 1, name: 'etcd', args: '/usr/bin/etcd', start: 5 };
    // Debian's etcd.service: defaults, a healthy cluster of one, on localhost.
    const view = { endpoint: 'http://127.0.0.1:2379', memberId: 'a', members: [{ id: 'a', name: 'node3', isLearner: false, peerURLs: ['http://localhost:2380'], clientURLs: ['http://localhost:2379'] }], health: [{ endpoint: 'http://localhost:2379', healthy: true }] };
    const debian = state({
      pid1: 'systemd', processes: new Map([[700, etcd]]), runningUnits: new Set(['etcd.service']), etcd: view,
      listeners: [2379, 2380].map((port) => ({ addr: '127.0.0.1', port, holders: [{ name: 'etcd', pid: 700 }] })),
      paths: [{ kind: 'etcd-data', path: '/var/lib/etcd/member' }],
      etcdGroup: { addresses: ['node1', '10.0.0.1'], self: false },
    });
    expect(clusterEtcd(debian)).toBeUndefined();
    expect(findings(debian)).toEqual([]);
    expect(notes(debian)).toEqual([
      "etcd runs here (pid 700) and nothing ties it to this cluster (no kubeadm manifest, no kubespray etcd.env or member certificate, not on the inventory's etcd hosts): left running; its ports 2379, 2380 would collide with a control-plane rejoin; /var/lib/etcd/member left (it may be its data)",
    ]);
    expect(STEPS.etcd!.plan(debian, ctx({ graceSec: 10 }))).toEqual([]);
    expect(STEPS.etcd!.refuse!(debian, ctx())).toBeUndefined();
    // Each piece of evidence makes it the cluster's: stopped, its data removed, its ports findings.
    const cases: [string, Partial<NodeState>][] = [
      ["kubespray's etcd.env", { paths: [...debian.paths, { kind: 'etcd-config', path: '/etc/etcd.env' }] }],
      ["kubeadm's manifest", { paths: [...debian.paths, { kind: 'static-pod-manifest', path: '/etc/kubernetes/manifests/etcd.yaml' }] }],
      ["the inventory's etcd group", { etcdGroup: { addresses: ['node3'], self: true } }],
      ["a peer URL on an etcd host", { etcd: { ...view, members: [{ ...view.members[0]!, peerURLs: ['http://10.0.0.1:2380'] }] } }],
    ];
    for (const [why, over] of cases) {
      const ours = { ...debian, ...over };
      expect(clusterEtcd(ours), why).toBeDefined();
      expect(findings(ours).map((f) => f.kind).filter((k) => k === 'etcd-data' || k === 'etcd-process' || k === 'listening-port').sort(), why).toEqual(['etcd-data', 'etcd-process', 'listening-port', 'listening-port']);
      expect(STEPS.etcd!.plan(ours, ctx({ graceSec: 10 })).map((a) => a.what), why).toEqual(['systemctl disable --now etcd.service', 'stop etcd (700)', 'archive etcd data to /var/backups/decom/R-etcd-data/etcd-data.tar.gz, then remove etcd data /var/lib/etcd/member']);
      // Archived before it goes: the archive is made, or nothing is removed.
      expect(STEPS.etcd!.plan(ours, ctx({ graceSec: 10 })).at(-1)?.script, why).toMatch(/tar -C \/ --one-file-system -czf '\/var\/backups\/decom\/R-etcd-data\/etcd-data\.tar\.gz' 'var\/lib\/etcd\/member' \|\| exit 1\ndelete_path '\/' '\/var\/lib\/etcd\/member' \|\| exit 1$/);
    }
  });
});

describe("the Node interlock: every cluster step's refusal, asked once per host", () => {
  const CLUSTER_STEPS = ['drain', 'volumes', 'etcd-member', 'delete-node'];
  const node = (machineID: string, labels: Record<string, string> = {}): V1Node => ({ metadata: { name: 'node1', labels }, status: { nodeInfo: { machineID } as never } });
  /** A host's cluster side whose API has this Node (undefined: none), counting the reads of it. */
  const cluster = (n: V1Node | undefined, over: Partial<ClusterContext> = {}, pvs: V1PersistentVolume[] = []) => {
    const reads: string[] = [];
    const c = {
      host: { name: 'node1', address: '10.0.0.1', vars: {}, groups: ['all'] }, nodeName: 'node1', nodeNamed: false, leaving: new Set(['node1']), etcdPeers: [], etcdLeaving: [],
      options: { allowLastControlPlane: false, nodeIsDown: false, allowQuorumLoss: false, allowLocalData: false },
      kube: {
        server: 'https://api',
        core: {
          readNode: async ({ name }: { name: string }) => (reads.push(name), n ?? Promise.reject({ code: 404 })),
          listNode: async () => ({ items: n ? [n] : [], metadata: {} }),
          listPersistentVolume: async () => (reads.push('persistentvolumes'), { items: pvs, metadata: {} }),
          listPodForAllNamespaces: async () => ({ items: [], metadata: {} }),
        },
      },
      ...over,
    } as unknown as ClusterContext;
    return { c, reads };
  };
  const refuse = (step: string, c: ClusterContext, s: NodeState | undefined) => STEPS[step]!.cluster!.refuse!(c, s);

  it('each cluster step alone refuses a host that is another machine than its Node, before its own checks', async () => {
    for (const step of CLUSTER_STEPS) {
      expect(await refuse(step, cluster(node('other')).c, state()), step).toBe(
        'node1 (10.0.0.1) has machine-id m, but Node node1 reports other: the inventory address is another machine than the Node; refusing to drain and delete it',
      );
    }
  });

  it('reads the Node once per host, whichever step asks first, and keeps it for the steps after', async () => {
    const { c, reads } = cluster(node('m'));
    expect(await refuse('volumes', c, state())).toBeUndefined();
    expect(await refuse('delete-node', c, state())).toBeUndefined();
    expect(reads).toEqual(['node1', 'persistentvolumes']);
    expect(c.node?.metadata?.name).toBe('node1');
  });

  it('the local-data interlock: after the Node interlock, once per host, whichever cluster step asks first', async () => {
    const local: V1PersistentVolume = {
      metadata: { name: 'ssd' },
      spec: { local: { path: '/mnt/ssd' }, nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node1'] }] }] } } },
      status: { phase: 'Available' },
    };
    const pinned = node('m', { 'kubernetes.io/hostname': 'node1' });
    for (const step of CLUSTER_STEPS) {
      expect(await refuse(step, cluster(pinned, {}, [local]).c, state()), step).toMatch(/^Node node1 holds the only copy of local data: PersistentVolume ssd \(local \/mnt\/ssd; no claim, Available; no pod on the node uses it\); /);
    }
    // Another machine: the Node interlock's refusal comes first, and no volume is listed.
    const other = cluster(node('other', { 'kubernetes.io/hostname': 'node1' }), {}, [local]);
    expect(await refuse('drain', other.c, state())).toMatch(/is another machine than the Node/);
    expect(other.reads).toEqual(['node1']);
    const { c, reads } = cluster(pinned, { options: { allowLastControlPlane: false, nodeIsDown: false, allowQuorumLoss: false, allowLocalData: true } as never }, [local]);
    for (const step of CLUSTER_STEPS) expect(await refuse(step, c, state()), step).toBeUndefined();
    expect(reads).toEqual(['node1', 'persistentvolumes']);
  });

  it('refuses another hostname unless the inventory names the Node, the last control plane, and a kubelet whose Node is gone', async () => {
    expect(await refuse('delete-node', cluster(node('m')).c, state({ hostname: 'db1' }))).toBe(
      'node1 (10.0.0.1) says its hostname is "db1", not the Node\'s name "node1": refusing (set decom_node_name or kube_override_hostname in the inventory when the Node is named otherwise)',
    );
    expect(await refuse('delete-node', cluster(node('m'), { nodeNamed: true }).c, state({ hostname: 'db1' }))).toBeUndefined();
    expect(await refuse('delete-node', cluster(node('m', { 'node-role.kubernetes.io/control-plane': '' })).c, state())).toBe(
      "Node node1 is the cluster's last control-plane node: removing it ends the cluster; pass --allow-last-control-plane if that is the intent",
    );
    const kubelet = state({ processes: new Map([[42, { pid: 42, ppid: 1, name: 'kubelet', args: 'kubelet', start: 1 } as never]]) });
    expect(await refuse('delete-node', cluster(undefined).c, kubelet)).toMatch(/^node1 has a kubelet, but the API at https:\/\/api has no Node node1: /);
    expect(await refuse('delete-node', cluster(undefined).c, state())).toBeUndefined();
    // --node-is-down: no state, so only the API side is asked.
    expect(await refuse('delete-node', cluster(node('other')).c, undefined)).toBeUndefined();
  });
});

describe('the backup', () => {
  const work = tempDir('decom-backup-');
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const fixture = (f: string) => readFileSync(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'iptables', f), 'utf8');
  const LEGACY = '# Generated by iptables-legacy-save v1.8.9\n*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n# Completed\n';
  /** The full probe's firewall sections, as splitSections gives them. */
  const probed = () =>
    stateFromSections(
      new Map([
        ['meta', 'hostname=node1\nmachine_id=m\npid1=systemd\nuid=0\ntool=iptables-nft-save\n'],
        ['iptables-nft', fixture('node-v4.nft.save')],
        ['ip6tables-nft', fixture('node-v6.nft.save')],
        ['iptables-legacy', LEGACY],
        ['ip6tables-legacy', ''],
        ['nft-tables', ''],
        ['ipvs', ''],
        ['ipsets', ''],
      ]),
    );
  /**
   * Runs the backup's script under dash into a folder of its own, with every *-save
   * program a stub that logs its call (and tar, ipset and nft absent): which files it
   * wrote, and which programs it ran.
   */
  function runBackup(s: NodeState): { files: Record<string, string>; saved: string } {
    const dir = mkdtempSync(join(work, 'run-'));
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    for (const p of ['iptables-nft-save', 'ip6tables-nft-save', 'iptables-legacy-save', 'ip6tables-legacy-save', 'iptables-save', 'ip6tables-save', 'tar']) {
      writeFileSync(join(bin, p), `#!/bin/sh\necho ${p} >> ${dir}/saved\necho '# saved on the node by ${p}'\n`, { mode: 0o755 });
    }
    const [a] = STEPS.backup!.plan(s, { ...ctx(), backupDir: join(dir, 'decom', 'R') });
    execFileSync('dash', ['-c', `PATH=${bin}:/usr/bin:/bin\nhas() { command -v "$1" >/dev/null; }\n${a!.script}`], { encoding: 'utf8' });
    const out = join(dir, 'decom', 'R');
    return {
      files: Object.fromEntries(readdirSync(out).map((f) => [f, readFileSync(join(out, f), 'utf8')])),
      saved: existsSync(join(dir, 'saved')) ? readFileSync(join(dir, 'saved'), 'utf8') : '',
    };
  }

  it('writes the iptables dumps the probe read, byte for byte, and runs no iptables-save', () => {
    const s = probed();
    const [a, ...rest] = STEPS.backup!.plan(s, ctx());
    expect(rest).toEqual([]);
    // The dump travels in the script (the round trip sends it on stdin), as a quoted here-document.
    expect(a!.script).toContain(`cat > '/var/backups/decom/R'/iptables-nft-v4.rules <<'DECOM_NFT_V4_EOF'\n${fixture('node-v4.nft.save')}DECOM_NFT_V4_EOF`);
    const { files, saved } = runBackup(s);
    expect(saved).toBe('');
    expect(files['iptables-nft-v4.rules']).toBe(fixture('node-v4.nft.save'));
    expect(files['iptables-nft-v6.rules']).toBe(fixture('node-v6.nft.save'));
    expect(files['iptables-legacy-v4.rules']).toBe(LEGACY);
    // An empty dump (no legacy IPv6 table) is no file; the sums name what is there.
    expect(Object.keys(files).sort()).toEqual(['SHA256SUMS', 'iptables-legacy-v4.rules', 'iptables-nft-v4.rules', 'iptables-nft-v6.rules']);
    expect(files.SHA256SUMS).toMatch(/^[0-9a-f]{64} {2}iptables-legacy-v4\.rules\n/);
  });

  it("saves on the node what the state holds no dump of: the firewall not probed, or the nft backend read again in part since", () => {
    const partly = stateFromSections(new Map([['meta', 'hostname=node1\n'], ['cni-nat', '#family 4\n-P PREROUTING ACCEPT\n']]), probed());
    const { files, saved } = runBackup(partly);
    expect(saved.split('\n').filter(Boolean)).toEqual(['iptables-nft-save', 'ip6tables-nft-save']);
    expect(files['iptables-nft-v4.rules']).toBe('# saved on the node by iptables-nft-save\n');
    expect(files['iptables-legacy-v4.rules']).toBe(LEGACY);
  });

  it('picks a here-document tag no line of the dump is', () => {
    expect(hereDocument('cat', 'a\nEOF\nEOF_1\n', 'EOF')).toBe("cat <<'EOF_2'\na\nEOF\nEOF_1\nEOF_2");
    expect(hereDocument('cat', 'no newline', 'EOF')).toBe("cat <<'EOF'\nno newline\nEOF");
  });
});
