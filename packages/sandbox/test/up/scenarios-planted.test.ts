// What the other sandbox scenarios plant, read on the nodes over SSH (test/helpers/facts.ts):
// orphaned-shims, docker-runtime, force-deleted-pods and clean, and init-less nodes
// (--init none). Each on its worker's own instance; kubespray-leftovers, with the host
// snapshot, is scenarios.test.ts.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { down, ports, ssh, up } from '../../../decom/test/helpers/sandbox.js';
import { ancestors, facts, holders, lines, mounts, parentCmdline, shimOf, type Facts } from '../../../decom/test/helpers/facts.js';
import { cniNetns, expectUserObjects } from './planted.js';

describe('scenario orphaned-shims (systemd)', () => {
  let cp: Facts;
  beforeAll(() => {
    up(['--nodes', '2', '--scenario', 'orphaned-shims']);
    cp = facts('node1');
  });
  afterAll(() => down());

  it('leaves containerd stopped, the kubelet stopped and disabled, no manifests', () => {
    expect(cp.containerd.trim()).toBe('');
    expect(cp.kubeletActive.trim()).toBe('inactive');
    expect(cp.kubeletEnabled.trim()).toBe('disabled');
    expect(lines(cp.manifests)).toEqual([]);
  });

  it('leaves shims and their containers holding ports, and one container without a shim', () => {
    expect(lines(cp.shims).length).toBeGreaterThanOrEqual(4);
    const held = holders(cp.listen);
    for (const p of [2379, 2380, 10257, 10259, 10256]) {
      expect(shimOf('node1', held.get(p)!), `shim of :${p}`).toMatch(/containerd-shim/);
    }
    const orphan = held.get(6443)!;
    expect(orphan).toBeDefined();
    expect(ancestors('node1', orphan)).toEqual(['/lib/systemd/systemd']);
    // The systemd driver's pod slice: its container scope went, the process stayed.
    expect(ssh('node1', `cat /proc/${orphan}/cgroup`)).toMatch(/kubepods\.slice\/kubepods-besteffort\.slice\/kubepods-besteffort-pod/);
    expectUserObjects('node1', cp);
  });
});

describe('scenario docker-runtime (systemd)', () => {
  let cp: Facts;
  beforeAll(() => {
    up(['--nodes', '2', '--scenario', 'docker-runtime']);
    cp = facts('node1');
  });
  afterAll(() => down());

  it("runs Kubernetes' containers as k8s_* in Docker, next to the user's own container", () => {
    const names = lines(cp.dockerNames);
    expect(names.some((n) => /^k8s_POD_kube-apiserver-node1_kube-system_[0-9a-f-]{36}_0$/.test(n))).toBe(true);
    expect(names.some((n) => /^k8s_kube-apiserver_kube-apiserver-node1_kube-system_/.test(n))).toBe(true);
    expect(names.some((n) => /^k8s_kube-proxy_kube-proxy-[0-9a-f]{5}_kube-system_/.test(n))).toBe(true);
    expect(names).toContain('app-registry');
    const held = holders(cp.listen);
    expect(ssh('node1', `cat /proc/${held.get(6443)}/cgroup`)).toMatch(/kubepods\/besteffort\/pod/);
    expect(lines(facts('node2').dockerNames).filter((n) => n.startsWith('k8s_kube-apiserver'))).toEqual([]);
    expectUserObjects('node1', cp);
  });
});

