/**
 * The versions the field runs, each written from its upstream source (fixtures/versions,
 * whose README names the file and tag): containerd 1.4 to 2.0's task bundles and
 * records, crictl's JSON before and after v1.31, host-local's leases before and after
 * 0.8, the kubelet's pod cgroups of both drivers on cgroup v1 and v2, kubespray's
 * crictl.yaml. Every parser, and the rules and plans built on them, runs over the
 * whole matrix. The probe's own script reads the bundles (laid out in a scratch dir).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyState, type NodeState } from './index.js';
import { CRI_IDENTITY, IPAM_LEASES_PROBE, K8S_BUNDLES, SPEC_NETNS, probeScript } from './script.js';
import { kubeCgroupLevel, parseCrictl, parseCrictlEndpoint, parseCtr, parseLeases, podUidOfProcessCgroup, sandboxNetns, splitSections } from './parse.js';
import { stateFromSections } from './index.js';
import { knownPods, nodeFindings } from '../rules/audit.js';
import { STEPS } from '../steps/index.js';
import type { StepContext } from '../engine/step.js';
import { tempDir } from '../../test/helpers/temp.js';

const V = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'versions');
const read = (...p: string[]) => readFileSync(join(V, ...p), 'utf8');
const CONTAINERD = ['1.4', '1.5', '1.6.0-1.6.10', '1.6.11+', '2.0'];
const UID = '3f1c2a9e-5b7d-4e2a-9c1f-0a2b3c4d5e6f';
const POD = 'kube-system/coredns-6d4b75cb6d-x2x7q';
const SANDBOX = `5d0c0a8f${'1'.repeat(56)}`;
const CONTAINER = `9e3b7c21${'2'.repeat(56)}`;
/** What each version names: sandbox-name/-namespace since 1.5 (1.4 has the log directory, which names both). */
const scratch = tempDir('decom-versions-');
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * The probe's containers view run on this machine as if no daemon ran (it asks no
 * client: containerd down), with the task bundle dir moved to a scratch copy.
 */
function probeBundles(bundles: Record<string, string>, pids: Record<string, number> = {}): NodeState {
  const dir = join(mkdtempSync(join(scratch, 'run-')), 'k8s.io');
  mkdirSync(dir);
  for (const [id, config] of Object.entries(bundles)) {
    mkdirSync(join(dir, id));
    writeFileSync(join(dir, id, 'config.json'), config);
    if (pids[id] !== undefined) writeFileSync(join(dir, id, 'init.pid'), String(pids[id]));
  }
  const nonce = 'f00d';
  // No daemon runs as far as this probe knows (a sandbox's containerd shows in this machine's /proc): no client is asked.
  const script = probeScript(nonce, new Set(['containers'])).replaceAll(K8S_BUNDLES, `${dir}/`).replace(/^ST=.*$/m, 'ST=');
  expect(script).toMatch(/^ST=$/m);
  const out = execFileSync('sh', ['-c', script], { encoding: 'utf8' });
  const st = stateFromSections(splitSections(out, nonce), { ...emptyState(), processes: new Map([[process.pid, { pid: process.pid, ppid: 1, name: 'node', args: 'node', start: 1 }]]) });
  return st;
}
/** What `grep -o -E CRI_IDENTITY` (the probe's ctr-info loop) prints of `ctr containers info`. */
const infoMatches = (file: string) => {
  try {
    return execFileSync('grep', ['-o', '-E', CRI_IDENTITY, file], { encoding: 'utf8' });
  } catch {
    return '';
  }
};

