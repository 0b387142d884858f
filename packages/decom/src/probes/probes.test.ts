// The probe's parsers (src/probes/parse.ts) on crictl's JSON (test/fixtures/crictl) and on
// command output written here, and the residue rules (src/rules/residue.ts) on states built from
// them: what is Kubernetes', what is another application's, and the footprint (routes, ipsets,
// the installation, and what is only a warning).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  parseCrictl, parseCtr, parseDocker, parseIpvs, parseIptablesSave, parseLinks, parseMountinfo, parseProcs, parseSs,
  parseSystemctlShow, splitSections, parseRoutes, parseInstalled, parseDockerImages, parseDns,
} from './parse.js';
import { findings, notes } from '../rules/residue.js';
import type { NodeState } from './state.js';
import { emptyState as blank, stateFromSections } from './index.js';

const fixture = (f: string) => readFileSync(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'crictl', f), 'utf8');

/** What the probe's two greps print for these processes: [pid, ppid, comm, argv]. */
function procs(list: [number, number, string, string[]][]): ReturnType<typeof parseProcs> {
  // grep -H prefixes every line, also the second line of a value holding a line break.
  const lines = (pid: number, file: string, text: string) => text.split('\n').map((l) => `/proc/${pid}/${file}:${l}`);
  const stat = list.flatMap(([pid, ppid, comm]) => lines(pid, 'stat', `${pid} (${comm}) S ${ppid} ${pid} ${pid} 0 -1 4194560`)).join('\n');
  const cmdline = list
    .filter(([, , , argv]) => argv.length)
    .flatMap(([pid, , , argv]) => lines(pid, 'cmdline', `${argv.join('\0')}\0`))
    .join('\n');
  return parseProcs(`${stat}\n`, `${cmdline}\n`);
}

const emptyState = (): NodeState => ({ ...blank(), hostname: 'n', machineId: 'm', pid1: 'systemd' });

