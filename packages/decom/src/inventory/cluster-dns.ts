/**
 * The cluster's DNS as kubespray computes it from the inventory's variables, with
 * kubespray's defaults where the inventory is silent: what its resolver edits on a node
 * hold, and so what decom recognises them by (docs/findings.md#dns).
 *
 * Followed at the kubespray commits test/fixtures/kubespray-dns/README.md lists:
 * - roles/kubespray_defaults/defaults/main/main.yml: cluster_name, ndots,
 *   dns_mode, enable_nodelocaldns, nodelocaldns_ip, manual_dns_server, skydns_server(_secondary)
 *   (the first service subnet's .3 and .4), dns_domain, searchdomains, kube_service_addresses(_ipv6),
 *   ipv4_stack, ipv6_stack;
 * - roles/kubespray_defaults/vars/main/main.yml: kube_service_subnets;
 * - roles/kubernetes/preinstall/vars/main.yml: coredns_server_by_mode, and the
 *   cluster's nameserver in resolv.conf: nodelocaldns_ip when it is on, else coredns_server;
 * - roles/kubernetes/preinstall/tasks/0020-set_facts.yml: default_searchdomains,
 *   absent when remove_default_searchdomains is set and searchdomains is not empty;
 * - the templates' `dns_timeout|default('2')`, `dns_attempts|default('2')`
 *   (templates/dhclient_dnsupdate.sh.j2, tasks/0063-networkmanager-dns.yml).
 *
 * A variable may be a Jinja string naming others: a plain `{{ var }}` reference and the
 * `ipaddr('net') | ipaddr(N) | ipaddr('address')` chain on the service range (kubespray's
 * defaults and sample inventory write these) are worked out here. Anything else, and any
 * value that is not of its fact's shape, gives way to kubespray's default for that fact:
 * verify must run on whatever the inventory holds, so nothing here throws.
 */
import { ansibleBool } from './ansible-bool.js';

/** What kubespray writes into a host's resolver configuration. */
export interface ClusterDns {
  /** The cluster's nameservers, in the order kubespray writes them (nodelocaldns's address first when it is on). */
  nameservers: string[];
  /** dns_domain (cluster_name's value by default): `domain` lines and the cluster's search domains name it. */
  domain: string;
  /** The cluster's own search domains: default.svc.DOMAIN and svc.DOMAIN. */
  searchDomains: string[];
  /** The inventory's `searchdomains`: kubespray adds them to the search line, and they stay. */
  ownSearchDomains: string[];
  /** options ndots:N timeout:N attempts:N, as kubespray writes them. */
  options: { ndots: number; timeout: number; attempts: number };
}

/** The DNS variables' defaults in kubespray's roles, as they are written there (Jinja included). */
const DEFAULTS: Readonly<Record<string, unknown>> = {
  cluster_name: 'cluster.local',
  dns_domain: '{{ cluster_name }}',
  ndots: 2,
  dns_timeout: 2,
  dns_attempts: 2,
  dns_mode: 'coredns',
  enable_nodelocaldns: true,
  nodelocaldns_ip: '169.254.25.10',
  manual_dns_server: '',
  kube_service_addresses: '10.233.0.0/18',
  kube_service_addresses_ipv6: 'fd85:ee78:d8a6:8607::1000/116',
  ipv4_stack: true,
  enable_dual_stack_networks: false,
  ipv6_stack: '{{ enable_dual_stack_networks | default(false) }}',
  skydns_server: "{{ kube_service_subnets.split(',') | first | ansible.utils.ipaddr('net') | ansible.utils.ipaddr(3) | ansible.utils.ipaddr('address') }}",
  skydns_server_secondary: "{{ kube_service_subnets.split(',') | first | ansible.utils.ipaddr('net') | ansible.utils.ipaddr(4) | ansible.utils.ipaddr('address') }}",
  searchdomains: [],
  remove_default_searchdomains: false,
};

const DNS_MODES = ['coredns', 'coredns_dual', 'manual', 'none'] as const;

