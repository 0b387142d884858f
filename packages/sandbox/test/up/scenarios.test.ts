// What the kubespray-leftovers scenario plants, read on the nodes over SSH
// (test/helpers/facts.ts), with the nodes' isolation and `down` leaving the host as it was:
// a snapshot of the whole host before and after, so it runs alone (vitest.config.ts
// HOST_WIDE). The other scenarios: scenarios-planted.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, down, hostSnapshot, nodes, ports, ssh, up } from '../../../decom/test/helpers/sandbox.js';
import { facts, holders, lines, mounts, parentCmdline, shimOf, type Facts } from '../../../decom/test/helpers/facts.js';
import { cniNetns, expectUserObjects } from './planted.js';

describe('scenario kubespray-leftovers (systemd), with isolation and a clean teardown', () => {
  let before: ReturnType<typeof hostSnapshot>;
  let cp: Facts;
  let worker: Facts;
  beforeAll(() => {
    before = hostSnapshot();
    up(['--nodes', '2', '--scenario', 'kubespray-leftovers']);
    cp = facts('node1');
    worker = facts('node2');
  });
  afterAll(() => down());

  it('runs the static pods under the kubelet, in containerd, holding the control-plane ports', () => {
    expect(lines(cp.manifests).sort()).toEqual(['etcd.yaml', 'kube-apiserver.yaml', 'kube-controller-manager.yaml', 'kube-scheduler.yaml']);
    expect(lines(worker.manifests)).toEqual(['nginx-proxy.yaml']);
    expect(cp.kubeletActive.trim()).toBe('active');
    expect(cp.kubeletEnabled.trim()).toBe('enabled');
    const held = holders(cp.listen);
    for (const p of [6443, 2379, 2380, 10257, 10259, 10249, 10256, 9099]) {
      expect(held.has(p), `port ${p}`).toBe(true);
      expect(shimOf('node1', held.get(p)!), `shim of :${p}`).toMatch(/containerd-shim-runc-v2 -namespace k8s\.io/);
    }
    expect(ports(cp.listen)).toEqual(expect.arrayContaining([10250, 10248]));
    expect(holders(worker.listen).get(6443)).toBeDefined(); // nginx-proxy
    const apiserver = ssh('node1', `ctr -n k8s.io containers ls -q 'labels."io.kubernetes.pod.name"==kube-apiserver-node1'`);
    expect(lines(apiserver)).toHaveLength(2); // the sandbox and the container
    expect(lines(cp.shims).length).toBeGreaterThanOrEqual(8);
  });

  it('plants pods on the pod network through CRI and the CNI plugins: cni-* netns, veths on cni0, leases, per-pod chains; and a cali* link', () => {
    // coredns and web by the bridge plugin, Calico's traces by hand.
    expect(cniNetns(cp)).toHaveLength(3);
    expect(lines(cp.cni0Ports)).toHaveLength(2);
    for (const l of lines(cp.cni0Ports)) expect(l).toMatch(/^veth[0-9a-f]{8}$/);
    // The CRI knows every pod the node runs; bridge's masquerade chain per pod, portmap's DNAT chain for the hostPort pod.
    const cri = lines(cp.criPods);
    expect(cri.length).toBeGreaterThanOrEqual(8);
    for (const p of cri) expect(p).toMatch(/ SANDBOX_READY$/);
    expect(cri.some((p) => / kube-system\/coredns-/.test(p))).toBe(true);
    expect(lines(cp.iptNft).filter((l) => /^:CNI-[0-9a-f]{24} /.test(l))).toHaveLength(2);
    expect(lines(cp.iptNft).filter((l) => /^:CNI-DN-[0-9a-f]{21} /.test(l))).toHaveLength(1);
    expect(cp.iptNft).toMatch(/--dport 18080 -j DNAT --to-destination 10\.244\.1\.\d+:18080/);
    expect(lines(cp.cniResults)).toHaveLength(4); // each pod's bridge result and its loopback's
    expect(lines(cp.links)).toEqual(expect.arrayContaining(['cni0', 'flannel.1', 'vxlan.calico']));
    expect(lines(cp.links).some((l) => /^cali[0-9a-f]{11}$/.test(l))).toBe(true);
    const sandboxes = new Set(lines(cp.k8sContainers));
    const leases = lines(cp.leases);
    expect(leases).toHaveLength(2);
    for (const l of leases) expect(sandboxes.has(l.split(' ')[1] as string), l).toBe(true);
  });

  it('mounts pod volumes under /var/lib/kubelet: emptyDir, projected token, CSI staged and published', () => {
    const m = mounts(cp.mountinfo);
    expect(m.some((t) => /^\/var\/lib\/kubelet\/pods\/[0-9a-f-]{36}\/volumes\/kubernetes\.io~empty-dir\/cache$/.test(t))).toBe(true);
    expect(m.some((t) => /\/volumes\/kubernetes\.io~projected\/kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/.test(t))).toBe(true);
    expect(m.some((t) => /^\/var\/lib\/kubelet\/plugins\/kubernetes\.io\/csi\/csi\.sandbox\.decom\.io\/[0-9a-f]{32}\/globalmount$/.test(t))).toBe(true);
    const published = m.find((t) => /\/volumes\/kubernetes\.io~csi\/pvc-[0-9a-f-]{36}\/mount$/.test(t));
    expect(published).toBeDefined();
    expect(ssh('node1', `cat '${published}/PV-DATA'`)).toMatch(/^persistent data of pvc-/);
  });

  it('writes KUBE-, CNI-, flannel and cali- rules in both iptables backends, and kube-proxy nftables tables', () => {
    for (const dump of [cp.iptNft, cp.iptLegacy]) {
      for (const chain of [':KUBE-SERVICES', ':KUBE-POSTROUTING', ':KUBE-FORWARD', ':KUBE-FIREWALL', ':KUBE-KUBELET-CANARY', ':CNI-HOSTPORT-DNAT', ':FLANNEL-FWD', ':cali-FORWARD']) {
        expect(dump).toContain(chain);
      }
      expect(dump).toContain('-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES');
    }
    expect(cp.nftTables).toContain('table ip kube-proxy');
    expect(cp.nftTables).toContain('table ip6 kube-proxy');
  });

  it('leaves kubeconfigs, PKI, kubelet state, CNI config and etcd data', () => {
    expect(lines(cp.files)).toEqual(
      expect.arrayContaining([
        '/etc/kubernetes/admin.conf',
        '/etc/kubernetes/kubelet.conf',
        '/etc/kubernetes/pki/ca.crt',
        '/var/lib/kubelet/config.yaml',
        '/var/lib/kubelet/pki/kubelet-client-current.pem',
        '/etc/cni/net.d/10-containerd-net.conflist',
        '/var/lib/etcd/member/wal',
      ]),
    );
    expect(lines(worker.files)).not.toContain('/etc/kubernetes/admin.conf');
    expect(ssh('node1', 'openssl x509 -noout -subject -in /etc/kubernetes/pki/ca.crt')).toContain('CN = kubernetes');
  });

  it('plants what is not Kubernetes\' too', () => {
    expectUserObjects('node1', cp);
    expectUserObjects('node2', worker);
  });

  it('runs its kubelet standalone: no API, and `sandbox api` says so', () => {
    expect(ssh('node1', 'cat /proc/$(pgrep -x kubelet)/cmdline | tr "\\0" " "')).not.toContain('--kubeconfig');
    const r = decom(['sandbox', 'api', 'start']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe('decom: this sandbox has no Kubernetes API: bring it up with `decom sandbox up --api` (or a cluster scenario)');
  });

  it('restarts a killed static-pod container while its manifest is there, and stops it when the manifest goes', async () => {
    const old = holders(facts('node1').listen).get(6443)!;
    ssh('node1', `kill -9 ${old}`);
    let now: number | undefined;
    for (let i = 0; i < 100 && (now === undefined || now === old); i++) {
      await new Promise((r) => setTimeout(r, 200));
      now = holders(ssh('node1', 'ss -Hltnp "sport = :6443"')).get(6443);
    }
    expect(now).toBeDefined();
    expect(now).not.toBe(old);
    expect(parentCmdline('node1', now!)).toMatch(/containerd-shim/);

    ssh('node1', 'mv /etc/kubernetes/manifests/kube-scheduler.yaml /root/');
    let still = true;
    for (let i = 0; i < 100 && still; i++) {
      await new Promise((r) => setTimeout(r, 200));
      still = ssh('node1', 'ss -Hltn "sport = :10259"').trim() !== '';
    }
    expect(still).toBe(false);
  });

  it('keeps every node invisible to the host and to the other nodes', () => {
    const host = hostSnapshot();
    expect(host.listening).not.toEqual(expect.arrayContaining([6443]));
    for (const p of [2379, 2380, 10250, 10256, 10257, 8081]) expect(host.listening).not.toContain(p);
    expect(host.netns.filter((n) => n.startsWith('cni-') || n === 'app-vpn')).toEqual([]);
    expect(host.links.filter((l) => /^(cni0|flannel|vxlan\.calico|cali|veth|app-veth)/.test(l))).toEqual([]);
    expect(host.mounts.filter((t) => t.startsWith('/var/lib/kubelet') || t === '/srv/appdata')).toEqual([]);
    expect(host.iptablesNft + host.iptablesLegacy).not.toMatch(/KUBE-|APP-FIREWALL|APP-LEGACY|cali-|FLANNEL/);
    expect(host.nft).not.toContain('kube-proxy');
    const hostPids = new Set(host.processes);
    expect(hostPids.has('httpd')).toBe(true); // node processes are visible to the host's PID view...
    const n1 = nodes().find((n) => n.name === 'node1')!;
    expect(ssh('node2', 'ps -e -o comm= | sort -u')).not.toContain('etcd'); // ...but not across nodes
    expect(ssh('node2', 'ip netns list')).not.toMatch(new RegExp(cniNetns(cp).join('|')));
    expect(ports(worker.listen)).not.toContain(2379);
    expect(ssh('node2', `ps -e -o pid= | wc -l`).trim()).not.toBe('0');
    expect(ssh('node1', 'cat /proc/1/comm').trim()).toBe('systemd');
    expect(n1.pid).toBeGreaterThan(1);
  });

  it('down leaves the host exactly as it was before up', () => {
    down();
    expect(hostSnapshot()).toEqual(before);
  });
});