describe('probe parsers', () => {
  it("reads crictl's JSON (pods and containers) into sandboxes and containers", () => {
    const c = parseCrictl(fixture('pods.json'), fixture('containers.json'));
    expect(c).toEqual([
      { id: '7c5d52d2e6a13d7a2b4e2f0ec3bd6d7f6c1c5ef3e1ba7d2d03a5b8f0a1c2d3e4', runtime: 'containerd', kind: 'sandbox', pod: 'kube-system/kube-apiserver-node1', state: 'SANDBOX_READY', podUid: '4b4b2b1c0d6a9b9a8f7e6d5c4b3a2918', configSource: 'file' },
      { id: 'e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f', runtime: 'containerd', kind: 'sandbox', pod: 'kube-system/coredns-7c65d6cfc9-x2x4q', state: 'SANDBOX_NOTREADY', podUid: '8d1c5c0e-2f44-4a53-9d7a-2f6f3b7f1d11', configSource: 'api' },
      { id: 'a3f9c1d2e3b4a5968778695a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c', runtime: 'containerd', kind: 'container', name: 'kube-apiserver', pod: 'kube-system/kube-apiserver-node1', state: 'CONTAINER_RUNNING', sandboxId: '7c5d52d2e6a13d7a2b4e2f0ec3bd6d7f6c1c5ef3e1ba7d2d03a5b8f0a1c2d3e4', podUid: '4b4b2b1c0d6a9b9a8f7e6d5c4b3a2918' },
      { id: 'b1c2d3e4f5a60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90', runtime: 'containerd', kind: 'container', name: 'coredns', pod: 'kube-system/coredns-7c65d6cfc9-x2x4q', state: 'CONTAINER_EXITED', sandboxId: 'e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f', podUid: '8d1c5c0e-2f44-4a53-9d7a-2f6f3b7f1d11' },
    ]);
    expect(parseCrictl('', '')).toEqual([]);
    expect(parseCrictl('not json', '{')).toEqual([]);
  });

  it('reads ctr ids and task bundles (CRI annotations, init PID), including bundles containerd no longer lists', () => {
    const b = '/run/containerd/io.containerd.runtime.v2.task/k8s.io';
    const bundles = [
      `${b}/aaa/config.json:"io.kubernetes.cri.container-type":"sandbox"`,
      `${b}/aaa/config.json:"io.kubernetes.cri.sandbox-name":"etcd-node1"`,
      `${b}/aaa/config.json:"io.kubernetes.cri.sandbox-namespace":"kube-system"`,
      `${b}/aaa/config.json:"io.kubernetes.cri.sandbox-uid":"3f2b0a4c9d8e7f6a5b4c3d2e1f0a9b8c"`,
      `${b}/bbb/config.json:"io.kubernetes.cri.container-type":"container"`,
      `${b}/bbb/config.json:"io.kubernetes.cri.container-name":"etcd"`,
      `${b}/aaa/init.pid:120`,
      `${b}/bbb/init.pid:130`,
    ].join('\n');
    const running = procs([[120, 50, 'sleep', ['/bin/sleep', '2147483647']]]);
    expect(parseCtr('aaa\nccc\n#answered\n', bundles, running)).toEqual([
      { id: 'aaa', runtime: 'containerd', kind: 'sandbox', pod: 'kube-system/etcd-node1', podUid: '3f2b0a4c9d8e7f6a5b4c3d2e1f0a9b8c', pid: 120, state: 'running' },
      { id: 'ccc', runtime: 'containerd', kind: 'unknown', state: 'no task' },
      { id: 'bbb', runtime: 'containerd', kind: 'container', name: 'etcd', pid: 130, state: 'exited, task bundle left (containerd does not list it)' },
    ]);
  });

  it("reads cri-dockerd's k8s_ Docker names", () => {
    expect(parseDocker('abc\tk8s_POD_kube-proxy-x1_kube-system_0a-1b_0\trunning\ndef\tk8s_kube-proxy_kube-proxy-x1_kube-system_0a-1b_0\texited\n')).toEqual([
      { id: 'abc', runtime: 'docker', kind: 'sandbox', name: 'k8s_POD_kube-proxy-x1_kube-system_0a-1b_0', state: 'running', pod: 'kube-system/kube-proxy-x1', podUid: '0a-1b' },
      { id: 'def', runtime: 'docker', kind: 'container', name: 'k8s_kube-proxy_kube-proxy-x1_kube-system_0a-1b_0', state: 'exited', pod: 'kube-system/kube-proxy-x1', podUid: '0a-1b' },
    ]);
  });

  it('decodes mountinfo octal escapes (space, tab, newline, backslash) in targets and sources', () => {
    const text = [
      '36 35 98:0 / /var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/my\\040data\\012line rw,relatime shared:1 - tmpfs tmp\\011fs rw',
      '37 35 0:40 / /back\\134slash rw - tmpfs tmpfs rw',
    ].join('\n');
    expect(parseMountinfo(text)).toEqual([
      { target: '/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/my data\nline', fstype: 'tmpfs', source: 'tmp\tfs' },
      { target: '/back\\slash', fstype: 'tmpfs', source: 'tmpfs' },
    ]);
  });

  it('reads ss listeners with every holder, IPv4, IPv6 and wildcard', () => {
    const text = [
      'LISTEN 0      4096         *:6443        *:* users:(("httpd",pid=1117,fd=3))',
      'LISTEN 0      128       [::]:22       [::]:* users:(("sshd",pid=158,fd=4),("sshd",pid=200,fd=4))',
      'LISTEN 0      9    198.18.0.11:2380 0.0.0.0:*',
    ].join('\n');
    expect(parseSs(text)).toEqual([
      { addr: '*', port: 6443, holders: [{ name: 'httpd', pid: 1117 }] },
      { addr: '[::]', port: 22, holders: [{ name: 'sshd', pid: 158 }, { name: 'sshd', pid: 200 }] },
      { addr: '198.18.0.11', port: 2380, holders: [] },
    ]);
  });

  it('names processes by argv[0], not by the 15-character comm', () => {
    const p = procs([
      [1, 0, 'systemd', ['/lib/systemd/systemd']],
      [284, 1, 'containerd-shim', ['/usr/bin/containerd-shim-runc-v2', '-namespace', 'k8s.io', '-id', 'abc']],
      [2, 0, 'kthreadd', []],
    ]);
    expect([...p.values()].map((x) => [x.pid, x.ppid, x.name, x.args])).toEqual([
      [1, 0, 'systemd', '/lib/systemd/systemd'],
      [284, 1, 'containerd-shim-runc-v2', '/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id abc'],
      [2, 0, '[kthreadd]', '[kthreadd]'],
    ]);
  });

  it('reads hostile process names and arguments whole: ") " and line breaks in comm, line breaks in argv', () => {
    // A comm of "x) S 1 (y\n9 (kubelet" must not make up a process 9, nor change this one's parent.
    const p = procs([
      [40, 7, 'x) S 1 (y\n9 (kubelet', ['/opt/my app/evil', 'a\nb', 'c']],
      [41, 40, 'sh', ['sh', '-c', 'echo "/proc/9/stat:9 (kubelet) S 1"']],
    ]);
    expect([...p.values()].map((x) => [x.pid, x.ppid, x.name, x.args])).toEqual([
      [40, 7, 'evil', '/opt/my app/evil a\nb c'],
      [41, 40, 'sh', 'sh -c echo "/proc/9/stat:9 (kubelet) S 1"'],
    ]);
  });

  it('reads ip -o link, iptables-save, /proc/net/ip_vs and systemctl show', () => {
    expect(parseLinks('5: vethec53bb8d@if2: <BROADCAST,MULTICAST,UP> mtu 1500 qdisc noqueue master cni0 state UP mode DEFAULT\n7: flannel.1: <BROADCAST> mtu 1450\n')).toEqual([
      { name: 'vethec53bb8d', master: 'cni0' },
      { name: 'flannel.1' },
    ]);
    // Where a veth's peer is: the netns by name, or by id when ip has no name for it.
    expect(parseLinks([
      '5: veth72721f6b@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue master cni0 state UP mode DEFAULT group default qlen 1000\\    link/ether 92:93:cd:97:a9:4b brd ff:ff:ff:ff:ff:ff link-netns cni-2fd2f851-0151-8351-f70b-5a0d6f36c486',
      '9: cali1a2b3c4d5e6@if3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000\\    link/ether ee:ee:ee:ee:ee:ee brd ff:ff:ff:ff:ff:ff link-netnsid 4',
    ].join('\n'))).toEqual([
      { name: 'veth72721f6b', master: 'cni0', peerNetns: 'cni-2fd2f851-0151-8351-f70b-5a0d6f36c486' },
      { name: 'cali1a2b3c4d5e6', peerNetns: 'id:4' },
    ]);
    const t = parseIptablesSave('# Generated\n*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n', 'legacy', 4);
    expect(t).toEqual([{ backend: 'legacy', family: 4, table: 'nat', chains: ['PREROUTING', 'KUBE-SERVICES'], rules: [{ chain: 'PREROUTING', spec: '-A PREROUTING -j KUBE-SERVICES' }] }]);
    expect(parseIpvs('IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port Forward Weight ActiveConn InActConn\nTCP  0AE90001:01BB rr\n  -> C0A80001:192B      Masq    1      0          0\nTCP  [fd00:0000:0000:0000:0000:0000:0000:0001]:01BB rr\n')).toEqual(['TCP 10.233.0.1:443', 'TCP [fd00:0000:0000:0000:0000:0000:0000:0001]:443']);
    const u = parseSystemctlShow('Id=kubelet.service\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\n\nId=etcd.service\nLoadState=not-found\nActiveState=inactive\nUnitFileState=\n');
    expect(u.get('kubelet.service')).toEqual({ id: 'kubelet.service', load: 'loaded', active: 'active', fileState: 'enabled' });
    expect(u.get('etcd.service')?.load).toBe('not-found');
  });

  it("keeps sections apart by the node's key, so output cannot forge one even knowing the client's nonce", () => {
    const key = '0f8e4d2a-1b3c-4d5e-8f90-a1b2c3d4e5f6';
    const m = (name: string) => `\n@@decom-n1-${key} ${name}\n`;
    // The nonce is visible in /proc/PID/cmdline while the probe runs; the key is not.
    const out = `\n@@decom-n1 key ${key}\n${m('paths')}kubelet-state\t/var/lib/kubelet/x\n@@decom-n1 netns\n@@decom-n1 key ${'f'.repeat(36)}\0${m('netns')}/run/netns/cni-1\0${m('end')}`;
    const s = splitSections(out, 'n1');
    expect([...s.keys()]).toEqual(['paths', 'netns', 'end']);
    expect(s.get('paths')).toContain('@@decom-n1 netns');
    expect(splitSections(`\n@@decom-n1 key \n${m('end')}`, 'n1').size).toBe(0); // no key read: nothing trusted
  });

  it('names a process whose title was rewritten in place by its first word', () => {
    const p = procs([[7, 1, 'node', ['watchdog for /usr/bin/kubelet']], [8, 1, 'sshd', ['sshd: root@notty']]]);
    expect([...p.values()].map((x) => x.name)).toEqual(['watchdog', 'sshd:']);
  });
});