/** The cluster's DNS facts from a host's merged variables (inventory/types.ts Host.vars). */
export function clusterDnsOf(vars: Record<string, unknown>): ClusterDns {
  const inventory = variables(vars);
  const defaults = variables({});
  /** A fact from the inventory when it is of its shape, else kubespray's default for it. */
  const fact = <T>(read: (v: Variables) => T | undefined): T => read(inventory) ?? read(defaults)!;

  const domain = fact((v) => domainName(v.get('dns_domain')));
  const ownSearchDomains = fact((v) => domainList(v.get('searchdomains')));
  const removeDefaults = fact((v) => truth(v.get('remove_default_searchdomains')));
  const whole = (name: string) => fact((v) => wholeNumber(v.get(name)));
  const address = (name: string) => fact((v) => addressOf(v.get(name)));
  const mode = fact((v) => {
    const m = v.get('dns_mode');
    return DNS_MODES.find((d) => d === m);
  });

  let nameservers: string[];
  if (fact((v) => truth(v.get('enable_nodelocaldns')))) nameservers = [address('nodelocaldns_ip')];
  else if (mode === 'coredns') nameservers = [address('skydns_server')];
  else if (mode === 'coredns_dual') nameservers = [address('skydns_server'), address('skydns_server_secondary')];
  else if (mode === 'manual') nameservers = fact((v) => manualServers(v.get('manual_dns_server')));
  else nameservers = [];

  return {
    nameservers: [...new Set(nameservers)],
    domain,
    // 0020-set_facts.yml: default_searchdomains only when not removed, or removed with no searchdomains to stand instead.
    searchDomains: removeDefaults && ownSearchDomains.length > 0 ? [] : [`default.svc.${domain}`, `svc.${domain}`],
    ownSearchDomains,
    options: { ndots: whole('ndots'), timeout: whole('dns_timeout'), attempts: whole('dns_attempts') },
  };
}

// ---- the facts' shapes ----

/** Ansible's `| bool`; an empty value is false, as Jinja's `bool` takes it. */
const truth = (v: unknown): boolean | undefined => (typeof v === 'string' && v.trim() === '' ? false : ansibleBool(v));

function wholeNumber(v: unknown): number | undefined {
  const s = typeof v === 'number' ? String(v) : typeof v === 'string' ? v.trim() : '';
  return /^\d{1,3}$/.test(s) ? Number(s) : undefined;
}

const DOMAIN = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$/;

function domainName(v: unknown): string | undefined {
  return typeof v === 'string' && DOMAIN.test(v.trim()) ? v.trim() : undefined;
}

function domainList(v: unknown): string[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const names = v.map(domainName);
  return names.every((n): n is string => n !== undefined) ? names : undefined;
}

function addressOf(v: unknown): string | undefined {
  const a = typeof v === 'string' ? parseAddress(v.trim()) : undefined;
  return a && formatAddress(a);
}

/** manual_dns_server: one address or several, comma-separated (`manual_dns_server.split(',')`). */
function manualServers(v: unknown): string[] | undefined {
  if (typeof v !== 'string') return undefined;
  const parts = v.split(',').map((p) => p.trim()).filter(Boolean);
  const addresses = parts.map((p) => addressOf(p));
  return addresses.every((a): a is string => a !== undefined) ? addresses : undefined;
}

// ---- the Jinja kubespray's variables are written in ----

interface Variables {
  /** A variable's value with its Jinja worked out; undefined when unset or not worked out. */
  get(name: string): unknown;
}

