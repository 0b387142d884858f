/**
 * kubespray's edits of a host's resolver, judged against the cluster's DNS facts
 * (inventory/cluster-dns.ts): what of each file is the cluster's, and what the `dns` step
 * makes of it (docs/findings.md#dns). Pure: the `dns` view and the facts in, edits out.
 * Applying an edit's change and judging the result again gives no edit.
 *
 * What kubespray writes (roles/kubernetes/preinstall), at the commits test/fixtures/kubespray-dns/README.md lists:
 * - tasks/0060-resolvconf.yml: a blockinfile block at the top of resolv.conf between
 *   `# Ansible entries BEGIN` and `END`: `domain D`, `search <default_searchdomains + searchdomains>`,
 *   one `nameserver` per entry (the cluster's first, then the host's own, moved into it), `options
 *   ndots:N timeout:T attempts:A`; it then deletes the host's search/nameserver/domain/options lines
 *   before and after the block.
 * - tasks/0100-dhclient-hooks.yml: a block of the same markers in dhclient.conf:
 *   `supersede domain-name-servers a,b;`, `supersede domain-name "D";`, `supersede domain-search
 *   "x","y";` (vars/main.yml, dhclient_supersede); older releases wrote `", "` and `, `
 *   between the values (tasks/0040-set_facts.yml). The exit hook is
 *   templates/dhclient_dnsupdate.sh.j2 (Debian) or dhclient_dnsupdate_rh.sh.j2
 *   (Red Hat); their earlier texts wrote three `options` lines.
 * - templates/resolved.conf.j2 (tasks/0061-systemd-resolved.yml): kubespray.conf.
 * - tasks/0062-networkmanager-unmanaged-devices.yml: calico.conf and k8s.conf, whole.
 * - tasks/0063-networkmanager-dns.yml: dns.conf's `servers` in [global-dns-domain-*],
 *   `searches` and `options` in [global-dns], by community.general.ini_file (`key = value`);
 *   earlier releases (and 0062-networkmanager.yml) joined the values with `;`.
 */
import type { DnsFile, DnsView } from '../probes/state.js';
import { DNS_FILE_BYTES } from '../probes/script.js';
import { canonicalAddress, type ClusterDns } from '../inventory/cluster-dns.js';

export interface DnsEdit {
  /** The file changed (a resolvconf-managed symlink's target when judged there), or named. */
  path: string;
  /** dns-config: kubespray's edit, which the dns step removes; cluster-resolver: resolv.conf holding nothing but the cluster's entries, or another symlink holding kubespray's block, left as it is and named. */
  kind: 'dns-config' | 'cluster-resolver';
  /** One line for the finding: what of the cluster's it holds, and (cluster-resolver) kubespray's backups of resolv.conf by path, or that there are none. */
  detail: string;
  /** What the step does: the file's new text, or delete it whole; undefined for cluster-resolver. */
  change?: { content: string } | 'delete';
  /** Which running service must re-read it after the change. */
  service?: 'NetworkManager' | 'systemd-resolved';
}

export const RESOLV_CONF = '/etc/resolv.conf';
export const DHCLIENT_CONFS = ['/etc/dhclient.conf', '/etc/dhcp/dhclient.conf'] as const;
export const DHCLIENT_HOOKS = ['/etc/dhcp/dhclient-exit-hooks.d/zdnsupdate', '/etc/dhcp/dhclient.d/zdnsupdate.sh'] as const;
export const RESOLVED_DROP_IN = '/etc/systemd/resolved.conf.d/kubespray.conf';
const NM_CALICO = '/etc/NetworkManager/conf.d/calico.conf';
const NM_K8S = '/etc/NetworkManager/conf.d/k8s.conf';
const NM_DNS = '/etc/NetworkManager/conf.d/dns.conf';

/** Where the resolvconf package keeps the resolv.conf it writes: a link there is judged at its target. */
const RESOLVCONF_TARGETS = ['/run/resolvconf/resolv.conf', '/etc/resolvconf/run/resolv.conf'];
/** systemd-resolved's files: a link to one is resolved's, and left alone. */
const RESOLVED_TARGETS = ['/run/systemd/resolve/stub-resolv.conf', '/run/systemd/resolve/resolv.conf'];

const BEGIN = '# Ansible entries BEGIN';
const END = '# Ansible entries END';

