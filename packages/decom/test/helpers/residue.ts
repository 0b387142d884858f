// What a sandbox node holds, read over SSH independently of decom's probes: the leftovers a
// reset must remove (leftovers, installedLeftovers), and text snapshots of the user's objects
// and of the whole node, to compare before and after.
import { ssh } from './sandbox.js';
import { DEFAULT_CONTAINERD, facts, holders, lines, mounts, type ContainerdAt } from './facts.js';

/**
 * An independent judge of "clean", written from kernel and runtime views read over
 * SSH — never from decom's probes or rules: what a reset must leave, named.
 */
export function leftovers(node: string, at: ContainerdAt = DEFAULT_CONTAINERD): string[] {
  const f = facts(node, at);
  const esc = (p: string) => p.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const runtimeMounts = new RegExp(`^(${esc(at.state)}/io\\.containerd\\.runtime\\.v2\\.task/k8s\\.io/|${esc(at.state)}/io\\.containerd\\.grpc\\.v1\\.cri/sandboxes/)`);
  const out: string[] = [];
  const add = (what: string, items: string[]) => items.forEach((i) => out.push(`${what}: ${i}`));
  const k8sPorts = [6443, 2379, 2380, 2381, 10248, 10249, 10250, 10255, 10256, 10257, 10259];
  add('port', [...holders(f.listen).keys()].filter((p) => k8sPorts.includes(p)).map(String));
  add('port (no holder)', lines(f.listen).map((l) => l.split(/\s+/)[3] ?? '').filter((a) => k8sPorts.includes(Number(a.slice(a.lastIndexOf(':') + 1)))).filter((a) => !holders(f.listen).has(Number(a.slice(a.lastIndexOf(':') + 1)))));
  add('netns', lines(f.netns).filter((n) => n.startsWith('cni-')));
  add('link', lines(f.links).filter((l) => /^(cni0|flannel|vxlan\.calico|cali|veth|tunl0|kube-|cilium_|lxc|nodelocaldns)/.test(l)));
  add('mount', mounts(f.mountinfo).filter((t) => /^(\/var\/lib\/kubelet\/|\/run\/netns\/cni-)/.test(t) || runtimeMounts.test(t)));
  const k8sRule = /KUBE-|CNI-|cali-|cali:|FLANNEL|flannel|CILIUM/;
  add('iptables-nft', lines(f.iptNft).filter((l) => !l.startsWith('#') && k8sRule.test(l)));
  add('iptables-legacy', lines(f.iptLegacy).filter((l) => !l.startsWith('#') && k8sRule.test(l)));
  // kube-proxy's, Calico Felix's and flannel's tables, as their sources name them (test/fixtures/nft).
  add('nft', lines(f.nftTables).filter((l) => /^table (ip|ip6|arp) (kube-proxy|calico|calico-arp|flannel-ipv4|flannel-ipv6)$/.test(l)));
  add('k8s.io container', lines(f.k8sContainers));
  add('k8s.io task', lines(f.k8sTasks));
  add('docker k8s_', lines(f.dockerNames).filter((n) => n.startsWith('k8s_')));
  add('k8s.io shim', lines(f.k8sShims));
  add('kubelet active', lines(f.kubeletActive).filter((s) => s === 'active' || s === 'activating'));
  add('kubelet enabled', lines(f.kubeletEnabled).filter((s) => s === 'enabled'));
  add('kubelet process', lines(f.kubeletProc));
  add('manifest', lines(f.manifests));
  add('file', lines(f.files).filter((p) => !p.startsWith('/etc/app/') && !p.startsWith('/etc/systemd/')));
  add('lease', lines(f.leases));
  add('CNI result cache', lines(f.cniResults));
  add('pod cgroup', lines(f.podCgroups));
  add('kubepods slice', lines(f.slices));
  add('trusted cluster CA', lines(f.bundleTrustsCluster));
  add('pod dir', lines(f.podDirs));
  add('CNI route', lines(f.cniRoutes));
  add('ipset', lines(f.ipsets).filter((n) => /^(KUBE-|cali40|cilium_)/.test(n)));
  // A process in a Kubernetes cgroup, whatever the runtime thinks.
  add('k8s cgroup process', lines(f.k8sCgroupProcs));
  return out;
}