/** The variables of `vars` over kubespray's defaults, each resolved on demand (a cycle resolves to nothing). */
function variables(vars: Record<string, unknown>): Variables {
  const resolving = new Set<string>();

  const get = (name: string): unknown => {
    if (resolving.has(name)) return undefined;
    resolving.add(name);
    try {
      if (Object.hasOwn(vars, name)) {
        const own = resolve(vars[name]);
        if (own !== undefined) return own;
      }
      if (name === 'kube_service_subnets') return serviceSubnets();
      return Object.hasOwn(DEFAULTS, name) ? resolve(DEFAULTS[name]) : undefined;
    } finally {
      resolving.delete(name);
    }
  };

  /** kube_service_subnets (vars/main/main.yml): the IPv4 range, the IPv6 one, or both, by stack. */
  const serviceSubnets = (): string | undefined => {
    const v4 = truth(get('ipv4_stack')) ?? true;
    const v6 = truth(get('ipv6_stack')) ?? false;
    const four = get('kube_service_addresses');
    const six = get('kube_service_addresses_ipv6');
    const list = v4 ? (v6 ? [four, six] : [four]) : [six];
    return list.every((s): s is string => typeof s === 'string') ? list.join(',') : undefined;
  };

  const resolve = (v: unknown): unknown => {
    if (typeof v === 'string') return render(v);
    if (typeof v === 'number' || typeof v === 'boolean') return v;
    if (Array.isArray(v)) {
      const items = v.map(resolve);
      return items.some((i) => i === undefined) ? undefined : items;
    }
    return undefined; // null, a vault-encrypted value, a mapping: not one of these facts' shapes
  };

  const render = (text: string): unknown => {
    if (text.includes('{%') || text.includes('{#')) return undefined;
    const whole = /^\s*\{\{-?([\s\S]*?)-?\}\}\s*$/.exec(text);
    if (whole && !whole[1]!.includes('{{')) return expression(whole[1]!, get);
    let unresolved = false;
    const out = text.replace(/\{\{-?([\s\S]*?)-?\}\}/g, (_, e: string) => {
      const value = expression(e, get);
      if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
      unresolved = true;
      return '';
    });
    return unresolved ? undefined : out;
  };

  return { get };
}

/**
 * One `{{ … }}` expression: a variable, a literal, or a variable's `.split('x')`, through
 * the filters kubespray's DNS variables use (`first`, `default`/`d`, `ipaddr`, with or
 * without `ansible.utils.`). Undefined for anything else.
 */
function expression(text: string, get: (name: string) => unknown): unknown {
  const [head, ...filters] = splitPipes(text);
  let value = primary(head!.trim(), get);
  for (const f of filters) {
    const m = /^\s*(?:ansible\.utils\.)?([A-Za-z_]\w*)\s*(?:\(\s*(.*?)\s*\))?\s*$/.exec(f);
    if (!m) return undefined;
    const [, name, arg] = m;
    const literal = arg === undefined || arg === '' ? undefined : literalOf(arg);
    if (name === 'default' || name === 'd') {
      if (value === undefined) value = literal;
    } else if (value === undefined) {
      return undefined;
    } else if (name === 'first') {
      value = Array.isArray(value) ? value[0] : undefined;
    } else if (name === 'ipaddr' && (typeof literal === 'string' || typeof literal === 'number')) {
      value = typeof value === 'string' ? ipaddr(value, literal) : undefined;
    } else {
      return undefined;
    }
  }
  return value;
}

/** The `|`-separated parts of an expression, quotes kept whole. */
function splitPipes(text: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quote: string | undefined;
  for (const c of text) {
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === '|') {
      parts.push(current);
      current = '';
      continue;
    }
    current += c;
  }
  parts.push(current);
  return parts;
}