describe.each(CONTAINERD)('containerd %s', (version) => {
  for (const driver of ['cgroupfs', 'systemd'] as const) {
    const f = (kind: string) => read('containerd', version, `${kind}-config${driver === 'systemd' ? '.systemd' : ''}.json`);

    it(`${driver} driver, containerd stopped: the task bundles alone name the pod (log directory, cgroup path), running by its init PID`, () => {
      const s = probeBundles({ [SANDBOX]: f('sandbox'), [CONTAINER]: f('container') }, { [SANDBOX]: process.pid, [CONTAINER]: process.pid });
      const [sb, c] = [s.containers.find((x) => x.id === SANDBOX), s.containers.find((x) => x.id === CONTAINER)];
      expect(sb).toMatchObject({ kind: 'sandbox', podUid: UID, pod: POD, state: 'running', netns: expect.stringMatching(/^cni-/) });
      expect(c).toMatchObject({ kind: 'container', podUid: UID, pod: POD, name: 'coredns', sandboxId: SANDBOX, state: 'running' });
      // Not asked: containerd does not run here. Nothing says the bundles are left behind.
      expect(s.runtimes.find((r) => r.name === 'containerd')).toMatchObject({ running: false, answered: false });
      expect(sb?.state).not.toMatch(/does not list/);
    });

    it(`${driver} driver: with only the cgroup path left (every annotation stripped), the pod is still known`, () => {
      const strip = (cfg: string) => cfg.replace(/"annotations":\{[^}]*\},?/, '');
      const s = probeBundles({ [SANDBOX]: strip(f('sandbox')) });
      expect(s.containers[0]).toMatchObject({ podUid: UID, kind: 'unknown' });
    });
  }

  it("containerd answering, containers with no task: `ctr containers info` names the pod (the kubelet's labels)", () => {
    const info = [`@${SANDBOX}`, infoMatches(join(V, 'containerd', version, 'ctr-info-sandbox.json')), `@${CONTAINER}`, infoMatches(join(V, 'containerd', version, 'ctr-info-container.json'))].join('\n');
    const cs = parseCtr(`${SANDBOX}\n${CONTAINER}\n#answered\n`, '', new Map(), info);
    expect(cs).toEqual([
      { id: SANDBOX, runtime: 'containerd', kind: 'sandbox', pod: POD, podUid: UID, state: 'no task' },
      { id: CONTAINER, runtime: 'containerd', kind: 'container', pod: POD, podUid: UID, name: 'coredns', sandboxId: SANDBOX, state: 'no task' },
    ]);
  });

  it('a sandbox mid-teardown (stopped, no task, its netns empty): its containerd record names its netns, so while a kubelet runs its network is no orphan; with none it is', () => {
    // What the probe's ctr-info loop prints of it (crictl or not): the pod's names and the spec's netns path.
    const matches = execFileSync('grep', ['-o', '-E', `${CRI_IDENTITY}|${SPEC_NETNS}`, join(V, 'containerd', version, 'ctr-info-sandbox.json')], { encoding: 'utf8' });
    const netns = sandboxNetns('', `@${SANDBOX}\n${matches}`).get(SANDBOX);
    expect(netns).toBe('cni-4b8e2f1a-6c3d-9e7f-0a1b-2c3d4e5f6a7b');
    const lease = { file: '/var/lib/cni/networks/cbr0/10.244.1.7', network: 'cbr0', ip: '10.244.1.7', sandbox: SANDBOX };
    const tearingDown = (kubelet: boolean): NodeState => ({
      ...emptyState(),
      processes: new Map(kubelet ? [[900, { pid: 900, ppid: 1, name: 'kubelet', args: '/usr/local/bin/kubelet', start: 1 }]] : []),
      containers: [{ id: SANDBOX, runtime: 'containerd', kind: 'sandbox', pod: POD, podUid: UID, state: 'SANDBOX_NOTREADY', netns }],
      runtimes: [{ name: 'containerd', running: true, answered: true }],
      netns: [netns as string],
      links: [{ name: 'veth4b8e2f1a', master: 'cni0', peerNetns: netns as string }],
      pods: { ...emptyState().pods, netnsInodes: new Map([[netns as string, '4026532999']]), leases: [lease] },
    });
    const known = knownPods([{ metadata: { uid: UID, name: 'coredns-6d4b75cb6d-x2x7q', namespace: 'kube-system' } }]);
    expect(nodeFindings(tearingDown(true), known).findings).toEqual([]);
    expect(nodeFindings(tearingDown(false), known).findings.map((x) => `${x.kind} ${x.subject}`).sort()).toEqual([
      `orphan-ipam-lease ${lease.file}`,
      `orphan-netns ${netns}`,
      'orphan-veth veth4b8e2f1a',
    ]);
  });

  it('--no-api: the live pod is no orphan; a pod the runtime does not have is, once containerd answers; with containerd stopped it is unverified', () => {
    const live = probeBundles({ [SANDBOX]: read('containerd', version, 'sandbox-config.json') }, { [SANDBOX]: process.pid });
    const ORPHAN = '0b0b0b0b-1111-4222-8333-444444444444';
    const node = (answered: boolean): NodeState => ({
      ...live,
      containers: live.containers.map((c) => ({ ...c, state: 'running' })),
      runtimes: [{ name: 'containerd', running: answered, answered }],
      pods: { ...live.pods, dirs: [UID, ORPHAN], leases: [{ file: '/var/lib/cni/networks/cbr0/10.244.1.9', network: 'cbr0', ip: '10.244.1.9', sandbox: 'f'.repeat(64) }] },
      cgroups: { hierarchies: ['/sys/fs/cgroup'], kube: [`/kubepods/burstable/pod${UID}`, `/kubepods/besteffort/pod${ORPHAN}`].map((path) => ({ path, hierarchies: ['/sys/fs/cgroup'], ...kubeCgroupLevel(path)! })) },
    });
    const up = nodeFindings(node(true), undefined);
    expect(up.findings.map((x) => `${x.kind} ${x.subject}`).sort()).toEqual([
      'orphan-ipam-lease /var/lib/cni/networks/cbr0/10.244.1.9',
      `orphan-pod-cgroup /kubepods/besteffort/pod${ORPHAN}`,
      `orphan-pod-dir /var/lib/kubelet/pods/${ORPHAN}`,
    ]);
    expect(up.unverified).toEqual([]);
    const down = nodeFindings(node(false), undefined);
    expect(down.findings).toEqual([]);
    expect(down.unverified).toEqual([
      `1 pod dir unverified (/var/lib/kubelet/pods/${ORPHAN}): containerd is not running, so no runtime proves its pod gone; audit again once it answers`,
      `1 pod cgroup unverified (/kubepods/besteffort/pod${ORPHAN}): containerd is not running, so no runtime proves its pod gone; audit again once it answers`,
      '1 IPAM lease unverified (/var/lib/cni/networks/cbr0/10.244.1.9): containerd is not running, so no runtime proves its pod gone; audit again once it answers',
    ]);
    // With the API the live pod is known by its UID, whichever source gave it.
    expect(nodeFindings(node(true), knownPods([{ metadata: { uid: UID, name: 'coredns-6d4b75cb6d-x2x7q', namespace: 'kube-system' } }])).findings.some((x) => x.subject.includes(UID))).toBe(false);
  });
});

