/**
 * kubespray's resolver edits judged against the cluster's DNS facts, on the texts its
 * tasks and templates write (kubernetes-sigs/kubespray, roles/kubernetes/preinstall, at
 * the commits each case names), beside an administrator's own lines. Every case that
 * changes a file is applied and judged again: nothing is left to do.
 */
import { describe, expect, it } from 'vitest';
import type { DnsFile, DnsView } from '../probes/state.js';
import { DNS_FILE_BYTES, KUBESPRAY_DNS_FILES } from '../probes/script.js';
import { clusterDnsOf, type ClusterDns } from '../inventory/cluster-dns.js';
import { dnsEdits, joinLines, splitLines, type DnsEdit } from './dns.js';

const FACTS = clusterDnsOf({});
const BACKUP = '/etc/resolv.conf.2207.2025-03-04@10:11:12~';

/** The view of a node holding these files (the rest absent); a string is a regular file's text. */
function viewOf(files: Record<string, string | Omit<DnsFile, 'path'>>, more: Partial<DnsView> = {}): DnsView {
  return {
    files: KUBESPRAY_DNS_FILES.map((path): DnsFile => {
      const f = files[path];
      if (f === undefined) return { path, type: 'absent' };
      return typeof f === 'string' ? { path, type: 'file', content: f } : { path, ...f };
    }),
    backups: [],
    services: { networkManager: false, resolved: false, resolvedCanReload: false },
    ...more,
  };
}

/** The view after the edits' changes: a file's new text (at a link's target, read through the link), or gone. */
function applied(view: DnsView, edits: DnsEdit[]): DnsView {
  const files = view.files.map((f) => {
    const e = edits.find((x) => x.change && (x.path === f.path || (f.type === 'link' && x.path === f.target)));
    if (!e?.change) return f;
    return e.change === 'delete' ? { path: f.path, type: 'absent' as const } : { ...f, content: e.change.content };
  });
  return { ...view, files };
}

/** The edits, after checking that applying them leaves nothing to do. */
function judged(view: DnsView, dns: ClusterDns = FACTS): DnsEdit[] {
  const edits = dnsEdits(view, dns);
  const again = dnsEdits(applied(view, edits), dns);
  expect(again).toEqual(edits.filter((e) => e.kind === 'cluster-resolver'));
  return edits;
}

const contentOf = (e: DnsEdit | undefined) => (e?.change && e.change !== 'delete' ? e.change.content : undefined);

// 0060-resolvconf.yml with vars/main.yml (late stage, nodelocaldns on), on a
// host whose resolv.conf held `nameserver 192.168.1.1` and `search corp.example`: the block at
// the top, the host's nameserver moved into it, its own lines after the block deleted.
const BLOCK = `# Ansible entries BEGIN
domain cluster.local
search default.svc.cluster.local svc.cluster.local
nameserver 169.254.25.10
nameserver 192.168.1.1
options ndots:2 timeout:2 attempts:2
# Ansible entries END
`;

