/**
 * The rules of the field of 2026 on states built from parsed probe output: each node's
 * facts, the etcd data judged by the data dir the running etcd uses, what an
 * administrator may have written (warned about, purged only), and the state paths a
 * node's containerd config adds. The version lines are real prints of the runtimes the
 * sandbox runs.
 */
import { describe, expect, it } from 'vitest';
import { ALL_VIEWS, emptyState, probedElsewhere, VIEWS, type NodeState } from '../probes/index.js';
import { parseContainerdArgs, parseContainerdFiles, parseEtcdDirs, parseFacts } from '../probes/parse.js';
import { configDir, installPaths, probeBody, statePaths } from '../probes/script.js';
import { parseResolved } from '../probes/parse.js';
import { CONTAINERD_DEFAULTS, containerdPaths } from '../cri/containerd-config.js';
import { hostFacts } from './facts.js';
import { etcdDataDir, findings, foreignEtcdData, notes } from './residue.js';
import type { Proc } from '../probes/state.js';

const proc = (pid: number, name: string, args: string): Proc => ({ pid, ppid: 1, name, args, start: 100 });
const withProcs = (s: NodeState, ...ps: Proc[]): NodeState => ({ ...s, processes: new Map(ps.map((p) => [p.pid, p])) });

describe("a node's facts", () => {
  it('reads each runtime\'s version line as its binary prints it', () => {
    const f = parseFacts(
      [
        'containerd containerd github.com/containerd/containerd/v2 2.1.9+unknown ',
        'docker Docker version 20.10.24+dfsg1, build 5d6db84',
        'cni-file /etc/cni/net.d/10-calico.conflist',
        '"type": "calico"',
        '"type":"portmap"',
        'kube-proxy-mode ipvs',
      ].join('\n'),
    );
    expect(f).toEqual({ runtimes: [{ name: 'containerd', version: '2.1.9+unknown' }, { name: 'docker', version: '20.10.24+dfsg1' }], cniFile: '/etc/cni/net.d/10-calico.conflist', cniTypes: ['calico', 'portmap'], kubeProxyMode: 'ipvs' });
    expect(parseFacts('containerd containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3').runtimes).toEqual([{ name: 'containerd', version: '1.6.20~ds1' }]);
  });

  it('names the runtime, the CNI and kube-proxy\'s mode as found, and "unknown" where the node does not tell', () => {
    const base = emptyState();
    expect(hostFacts(base)).toEqual({ runtime: 'unknown', cni: 'unknown', kubeProxy: 'unknown' });
    const containerd = { ...base, facts: parseFacts('containerd containerd github.com/containerd/containerd 1.7.24~ds1 1.7.24~ds1-6+deb13u1\ncni-file /etc/cni/net.d/05-cilium.conflist\n"type": "cilium-cni"\nkube-proxy-mode \nkube-proxy-left nftables') };
    expect(hostFacts(containerd)).toEqual({ runtime: 'containerd 1.7.24~ds1', cni: 'cilium', kubeProxy: 'nftables (kube-proxy not running)' });
    // Something else on kube-proxy's port is not kube-proxy's word; a CNI plugin decom does not know is not guessed.
    const odd = { ...base, facts: parseFacts('cni-file /etc/cni/net.d/00-x.conf\n"type": "vendor-cni"\nkube-proxy-mode <html>404</html>') };
    expect(hostFacts(odd)).toEqual({ runtime: 'unknown', cni: 'unknown', kubeProxy: 'unknown' });
    // Docker with Kubernetes' containers in it is the kubelet's runtime; Docker beside containerd's pods is not.
    const facts = parseFacts('containerd containerd github.com/containerd/containerd 1.6.20~ds1 x\ndocker Docker version 20.10.24+dfsg1, build 5d6db84');
    expect(hostFacts({ ...base, facts }).runtime).toBe('containerd 1.6.20~ds1');
    expect(hostFacts({ ...base, facts, containers: [{ id: 'a', runtime: 'docker', kind: 'sandbox' }] }).runtime).toBe('docker 20.10.24+dfsg1 (cri-dockerd)');
    // A kube-proxy that did not answer but says its mode on its command line.
    expect(hostFacts(withProcs(base, proc(9, 'kube-proxy', '/usr/local/bin/kube-proxy --proxy-mode=iptables'))).kubeProxy).toBe('iptables');
  });
});

