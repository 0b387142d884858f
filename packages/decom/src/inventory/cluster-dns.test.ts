/**
 * The cluster's DNS facts from an inventory's variables, as kubespray computes them: its
 * defaults (roles/kubespray_defaults/defaults/main/main.yml, vars/main/main.yml,
 * roles/kubernetes/preinstall/vars/main.yml), the Jinja its sample
 * inventory writes (inventory/sample/group_vars/k8s_cluster/k8s-cluster.yml),
 * and values that are not of a fact's shape giving way to the default, never an error.
 */
import { describe, expect, it } from 'vitest';
import { canonicalAddress, clusterDnsOf, formatAddress, parseAddress } from './cluster-dns.js';

const DEFAULTS = {
  nameservers: ['169.254.25.10'],
  domain: 'cluster.local',
  searchDomains: ['default.svc.cluster.local', 'svc.cluster.local'],
  ownSearchDomains: [],
  options: { ndots: 2, timeout: 2, attempts: 2 },
};

describe("the cluster's DNS facts", () => {
  it("are kubespray's defaults when the inventory says nothing", () => {
    expect(clusterDnsOf({})).toEqual(DEFAULTS);
  });

  it("work out the sample inventory's Jinja: dns_domain from cluster_name, skydns_server from the service range", () => {
    // k8s-cluster.yml, as written there, with nodelocaldns turned off.
    const sample = {
      kube_service_addresses: '10.233.0.0/18',
      cluster_name: 'cluster.local',
      ndots: 2,
      dns_mode: 'coredns',
      enable_nodelocaldns: false,
      nodelocaldns_ip: '169.254.25.10',
      skydns_server: "{{ kube_service_addresses | ipaddr('net') | ipaddr(3) | ipaddr('address') }}",
      skydns_server_secondary: "{{ kube_service_addresses | ipaddr('net') | ipaddr(4) | ipaddr('address') }}",
      dns_domain: '{{ cluster_name }}',
    };
    expect(clusterDnsOf(sample)).toEqual({ ...DEFAULTS, nameservers: ['10.233.0.3'] });
    expect(clusterDnsOf({ ...sample, dns_mode: 'coredns_dual', kube_service_addresses: '10.96.0.0/12' }).nameservers).toEqual(['10.96.0.3', '10.96.0.4']);
  });

  it("follow kubespray's own default expressions: ansible.utils.ipaddr on the first service subnet", () => {
    const off = { enable_nodelocaldns: false };
    expect(clusterDnsOf({ ...off, kube_service_addresses: '172.20.0.0/16' }).nameservers).toEqual(['172.20.0.3']);
    expect(clusterDnsOf({ ...off, dns_mode: 'coredns_dual' }).nameservers).toEqual(['10.233.0.3', '10.233.0.4']);
    // IPv6 only (ipv4_stack false): the IPv6 range's .3, written as netaddr writes it.
    expect(clusterDnsOf({ ...off, ipv4_stack: false, ipv6_stack: true }).nameservers).toEqual(['fd85:ee78:d8a6:8607::1003']);
    expect(clusterDnsOf({ ...off, enable_dual_stack_networks: true }).nameservers).toEqual(['10.233.0.3']);
    expect(
      clusterDnsOf({ ...off, kube_service_addresses: '10.100.0.0/16', skydns_server: "{{ kube_service_addresses|ansible.utils.ipaddr('net')|ansible.utils.ipaddr(10)|ansible.utils.ipaddr('address') }}" }).nameservers,
    ).toEqual(['10.100.0.10']);
  });

  it('take nodelocaldns, manual servers and a literal skydns_server as given', () => {
    expect(clusterDnsOf({ nodelocaldns_ip: '169.254.20.10' }).nameservers).toEqual(['169.254.20.10']);
    expect(clusterDnsOf({ enable_nodelocaldns: false, dns_mode: 'manual', manual_dns_server: '10.0.0.53,10.0.0.54' }).nameservers).toEqual(['10.0.0.53', '10.0.0.54']);
    expect(clusterDnsOf({ enable_nodelocaldns: false, dns_mode: 'manual' }).nameservers).toEqual([]);
    expect(clusterDnsOf({ enable_nodelocaldns: false, dns_mode: 'none' }).nameservers).toEqual([]);
    expect(clusterDnsOf({ enable_nodelocaldns: false, skydns_server: '10.233.0.10' }).nameservers).toEqual(['10.233.0.10']);
  });

  it('name the custom domain, the inventory search domains and options', () => {
    const dns = clusterDnsOf({ cluster_name: 'corp.k8s', searchdomains: ['svc.{{ cluster_name }}', 'corp.example'], ndots: 5, dns_timeout: '3', dns_attempts: 1 });
    expect(dns).toEqual({
      nameservers: ['169.254.25.10'],
      domain: 'corp.k8s',
      searchDomains: ['default.svc.corp.k8s', 'svc.corp.k8s'],
      ownSearchDomains: ['svc.corp.k8s', 'corp.example'],
      options: { ndots: 5, timeout: 3, attempts: 1 },
    });
    expect(clusterDnsOf({ cluster_name: 'a.example', dns_domain: 'b.example' }).domain).toBe('b.example');
    // remove_default_searchdomains drops kubespray's two only when searchdomains stand instead (0020-set_facts.yml).
    expect(clusterDnsOf({ remove_default_searchdomains: true, searchdomains: ['corp.example'] }).searchDomains).toEqual([]);
    expect(clusterDnsOf({ remove_default_searchdomains: true }).searchDomains).toEqual(DEFAULTS.searchDomains);
  });

  it("read an INI inventory's strings as Ansible's bool and numbers", () => {
    expect(clusterDnsOf({ enable_nodelocaldns: 'False', dns_mode: 'coredns_dual', ndots: '3' })).toMatchObject({ nameservers: ['10.233.0.3', '10.233.0.4'], options: { ndots: 3 } });
    expect(clusterDnsOf({ enable_nodelocaldns: 'yes' }).nameservers).toEqual(['169.254.25.10']);
  });

  it("fall back to kubespray's default for a fact whose value is not of its shape, and never throw", () => {
    const off = { enable_nodelocaldns: false };
    expect(clusterDnsOf({ ndots: 'two', dns_timeout: -1, dns_attempts: null })).toEqual(DEFAULTS);
    expect(clusterDnsOf({ ...off, kube_service_addresses: '10.233.0.0/99' }).nameservers).toEqual(['10.233.0.3']);
    expect(clusterDnsOf({ ...off, kube_service_addresses: '10.233.0.5/18' }).nameservers).toEqual(['10.233.0.3']); // ipaddr('net') of a host address is False
    expect(clusterDnsOf({ ...off, kube_service_addresses: '10.96.0.0/12', skydns_server: "{{ lookup('env', 'DNS') }}" }).nameservers).toEqual(['10.96.0.3']);
    expect(clusterDnsOf({ ...off, skydns_server: 'dns.example' }).nameservers).toEqual(['10.233.0.3']);
    expect(clusterDnsOf({ dns_mode: 'kubedns', enable_nodelocaldns: 'maybe' })).toEqual(DEFAULTS);
    expect(clusterDnsOf({ cluster_name: '{{ a }}', a: '{{ cluster_name }}' }).domain).toBe('cluster.local');
    expect(clusterDnsOf({ dns_domain: '{% if x %}a{% endif %}', searchdomains: 'corp.example', nodelocaldns_ip: { not: 'an address' } })).toEqual(DEFAULTS);
    expect(clusterDnsOf({ ...off, dns_mode: 'manual', manual_dns_server: '10.0.0.53,dns.example' }).nameservers).toEqual([]);
  });
});

describe('addresses', () => {
  it('parse and print as netaddr prints them, so that two spellings compare equal', () => {
    expect(canonicalAddress('FD85:EE78:D8A6:8607:0:0:0:1003')).toBe('fd85:ee78:d8a6:8607::1003');
    expect(canonicalAddress('::ffff:10.0.0.1')).toBe(canonicalAddress('::ffff:a00:1'));
    expect(canonicalAddress('2001:db8:0:1:0:0:0:1')).toBe('2001:db8:0:1::1');
    expect(canonicalAddress('2001:db8:0:1:1:1:1:1')).toBe('2001:db8:0:1:1:1:1:1');
    expect(formatAddress(parseAddress('::')!)).toBe('::');
    expect(parseAddress('1:2:3:4:5:6:7:8:9')).toBeUndefined();
    expect(parseAddress('1::2::3')).toBeUndefined();
    expect(parseAddress('256.0.0.1')).toBeUndefined();
    expect(canonicalAddress(' 10.0.0.1 ')).toBe('10.0.0.1');
  });
});