describe('scenario force-deleted-pods (systemd)', () => {
  let f: Facts;
  beforeAll(() => {
    up(['--nodes', '1', '--scenario', 'force-deleted-pods']);
    f = facts('node1');
  });
  afterAll(() => down());

  it('leaves netns, veths, leases and mounted pod dirs of sandboxes containerd no longer has', () => {
    expect(cniNetns(f)).toHaveLength(3);
    expect(lines(f.cni0Ports)).toHaveLength(3);
    const live = new Set(lines(f.k8sContainers));
    const leases = lines(f.leases).map((l) => l.split(' ')[1] as string);
    expect(leases).toHaveLength(3);
    expect(leases.filter((s) => live.has(s))).toHaveLength(1);
    expect(lines(f.k8sTasks)).toHaveLength(2); // the one live pod: sandbox + container
    // The runtime lost its state: its CRI knows only the live pod, while the dead pods'
    // masquerade and hostPort chains and their cgroups stay.
    expect(lines(f.criPods).map((p) => p.split(' ').slice(1).join(' '))).toEqual([expect.stringMatching(/^kube-system\/coredns-\S+ SANDBOX_READY$/)]);
    expect(lines(f.iptNft).filter((l) => /^:CNI-[0-9a-f]{24} /.test(l))).toHaveLength(3);
    expect(lines(f.iptNft).filter((l) => /^:CNI-DN-[0-9a-f]{21} /.test(l))).toHaveLength(2);
    expect(lines(f.slices).filter((u) => /^kubepods-besteffort-pod[0-9a-f_]{36}\.slice$/.test(u))).toHaveLength(3);
    const podMounts = mounts(f.mountinfo).filter((t) => t.startsWith('/var/lib/kubelet/pods/'));
    expect(new Set(podMounts.map((t) => t.split('/')[5])).size).toBe(2);
    expect(podMounts.length).toBe(6);
    expectUserObjects('node1', f);
  });
});

describe('scenario clean (systemd)', () => {
  let f: Facts;
  beforeAll(() => {
    up(['--nodes', '1', '--scenario', 'clean']);
    f = facts('node1');
  });
  afterAll(() => down());

  it("has nothing of Kubernetes' and everything of the user's", () => {
    expect(lines(f.manifests)).toEqual([]);
    expect(lines(f.k8sContainers)).toEqual([]);
    expect(cniNetns(f)).toEqual([]);
    expect(lines(f.links).filter((l) => /^(cni0|flannel|vxlan|cali|veth)/.test(l))).toEqual([]);
    expect(f.iptNft + f.iptLegacy).not.toMatch(/KUBE-|CNI-|cali-|FLANNEL/);
    expect(f.nftTables).not.toContain('kube-proxy');
    expect(mounts(f.mountinfo).filter((t) => t.startsWith('/var/lib/kubelet'))).toEqual([]);
    expect(lines(f.files)).toEqual(['/etc/app/app.conf']);
    expect(lines(f.kubeletProc)).toEqual([]);
    expect(lines(f.shims)).toHaveLength(1); // the user's container
    expect(ports(f.listen).filter((p) => [6443, 2379, 2380, 10248, 10249, 10250, 10256, 10257, 10259].includes(p))).toEqual([]);
    expectUserObjects('node1', f);
  });
});

describe('init-less nodes (--init none)', () => {
  afterEach(() => down());

  it('plants kubespray-leftovers with the kubelet and containerd as plain processes', () => {
    up(['--nodes', '1', '--init', 'none', '--scenario', 'kubespray-leftovers']);
    const f = facts('node1');
    expect(ssh('node1', 'cat /proc/1/comm').trim()).toBe('tini');
    expect(lines(f.kubeletProc)).toHaveLength(1);
    expect(lines(f.containerd)).toHaveLength(1);
    for (const p of [6443, 2379, 10257, 10259, 10250]) expect(ports(f.listen)).toContain(p);
    expect(cniNetns(f)).toHaveLength(3);
    // The cgroupfs driver: the kubelet's QoS tree, the pods' cgroups below it.
    expect(lines(f.podCgroups).some((d) => /\/kubepods\/besteffort\/pod[0-9a-f-]{36}$/.test(d))).toBe(true);
    expectUserObjects('node1', f);
  });

  it('plants orphaned-shims: containerd gone, a container re-parented to PID 1', () => {
    up(['--nodes', '1', '--init', 'none', '--scenario', 'orphaned-shims']);
    const f = facts('node1');
    expect(f.containerd.trim()).toBe('');
    expect(lines(f.kubeletProc)).toEqual([]);
    const held = holders(f.listen);
    expect(parentCmdline('node1', held.get(6443)!)).toMatch(/^\/usr\/bin\/tini/);
    expect(shimOf('node1', held.get(2379)!)).toMatch(/containerd-shim/);
  });
});