describe('a container whose pod cannot be read makes every pod trace unverified', () => {
  it('ctr containers info did not answer for one container', () => {
    const cs = parseCtr(`${SANDBOX}\n#answered\n`, '', new Map(), `@${SANDBOX}\n!unanswered\n`);
    const s: NodeState = { ...emptyState(), containers: cs, runtimes: [{ name: 'containerd', running: true, answered: true }], pods: { ...emptyState().pods, dirs: [UID] } };
    const j = nodeFindings(s, undefined);
    expect(j.findings).toEqual([]);
    expect(j.unverified[0]).toMatch(/^1 pod dir unverified .*the pod of 1 container could not be read \(5d0c0a8f11111: containerd did not answer `ctr containers info` for it\)/);
  });
});

describe('runtimes that cannot prove a pod gone', () => {
  const traces = (sections: Record<string, string>) => {
    const s = stateFromSections(new Map([['meta', 'hostname=n\npid1=systemd\nuid=0\ntool=crictl\ntool=ctr\n'], ['task-bundles', ''], ['ctr-containers', '#answered\n'], ...Object.entries(sections)]));
    return nodeFindings({ ...s, pods: { ...s.pods, dirs: [UID] } }, undefined);
  };
  it('a cri-dockerd node whose dockerd is stopped: Docker would start its pods again', () => {
    const j = traces({ runtimes: 'containerd installed\ncontainerd running\ncri-dockerd installed\n' });
    expect(j.findings).toEqual([]);
    expect(j.unverified[0]).toMatch(/: docker is not running, so/);
  });
  it('CRI-O beside a running containerd', () => {
    const j = traces({ runtimes: 'containerd installed\ncontainerd running\ncrio present\n' });
    expect(j.findings).toEqual([]);
    expect(j.unverified[0]).toMatch(/: CRI-O runs here and decom does not read its pods, so/);
  });
  it("crictl's answer cut off: not taken for an empty runtime (ctr's listing is read instead)", () => {
    const j = traces({ runtimes: 'containerd installed\ncontainerd running\n', 'crictl-endpoint': 'socket /run/containerd/containerd.sock\n', 'crictl-pods': '{"items": [{"id": "5d0c', 'ctr-containers': `${SANDBOX}\n#answered\n`, 'ctr-info': `@${SANDBOX}\n!unanswered\n` });
    expect(j.findings).toEqual([]);
    expect(j.unverified[0]).toMatch(/the pod of 1 container could not be read/);
  });
  it('every runtime answered and none has the pod: an orphan', () => {
    expect(traces({ runtimes: 'containerd installed\ncontainerd running\n' }).findings.map((f) => f.kind)).toEqual(['orphan-pod-dir']);
  });
});