/** Every edit of kubespray's the view shows, in the order of the probe's files. */
export function dnsEdits(view: DnsView, dns: ClusterDns): DnsEdit[] {
  const files = new Map(view.files.map((f) => [f.path, f]));
  const text = (path: string): string | undefined => {
    const f = files.get(path);
    return f?.type === 'file' && whole(f) ? f.content : undefined;
  };
  const nm = view.services.networkManager ? { service: 'NetworkManager' as const } : {};
  const resolved = view.services.resolved ? { service: 'systemd-resolved' as const } : {};
  const edits: DnsEdit[] = [];

  const dhclientBlocks = DHCLIENT_CONFS.map((path) => ({ path, content: text(path) })).map((f) => ({ ...f, without: f.content === undefined ? undefined : withoutDhclientBlock(f.content, dns) }));
  const hooks = DHCLIENT_HOOKS.map((path) => ({ path, content: text(path) })).filter((h) => h.content !== undefined && isKubesprayHook(h.content, dns));
  const dhclientSeen = dhclientBlocks.some((b) => b.without) || hooks.length > 0;

  const resolv = resolvConfEdit(files.get(RESOLV_CONF), dns, dhclientSeen, view.backups);
  // A resolv.conf of nothing but dhclient's lines stays; so do the dhclient edits that mark those
  // lines as kubespray's, named with it: without them, the next judgement could not tell it is the cluster's.
  const keepDhclient = resolv?.kind === 'cluster-resolver' && !!resolv.dhclientLines;
  if (resolv) {
    const kept = [...dhclientBlocks.filter((b) => b.without).map((b) => b.path), ...hooks.map((h) => h.path)];
    const detail = keepDhclient ? `${resolv.detail}; kubespray's dhclient edits that wrote it stay with it: ${kept.join(' ')}` : resolv.detail;
    edits.push({ path: resolv.path, kind: resolv.kind, detail, ...(resolv.change ? { change: resolv.change } : {}) });
  }

  for (const b of keepDhclient ? [] : dhclientBlocks) {
    if (!b.without) continue;
    edits.push({ path: b.path, kind: 'dns-config', detail: `kubespray's supersede block naming the cluster (${b.without.names.join(', ')})`, change: { content: b.without.content } });
  }
  for (const h of keepDhclient ? [] : hooks) {
    edits.push({ path: h.path, kind: 'dns-config', detail: `kubespray's dhclient hook appending options ${optionsText(dns)} to resolv.conf`, change: 'delete' });
  }

  const resolvedText = text(RESOLVED_DROP_IN);
  if (resolvedText !== undefined && isKubesprayResolved(resolvedText, dns)) {
    edits.push({ path: RESOLVED_DROP_IN, kind: 'dns-config', detail: `kubespray's systemd-resolved drop-in (DNS ${dns.nameservers.join(' ') || 'unset'}, Domains ${domainsOf(dns).join(' ')})`, change: 'delete', ...resolved });
  }
  for (const [path, content, what] of [
    [NM_CALICO, NM_CALICO_TEXT, "Calico's interfaces"],
    [NM_K8S, NM_K8S_TEXT, 'kube-ipvs0 and nodelocaldns'],
  ] as const) {
    if (text(path) === content) edits.push({ path, kind: 'dns-config', detail: `kubespray's NetworkManager drop-in leaving ${what} unmanaged`, change: 'delete', ...nm });
  }
  const nmDns = text(NM_DNS);
  const nmDnsLeft = nmDns === undefined ? undefined : withoutNetworkManagerDnsKeys(nmDns, dns);
  if (nmDnsLeft) {
    const change = nmDnsLeft.content.trim() === '' ? ('delete' as const) : { content: nmDnsLeft.content };
    edits.push({ path: NM_DNS, kind: 'dns-config', detail: `kubespray's global DNS keys: ${nmDnsLeft.removed.join(', ')}`, change, ...nm });
  }
  return edits;
}

/** A file's whole text is in the view: read to the end, not cut at DNS_FILE_BYTES (a rewrite of a cut file would lose its tail). */
function whole(f: DnsFile): f is DnsFile & { content: string } {
  return f.content !== undefined && Buffer.byteLength(f.content, 'utf8') < DNS_FILE_BYTES;
}

// ---- lines, their endings kept ----

interface Line {
  /** The line without its ending (a CR before the LF is part of the ending). */
  text: string;
  /** '\n', '\r\n', or '' for a last line without one. */
  eol: string;
}

export function splitLines(content: string): Line[] {
  const lines: Line[] = [];
  for (const m of content.matchAll(/([^\n]*?)(\r?\n|$)/g)) {
    if (m[0] === '' && m.index === content.length) break;
    lines.push({ text: m[1]!, eol: m[2]! });
  }
  return lines;
}