describe('resolv.conf', () => {
  it("rewrites kubespray's block to the host's own nameserver, and keeps every line outside it", () => {
    const edits = judged(viewOf({ '/etc/resolv.conf': `${BLOCK}# the administrator's note\n` }));
    expect(edits).toEqual([
      {
        path: '/etc/resolv.conf',
        kind: 'dns-config',
        detail: "kubespray's block: domain cluster.local, search default.svc.cluster.local svc.cluster.local, nameserver 169.254.25.10, options ndots:2 timeout:2 attempts:2",
        change: { content: "nameserver 192.168.1.1\n# the administrator's note\n" },
      },
    ]);
  });

  it('with nodelocaldns off, takes out the service range\'s .3; with coredns_dual its .4 too', () => {
    const off = clusterDnsOf({ enable_nodelocaldns: false });
    const single = BLOCK.replace('169.254.25.10', '10.233.0.3');
    expect(contentOf(judged(viewOf({ '/etc/resolv.conf': single }), off)[0])).toBe('nameserver 192.168.1.1\n');
    // With nodelocaldns on, the service address is not what kubespray wrote: the host keeps it.
    expect(contentOf(judged(viewOf({ '/etc/resolv.conf': single }))[0])).toBe('nameserver 10.233.0.3\nnameserver 192.168.1.1\n');

    const dual = clusterDnsOf({ enable_nodelocaldns: false, dns_mode: 'coredns_dual' });
    const two = BLOCK.replace('nameserver 169.254.25.10\n', 'nameserver 10.233.0.3\nnameserver 10.233.0.4\n');
    expect(contentOf(judged(viewOf({ '/etc/resolv.conf': two }), dual)[0])).toBe('nameserver 192.168.1.1\n');
  });

  it('takes out manual_dns_server, and a custom cluster_name\'s domain and search domains', () => {
    const manual = clusterDnsOf({ enable_nodelocaldns: false, dns_mode: 'manual', manual_dns_server: '10.0.0.53' });
    expect(contentOf(judged(viewOf({ '/etc/resolv.conf': BLOCK.replace('169.254.25.10', '10.0.0.53') }), manual)[0])).toBe('nameserver 192.168.1.1\n');

    const corp = clusterDnsOf({ cluster_name: 'corp.k8s' });
    const block = BLOCK.replaceAll('cluster.local', 'corp.k8s');
    expect(contentOf(judged(viewOf({ '/etc/resolv.conf': block }), corp)[0])).toBe('nameserver 192.168.1.1\n');
  });

  it("keeps the inventory's own searchdomains and options other than the facts'", () => {
    const dns = clusterDnsOf({ searchdomains: ['corp.example'] });
    const block = BLOCK.replace('svc.cluster.local\n', 'svc.cluster.local corp.example\n').replace('ndots:2', 'ndots:5');
    const edits = judged(viewOf({ '/etc/resolv.conf': block }), dns);
    expect(contentOf(edits[0])).toBe('search corp.example\nnameserver 192.168.1.1\noptions ndots:5\n');
    expect(edits[0]!.detail).toContain('options timeout:2 attempts:2');
  });

  it('keeps the line endings and a missing final newline', () => {
    const crlf = BLOCK.replaceAll('\n', '\r\n') + 'nameserver 192.168.1.2\r\n';
    expect(contentOf(judged(viewOf({ '/etc/resolv.conf': crlf }))[0])).toBe('nameserver 192.168.1.1\r\nnameserver 192.168.1.2\r\n');
    const unended = BLOCK.replace(/\n$/, '');
    expect(contentOf(judged(viewOf({ '/etc/resolv.conf': unended }))[0])).toBe('nameserver 192.168.1.1');
    expect(joinLines(splitLines('a\r\nb'), 'a\r\nb')).toBe('a\r\nb');
  });

  it("leaves an administrator's resolv.conf without kubespray's block as it is, cluster addresses and other Ansible blocks included", () => {
    expect(judged(viewOf({ '/etc/resolv.conf': 'nameserver 169.254.25.10\nsearch svc.cluster.local\noptions ndots:2 timeout:2 attempts:2\n' }))).toEqual([]);
    expect(judged(viewOf({ '/etc/resolv.conf': '# Ansible entries BEGIN\nnameserver 10.9.9.9\n# Ansible entries END\nnameserver 192.168.1.1\n' }))).toEqual([]);
  });

  it("names a block of nothing but the cluster's entries, with kubespray's backups or none, and leaves it", () => {
    const only = BLOCK.replace('nameserver 192.168.1.1\n', '');
    const named = judged(viewOf({ '/etc/resolv.conf': only }, { backups: [BACKUP] }));
    expect(named).toEqual([
      {
        path: '/etc/resolv.conf',
        kind: 'cluster-resolver',
        detail: `nothing but the cluster's entries (kubespray's block: domain cluster.local, search default.svc.cluster.local svc.cluster.local, nameserver 169.254.25.10, options ndots:2 timeout:2 attempts:2): left as it is; kubespray's backups of resolv.conf: ${BACKUP}`,
      },
    ]);
    const none = judged(viewOf({ '/etc/resolv.conf': only }));
    expect(none[0]!.detail).toMatch(/no backup of kubespray's \(resolv\.conf\.\*~\) is there$/);
  });

  it("judges resolvconf's link at its target, leaves systemd-resolved's alone, and names any other link holding the block", () => {
    for (const target of ['/run/resolvconf/resolv.conf', '/etc/resolvconf/run/resolv.conf']) {
      const edits = judged(viewOf({ '/etc/resolv.conf': { type: 'link', target, content: BLOCK } }));
      expect(edits.map((e) => [e.path, e.kind, contentOf(e)])).toEqual([[target, 'dns-config', 'nameserver 192.168.1.1\n']]);
    }
    for (const target of ['/run/systemd/resolve/stub-resolv.conf', '/run/systemd/resolve/resolv.conf']) {
      expect(judged(viewOf({ '/etc/resolv.conf': { type: 'link', target, content: BLOCK } }))).toEqual([]);
    }
    const other = judged(viewOf({ '/etc/resolv.conf': { type: 'link', target: '/etc/netconfig/resolv.conf', content: BLOCK } }));
    expect(other).toEqual([{ path: '/etc/resolv.conf', kind: 'cluster-resolver', detail: expect.stringContaining('a symlink to /etc/netconfig/resolv.conf holding kubespray\'s block') }]);
    expect(judged(viewOf({ '/etc/resolv.conf': { type: 'link', target: '/etc/netconfig/resolv.conf', content: 'nameserver 192.168.1.1\n' } }))).toEqual([]);
  });

  it('yields nothing for a file absent, unreadable, not regular, or cut at the probe\'s limit', () => {
    expect(judged(viewOf({ '/etc/resolv.conf': { type: 'file' } }))).toEqual([]);
    expect(judged(viewOf({ '/etc/resolv.conf': { type: 'other' } }))).toEqual([]);
    expect(judged(viewOf({ '/etc/resolv.conf': BLOCK + '#'.repeat(DNS_FILE_BYTES) }))).toEqual([]);
  });
});

// 0100-dhclient-hooks.yml: dhclient_supersede (vars/main.yml) as a block at
// the top of Debian's stock dhclient.conf, the administrator's lines after it.
const DHCLIENT_BLOCK = `# Ansible entries BEGIN
supersede domain-name-servers 169.254.25.10,192.168.1.1;
supersede domain-name "cluster.local";
supersede domain-search "default.svc.cluster.local","svc.cluster.local";
# Ansible entries END
`;
const ADMIN_DHCLIENT = `option rfc3442-classless-static-routes code 121 = array of unsigned integer 8;
send host-name = gethostname();
request subnet-mask, broadcast-address, time-offset, routers;
`;
// templates/dhclient_dnsupdate.sh.j2 rendered with ndots 2 (dns_timeout, dns_attempts unset).
const HOOK = `#!/bin/sh
#
# Prepend resolver options to /etc/resolv.conf after dhclient\`
# regenerates the file. See man (5) resolver for more details.
#
if [ $reason = "BOUND" ]; then
  if [ -n "$new_domain_search" -o -n "$new_domain_name_servers" ]; then
    RESOLV_CONF=$(cat /etc/resolv.conf | sed -r '/^options (timeout|attempts|ndots).*$/d')
    OPTIONS="options timeout:2 attempts:2 ndots:2"

    printf "%b\\n" "$RESOLV_CONF\\n$OPTIONS" > /etc/resolv.conf
  fi
fi
`;
// templates/dhclient_dnsupdate_rh.sh.j2 rendered the same way.
const RH_HOOK = `#!/bin/sh
#
# Prepend resolver options to /etc/resolv.conf after dhclient\`
# regenerates the file. See man (5) resolver for more details.
#
zdnsupdate_config() {
  if [ -n "$new_domain_search" -o -n "$new_domain_name_servers" ]; then
    RESOLV_CONF=$(cat /etc/resolv.conf | sed -r '/^options (timeout|attempts|ndots).*$/d')
    OPTIONS="options timeout:2 attempts:2 ndots:2"

    echo -e "$RESOLV_CONF\\n$OPTIONS" > /etc/resolv.conf
  fi
}

zdnsupdate_restore() {
  :
}
`;
// What Debian's dhclient-script wrote from that supersede block on a sandbox node, the hook's
// options line appended: no markers, the domain-name put before the search list, which the
// DHCP option carries with trailing dots.
const DHCLIENT_RESOLV = `domain cluster.local
search cluster.local default.svc.cluster.local. svc.cluster.local.
nameserver 169.254.25.10
nameserver 192.168.1.1
options timeout:2 attempts:2 ndots:2
`;

describe('dhclient', () => {
  it("removes kubespray's supersede block and keeps the administrator's lines byte for byte", () => {
    const edits = judged(viewOf({ '/etc/dhcp/dhclient.conf': DHCLIENT_BLOCK + ADMIN_DHCLIENT }));
    expect(edits).toEqual([
      {
        path: '/etc/dhcp/dhclient.conf',
        kind: 'dns-config',
        detail: "kubespray's supersede block naming the cluster (nameserver 169.254.25.10, domain cluster.local, search default.svc.cluster.local, search svc.cluster.local)",
        change: { content: ADMIN_DHCLIENT },
      },
    ]);
    // Older releases' spacing (0040-set_facts.yml), in /etc/dhclient.conf; a file left with nothing stays, empty.
    const older = '# Ansible entries BEGIN\nsupersede domain-name "cluster.local";\nsupersede domain-search "default.svc.cluster.local", "svc.cluster.local";\nsupersede domain-name-servers 169.254.25.10, 192.168.1.1;\n# Ansible entries END\n';
    expect(judged(viewOf({ '/etc/dhclient.conf': older })).map((e) => [e.path, contentOf(e)])).toEqual([['/etc/dhclient.conf', '']]);
  });

  it("leaves a marked block that names nothing of the cluster's", () => {
    expect(judged(viewOf({ '/etc/dhcp/dhclient.conf': '# Ansible entries BEGIN\nsupersede domain-name "corp.example";\n# Ansible entries END\n' }))).toEqual([]);
  });

  it("deletes kubespray's hooks, Debian's and Red Hat's, and leaves an edited one", () => {
    const edits = judged(viewOf({ '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate': HOOK, '/etc/dhcp/dhclient.d/zdnsupdate.sh': RH_HOOK }));
    expect(edits.map((e) => [e.path, e.change])).toEqual([
      ['/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate', 'delete'],
      ['/etc/dhcp/dhclient.d/zdnsupdate.sh', 'delete'],
    ]);
    expect(judged(viewOf({ '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate': HOOK + 'logger zdnsupdate ran\n' }))).toEqual([]);
    // Rendered with the inventory's ndots, timeout and attempts.
    const five = clusterDnsOf({ ndots: 5, dns_timeout: 1, dns_attempts: 3 });
    expect(judged(viewOf({ '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate': HOOK }), five)).toEqual([]);
    expect(judged(viewOf({ '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate': HOOK.replace('timeout:2 attempts:2 ndots:2', 'timeout:1 attempts:3 ndots:5') }), five)).toHaveLength(1);
    // The hook of earlier releases (dhclient_dnsupdate.sh.j2): three options lines.
    const earlier = HOOK.replace("RESOLV_CONF=$(cat /etc/resolv.conf | sed -r '/^options (timeout|attempts|ndots).*$/d')", 'RESOLV_CONF=$(cat /etc/resolv.conf)').replace('options timeout:2 attempts:2 ndots:2', 'options timeout:2\\noptions attempts:2\\noptions ndots:2');
    expect(judged(viewOf({ '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate': earlier }))[0]!.change).toBe('delete');
  });

  it("takes dhclient's unmarked lines out of resolv.conf only where kubespray's dhclient block or hook is there", () => {
    // Untouched without either: nothing marks these lines as kubespray's.
    expect(judged(viewOf({ '/etc/resolv.conf': DHCLIENT_RESOLV }))).toEqual([]);
    expect(judged(viewOf({ '/etc/resolv.conf': DHCLIENT_RESOLV, '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate': HOOK + '# mine\n' }))).toEqual([]);

    const evidence: Record<string, string>[] = [{ '/etc/dhcp/dhclient.conf': DHCLIENT_BLOCK + ADMIN_DHCLIENT }, { '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate': HOOK }];
    for (const files of evidence) {
      const edits = judged(viewOf({ '/etc/resolv.conf': DHCLIENT_RESOLV, ...files }));
      expect(edits[0]).toEqual({
        path: '/etc/resolv.conf',
        kind: 'dns-config',
        detail: "dhclient's lines: domain cluster.local, search cluster.local default.svc.cluster.local. svc.cluster.local., nameserver 169.254.25.10, options timeout:2 attempts:2 ndots:2",
        change: { content: 'nameserver 192.168.1.1\n' },
      });
    }
    // The earlier hook's three options lines, and a search line that is not exactly kubespray's, which stays.
    const earlier = 'search corp.example svc.cluster.local\nnameserver 169.254.25.10\nnameserver 192.168.1.1\noptions timeout:2\noptions attempts:2\noptions ndots:2\noptions rotate\n';
    const edits = judged(viewOf({ '/etc/resolv.conf': earlier, '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate': HOOK }));
    expect(contentOf(edits[0])).toBe('search corp.example svc.cluster.local\nnameserver 192.168.1.1\noptions rotate\n');
  });

  it("names a dhclient-written resolv.conf of nothing but the cluster's, and leaves it and the dhclient edits that mark it", () => {
    const only = DHCLIENT_RESOLV.replace('nameserver 192.168.1.1\n', '');
    const edits = judged(viewOf({ '/etc/resolv.conf': only, '/etc/dhcp/dhclient.conf': DHCLIENT_BLOCK, '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate': HOOK }));
    expect(edits).toEqual([
      {
        path: '/etc/resolv.conf',
        kind: 'cluster-resolver',
        detail:
          "nothing but the cluster's entries (dhclient's lines: domain cluster.local, search cluster.local default.svc.cluster.local. svc.cluster.local., nameserver 169.254.25.10, options timeout:2 attempts:2 ndots:2): left as it is; no backup of kubespray's (resolv.conf.*~) is there; kubespray's dhclient edits that wrote it stay with it: /etc/dhcp/dhclient.conf /etc/dhcp/dhclient-exit-hooks.d/zdnsupdate",
      },
    ]);
  });
});

// templates/resolved.conf.j2, late stage, nodelocaldns on, no upstream or inventory nameservers.
const RESOLVED = `[Resolve]
DNS=169.254.25.10
FallbackDNS=
Domains=default.svc.cluster.local svc.cluster.local
#LLMNR=no
#MulticastDNS=no
DNSSEC=no
Cache=no-negative
#DNSStubListener=yes
`;

describe('systemd-resolved', () => {
  it("deletes kubespray.conf when it is the template's text, rendered either way its conditionals go", () => {
    const running = { services: { networkManager: false, resolved: true, resolvedCanReload: false } };
    expect(judged(viewOf({ '/etc/systemd/resolved.conf.d/kubespray.conf': RESOLVED }, running))).toEqual([
      {
        path: '/etc/systemd/resolved.conf.d/kubespray.conf',
        kind: 'dns-config',
        detail: "kubespray's systemd-resolved drop-in (DNS 169.254.25.10, Domains default.svc.cluster.local svc.cluster.local)",
        change: 'delete',
        service: 'systemd-resolved',
      },
    ]);
    const early = RESOLVED.replace('DNS=169.254.25.10', '#DNS=').replace('FallbackDNS=', 'FallbackDNS=8.8.8.8 192.168.1.1').replace('#DNSStubListener=yes', 'DNSStubListener=no');
    expect(judged(viewOf({ '/etc/systemd/resolved.conf.d/kubespray.conf': early }))[0]).toMatchObject({ change: 'delete' });
    expect(judged(viewOf({ '/etc/systemd/resolved.conf.d/kubespray.conf': early }))[0]!.service).toBeUndefined();
    const dual = clusterDnsOf({ enable_nodelocaldns: false, dns_mode: 'coredns_dual', searchdomains: ['corp.example'] });
    const dualText = RESOLVED.replace('DNS=169.254.25.10', 'DNS=10.233.0.3 10.233.0.4').replace('svc.cluster.local\n', 'svc.cluster.local corp.example\n');
    expect(judged(viewOf({ '/etc/systemd/resolved.conf.d/kubespray.conf': dualText }), dual)).toHaveLength(1);
  });

  it('leaves an edited kubespray.conf, and one naming another cluster', () => {
    expect(judged(viewOf({ '/etc/systemd/resolved.conf.d/kubespray.conf': RESOLVED.replace('#LLMNR=no', 'LLMNR=yes') }))).toEqual([]);
    expect(judged(viewOf({ '/etc/systemd/resolved.conf.d/kubespray.conf': RESOLVED.replaceAll('cluster.local', 'other.local') }))).toEqual([]);
  });
});

// 0062-networkmanager-unmanaged-devices.yml: the copy tasks' content.
const CALICO = '[keyfile]\nunmanaged-devices+=interface-name:cali*;interface-name:tunl*;interface-name:vxlan.calico;interface-name:vxlan-v6.calico\n';
const K8S = '[keyfile]\nunmanaged-devices+=interface-name:kube-ipvs0;interface-name:nodelocaldns\n';
// 0063-networkmanager-dns.yml: community.general.ini_file, key by key, `key = value`,
// appended to an administrator's dns.conf holding [main].
const ADMIN_NM = '[main]\ndns=default\nrc-manager=symlink\n';
const NM_KEYS = `[global-dns-domain-*]
servers = 169.254.25.10,192.168.1.1
[global-dns]
searches = default.svc.cluster.local,svc.cluster.local
options = ndots:2,timeout:2,attempts:2
`;

describe('NetworkManager', () => {
  it("deletes calico.conf and k8s.conf when they are kubespray's, reloading a running NetworkManager, and leaves edited ones", () => {
    const running = { services: { networkManager: true, resolved: false, resolvedCanReload: false } };
    expect(judged(viewOf({ '/etc/NetworkManager/conf.d/calico.conf': CALICO, '/etc/NetworkManager/conf.d/k8s.conf': K8S }, running)).map((e) => [e.path, e.change, e.service])).toEqual([
      ['/etc/NetworkManager/conf.d/calico.conf', 'delete', 'NetworkManager'],
      ['/etc/NetworkManager/conf.d/k8s.conf', 'delete', 'NetworkManager'],
    ]);
    expect(judged(viewOf({ '/etc/NetworkManager/conf.d/calico.conf': CALICO + 'unmanaged-devices+=interface-name:wg0\n', '/etc/NetworkManager/conf.d/k8s.conf': K8S.replace('\n', '\r\n') }))).toEqual([]);
  });

  it("takes kubespray's keys out of dns.conf and keeps the administrator's [main] as written", () => {
    const edits = judged(viewOf({ '/etc/NetworkManager/conf.d/dns.conf': ADMIN_NM + NM_KEYS }));
    expect(edits).toEqual([
      {
        path: '/etc/NetworkManager/conf.d/dns.conf',
        kind: 'dns-config',
        detail: "kubespray's global DNS keys: [global-dns-domain-*] servers = 169.254.25.10,192.168.1.1, [global-dns] searches = default.svc.cluster.local,svc.cluster.local, [global-dns] options = ndots:2,timeout:2,attempts:2",
        change: { content: ADMIN_NM },
      },
    ]);
  });

  it("deletes a dns.conf of nothing but kubespray's keys, and keeps the sections and keys that are not its", () => {
    expect(judged(viewOf({ '/etc/NetworkManager/conf.d/dns.conf': NM_KEYS }))[0]!.change).toBe('delete');
    // Earlier releases joined with ';' (an earlier 0063); options of other values and another domain's servers stay.
    const mixed = `[global-dns-domain-*]\nservers = 169.254.25.10;192.168.1.1\n\n[global-dns-domain-corp.example]\nservers = 10.1.1.1\n[global-dns]\nsearches = default.svc.cluster.local;svc.cluster.local\noptions = ndots:5,timeout:2,attempts:2\n`;
    expect(contentOf(judged(viewOf({ '/etc/NetworkManager/conf.d/dns.conf': mixed }))[0])).toBe('[global-dns-domain-corp.example]\nservers = 10.1.1.1\n[global-dns]\noptions = ndots:5,timeout:2,attempts:2\n');
    expect(judged(viewOf({ '/etc/NetworkManager/conf.d/dns.conf': ADMIN_NM + '[global-dns]\nsearches = corp.example\n' }))).toEqual([]);
  });
});

describe("a node with all of kubespray's edits", () => {
  it('names each file once, and a second judgement after the changes names nothing', () => {
    const view = viewOf(
      {
        '/etc/resolv.conf': BLOCK,
        '/etc/dhcp/dhclient.conf': DHCLIENT_BLOCK + ADMIN_DHCLIENT,
        '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate': HOOK,
        '/etc/systemd/resolved.conf.d/kubespray.conf': RESOLVED,
        '/etc/NetworkManager/conf.d/calico.conf': CALICO,
        '/etc/NetworkManager/conf.d/k8s.conf': K8S,
        '/etc/NetworkManager/conf.d/dns.conf': ADMIN_NM + NM_KEYS,
      },
      { backups: [BACKUP] },
    );
    expect(judged(view).map((e) => e.path)).toEqual([
      '/etc/resolv.conf',
      '/etc/dhcp/dhclient.conf',
      '/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate',
      '/etc/systemd/resolved.conf.d/kubespray.conf',
      '/etc/NetworkManager/conf.d/calico.conf',
      '/etc/NetworkManager/conf.d/k8s.conf',
      '/etc/NetworkManager/conf.d/dns.conf',
    ]);
  });
});