describe('a runtime decom does not read', () => {
  it('crictl talks to CRI-O: its pods are not listed, so no trace is proven an orphan', () => {
    const s: NodeState = {
      ...emptyState(), runtimes: [{ name: 'containerd', running: true, answered: true }],
      crictl: { endpoint: 'unix:///run/crio/crio.sock', runtime: 'other' }, pods: { ...emptyState().pods, dirs: [UID] },
    };
    const j = nodeFindings(s, undefined);
    expect(j.findings).toEqual([]);
    expect(j.unverified).toEqual([`1 pod dir unverified (/var/lib/kubelet/pods/${UID}): the kubelet's runtime at unix:///run/crio/crio.sock is not one decom reads, so no runtime proves its pod gone; audit again once it answers`]);
  });
});

describe.each(['jsonpb', 'protojson'])('crictl %s', (form) => {
  it('pods and containers with their UID, a static pod by its config.source', () => {
    const cs = parseCrictl(read('crictl', form, 'pods.json'), read('crictl', form, 'containers.json'));
    expect(cs.find((c) => c.id === SANDBOX)).toMatchObject({ kind: 'sandbox', pod: POD, podUid: UID, configSource: 'api' });
    expect(cs.find((c) => c.id === CONTAINER)).toMatchObject({ kind: 'container', pod: POD, podUid: UID, sandboxId: SANDBOX, name: 'coredns' });
    expect(cs.find((c) => c.pod === 'kube-system/kube-apiserver-node1' && c.kind === 'sandbox')).toMatchObject({ configSource: 'file' });
    expect(cs.every((c) => c.podUid)).toBe(true);
  });
});

describe('host-local leases', () => {
  it.each(['before-0.8', '0.8+'])('%s: the probe reads the sandbox that holds each address', (v) => {
    const dir = join(scratch, `leases-${v}`, 'cbr0');
    mkdirSync(dir, { recursive: true });
    for (const f of readdirSync(join(V, 'host-local', v))) cpSync(join(V, 'host-local', v, f), join(dir, f));
    const out = execFileSync('sh', ['-c', IPAM_LEASES_PROBE.replaceAll('/var/lib/cni/networks', join(scratch, `leases-${v}`))], { encoding: 'utf8' });
    expect(parseLeases(out.replaceAll(join(scratch, `leases-${v}`), '/var/lib/cni/networks'))).toEqual([{ file: '/var/lib/cni/networks/cbr0/10.244.1.7', network: 'cbr0', ip: '10.244.1.7', sandbox: SANDBOX }]);
  });
});