/** Lines back into text; a file that did not end in a newline still does not, whichever line is last now. */
export function joinLines(lines: Line[], original: string): string {
  const out = lines.map((l) => l.text + l.eol).join('');
  if (/\n$/.test(original) || !/\n$/.test(out)) return out;
  return out.replace(/\r?\n$/, '');
}

// ---- resolv.conf ----

/** What resolv.conf holds of the cluster, and the file without it. */
export interface ResolvConfJudgement {
  /** kubespray's marked block was there. */
  block: boolean;
  /** The cluster's entries taken out, for the finding (`nameserver 169.254.25.10`, `search default.svc.cluster.local`, …). */
  removed: string[];
  /** Some of them were unmarked lines dhclient wrote. */
  dhclientLines: boolean;
  content: string;
}

/**
 * resolv.conf without the cluster's entries: kubespray's block rewritten in place without
 * its markers, the cluster's nameservers, `domain` lines naming the cluster's domain, the
 * cluster's search domains and the options its facts give (the host's own nameservers,
 * search domains and options stay, in order); with `dhclient`, the unmarked lines dhclient
 * wrote from kubespray's supersede block and hook that match the facts go too. Every other
 * line stays as it is. Undefined when the file holds nothing of the cluster's.
 */
export function withoutClusterEntries(content: string, dns: ClusterDns, dhclient: boolean): ResolvConfJudgement | undefined {
  const lines = splitLines(content);
  const block = kubesprayBlock(lines, dns);
  // The block's own `default.svc.X` names the domain kubespray wrote, should the inventory's differ.
  const domains = new Set([dns.domain, ...(block?.domains ?? [])].map(domainKey));
  const clusterSearch = new Set([...dns.searchDomains, ...[...domains].flatMap((d) => [`default.svc.${d}`, `svc.${d}`])].map(domainKey));
  const nameservers = new Set(dns.nameservers.map(canonicalAddress));
  const optionTokens = new Set(optionsOf(dns));
  const removed: string[] = [];
  let dhclientLines = false;
  const out: Line[] = [];
  let inBlock = false;

  const note = (what: string) => {
    if (!removed.includes(what)) removed.push(what);
    if (!inBlock) dhclientLines = true;
  };
  /** A line of the block, or one dhclient wrote: its text with the cluster's taken out, or undefined when nothing is left of it. */
  const judge = (text: string): string | undefined => {
    const entry = /^(nameserver|domain|search|options)([ \t]+)(.*?)[ \t]*$/.exec(text);
    if (!entry) return text;
    const key = entry[1]!;
    const words = entry[3]!.split(/[ \t]+/).filter(Boolean);
    const first = words[0] ?? '';
    if (key === 'nameserver') {
      if (!nameservers.has(canonicalAddress(first))) return text;
      note(`nameserver ${first}`);
      return undefined;
    }
    if (key === 'domain') {
      if (words.length !== 1 || !domains.has(domainKey(first))) return text;
      note(`domain ${first}`);
      return undefined;
    }
    if (key === 'search') {
      // Unmarked, only the line dhclient writes from kubespray's supersede: its exact list, after the
      // domain-name when the list lacks it (dhclient-script's make_resolv_conf puts it first).
      const supersede = [...dns.searchDomains, ...dns.ownSearchDomains].map(domainKey).join(' ');
      const said = words.map(domainKey);
      const domainFirst = !inBlock && said.length > 0 && domainKey(said[0]!) === domainKey(dns.domain) && said.slice(1).join(' ') === supersede;
      if (!inBlock && !domainFirst && said.join(' ') !== supersede) return text;
      const kept = words.filter((w, i) => !clusterSearch.has(domainKey(w)) && !(domainFirst && i === 0));
      if (kept.length === words.length) return text;
      note(`search ${words.filter((w, i) => clusterSearch.has(domainKey(w)) || (domainFirst && i === 0)).join(' ')}`);
      return kept.length ? `search ${kept.join(' ')}` : undefined;
    }
    // options: in the block, the facts' own; unmarked, a line of nothing but them (the hook's).
    const kept = words.filter((w) => !optionTokens.has(w));
    if (kept.length === words.length || (!inBlock && kept.length > 0)) return text;
    note(`options ${words.filter((w) => optionTokens.has(w)).join(' ')}`);
    return kept.length ? `options ${kept.join(' ')}` : undefined;
  };

  lines.forEach((line, i) => {
    if (block && (i === block.begin || i === block.end)) return;
    inBlock = !!block && i > block.begin && i < block.end;
    if (!inBlock && !dhclient) return void out.push(line);
    const text = judge(line.text);
    if (text !== undefined) out.push({ text, eol: line.eol });
  });
  if (!block && removed.length === 0) return undefined;
  return { block: !!block, removed, dhclientLines, content: joinLines(out, content) };
}