function primary(text: string, get: (name: string) => unknown): unknown {
  const split = /^([A-Za-z_]\w*)\.split\(\s*(['"])(.*?)\2\s*\)$/.exec(text);
  if (split) {
    const v = get(split[1]!);
    return typeof v === 'string' ? v.split(split[3]!) : undefined;
  }
  if (/^[A-Za-z_]\w*$/.test(text) && !['true', 'false', 'True', 'False', 'none', 'None'].includes(text)) return get(text);
  return literalOf(text);
}

function literalOf(text: string): string | number | boolean | undefined {
  const quoted = /^(['"])(.*)\1$/.exec(text);
  if (quoted) return quoted[2];
  if (/^-?\d+$/.test(text)) return Number(text);
  if (text === 'true' || text === 'True') return true;
  if (text === 'false' || text === 'False') return false;
  return undefined;
}

/**
 * ansible.utils.ipaddr on one value, as kubespray's chain uses it: 'net' gives a range
 * whose host bits are zero (else nothing, as Ansible gives False), N the range's Nth
 * address with the range's prefix, 'address' the address alone.
 */
function ipaddr(value: string, query: string | number): string | undefined {
  const cidr = parseCidr(value);
  if (!cidr) return undefined;
  const width = BigInt(cidr.bits - cidr.prefix);
  if (query === 'net') {
    const hostBits = cidr.value & ((1n << width) - 1n);
    return hostBits === 0n && cidr.hasPrefix ? `${formatAddress(cidr)}/${cidr.prefix}` : undefined;
  }
  if (query === 'address') return formatAddress(cidr);
  if (typeof query === 'number' && query >= 0 && BigInt(query) < 1n << width) {
    return `${formatAddress({ bits: cidr.bits, value: cidr.value + BigInt(query) })}/${cidr.prefix}`;
  }
  return undefined;
}

// ---- addresses ----

/** An IPv4 or IPv6 address as a number of 32 or 128 bits. */
export interface Address {
  bits: 32 | 128;
  value: bigint;
}

/** An address in dotted quad or IPv6 text (with `::` and a trailing dotted quad); undefined when it is neither. */
export function parseAddress(text: string): Address | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return { bits: 32, value: v4 };
  if (!text.includes(':') || !/^[0-9A-Fa-f:.]+$/.test(text)) return undefined;
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = ipv6Words(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? ipv6Words(halves[1]!, true) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const words = [...head, ...Array<number>(missing).fill(0), ...tail];
  return { bits: 128, value: words.reduce((acc, w) => (acc << 16n) | BigInt(w), 0n) };
}

/** The 16-bit words of one side of an IPv6 address's `::`; a dotted quad may end the last side. */
function ipv6Words(side: string, last: boolean): number[] | undefined {
  if (side === '') return [];
  const parts = side.split(':');
  const words: number[] = [];
  for (const [i, p] of parts.entries()) {
    if (last && i === parts.length - 1 && p.includes('.')) {
      const q = parseIpv4(p);
      if (q === undefined) return undefined;
      words.push(Number(q >> 16n), Number(q & 0xffffn));
    } else if (/^[0-9A-Fa-f]{1,4}$/.test(p)) {
      words.push(parseInt(p, 16));
    } else {
      return undefined;
    }
  }
  return words;
}

function parseIpv4(text: string): bigint | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!m) return undefined;
  const octets = m.slice(1).map(Number);
  if (octets.some((o) => o > 255)) return undefined;
  return octets.reduce((acc, o) => (acc << 8n) | BigInt(o), 0n);
}

/** An address as netaddr and inet_ntop print it: a dotted quad, or IPv6 in lower case with its longest run of zero groups (two or more) as `::`. */
export function formatAddress(a: Address): string {
  if (a.bits === 32) return [24n, 16n, 8n, 0n].map((s) => String((a.value >> s) & 0xffn)).join('.');
  const words = Array.from({ length: 8 }, (_, i) => Number((a.value >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = { at: -1, length: 0 };
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > best.length) best = { at: i, length: j - i };
    i = j;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(':');
  if (best.length < 2) return hex(words);
  return `${hex(words.slice(0, best.at))}::${hex(words.slice(best.at + best.length))}`;
}

/** An address's one spelling (formatAddress), so that two spellings of one address compare equal; other text lower-cased as it is. */
export function canonicalAddress(text: string): string {
  const a = parseAddress(text.trim());
  return a ? formatAddress(a) : text.trim().toLowerCase();
}

function parseCidr(text: string): (Address & { prefix: number; hasPrefix: boolean }) | undefined {
  const [addr, prefixText, ...rest] = text.trim().split('/');
  if (rest.length || addr === undefined) return undefined;
  const a = parseAddress(addr);
  if (!a) return undefined;
  if (prefixText === undefined) return { ...a, prefix: a.bits, hasPrefix: false };
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > a.bits) return undefined;
  return { ...a, prefix: Number(prefixText), hasPrefix: true };
}