describe('pod cgroups: both drivers, cgroup v1 and v2, every QoS class', () => {
  const rows = read('cgroups', 'paths.txt').split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.split('\t'));
  it.each(rows.map((r) => [r.slice(0, 4).join(' '), r[3], r[4]]))('%s', (_name, level, path) => {
    expect(kubeCgroupLevel(path as string)).toEqual({ level, uid: UID });
    expect(podUidOfProcessCgroup(path as string)).toBe(UID);
  });
});

describe("the runtime behind crictl (kubespray's crictl.yaml)", () => {
  it('cri-dockerd and containerd endpoints; crictl defaults by socket when there is no crictl.yaml', () => {
    expect(parseCrictlEndpoint(read('cri-dockerd', 'crictl.yaml'))).toEqual({ endpoint: 'unix:///var/run/cri-dockerd.sock', runtime: 'docker' });
    expect(parseCrictlEndpoint(read('containerd', 'crictl.yaml'))).toEqual({ endpoint: 'unix:///var/run/containerd/containerd.sock', runtime: 'containerd' });
    expect(parseCrictlEndpoint('socket /run/containerd/containerd.sock\n')).toEqual({ endpoint: '/run/containerd/containerd.sock', runtime: 'containerd' });
    expect(parseCrictlEndpoint('socket /var/run/dockershim.sock\nsocket /run/containerd/containerd.sock\n').runtime).toBe('docker');
  });
});

const ctx = (node: string): StepContext => ({ runId: 'R', backupDir: '/b', host: node, node, vars: {}, params: { timeoutSec: 60 }, operatorBackupDir: '/o', before: new Set() });