/**
 * kubespray's block: the markers, and a `default.svc.` search domain between them (or,
 * where the facts say kubespray's search domains were removed, a `domain` line naming the
 * cluster's domain). The same markers are any Ansible blockinfile's: only this makes it kubespray's.
 */
function kubesprayBlock(lines: Line[], dns: ClusterDns): { begin: number; end: number; domains: string[] } | undefined {
  const begin = lines.findIndex((l) => l.text.trimEnd() === BEGIN);
  if (begin < 0) return undefined;
  const end = lines.findIndex((l, i) => i > begin && l.text.trimEnd() === END);
  if (end < 0) return undefined;
  const inside = lines.slice(begin + 1, end).map((l) => l.text);
  const domains = inside
    .flatMap((t) => (/^search[ \t]/.test(t) ? t.split(/[ \t]+/).slice(1) : []))
    .map(domainKey)
    .filter((d) => d.startsWith('default.svc.'))
    .map((d) => d.slice('default.svc.'.length));
  const namesDomain = (t: string) => {
    const m = /^domain[ \t]+(\S+)[ \t]*$/.exec(t);
    return !!m && domainKey(m[1]!) === domainKey(dns.domain);
  };
  const ownDomainLine = dns.searchDomains.length === 0 && inside.some(namesDomain);
  return domains.length || ownDomainLine ? { begin, end, domains } : undefined;
}

function resolvConfEdit(file: DnsFile | undefined, dns: ClusterDns, dhclient: boolean, backups: string[]): (DnsEdit & { dhclientLines?: boolean }) | undefined {
  if (!file || file.content === undefined) return undefined;
  let path = RESOLV_CONF;
  if (file.type === 'link') {
    if (file.target && RESOLVED_TARGETS.includes(file.target)) return undefined; // systemd-resolved's own: kubespray writes no block there
    if (!file.target || !RESOLVCONF_TARGETS.includes(file.target)) {
      const seen = withoutClusterEntries(file.content, dns, false);
      if (!seen?.block) return undefined;
      return { path: RESOLV_CONF, kind: 'cluster-resolver', detail: `a symlink to ${file.target ?? 'an unknown target'} holding kubespray's block (${seen.removed.join(', ')}): left as it is; ${backupsText(backups)}` };
    }
    path = file.target;
  } else if (file.type !== 'file') {
    return undefined;
  }
  if (!whole(file)) return undefined;
  const judged = withoutClusterEntries(file.content, dns, dhclient);
  if (!judged) return undefined;
  const source = [judged.block ? "kubespray's block" : '', judged.dhclientLines ? "dhclient's lines" : ''].filter(Boolean).join(' and ');
  const what = `${source}: ${judged.removed.join(', ') || 'the markers'}`;
  // Never an empty resolver: without a nameserver of the host's own, the file stays and the backups are named.
  if (!splitLines(judged.content).some((l) => /^nameserver[ \t]+\S/.test(l.text))) {
    return { path, kind: 'cluster-resolver', detail: `nothing but the cluster's entries (${what}): left as it is; ${backupsText(backups)}`, dhclientLines: judged.dhclientLines };
  }
  return { path, kind: 'dns-config', detail: what, change: { content: judged.content } };
}

function backupsText(backups: string[]): string {
  return backups.length ? `kubespray's backups of resolv.conf: ${backups.join(' ')}` : "no backup of kubespray's (resolv.conf.*~) is there";
}

/** A domain as resolv.conf and dhclient compare it: lower case, without a trailing dot. */
function domainKey(d: string): string {
  return d.toLowerCase().replace(/\.$/, '');
}

function optionsOf(dns: ClusterDns): string[] {
  return [`ndots:${dns.options.ndots}`, `timeout:${dns.options.timeout}`, `attempts:${dns.options.attempts}`];
}

function optionsText(dns: ClusterDns): string {
  return optionsOf(dns).join(' ');
}