describe('etcd data, judged by the data dir the running etcd uses', () => {
  const member = { kind: 'etcd-data' as const, path: '/var/lib/etcd/member' };
  // Debian's etcd.service: no flag, ETCD_DATA_DIR from its unit; nothing ties it to the cluster.
  const debian = (env: string) => ({
    ...withProcs(emptyState(), proc(416, 'etcd', '/usr/bin/etcd')),
    paths: [member],
    etcdDirs: parseEtcdDirs(`etcd\t416\t/\t${env}`),
  });

  it('finds the data dir from the command line, the environment, or etcd\'s default NAME.etcd in its working dir', () => {
    const s = { ...emptyState(), etcdDirs: parseEtcdDirs('etcd\t7\t/srv/my data\tETCD_NAME=infra0\t\netcd\t8\t/var/lib\tETCD_DATA_DIR=etcd/x\t\netcd\t10\t/\tETCD_CONFIG_FILE=/etc/etcd/etcd.yml\t\netcd\t11\t\t') };
    expect(etcdDataDir(s, proc(7, 'etcd', 'etcd --data-dir /data/etcd'))).toBe('/data/etcd');
    expect(etcdDataDir(s, proc(7, 'etcd', 'etcd'))).toBe('/srv/my data/infra0.etcd');
    expect(etcdDataDir(s, proc(8, 'etcd', 'etcd'))).toBe('/var/lib/etcd/x');
    // Not told: nothing read of it, a config file (etcd then ignores flags and environment), no working dir for a relative one.
    expect(etcdDataDir(s, proc(9, 'etcd', 'etcd'))).toBeUndefined();
    expect(etcdDataDir(s, proc(7, 'etcd', 'etcd --config-file /etc/etcd.yml --data-dir /data/etcd'))).toBeUndefined();
    expect(etcdDataDir(s, proc(10, 'etcd', 'etcd'))).toBeUndefined();
    expect(etcdDataDir(s, proc(11, 'etcd', 'etcd --data-dir member-data'))).toBeUndefined();
    expect(etcdDataDir(s, proc(11, 'etcd', 'etcd --data-dir=/var/lib/etcd'))).toBe('/var/lib/etcd');
  });

  it("reports the cluster's member data beside a foreign etcd on another dir, and never the foreign etcd's own", () => {
    const beside = debian('ETCD_DATA_DIR=/var/lib/etcd/default\tETCD_NAME=node2\t');
    expect(foreignEtcdData(beside)).toEqual([]);
    expect(findings(beside).filter((f) => f.kind.startsWith('etcd'))).toEqual([{ kind: 'etcd-data', subject: '/var/lib/etcd/member', detail: "the cluster's etcd data (backed up first)" }]);
    // Its own data is at /var/lib/etcd: the member dir may be its own.
    const own = debian('ETCD_DATA_DIR=/var/lib/etcd\t');
    expect(foreignEtcdData(own)).toEqual(['/var/lib/etcd/member']);
    expect(findings(own).filter((f) => f.kind.startsWith('etcd'))).toEqual([]);
    expect(notes(own).join('\n')).toContain('/var/lib/etcd/member left (it may be its data)');
    // Its data dir cannot be told (its environment was not read): nothing of it is taken.
    expect(foreignEtcdData({ ...beside, etcdDirs: new Map() })).toEqual(['/var/lib/etcd/member']);
  });
});