/** The installation footprint a `--purge` reset must remove (kubespray's paths, containerd's k8s.io images). */
export function installedLeftovers(node: string): string[] {
  const f = facts(node);
  return [...lines(f.installed).map((p) => `installed: ${p}`), ...lines(f.k8sImages).map((i) => `k8s.io image: ${i}`)];
}

/** What is not Kubernetes' on a sandbox node, as text to compare byte for byte before and after. */
export function userObjects(node: string): string {
  return ssh(
    node,
    [
      "echo '## nft app chains'; iptables-save | grep -v '^#' | grep -E 'APP-|app:' ",
      "echo '## legacy app chains'; iptables-legacy-save | grep -v '^#' | grep -E 'APP-|app:'",
      "echo '## nft table'; nft list table inet app-filter",
      "echo '## data'; cat /srv/appdata/important.db; grep ' /srv/appdata ' /proc/self/mountinfo | cut -d' ' -f5,9-",
      "echo '## netns'; ip netns list | grep app-vpn; ip -o link show app-veth0 | sed 's/^[0-9]*: //; s/ state .*//'",
      "echo '## app-cache'; ctr -n default tasks ls | grep app-cache | awk '{print $1, $3}'",
      "echo '## docker'; docker ps --format '{{.Names}} {{.State}}' 2>/dev/null | grep -v '^k8s_'; docker images --format '{{.Repository}}:{{.Tag}}' 2>/dev/null | grep -v '^registry.k8s.io/pause:' | sort; true",
      "echo '## files'; cat /etc/app/app.conf",
      "echo '## user trust'; cat /usr/local/share/ca-certificates/app-ca.crt; openssl verify -CAfile /etc/ssl/certs/ca-certificates.crt /etc/app/app.crt",
      "echo '## other cluster'; cat /home/alice/.kube/config",
      "echo '## sysctl'; ls -l /etc/sysctl.d/99-sysctl.conf | sed 's/.* -> //'; cat /etc/sysctl.conf",
      "echo '## nginx site'; cat /etc/nginx/conf.d/app.conf",
      "echo '## routes'; ip route show | grep -E '10\\.233\\.121\\.0|192\\.0\\.2\\.0'",
      "echo '## ipset'; ipset list app-blocklist | grep -v -E '^(References|Size in memory)'",
      "echo '## bpf'; ls /sys/fs/bpf/app_ratelimit 2>&1",
      // containerd may be stopped (orphaned-shims): then ctr answers nothing, before and after alike.
      "echo '## default images'; timeout 3 ctr -n default images ls -q 2>/dev/null; true",
    ].join('; '),
  );
}

/** Everything on a node a reset could change, as text: compared around --check. */
export function nodeSnapshot(node: string): string {
  return ssh(
    node,
    [
      'ss -Hltn | sort',
      // A process shown as [name] has no command line left: a zombie or one exiting, there one moment and gone the next.
      "ps -e -o pid=,args= | grep -v -E 'sshd: |ps -e|sort|grep|sh -c|sleep|^ *[0-9]+ \\[[^]]*\\]$' | sort -n",
      "cut -d' ' -f5 /proc/self/mountinfo | sort",
      "ip -o link | sed 's/^[0-9]*: //; s/ state .*//' | sort",
      'ip netns list | sort',
      "iptables-save | grep -v '^#' | sed 's/\\[[0-9]*:[0-9]*\\]//'",
      "iptables-legacy-save | grep -v '^#' | sed 's/\\[[0-9]*:[0-9]*\\]//'",
      "nft list ruleset | sed 's/counter packets [0-9]* bytes [0-9]*/counter/'",
      'find /etc/kubernetes /var/lib/kubelet /etc/cni /var/lib/cni /run/flannel /var/lib/etcd /var/backups /run/decom.lock 2>/dev/null | sort',
      'timeout 3 ctr -n k8s.io containers ls -q 2>/dev/null | sort',
      'systemctl is-active kubelet 2>/dev/null; systemctl is-enabled kubelet 2>/dev/null; true',
    ].join('; echo @@; '),
  );
}