/** The search domains kubespray writes: its own, then the inventory's. */
function domainsOf(dns: ClusterDns): string[] {
  return [...dns.searchDomains, ...dns.ownSearchDomains];
}

// ---- dhclient ----

/**
 * dhclient.conf without kubespray's marked block, when its supersede lines name the cluster
 * (its domain, a search domain of its, or one of its nameservers); undefined otherwise.
 * What is left may be nothing: the file is still kept, empty, not deleted. kubespray only
 * wrote into a dhclient.conf that was there (0020-set_facts.yml picks the one that exists),
 * and dhclient reads an empty one as no statements, requesting its built-in options.
 */
export function withoutDhclientBlock(content: string, dns: ClusterDns): { content: string; names: string[] } | undefined {
  const lines = splitLines(content);
  const begin = lines.findIndex((l) => l.text.trimEnd() === BEGIN);
  const end = lines.findIndex((l, i) => i > begin && l.text.trimEnd() === END);
  if (begin < 0 || end < 0) return undefined;
  const nameservers = new Set(dns.nameservers.map(canonicalAddress));
  const search = new Set([...dns.searchDomains, `default.svc.${dns.domain}`, `svc.${dns.domain}`].map(domainKey));
  const names: string[] = [];
  for (const l of lines.slice(begin + 1, end)) {
    const m = /^\s*supersede\s+(domain-name-servers|domain-name|domain-search)\s+(.*?)\s*;\s*$/.exec(l.text);
    if (!m) continue;
    const values = m[2]!.split(',').map((v) => v.trim().replace(/^"(.*)"$/, '$1')).filter(Boolean);
    if (m[1] === 'domain-name-servers') names.push(...values.filter((v) => nameservers.has(canonicalAddress(v))).map((v) => `nameserver ${v}`));
    else if (m[1] === 'domain-name') names.push(...values.filter((v) => domainKey(v) === domainKey(dns.domain)).map((v) => `domain ${v}`));
    else names.push(...values.filter((v) => search.has(domainKey(v))).map((v) => `search ${v}`));
  }
  if (names.length === 0) return undefined;
  return { content: joinLines([...lines.slice(0, begin), ...lines.slice(end + 1)], content), names };
}

/** kubespray's exit hooks, rendered with the facts: Debian's and Red Hat's, as HEAD writes them and as earlier releases did. */
export function kubesprayHookTexts(dns: ClusterDns): string[] {
  const { ndots, timeout, attempts } = dns.options;
  const head = '#!/bin/sh\n#\n# Prepend resolver options to /etc/resolv.conf after dhclient`\n# regenerates the file. See man (5) resolver for more details.\n#\n';
  const strip = "RESOLV_CONF=$(cat /etc/resolv.conf | sed -r '/^options (timeout|attempts|ndots).*$/d')";
  const oneLine = `OPTIONS="options timeout:${timeout} attempts:${attempts} ndots:${ndots}"`;
  const threeLines = `OPTIONS="options timeout:2\\noptions attempts:2\\noptions ndots:${ndots}"`;
  const debian = (read: string, options: string) =>
    `${head}if [ $reason = "BOUND" ]; then\n  if [ -n "$new_domain_search" -o -n "$new_domain_name_servers" ]; then\n    ${read}\n    ${options}\n\n    printf "%b\\n" "$RESOLV_CONF\\n$OPTIONS" > /etc/resolv.conf\n  fi\nfi\n`;
  const redHat = (options: string) =>
    `${head}zdnsupdate_config() {\n  if [ -n "$new_domain_search" -o -n "$new_domain_name_servers" ]; then\n    ${strip}\n    ${options}\n\n    echo -e "$RESOLV_CONF\\n$OPTIONS" > /etc/resolv.conf\n  fi\n}\n\nzdnsupdate_restore() {\n  :\n}\n`;
  return [
    debian(strip, oneLine), // dhclient_dnsupdate.sh.j2
    debian('RESOLV_CONF=$(cat /etc/resolv.conf)', threeLines), // its earlier text
    redHat(oneLine), // dhclient_dnsupdate_rh.sh.j2
    redHat(threeLines), // its earlier text
  ];
}

/** A hook file is kubespray's when its text is one of the templates' rendered with the facts (its final newline aside). */
export function isKubesprayHook(content: string, dns: ClusterDns): boolean {
  const text = content.replace(/\n$/, '');
  return kubesprayHookTexts(dns).some((t) => t.replace(/\n$/, '') === text);
}

// ---- systemd-resolved ----