describe('residue rules', () => {
  it('reports a container process whose shim is gone, but not one under a shim', () => {
    const s = emptyState();
    s.processes = procs([
      [1, 0, 'systemd', ['/lib/systemd/systemd']],
      [50, 1, 'containerd-shim', ['/usr/bin/containerd-shim-runc-v2', '-namespace', 'k8s.io', '-id', 'abc', '-address', '/run/x']],
      [60, 50, 'httpd', ['/bin/httpd', '-f', '-p', '2379']],
      [70, 1, 'httpd', ['/bin/httpd', '-f', '-p', '6443']],
      [80, 1, 'containerd-shim', ['/usr/bin/containerd-shim-runc-v2', '-namespace', 'default', '-id', 'app', '-address', '/run/x']],
    ]);
    s.k8sCgroups = new Map([
      [60, '/kubepods/besteffort/podA/abc'],
      [70, '/kubepods/besteffort/podB/def'],
    ]);
    expect(findings(s)).toEqual([
      { kind: 'shim-process', subject: '50', detail: 'containerd-shim-runc-v2 -namespace k8s.io -id abc' },
      { kind: 'orphan-container-process', subject: '70', detail: 'httpd in /kubepods/besteffort/podB/def, no shim above it (parent 1)' },
    ]);
  });

  it("never reports another application's chains, netns, links, ports or mounts", () => {
    const s = emptyState();
    s.iptables = parseIptablesSave('*filter\n:INPUT ACCEPT [0:0]\n:APP-FIREWALL - [0:0]\n-A INPUT -m comment --comment "app: firewall" -j APP-FIREWALL\n-A APP-FIREWALL -p tcp --dport 8080 -j ACCEPT\nCOMMIT\n', 'nft', 4);
    s.netns = ['app-vpn'];
    s.links = [{ name: 'app-veth0' }, { name: 'eth0' }, { name: 'docker0' }, { name: 'veth1234', master: 'docker0' }];
    s.listeners = [{ addr: '*', port: 8081, holders: [{ name: 'httpd', pid: 9 }] }];
    s.mounts = [{ target: '/srv/appdata', fstype: 'tmpfs', source: 'app-data' }, { target: '/run/containerd/io.containerd.runtime.v2.task/default/app-cache/rootfs', fstype: 'overlay', source: 'overlay' }, { target: '/run/netns/app-vpn', fstype: 'nsfs', source: 'nsfs' }];
    s.nftTables = [{ family: 'inet', name: 'app-filter' }];
    s.units = new Map([['kubelet.service', { id: 'kubelet.service', load: 'loaded', active: 'inactive', fileState: 'disabled' }]]);
    expect(findings(s)).toEqual([]);
  });

  it("judges kubelet.service running by its cgroup, else by systemd's word, never by a wants link alone", () => {
    const unit = (s: NodeState) => findings(s).filter((f) => f.kind === 'kubelet-service').map((f) => f.detail.replace(/; a running.*$/, ''));
    // A state is judged as probed: each case is a state of its own.
    const s = (o: Partial<NodeState>): NodeState => ({ ...emptyState(), ...o });
    expect(unit(s({ runningUnits: new Set(['kubelet.service']) }))).toEqual(['running (its cgroup exists)']);
    // kubespray's reset removes the unit but not the wants link: no cgroup, and systemd says not-found.
    const systemd = (load: string, active: string, fileState: string) => s({ units: new Map([['kubelet.service', { id: 'kubelet.service', load, active, fileState }]]) });
    expect(unit(systemd('not-found', 'inactive', ''))).toEqual([]);
    expect(unit(systemd('masked', 'inactive', 'masked'))).toEqual([]);
    expect(unit(systemd('loaded', 'activating', ''))).toEqual(['activating, no unit file state']);
    expect(unit(systemd('loaded', 'inactive', 'enabled'))).toEqual(['inactive, enabled']);
  });
});