describe("what containerd's config adds to a node's residue", () => {
  const rt = containerdPaths([
    { path: '/etc/containerd/config.toml', text: 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n[plugins."io.containerd.cri.v1.runtime"]\n  cdi_spec_dirs = ["/etc/cdi", "/run/cdi-drivers"]\n  [plugins."io.containerd.cri.v1.runtime".cni]\n    conf_dir = "/etc/cni/custom.d"\n' },
    { path: '/etc/containerd/conf.d/10-gpu.toml', text: 'version = 3\n' },
  ]);

  it('looks in the dirs the config names: CNI configs, transient and static CDI specs, NRI plugins, conf.d drop-ins', () => {
    const p = statePaths(rt);
    // Dirs quoted (a config's value is anyone's text), the patterns not.
    expect(p['cni-config']).toEqual(['/etc/cni/net.d/*', '/etc/sysctl.d/99-zzz-override_cilium.conf', "'/etc/cni/custom.d'/*.conf", "'/etc/cni/custom.d'/*.conflist", "'/etc/cni/custom.d'/*.json", "'/etc/cni/custom.d'/*.cilium_bak"]);
    // In a transient spec dir, a claim's spec (VENDOR-CLASS_ID) is the cluster's; any other spec there is reported as an administrator's.
    expect(p['cdi-spec']).toEqual(["'/run/cdi-drivers'/*-*_*.json", "'/run/cdi-drivers'/*-*_*.yaml"]);
    expect(p['runtime-config']).toEqual(["'/etc/cdi'/*", "'/run/cdi-drivers'/*", "'/opt/nri/plugins'/*", "'/etc/nri/conf.d'/*", "'/etc/containerd/conf.d/10-gpu.toml'"]);
    expect(statePaths(CONTAINERD_DEFAULTS)['cdi-spec']).toEqual(["'/var/run/cdi'/*-*_*.json", "'/var/run/cdi'/*-*_*.yaml"]);
    // A config naming a system dir, or a path with spaces or a command in it, takes nothing more than itself, quoted.
    const odd = containerdPaths([{ path: '/etc/containerd/config.toml', text: 'version = 2\n[plugins."io.containerd.grpc.v1.cri".cni]\n  conf_dir = "/etc"\n  bin_dir = "/usr/local/bin"\n[plugins."io.containerd.nri.v1.nri"]\n  plugin_path = "/opt/nri $(reboot)"\n' }]);
    expect(statePaths(odd)['cni-config']).toEqual(['/etc/cni/net.d/*', '/etc/sysctl.d/99-zzz-override_cilium.conf']);
    expect(installPaths(odd)['installed-binary']).not.toContain('/usr/local/bin');
    expect(statePaths(odd)['runtime-config']).toContain("'/opt/nri $(reboot)'/*");
  });

  it('takes no spelling of a system dir from a config, and judges every dir it takes again on the node, as resolved there', () => {
    for (const d of ['/usr//bin', '//etc', '/etc/.', '/./usr/local/bin', '/usr/bin/', '/', '/var/../etc', 'etc/cni']) expect(configDir(d), d).toBeUndefined();
    expect(configDir('/etc/cni//custom.d/')).toBe("'/etc/cni/custom.d'");
    const bin = containerdPaths([{ path: '/etc/containerd/config.toml', text: 'version = 2\n[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "/usr//bin"\n  conf_dir = "/etc/cni/custom.d"\n' }]);
    expect(installPaths(bin)['installed-binary']).not.toContain("'/usr/bin'");
    // A link on the node (custom.d -> /etc) is for the node to see: its entries are listed only once judge_dir lets the dir through.
    expect(probeBody(new Set(['files']), bin)).toContain("judge_dir '/etc/cni/custom.d' && for p in '/etc/cni/custom.d'/*.conf; do");
  });

  it('records where each path resolved on the node, and nothing when the lists disagree', () => {
    expect(parseResolved('/var/lib/kubelet/pods\0/etc/kubernetes\0\0/data/kubelet\0/etc\0')).toEqual(new Map([['/var/lib/kubelet/pods', '/data/kubelet/pods'], ['/etc/kubernetes', '/etc/kubernetes']]));
    expect(parseResolved('/x\0\0/\0')).toEqual(new Map([['/x', '/x']]));
    expect(parseResolved('/a\0/b\0\0/\0')).toEqual(new Map());
  });

  it("warns about an administrator's files and removes them only in the purge tier", () => {
    // The probe lists a claim's spec under both kinds (its dir is also an administrator's): it is the cluster's.
    const s: NodeState = { ...emptyState(), containerd: rt, paths: [{ kind: 'runtime-config', path: '/etc/cdi/vendor.yaml' }, { kind: 'runtime-config', path: '/run/cdi-drivers/x-y_1.json' }, { kind: 'cdi-spec', path: '/run/cdi-drivers/x-y_1.json' }] };
    expect(findings(s).map((f) => `${f.kind} ${f.subject}`)).toEqual(['cdi-spec /run/cdi-drivers/x-y_1.json']);
    expect(notes(s)).toContainEqual('runtime configuration an administrator may have written, left in place (decom run --purge removes it): /etc/cdi/vendor.yaml');
    const purge = { ...s, purge: true };
    expect(findings(purge).map((f) => `${f.kind} ${f.subject}`)).toEqual(['runtime-config /etc/cdi/vendor.yaml', 'cdi-spec /run/cdi-drivers/x-y_1.json']);
    expect(notes(purge).join('\n')).not.toContain('administrator');
  });

  it('probes again only where the config moved what the probe looks at', () => {
    const all = new Set(VIEWS);
    expect(probedElsewhere(CONTAINERD_DEFAULTS, containerdPaths([]), all)).toBe(false);
    expect(probedElsewhere(CONTAINERD_DEFAULTS, rt, all)).toBe(true);
    expect(probedElsewhere(rt, rt, all)).toBe(false);
    // Debian's own config (the CNI plugins in /usr/lib/cni) moves nothing the probe of these views looks at.
    const debian = containerdPaths([{ path: '/etc/containerd/config.toml', text: 'version = 2\n[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "/usr/lib/cni"\n  conf_dir = "/etc/cni/net.d"\n' }]);
    expect(probedElsewhere(CONTAINERD_DEFAULTS, debian, ALL_VIEWS)).toBe(false);
    expect(probedElsewhere(CONTAINERD_DEFAULTS, debian, all)).toBe(true); // with --purge: its CNI plugins' dir is looked at
    // The state dir matters to the runtime's views only.
    const moved = containerdPaths([], { state: '/run/c2', address: '/run/c2/c.sock' });
    expect(probedElsewhere(CONTAINERD_DEFAULTS, moved, new Set(['files', 'links'] as const))).toBe(false);
    expect(probedElsewhere(CONTAINERD_DEFAULTS, moved, new Set(['containers'] as const))).toBe(true);
  });

  it("reads the daemon's flags and the config section as the probe prints them", () => {
    expect(parseContainerdArgs('daemon 812:4471\n', 'arg /usr/bin/containerd\0arg --config\0arg /srv/c.toml\0arg --state=/run/c2\0arg -a\0arg /run/c2/s.sock\0file /srv/c.toml\0version = 3\n\0')).toEqual({ daemon: '812:4471', flags: { state: '/run/c2', address: '/run/c2/s.sock' } });
    expect(parseContainerdFiles('file /etc/containerd/config.toml\0version = 3\n\0missing /etc/containerd/x.toml\0')).toEqual({ files: [{ path: '/etc/containerd/config.toml', text: 'version = 3\n' }], missing: ['/etc/containerd/x.toml'] });
  });
});