/**
 * resolved.conf.j2 rendered with the facts. Its conditionals: `#DNS=` in the early stage,
 * else DNS= the cluster's nameservers; Domains= with or without kubespray's search domains;
 * the stub listener line either way. FallbackDNS holds the upstream, inventory and cloud
 * resolvers, which the facts do not carry: any value there.
 */
export function isKubesprayResolved(content: string, dns: ClusterDns): boolean {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const alternatives = (xs: string[]) => `(?:${[...new Set(xs)].map(esc).join('|')})`;
  const own = dns.ownSearchDomains;
  const domainLists = [[...dns.searchDomains, ...own], [`default.svc.${dns.domain}`, `svc.${dns.domain}`, ...own], own].map((l) => l.join(' '));
  const pattern = [
    esc('[Resolve]'),
    alternatives(['#DNS=', `DNS=${dns.nameservers.join(' ')}`]),
    'FallbackDNS=[^\\n]*',
    `Domains=${alternatives(domainLists)}`,
    esc('#LLMNR=no'),
    esc('#MulticastDNS=no'),
    esc('DNSSEC=no'),
    esc('Cache=no-negative'),
    alternatives(['#DNSStubListener=yes', 'DNSStubListener=no']),
  ].join('\\n');
  return new RegExp(`^${pattern}\\n?$`).test(content);
}

// ---- NetworkManager ----

/** calico.conf and k8s.conf as 0062-networkmanager-unmanaged-devices.yml's copy tasks write them. */
export const NM_CALICO_TEXT = '[keyfile]\nunmanaged-devices+=interface-name:cali*;interface-name:tunl*;interface-name:vxlan.calico;interface-name:vxlan-v6.calico\n';
export const NM_K8S_TEXT = '[keyfile]\nunmanaged-devices+=interface-name:kube-ipvs0;interface-name:nodelocaldns\n';

/**
 * dns.conf without kubespray's keys: `servers` naming a nameserver of the cluster's in
 * [global-dns-domain-*], `searches` naming a search domain of its and `options` holding
 * exactly the facts' values in [global-dns]. A section left with nothing but blank lines
 * goes; every other line stays byte for byte. Undefined when none of kubespray's keys is there.
 */
export function withoutNetworkManagerDnsKeys(content: string, dns: ClusterDns): { content: string; removed: string[] } | undefined {
  const lines = splitLines(content);
  const nameservers = new Set(dns.nameservers.map(canonicalAddress));
  const search = new Set([...dns.searchDomains, `default.svc.${dns.domain}`, `svc.${dns.domain}`].map(domainKey));
  const { ndots, timeout, attempts } = dns.options;
  const options = [`ndots:${ndots},timeout:${timeout},attempts:${attempts}`, `ndots:${ndots};timeout:${timeout};attempts:${attempts};`];
  const values = (v: string) => v.split(/[,;]/).map((x) => x.trim()).filter(Boolean);

  interface Section {
    header?: number;
    name?: string;
    lines: number[];
    touched: boolean;
  }
  const sections: Section[] = [{ lines: [], touched: false }];
  const drop = new Set<number>();
  const removed: string[] = [];
  lines.forEach((l, i) => {
    const header = /^\s*\[([^\]]*)\]\s*$/.exec(l.text);
    if (header) return void sections.push({ header: i, name: header[1]!.trim(), lines: [], touched: false });
    const section = sections[sections.length - 1]!;
    section.lines.push(i);
    const kv = /^\s*([A-Za-z-]+)\s*=\s*(.*?)\s*$/.exec(l.text);
    if (!kv) return;
    const key = kv[1]!;
    const value = kv[2]!;
    const ours =
      (section.name === 'global-dns-domain-*' && key === 'servers' && values(value).some((v) => nameservers.has(canonicalAddress(v)))) ||
      (section.name === 'global-dns' && key === 'searches' && values(value).some((v) => search.has(domainKey(v)))) ||
      (section.name === 'global-dns' && key === 'options' && options.includes(value));
    if (!ours) return;
    drop.add(i);
    section.touched = true;
    removed.push(`[${section.name}] ${key} = ${value}`);
  });
  if (removed.length === 0) return undefined;
  for (const s of sections) {
    if (!s.touched || s.header === undefined) continue;
    if (s.lines.every((i) => drop.has(i) || lines[i]!.text.trim() === '')) [s.header, ...s.lines].forEach((i) => drop.add(i));
  }
  return { content: joinLines(lines.filter((_, i) => !drop.has(i)), content), removed };
}