describe('the footprint: routes, ipsets, the installation, and what is only a warning', () => {
  it("keeps only routing daemons' routes (BIRD 12, kube-router 17, Felix 80), with what `ip route del` must match", () => {
    const r = parseRoutes(
      [
        '6 10.233.64.0/24 proto 12 ',
        '10.233.120.0/24 via 198.18.0.250 dev eth0 proto 12 ',
        '10.240.3.0/24 via 198.18.0.251 dev eth0 table 100 proto 17 metric 20 ',
        '10.233.121.0/24 via 198.18.0.252 dev eth0 proto 3 ',
        '192.0.2.0/24 via 198.18.0.253 dev eth0 proto 4 ',
        '198.18.0.0/24 dev eth0 proto 2 scope 253 src 198.18.0.11 ',
        '6 fd00:10:233::/64 dev lo proto 12 metric 1024 pref medium',
        '6 fd00:10:233::/64 dev lo proto 12 metric 1024 pref medium',
        'default via 198.18.0.1 dev eth0 proto 12 ',
        // iproute2 without -N: names.
        'blackhole 10.233.66.0/24 proto bird ',
      ].join('\n'),
    );
    expect(r.map((x) => [x.family, x.spec])).toEqual([
      [4, 'blackhole 10.233.64.0/24 proto 12'],
      [4, '10.233.120.0/24 proto 12'],
      [4, '10.240.3.0/24 table 100 proto 17 metric 20'],
      [6, 'blackhole fd00:10:233::/64 proto 12 metric 1024'],
      [4, 'blackhole 10.233.66.0/24 proto 12'],
    ]);
  });

  it("claims a routing daemon's routes only where its CNI shows it ran: another BIRD's are left, and said", () => {
    const routes = parseRoutes('6 10.233.64.0/24 proto 12 \n10.240.3.0/24 via 198.18.0.251 dev eth0 proto 17 ');
    const alone = { ...emptyState(), routes };
    expect(findings(alone)).toEqual([]);
    expect(notes(alone)).toEqual(['routes of a routing daemon left alone, since nothing shows a CNI ran here: blackhole 10.233.64.0/24 proto 12, 10.240.3.0/24 proto 17']);
    const calico = { ...alone, paths: [{ kind: 'cni-state' as const, path: '/var/lib/calico' }] };
    expect(findings(calico).filter((f) => f.kind === 'route').map((f) => f.subject)).toEqual(['blackhole 10.233.64.0/24 proto 12']);
    const both = { ...calico, ipsets: ['kube-router-pod-subnets'] };
    expect(findings(both).filter((f) => f.kind === 'route')).toHaveLength(2);
  });

  it("judges Docker references by who uses them, by reference or by image ID (cri-dockerd's way), and remembers what Kubernetes used", () => {
    const seen = parseDockerImages(
      [
        'use\tk8s_POD_web_default_u_0\tsha256:aaa',
        'use\tapp-registry\tregistry.k8s.io/busybox:sandbox',
        'image\tsha256:aaa\tregistry.k8s.io/pause:3.9',
        'image\tsha256:aaa\tregistry.k8s.io/busybox:sandbox',
        'image\tsha256:bbb\tapp/tools:1',
        'image\tsha256:ccc\tregistry.k8s.io/kube-proxy:v1.31.0',
        'image\tsha256:ddd\t<none>:<none>',
      ].join('\n'),
    );
    expect(seen).toEqual([
      { ref: 'registry.k8s.io/pause:3.9', k8s: true, other: false },
      { ref: 'registry.k8s.io/busybox:sandbox', k8s: true, other: true },
      { ref: 'app/tools:1', k8s: false, other: false },
      { ref: 'registry.k8s.io/kube-proxy:v1.31.0', k8s: false, other: false },
    ]);
    // Once the containers are gone, what Kubernetes used is still known.
    const later = parseDockerImages('image\tsha256:aaa\tregistry.k8s.io/pause:3.9\nimage\tsha256:bbb\tapp/tools:1', seen);
    expect(later).toEqual([{ ref: 'registry.k8s.io/pause:3.9', k8s: true, other: false }, { ref: 'app/tools:1', k8s: false, other: false }]);
    const s = { ...emptyState(), dockerImages: seen };
    expect(findings(s).map((f) => f.subject)).toEqual(['docker registry.k8s.io/pause:3.9', 'docker registry.k8s.io/kube-proxy:v1.31.0']);
  });

  it('reads the installation with the owners dpkg names, by the merged-/usr name too; a package-owned path is a warning, not residue', () => {
    const installed = parseInstalled(
      'installed-binary\t/usr/local/bin/kubelet\0installed-binary\t/usr/bin/etcd\0installed-unit\t/usr/lib/systemd/system/etcd.service\0bogus\t/x\0',
      'dpkg: /usr/bin/dpkg\netcd-server:amd64: /usr/bin/etcd\netcd-server: /lib/systemd/system/etcd.service\ndiversion by foo from: /usr/local/bin/kubelet\n',
      new Set(['dpkg']),
    );
    expect(installed).toEqual([
      { kind: 'installed-binary', path: '/usr/local/bin/kubelet' },
      { kind: 'installed-binary', path: '/usr/bin/etcd', owner: 'etcd-server:amd64' },
      { kind: 'installed-unit', path: '/usr/lib/systemd/system/etcd.service', owner: 'etcd-server' },
    ]);
    const s = { ...emptyState(), installed, ipsets: ['KUBE-CLUSTER-IP', 'cali40all-ipam-pools', 'cilium_node_set_v4', 'app-blocklist', 'KUBERNETES-ALLOW'], sysctl: ['/etc/sysctl.conf:69:net.ipv4.ip_forward=1'] };
    expect(findings(s).map((f) => `${f.kind} ${f.subject}`)).toEqual([
      'ipset KUBE-CLUSTER-IP',
      'ipset cali40all-ipam-pools',
      'ipset cilium_node_set_v4',
      'installed-binary /usr/local/bin/kubelet',
    ]);
    // dpkg present but silent (its database unreadable): nothing counts as unowned, so nothing is deleted.
    expect(parseInstalled('installed-binary\t/usr/local/bin/kubelet\0', '', new Set(['dpkg']))).toEqual([
      { kind: 'installed-binary', path: '/usr/local/bin/kubelet', owner: 'unknown: the package manager did not answer' },
    ]);
    expect(notes(s).join('\n')).toMatch(/kernel settings .*net\.ipv4\.ip_forward=1[\s\S]*\/usr\/bin\/etcd \(etcd-server:amd64\)/);
  });

  it("recognises a user's kubeconfig and a trust anchor by the operator's CA once the node's own PKI is gone", () => {
    const s: NodeState = {
      ...emptyState(),
      kubeconfigs: [{ path: '/home/bob/.kube/config', servers: ['https://lb:6443'], caBodies: ['CLUSTERCA'], caFiles: [] }, { path: '/home/alice/.kube/config', servers: ['https://staging:6443'], caBodies: ['OTHER'], caFiles: [] }],
      anchors: [{ path: '/usr/local/share/ca-certificates/kube-ca.crt', body: 'CLUSTERCA' }, { path: '/usr/local/share/ca-certificates/app-ca.crt', body: 'APPCA' }],
    };
    expect(findings(s).map((f) => f.kind)).toEqual([]);
    const known = findings({ ...s, operator: { caBodies: ['CLUSTERCA'], servers: [] } }).map((f) => `${f.kind} ${f.subject}`);
    expect(known).toEqual(['credential /home/bob/.kube/config', 'trust-anchor /usr/local/share/ca-certificates/kube-ca.crt']);
    // A kubeconfig for another cluster (the node still has its own CA, and it differs) is not taken at its word.
    const other = { ...s, clusterCAs: [{ path: '/etc/kubernetes/pki/ca.crt', body: 'NODECA' }], operator: { caBodies: ['CLUSTERCA'], servers: [] } };
    expect(findings(other).map((f) => f.kind)).toEqual([]);
    expect(notes(other).join('\n')).toContain('names another cluster');
    // A loopback server names no cluster.
    const loop = { ...s, operator: { caBodies: [], servers: ['https://127.0.0.1:6443'] }, kubeconfigs: [{ path: '/root/.kube/config', servers: ['https://127.0.0.1:6443'], caBodies: ['X'], caFiles: [] }] };
    expect(findings(loop).map((f) => f.kind)).toEqual([]);
  });
});