describe('plans on the matrix', () => {
  const docker = (id: string, name: string, state = 'running') => ({ id, runtime: 'docker' as const, kind: name.startsWith('k8s_POD_') ? ('sandbox' as const) : ('container' as const), name, state, pod: `kube-system/${name.split('_')[2]}`, podUid: name.split('_')[4] });
  const cri = (crictlRuntime: 'docker' | 'containerd'): NodeState => ({
    ...emptyState(),
    hostname: 'node3',
    pid1: 'systemd',
    tools: new Set(['crictl', 'ctr', 'docker']),
    crictl: { endpoint: crictlRuntime === 'docker' ? 'unix:///var/run/cri-dockerd.sock' : 'unix:///run/containerd/containerd.sock', runtime: crictlRuntime },
    processes: new Map([[50, { pid: 50, ppid: 1, name: 'containerd', args: '/usr/bin/containerd', start: 1 }], [60, { pid: 60, ppid: 1, name: 'dockerd', args: '/usr/bin/dockerd', start: 1 }]]),
    containers: [docker('a'.repeat(64), 'k8s_POD_kube-proxy-x1_kube-system_0a-1b_0'), docker('b'.repeat(64), 'k8s_kube-proxy_kube-proxy-x1_kube-system_0a-1b_0')],
    kubeletHealthy: true,
    staticPods: [{ file: '/etc/kubernetes/manifests/kube-proxy.yaml', name: 'kube-proxy', namespace: 'kube-system' }],
    paths: [{ kind: 'static-pod-manifest', path: '/etc/kubernetes/manifests/kube-proxy.yaml' }],
  });

  it('a cri-dockerd node: each container once, removed through the Docker API, never through crictl', () => {
    // What the probe reads there: crictl (through cri-dockerd) and docker list the same two containers.
    const [sb, c] = cri('docker').containers;
    const probed = stateFromSections(
      new Map([
        ['meta', 'hostname=node3\npid1=systemd\nuid=0\ntool=crictl\ntool=ctr\ntool=docker\n'],
        ['runtimes', 'containerd installed\ncontainerd running\ndocker running\n'],
        ['crictl-endpoint', read('cri-dockerd', 'crictl.yaml')],
        ['crictl-pods', JSON.stringify({ items: [{ id: sb!.id, metadata: { name: 'kube-proxy-x1', namespace: 'kube-system', uid: '0a-1b' }, state: 'SANDBOX_READY' }] })],
        ['crictl-containers', JSON.stringify({ containers: [{ id: c!.id, podSandboxId: sb!.id, metadata: { name: 'kube-proxy' }, state: 'CONTAINER_RUNNING' }] })],
        ['ctr-containers', '#answered\n'],
        ['task-bundles', ''],
        ['docker', `${sb!.id}\t${sb!.name}\trunning\n${c!.id}\t${c!.name}\trunning\n#answered\n`],
      ]),
    );
    expect(probed.crictl).toEqual({ endpoint: 'unix:///var/run/cri-dockerd.sock', runtime: 'docker' });
    expect(probed.containers.map((x) => `${x.runtime} ${x.kind} ${x.id.slice(0, 4)}`)).toEqual(['docker sandbox aaaa', 'docker container bbbb']);
    expect(probed.runtimes).toEqual([{ name: 'containerd', running: true, answered: true }, { name: 'docker', running: true, answered: true }]);
    const actions = STEPS.containers!.plan(cri('docker'), ctx('node3'));
    expect(actions.map((a) => a.what)).toEqual([expect.stringMatching(/^remove 2 Docker k8s_\* containers through the Docker API/)]);
    expect(actions.some((a) => /crictl/.test(a.script))).toBe(false);
  });

  it('a cri-dockerd node: the static-pod wait asks Docker, not containerd', () => {
    const s = { ...cri('docker'), containers: cri('docker').containers.map((c) => ({ ...c, pod: 'kube-system/kube-proxy-node3' })) };
    const [, wait] = STEPS['static-pods']!.plan(s, ctx('node3'));
    expect(wait?.script).toContain(`docker inspect -f '{{.State.Running}}' -- '${'a'.repeat(64)}'`);
    expect(wait?.script).not.toContain(K8S_BUNDLES);
  });

  it("static pods are NAME-NODE: kubespray's Node name (hostname differs) and kubeadm's (the hostname) alike, or the kubelet's config.source", () => {
    const apiserver = (node: string, extra = {}) => ({ id: `${node}`.padEnd(64, 'c'), runtime: 'containerd' as const, kind: 'sandbox' as const, pod: `kube-system/kube-apiserver-${node}`, state: 'SANDBOX_READY', ...extra });
    const node = (pod: NodeState['containers'][number], hostname: string): NodeState => ({
      ...emptyState(), hostname, pid1: 'systemd', kubeletHealthy: true, containers: [pod],
      staticPods: [{ file: '/etc/kubernetes/manifests/kube-apiserver.yaml', name: 'kube-apiserver', namespace: 'kube-system' }],
      paths: [{ kind: 'static-pod-manifest', path: '/etc/kubernetes/manifests/kube-apiserver.yaml' }],
    });
    const waits = (s: NodeState, n: string) => STEPS['static-pods']!.plan(s, ctx(n)).filter((a) => a.what.startsWith('wait'));
    // kubespray: the OS hostname is node3.example.internal, the Node (kube_override_hostname) node3.
    expect(waits(node(apiserver('node3'), 'node3.example.internal'), 'node3')).toHaveLength(1);
    // kubeadm: the Node is the hostname (the inventory name may be anything).
    expect(waits(node(apiserver('cp-1'), 'cp-1'), 'inventory-name')).toHaveLength(1);
    // Neither name, but crictl shows the kubelet's config.source: file.
    expect(waits(node(apiserver('renamed', { configSource: 'file' }), 'cp-1'), 'cp-2')).toHaveLength(1);
    expect(waits(node(apiserver('renamed', { configSource: 'api' }), 'cp-1'), 'cp-2')).toHaveLength(0);
  });
});