describe('the etcd data archives decom keeps', () => {
  it('are read from the files view and named in a note, never a finding: they hold the Secrets, the node is clean', () => {
    const archive = '/var/backups/decom/20261128T150000Z-1c5db2-etcd-data/etcd-data.tar.gz';
    const sections = new Map([['paths', ''], ['etcd-archives', `${archive}\0/var/backups/decom/x y-etcd-data/etcd-data.tar.gz\0`]]);
    const s = stateFromSections(sections, emptyState());
    expect(s.etcdArchives).toEqual([archive, '/var/backups/decom/x y-etcd-data/etcd-data.tar.gz']);
    expect(findings(s)).toEqual([]);
    expect(notes(s)).toEqual([
      `etcd data archived by decom and kept on the node: ${archive}, /var/backups/decom/x y-etcd-data/etcd-data.tar.gz; it holds every Secret of the cluster (remove it once it is not needed: decom run --remove-etcd-archive)`,
    ]);
    expect(notes(stateFromSections(new Map([['paths', ''], ['etcd-archives', '']]), s))).toEqual([]);
  });
});

describe('the dns view', () => {
  const sum = (text: string) => createHash('sha256').update(text).digest('hex');
  const record = (path: string, text: string, nodeSum: string) => `${path}\0file\0\0c\0${text}\0${nodeSum}  -\0`;

  it('keeps a file whose text is its bytes, and names, never judges, one whose bytes the text does not carry', () => {
    const resolv = '# Ansible entries BEGIN\nsearch default.svc.cluster.local svc.cluster.local\nnameserver 169.254.25.10\n# Ansible entries END\n';
    // A Latin-1 byte in the administrator's comment: decoded as U+FFFD, the text's sum is not the node's.
    const latin1 = Buffer.concat([Buffer.from('# caf'), Buffer.from([0xe9]), Buffer.from('\nsend host-name = gethostname();\n')]);
    const view = parseDns(record('/etc/resolv.conf', resolv, sum(resolv)) + record('/etc/dhcp/dhclient.conf', latin1.toString('utf8'), createHash('sha256').update(latin1).digest('hex')), '', '');
    expect(view.files).toEqual([
      { path: '/etc/resolv.conf', type: 'file', content: resolv },
      { path: '/etc/dhcp/dhclient.conf', type: 'file', unread: true },
    ]);
    expect(notes({ ...blank(), dns: view })).toContain('resolver files not judged, left as they are: decom cannot carry their text whole (over 64 KiB, not UTF-8, or holding a NUL): /etc/dhcp/dhclient.conf');
  });
});
