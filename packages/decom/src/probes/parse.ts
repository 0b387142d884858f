/**
 * Pure parsers: raw probe output in, typed views out. Each one takes the text a
 * single command prints and is tested on real output of that command.
 */
import { createHash } from 'node:crypto';
import type { Container, DnsFile, DnsView, EtcdView, NodeFacts, RuntimeStatus, IptablesTable, Kubeconfig, KubeCgroup, KubeCgroups, Link, Listener, Mount, PodTraces, Proc, Route, StaticPod, Unit } from './state.js';
import { INSTALL_PATHS, type InstallKind, type StatePathKind } from './script.js';
import { redactArgv } from './redact.js';

const lines = (s: string): string[] => s.split('\n').filter((l) => l.trim() !== '');
const nulls = (s: string): string[] => s.split('\0').filter((x) => x !== '');

/**
 * Splits probe output into sections. The first "@@decom-NONCE key KEY" line is the
 * script's own (it prints it before anything read from the node), and KEY, which no
 * other process on the node can see, is in every real marker.
 */
export function splitSections(out: string, nonce: string): Map<string, string> {
  const sections = new Map<string, string>();
  const keyLine = `\n@@decom-${nonce} key `;
  const at = out.indexOf(keyLine);
  const key = at < 0 ? '' : out.slice(at + keyLine.length, out.indexOf('\n', at + keyLine.length));
  if (!/^[0-9a-f-]{36}$/.test(key)) return sections;
  const parts = out.slice(at).split(`\n@@decom-${nonce}-${key} `);
  for (const part of parts.slice(1)) {
    const nl = part.indexOf('\n');
    const name = nl < 0 ? part : part.slice(0, nl);
    sections.set(name, nl < 0 ? '' : part.slice(nl + 1));
  }
  return sections;
}

export function parseMeta(text: string): { hostname: string; machineId: string; pid1: string; uid: number; tools: Set<string> } {
  const meta = { hostname: '', machineId: '', pid1: '', uid: -1, tools: new Set<string>() };
  for (const l of lines(text)) {
    const eq = l.indexOf('=');
    const k = l.slice(0, eq);
    const v = l.slice(eq + 1);
    if (k === 'hostname') meta.hostname = v;
    else if (k === 'machine_id') meta.machineId = v;
    else if (k === 'pid1') meta.pid1 = v;
    else if (k === 'uid') meta.uid = Number(v);
    else if (k === 'tool') meta.tools.add(v);
  }
  return meta;
}

/** "kind\tpath\0" records: paths may hold any byte but NUL. */
export function parsePaths(text: string): { kind: StatePathKind; path: string }[] {
  return nulls(text).map((rec) => {
    const tab = rec.indexOf('\t');
    return { kind: rec.slice(0, tab).replace(/^\n/, '') as StatePathKind, path: rec.slice(tab + 1) };
  });
}

/**
 * The `resolved` sections: the paths NUL-terminated, an empty record, then each one's dir
 * as readlink resolved it, in the same order. Path -> the path resolved (its name kept).
 * Lists of different lengths say nothing: no record, so no path is taken as judged.
 */
export function parseResolved(text: string): Map<string, string> {
  const recs = text.replace(/^\n/, '').split('\0');
  const gap = recs.indexOf('');
  const paths = recs.slice(0, gap);
  const dirs = recs.slice(gap + 1, gap + 1 + paths.length);
  if (gap < 0 || dirs.length !== paths.length || dirs.some((d) => !d.startsWith('/'))) return new Map();
  return new Map(paths.map((p, i) => [p, `${(dirs[i] as string).replace(/\/$/, '')}/${p.slice(p.lastIndexOf('/') + 1)}`]));
}

/** Lines of `grep -H '' /proc/[0-9]*\/FILE`, joined back per PID (a line break inside a value continues it). */
function perPid(text: string, file: string): Map<number, string> {
  const out = new Map<number, string>();
  const prefix = /^\/proc\/(\d+)\/([a-z]+):/;
  for (const l of text.split('\n')) {
    const m = prefix.exec(l);
    if (!m || m[2] !== file) continue;
    const pid = Number(m[1]);
    const v = l.slice(m[0].length);
    const had = out.get(pid);
    out.set(pid, had === undefined ? v : `${had}\n${v}`);
  }
  return out;
}

/**
 * Processes from /proc/PID/stat ("PID (COMM) STATE PPID …", COMM may hold any byte)
 * and /proc/PID/cmdline (argv, NUL-separated). The name is argv[0]'s basename, not
 * the 15-character comm; kernel threads and zombies (no argv) are "[comm]", as ps shows them.
 * A command line cut on the node is followed by "#cut PID" (no grep line starts with #).
 */
export function parseProcs(statText: string, cmdlineText: string): Map<number, Proc> {
  const cmdlines = perPid(cmdlineText, 'cmdline');
  const cut = new Set([...cmdlineText.matchAll(/^#cut (\d+)$/gm)].map((m) => Number(m[1])));
  const procs = new Map<number, Proc>();
  for (const [pid, stat] of perPid(statText, 'stat')) {
    const open = stat.indexOf(' (');
    const close = stat.lastIndexOf(') ');
    if (open < 0 || close < open) continue;
    const fields = stat.slice(close + 2).split(' ');
    const ppid = Number(fields[1]);
    if (!Number.isInteger(ppid)) continue;
    const start = Number(fields[19] ?? 0);
    const raw = (cmdlines.get(pid) ?? '').split('\0');
    while (raw.length && raw[raw.length - 1] === '') raw.pop();
    // Where command lines enter decom: no credential goes further (probes/redact.ts).
    const argv = redactArgv(raw);
    // A title rewritten in place (setproctitle: "sshd: root@notty") is one argument with spaces.
    const argv0 = (argv.length === 1 ? argv[0]?.split(' ')[0] : argv[0]) ?? '';
    const name = argv0 ? argv0.slice(argv0.lastIndexOf('/') + 1) : `[${stat.slice(open + 2, close)}]`;
    procs.set(pid, { pid, ppid, name, args: argv.length ? argv.join(' ') : name, start, ...(cut.has(pid) ? { cut: true } : {}) });
  }
  return procs;
}

/** `grep … /proc/[0-9]*\/cgroup`: "/proc/PID/cgroup:ID:CONTROLLERS:PATH". */
export function parseCgroups(text: string): Map<number, string> {
  const m = new Map<number, string>();
  for (const l of lines(text)) {
    const r = /^\/proc\/(\d+)\/cgroup:\d+:[^:]*:(.*)$/.exec(l);
    if (r && !m.has(Number(r[1]))) m.set(Number(r[1]), r[2] as string);
  }
  return m;
}

/** `ss -Hltnp`: local address, port and every process holding the socket. */
export function parseSs(text: string): Listener[] {
  const out: Listener[] = [];
  for (const l of lines(text)) {
    const cols = l.trim().split(/\s+/);
    const local = cols[3];
    if (!local) continue;
    const colon = local.lastIndexOf(':');
    const port = Number(local.slice(colon + 1));
    if (!Number.isInteger(port)) continue;
    const holders = [...l.matchAll(/\("((?:[^"\\]|\\.)*)",pid=(\d+)/g)].map((h) => ({ name: h[1] as string, pid: Number(h[2]) }));
    out.push({ addr: local.slice(0, colon), port, holders });
  }
  return out;
}

/** Decodes mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash). */
const unescapeOctal = (s: string): string =>
  s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT TARGET OPTS [OPTIONAL…] - FSTYPE SOURCE SUPEROPTS". */
export function parseMountinfo(text: string): Mount[] {
  const out: Mount[] = [];
  for (const l of lines(text)) {
    const f = l.split(' ');
    const dash = f.indexOf('-', 6);
    if (f.length < 10 || dash < 0) continue;
    out.push({ target: unescapeOctal(f[4] as string), fstype: f[dash + 1] as string, source: unescapeOctal(f[dash + 2] as string) });
  }
  return out;
}

export const parseNetns = (text: string): string[] => nulls(text).map((p) => p.replace(/^\n/, '').replace(/^.*\//, ''));

/** `ip -o link show`: "5: vethabc@if2: <…> mtu 1500 … master cni0 state UP …". */
export function parseLinks(text: string): Link[] {
  const out: Link[] = [];
  for (const l of lines(text)) {
    const m = /^\d+:\s+([^:@\s]+)(?:@[^:\s]+)?:/.exec(l);
    if (!m) continue;
    const link: Link = { name: m[1] as string };
    const master = / master (\S+)/.exec(l)?.[1];
    if (master) link.master = master;
    const peer = / link-netns (\S+)/.exec(l)?.[1] ?? / link-netnsid (\d+)/.exec(l)?.[1];
    if (peer !== undefined) link.peerNetns = / link-netns /.test(l) ? peer : `id:${peer}`;
    out.push(link);
  }
  return out;
}

/** iptables-save output: tables, chains, "-A" rules. */
export function parseIptablesSave(text: string, backend: 'nft' | 'legacy', family: 4 | 6): IptablesTable[] {
  const tables: IptablesTable[] = [];
  let cur: IptablesTable | undefined;
  for (const l of lines(text)) {
    if (l.startsWith('#')) continue;
    if (l.startsWith('*')) tables.push((cur = { backend, family, table: l.slice(1).trim(), chains: [], rules: [] }));
    else if (cur && l.startsWith(':')) cur.chains.push(l.slice(1).split(' ')[0] as string);
    else if (cur && l.startsWith('-A ')) cur.rules.push({ chain: l.split(' ')[1] as string, spec: l });
  }
  return tables;
}

/**
 * The `cni-nat` section (`-S` of chosen nat chains of the nft backend, per family) laid
 * over the full dump read before: the chains it lists are replaced by what it shows,
 * and CNI-* chains it no longer shows are gone (a CNI DEL removed them).
 */
export function mergeCniNat(prev: IptablesTable[], text: string): IptablesTable[] {
  const out = prev.map((t) => ({ ...t }));
  for (const block of text.split(/^#family /m).slice(1)) {
    const family = Number(block.slice(0, 1)) as 4 | 6;
    const listed = new Set<string>();
    const rules: { chain: string; spec: string }[] = [];
    for (const l of lines(block).slice(1)) {
      const [verb, chain] = l.split(' ');
      if (!chain) continue;
      if (verb === '-N' || verb === '-P') listed.add(chain);
      else if (verb === '-A') rules.push({ chain, spec: l });
    }
    let t = out.find((x) => x.backend === 'nft' && x.family === family && x.table === 'nat');
    if (!t) {
      // iptables-nft shows the built-in chains of a table that does not exist: nothing new.
      if (!rules.length && ![...listed].some((c) => c.startsWith('CNI-'))) continue;
      out.push((t = { backend: 'nft', family, table: 'nat', chains: [], rules: [] }));
    }
    const covered = (c: string) => listed.has(c) || c.startsWith('CNI-') || c === 'PREROUTING' || c === 'OUTPUT' || c === 'POSTROUTING';
    t.chains = [...t.chains.filter((c) => !covered(c)), ...[...listed].filter((c) => t.chains.includes(c) || c.startsWith('CNI-'))];
    t.rules = [...t.rules.filter((r) => !covered(r.chain)), ...rules];
  }
  return out;
}

/** `nft list tables`: "table ip kube-proxy". */
export const parseNftTables = (text: string): { family: string; name: string }[] =>
  lines(text)
    .map((l) => /^table\s+(\S+)\s+(\S+)/.exec(l.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ family: m[1] as string, name: m[2] as string }));

/** /proc/net/ip_vs: virtual services ("TCP  0A600001:01BB rr"), addresses in hex. */
export function parseIpvs(text: string): string[] {
  const out: string[] = [];
  for (const l of lines(text)) {
    const m = /^(TCP|UDP|SCTP)\s+(\[[0-9a-fA-F:]+\]|[0-9A-F]{8}):([0-9A-F]+)/.exec(l);
    if (!m) continue;
    const hex = m[2] as string;
    const addr = hex.startsWith('[') ? hex : (hex.match(/../g) ?? []).map((b) => parseInt(b, 16)).join('.');
    out.push(`${m[1]} ${addr}:${parseInt(m[3] as string, 16)}`);
  }
  return out;
}

/** `systemctl show -p Id,LoadState,ActiveState,UnitFileState u1 u2 …`: blank-line separated blocks. */
export function parseSystemctlShow(text: string): Map<string, Unit> {
  const units = new Map<string, Unit>();
  for (const block of text.split(/\n\s*\n/)) {
    const kv = Object.fromEntries(lines(block).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    if (kv.Id) units.set(kv.Id, { id: kv.Id, load: kv.LoadState ?? '', active: kv.ActiveState ?? '', fileState: kv.UnitFileState ?? '' });
  }
  return units;
}

interface CrictlPod {
  id: string;
  metadata?: { name?: string; namespace?: string; uid?: string };
  annotations?: Record<string, string>;
  state?: string;
}
interface CrictlContainer {
  id: string;
  podSandboxId?: string;
  metadata?: { name?: string };
  state?: string;
  labels?: Record<string, string>;
}

/** Parsed JSON, or undefined for empty or cut-off text (a client killed by its timeout). */
export const json = <T>(text: string): T | undefined => {
  try {
    return text.trim() ? (JSON.parse(text) as T) : undefined;
  } catch {
    return undefined;
  }
};

/** `crictl pods -o json` and `crictl ps -a -o json` (the CRI's protobuf JSON). */
export function parseCrictl(podsJson: string, containersJson: string): Container[] {
  const pods = json<{ items?: CrictlPod[] }>(podsJson)?.items ?? [];
  const containers = json<{ containers?: CrictlContainer[] }>(containersJson)?.containers ?? [];
  const podName = new Map(pods.map((p) => [p.id, `${p.metadata?.namespace ?? '?'}/${p.metadata?.name ?? '?'}`]));
  const podUid = new Map(pods.flatMap((p) => (p.metadata?.uid ? [[p.id, p.metadata.uid] as const] : [])));
  return [
    ...pods.map((p): Container => ({
      id: p.id, runtime: 'containerd', kind: 'sandbox', pod: podName.get(p.id), state: p.state,
      ...(p.metadata?.uid ? { podUid: p.metadata.uid } : {}),
      ...(p.annotations?.['kubernetes.io/config.source'] ? { configSource: p.annotations['kubernetes.io/config.source'] } : {}),
    })),
    ...containers.map(
      (c): Container => ({
        id: c.id,
        runtime: 'containerd',
        kind: 'container',
        name: c.metadata?.name,
        pod:
          podName.get(c.podSandboxId ?? '') ??
          (c.labels?.['io.kubernetes.pod.name'] ? `${c.labels['io.kubernetes.pod.namespace'] ?? '?'}/${c.labels['io.kubernetes.pod.name']}` : undefined),
        state: c.state,
        ...(c.podSandboxId ? { sandboxId: c.podSandboxId } : {}),
        ...(podUid.get(c.podSandboxId ?? '') ?? c.labels?.['io.kubernetes.pod.uid'] ? { podUid: podUid.get(c.podSandboxId ?? '') ?? c.labels?.['io.kubernetes.pod.uid'] } : {}),
      }),
    ),
  ];
}

/** The CRI's notes on one containerd container: annotations (short names) and labels (full names). */
type Notes = Record<string, string>;

/**
 * The `task-bundles` (FILE:"key":"value" per grep -o match) and `ctr-info` ("@ID",
 * then its matches; "!unanswered" when ctr failed) sections: each container's notes,
 * its task's init PID, and the containers whose record could not be read.
 */
export function criNotes(bundlesText: string, infoText = ''): { notes: Map<string, Notes>; pids: Map<string, number>; unread: Map<string, string> } {
  const notes = new Map<string, Notes>();
  const pids = new Map<string, number>();
  const unread = new Map<string, string>();
  const note = (id: string, kv: string) => {
    const a = /^"([^"]+)": ?"([^"]*)"$/.exec(kv);
    if (a) notes.set(id, { ...notes.get(id), [(a[1] as string).replace(/^io\.kubernetes\.cri\./, '')]: a[2] as string });
  };
  for (const l of lines(bundlesText)) {
    const m = /\/k8s\.io\/([^/]+)\/(config\.json|init\.pid):(.*)$/.exec(l);
    if (!m) continue;
    if (m[2] === 'init.pid') pids.set(m[1] as string, Number(m[3]));
    else note(m[1] as string, m[3] as string);
  }
  let id: string | undefined;
  for (const l of lines(infoText)) {
    if (l.startsWith('@')) notes.set((id = l.slice(1)), notes.get(l.slice(1)) ?? {});
    else if (id && (l === '!unanswered' || l === '!unread')) unread.set(id, l === '!unanswered' ? 'containerd did not answer `ctr containers info` for it' : 'not read: too many containers without a task, or containerd stopped answering');
    else if (id) note(id, l);
  }
  return { notes, pids, unread };
}

/** A cgroupsPath's pod: "/kubepods/burstable/podUID/ID" (cgroupfs) or "kubepods-burstable-podUID.slice:cri-containerd:ID" (systemd). */
const podUidOfCgroupsPath = (p: string | undefined): string | undefined =>
  p === undefined ? undefined : p.includes('/') ? podUidOfProcessCgroup(p) : podUidOfCgroup(p.split(':')[0] as string);

/**
 * Who a container's pod is, from whichever source this containerd wrote: the
 * sandbox-* annotations (uid since 1.6.11, name and namespace since 1.5), the kubelet's
 * labels on the containerd object, the sandbox's log directory /var/log/pods/NS_NAME_UID
 * (every version) and the pod cgroup in its cgroupsPath (every version). They agree
 * where more than one is there; a container with none takes its sandbox's.
 */
export function criIdentity(n: Notes): { kind: Container['kind']; uid?: string; namespace?: string; pod?: string; name?: string; sandboxId?: string } {
  const type = n['container-type'] ?? n['io.cri-containerd.kind'];
  const log = /\/var\/log\/pods\/([^_/]+)_([^_/]+)_([^_/]+)\/?$/.exec(n['sandbox-log-directory'] ?? '');
  const out: ReturnType<typeof criIdentity> = { kind: type === 'sandbox' ? 'sandbox' : type === 'container' ? 'container' : 'unknown' };
  const uid = n['sandbox-uid'] || n['io.kubernetes.pod.uid'] || log?.[3] || podUidOfCgroupsPath(n.cgroupsPath);
  const pod = n['sandbox-name'] || n['io.kubernetes.pod.name'] || log?.[2];
  const namespace = n['sandbox-namespace'] || n['io.kubernetes.pod.namespace'] || log?.[1];
  const name = n['container-name'] || n['io.kubernetes.container.name'];
  if (uid) out.uid = uid;
  if (pod) out.pod = pod;
  if (namespace) out.namespace = namespace;
  if (name && out.kind === 'container') out.name = name;
  if (out.kind === 'container' && n['sandbox-id']) out.sandboxId = n['sandbox-id'];
  return out;
}

/**
 * Without crictl: ids from `ctr -n k8s.io containers ls -q` (with "#answered" when ctr
 * answered), and each container's pod from its task bundle (which outlives containerd)
 * or, for one with no task, from its record (`ctr-info`); the init PID, alive or not
 * by the process list. A bundle with no container record is still reported.
 */
export function parseCtr(idsText: string, bundlesText: string, procs: Map<number, Proc>, infoText = ''): Container[] {
  const { notes, pids, unread } = criNotes(bundlesText, infoText);
  const listed = lines(idsText).map((l) => l.trim());
  const answered = listed.includes('#answered');
  const known = new Set(listed.filter((l) => !l.startsWith('#')));
  const ids = new Set([...known, ...notes.keys(), ...pids.keys()]);
  const who = new Map([...ids].map((id) => [id, criIdentity(notes.get(id) ?? {})] as const));
  return [...ids].map((id): Container => {
    const me = who.get(id) as ReturnType<typeof criIdentity>;
    const sandbox = me.sandboxId ? who.get(me.sandboxId) : undefined;
    const uid = me.uid ?? sandbox?.uid;
    const pod = me.pod ?? sandbox?.pod;
    const c: Container = { id, runtime: 'containerd', kind: me.kind };
    if (pod) c.pod = `${me.namespace ?? sandbox?.namespace ?? '?'}/${pod}`;
    if (me.name) c.name = me.name;
    if (uid) c.podUid = uid;
    if (me.sandboxId) c.sandboxId = me.sandboxId;
    if (unread.has(id)) c.unread = unread.get(id) as string;
    const pid = pids.get(id);
    if (pid !== undefined) {
      c.pid = pid;
      c.state = procs.has(pid) ? 'running' : 'exited';
    } else c.state = 'no task';
    if (answered && !known.has(id)) c.state += ', task bundle left (containerd does not list it)';
    return c;
  });
}

/**
 * The runtimes the node has and whether each answered this probe: only a runtime
 * that answered can prove a pod gone. containerd answers through crictl (when crictl
 * talks to it) or ctr, Docker through docker.
 */
export function parseRuntimes(text: string, answered: { containerd: boolean; docker: boolean }, bundles: boolean): RuntimeStatus[] {
  const l = new Set(lines(text));
  const out: RuntimeStatus[] = [];
  if (l.has('containerd installed') || l.has('containerd running') || bundles) {
    out.push({ name: 'containerd', running: l.has('containerd running'), answered: answered.containerd });
  }
  // A stopped dockerd counts where cri-dockerd is (its pods come back with it); elsewhere Docker is not Kubernetes'.
  if (l.has('docker running') || l.has('cri-dockerd installed')) out.push({ name: 'docker', running: l.has('docker running'), answered: answered.docker });
  if (l.has('crio present')) out.push({ name: 'cri-o', running: true, answered: false });
  return out;
}

/**
 * Which runtime crictl talks to: /etc/crictl.yaml's runtime-endpoint, else the first
 * of crictl's default sockets that exists (the `crictl-endpoint` section).
 */
export function parseCrictlEndpoint(text: string, containerdAddress?: string): { endpoint?: string; runtime?: 'containerd' | 'docker' | 'other' } {
  const ls = lines(text);
  const set = ls.map((x) => /^\s*runtime-endpoint:\s*['"]?([^'"\s#]+)/.exec(x)?.[1]).find(Boolean);
  const endpoint = set ?? ls.find((x) => x.startsWith('socket '))?.slice('socket '.length);
  if (!endpoint) return {};
  // containerd's socket where its config puts it is containerd's, whatever its name.
  const own = containerdAddress !== undefined && endpoint.replace(/^unix:\/\//, '') === containerdAddress;
  const runtime = /dockershim|cri-dockerd/.test(endpoint) ? 'docker' : own || /containerd/.test(endpoint) ? 'containerd' : 'other';
  return { endpoint, runtime };
}

/**
 * Each sandbox's network namespace, when it has a named one: sandbox id -> cni-… name,
 * from its task bundle (a running sandbox) or its containerd record (`ctr-info`: a
 * stopped one whose teardown may still be running).
 */
export function sandboxNetns(bundlesText: string, infoText = ''): Map<string, string> {
  const out = new Map<string, string>();
  for (const l of lines(bundlesText)) {
    const m = /\/k8s\.io\/([^/]+)\/config\.json:"type":"network","path":"[^"]*\/netns\/([^"/]+)"$/.exec(l);
    if (m) out.set(m[1] as string, m[2] as string);
  }
  let id: string | undefined;
  for (const l of lines(infoText)) {
    if (l.startsWith('@')) id = l.slice(1);
    const m = /^"path": ?"\/(?:var\/)?run\/netns\/([^"/]+)"$/.exec(l);
    if (id && m) out.set(id, m[1] as string);
  }
  return out;
}

/** `docker ps -a --filter name=^k8s_ --format '{{.ID}}\t{{.Names}}\t{{.State}}'` (cri-dockerd naming). */
export function parseDocker(text: string): Container[] {
  return lines(text).filter((l) => !l.startsWith('#')).map((l): Container => {
    const [id = '', name = '', state = ''] = l.split('\t');
    // k8s_<container>_<pod>_<namespace>_<uid>_<attempt>; the sandbox's container is "POD".
    const parts = name.split('_');
    const c: Container = { id, runtime: 'docker', kind: parts[1] === 'POD' ? 'sandbox' : 'container', name, state };
    if (parts.length >= 6) {
      c.pod = `${parts[3]}/${parts[2]}`;
      c.podUid = parts[4];
    }
    return c;
  });
}

/** "FILE\0  name: X\n  namespace: Y\n\0" records: the first two indented keys of each manifest. */
export function parseManifests(text: string): StaticPod[] {
  const recs = text.split('\0');
  const out: StaticPod[] = [];
  for (let i = 0; i + 1 < recs.length; i += 2) {
    const file = (recs[i] as string).replace(/^\n/, '');
    const kv = Object.fromEntries(
      lines(recs[i + 1] as string).map((l) => {
        const m = /^\s+(name|namespace):\s*['"]?([^'"\s#]*)/.exec(l);
        return m ? [m[1], m[2]] : ['', ''];
      }),
    );
    out.push({ file, ...(kv.name ? { name: kv.name as string } : {}), namespace: (kv.namespace as string) || 'default' });
  }
  return out;
}

/** The `etcd` section: endpoint=, status=, members=, health= lines, each value one JSON document (or empty). */
export function parseEtcd(text: string): EtcdView | undefined {
  const kv = new Map(lines(text).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const));
  if (!kv.has('endpoint')) return undefined;
  const view: EtcdView = { endpoint: kv.get('endpoint') ?? '', members: [], health: [] };
  const hex = (n: unknown) => (typeof n === 'number' || typeof n === 'bigint' || typeof n === 'string' ? BigInt(n).toString(16) : undefined);
  // Member IDs are 64-bit: parsed as text so no digit is lost to floating point.
  const big = (s: string | undefined) => (s ?? '').replace(/"(ID|member_id)":(\d+)/g, '"$1":"$2"');
  const status = json<{ Status?: { header?: { member_id?: string } } }[]>(big(kv.get('status')));
  view.memberId = hex(status?.[0]?.Status?.header?.member_id);
  const members = json<{ members?: { ID?: string; name?: string; isLearner?: boolean; peerURLs?: string[]; clientURLs?: string[] }[] }>(big(kv.get('members')));
  view.members = (members?.members ?? []).map((m) => ({ id: hex(m.ID) ?? '?', name: m.name ?? '', isLearner: m.isLearner === true, peerURLs: m.peerURLs ?? [], clientURLs: m.clientURLs ?? [] }));
  view.health = (json<{ endpoint?: string; health?: boolean }[]>(kv.get('health') ?? '') ?? []).map((h) => ({ endpoint: h.endpoint ?? '?', healthy: h.health === true }));
  if (!status || !members) view.error = 'etcdctl could not reach the local member';
  return view;
}

/** "FILE\0CONTENT\0" records. */
function fileRecords(text: string): { path: string; content: string }[] {
  const recs = text.split('\0');
  const out: { path: string; content: string }[] = [];
  for (let i = 0; i + 1 < recs.length; i += 2) out.push({ path: (recs[i] as string).replace(/^\n/, ''), content: recs[i + 1] as string });
  return out;
}

/** The base64 body of the first PEM certificate in a text: what two copies of one CA share, whatever their line breaks. */
export function pemBody(text: string): string {
  const m = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/.exec(text);
  return m ? (m[1] as string).replace(/\s+/g, '') : '';
}

/** Certificates by path (cluster CAs, trust anchors), as PEM bodies. */
export const parseCertificates = (text: string): { path: string; body: string }[] =>
  fileRecords(text).map((r) => ({ path: r.path, body: pemBody(r.content) })).filter((c) => c.body !== '');

/** Kubeconfigs' server, certificate-authority and certificate-authority-data lines. */
export function parseKubeconfigs(text: string): Kubeconfig[] {
  return fileRecords(text).map(({ path, content }) => {
    const k: Kubeconfig = { path, servers: [], caBodies: [], caFiles: [] };
    for (const l of lines(content)) {
      const m = /^[\s-]*(certificate-authority-data|certificate-authority|server):\s*['"]?([^'"\s]*)/.exec(l);
      if (!m) continue;
      const v = m[2] as string;
      if (m[1] === 'server') k.servers.push(v);
      else if (m[1] === 'certificate-authority') k.caFiles.push(v);
      else k.caBodies.push(pemBody(Buffer.from(v, 'base64').toString('utf8')));
    }
    return k;
  });
}

/** Protocols of the routing daemons CNIs run: Calico's BIRD (12), kube-router's GoBGP (17), Calico's Felix (80). */
const CNI_ROUTE_PROTOS = new Set([12, 17, 80]);
/** Route types as `ip -N` numbers them, and as they are named without it. */
const ROUTE_TYPES: Record<string, string> = { 6: 'blackhole', 7: 'unreachable', 8: 'prohibit', 9: 'throw', blackhole: 'blackhole', unreachable: 'unreachable', prohibit: 'prohibit', throw: 'throw' };

/**
 * `ip -N -o route show table all` (both families), kept: the routes a CNI's routing
 * daemon installed. Never the kernel's (2), boot (3) or static (4) ones: the OS's and users'.
 */
export function parseRoutes(text: string): Route[] {
  const out: Route[] = [];
  const seen = new Set<string>();
  for (const l of lines(text)) {
    const p = / proto (\S+)/.exec(l)?.[1];
    const proto = p === 'bird' ? 12 : Number(p);
    if (!CNI_ROUTE_PROTOS.has(proto)) continue;
    // -N prints a route's type as a number before it, unless it is unicast: 6 blackhole, 7 unreachable, 8 prohibit.
    const m = /^(?:(\d+|blackhole|unreachable|prohibit|throw) )?(\S+)/.exec(l.trim());
    if (!m) continue;
    const type = ROUTE_TYPES[m[1] ?? ''];
    const dst = m[2] as string;
    // A default route is the node's way out, whoever installed it: never a CNI's to take.
    if (dst === 'default') continue;
    const table = / table (\d+)/.exec(l)?.[1];
    const metric = / metric (\d+)/.exec(l)?.[1];
    const family = dst.includes(':') ? 6 : 4;
    // What `ip route del` matches on: exactly this route, and never one of another protocol.
    const spec = [type, dst, table && `table ${table}`, `proto ${proto}`, metric && `metric ${metric}`].filter(Boolean).join(' ');
    if (seen.has(`${family} ${spec}`)) continue;
    seen.add(`${family} ${spec}`);
    out.push({ spec, family, proto, via: / via (\S+)/.exec(l)?.[1], dev: / dev (\S+)/.exec(l)?.[1] });
  }
  return out;
}

/**
 * The installation footprint, "KIND\tPATH\0" records, with the owners `dpkg -S` (or
 * rpm) named: "pkg[, pkg]: /path". `tools` says whether the node has a package manager.
 */
export function parseInstalled(text: string, owners: string, tools: ReadonlySet<string> = new Set()): { kind: InstallKind; path: string; owner?: string }[] {
  const ownerOf = new Map<string, string>();
  for (const l of lines(owners)) {
    // "pkg: /path", "pkg:amd64, other: /path".
    const m = /^(\S.*?): (\/.*)$/.exec(l);
    if (m && !l.startsWith('diversion by')) ownerOf.set(m[2] as string, m[1] as string);
  }
  return nulls(text).flatMap((rec) => {
    const [kind, path] = rec.replace(/^\n/, '').split('\t');
    if (!kind || !path || !(kind in INSTALL_PATHS)) return [];
    // A package manager that did not answer for its own binary says nothing of the rest: no path is taken as unowned.
    const unanswered = (tools.has('dpkg') || tools.has('rpm')) && !ownerOf.has('/usr/bin/dpkg') && !ownerOf.has('/usr/bin/rpm');
    const owner = ownerOf.get(path) ?? ownerOf.get(path.replace(/^\/usr\//, '/')) ?? (unanswered ? 'unknown: the package manager did not answer' : undefined);
    return [{ kind: kind as InstallKind, path, ...(owner ? { owner } : {}) }];
  });
}

/** "busybox" and "docker.io/library/busybox:latest" are one reference to Docker. */
const dockerRef = (r: string): string => {
  const short = r.replace(/^docker\.io\/(library\/)?/, '');
  return /:[^/]*$/.test(short) || short.includes('@') ? short : `${short}:latest`;
};

/**
 * `use NAME IMAGE` and `image ID REPO:TAG` lines: each reference with who uses it, by
 * the reference or by the image's ID (cri-dockerd creates containers by ID). What a run
 * saw Kubernetes use stays known after its containers are gone.
 */
export function parseDockerImages(text: string, prev: { ref: string; k8s: boolean }[] = []): { ref: string; k8s: boolean; other: boolean }[] {
  const k8s = new Set(prev.filter((p) => p.k8s).map((p) => p.ref));
  const other = new Set<string>();
  const images: { id: string; ref: string }[] = [];
  const uses: { k8s: boolean; image: string }[] = [];
  for (const l of lines(text)) {
    const [what, a, b] = l.split('\t');
    if (what === 'use' && a && b) uses.push({ k8s: a.startsWith('k8s_'), image: b });
    else if (what === 'image' && a && b && !b.includes('<none>')) images.push({ id: a, ref: dockerRef(b) });
  }
  for (const u of uses) {
    const refs = u.image.startsWith('sha256:') ? images.filter((i) => i.id === u.image).map((i) => i.ref) : [dockerRef(u.image)];
    for (const r of refs) (u.k8s ? k8s : other).add(r);
  }
  return images.map(({ ref }) => ({ ref, k8s: k8s.has(ref), other: other.has(ref) }));
}

/** A pod UID as cgroups write it (underscores for dashes), back to the API's form. */
const POD_CGROUP = /pod([0-9a-f]{8}[-_]?[0-9a-f]{4}[-_]?[0-9a-f]{4}[-_]?[0-9a-f]{4}[-_]?[0-9a-f]{12})(?:\.slice)?$/;
export const podUidOfCgroup = (path: string): string | undefined => POD_CGROUP.exec(path)?.[1]?.replaceAll('_', '-');

/** The pod cgroup a process's cgroup path is in ("/kubepods/besteffort/podUID/CID" -> its UID). */
export function podUidOfProcessCgroup(path: string): string | undefined {
  for (const seg of path.split('/').reverse()) {
    const uid = podUidOfCgroup(seg);
    if (uid) return uid;
  }
  return undefined;
}

/**
 * Where a cgroup sits in the kubelet's tree, by its path below the hierarchy's root:
 * the root (`/kubepods`, `/kubepods.slice`), the QoS level (besteffort, burstable, their
 * slices), a pod (`pod<UID>`, `kubepods-<qos>-pod<UID>.slice`; a Guaranteed pod's right
 * below the root) or what is below a pod (its containers). Undefined: not the kubelet's.
 * The one rule: verify reports every level, the audit's orphans are pods, never the QoS tree.
 */
export function kubeCgroupLevel(path: string): { level: KubeCgroup['level']; uid?: string } | undefined {
  const segs = path.split('/').filter(Boolean);
  if (segs[0] !== 'kubepods' && segs[0] !== 'kubepods.slice') return undefined;
  const at = segs.findIndex((seg) => podUidOfCgroup(seg) !== undefined);
  if (at < 0) return { level: segs.length === 1 ? 'root' : 'qos' };
  return { level: at === segs.length - 1 ? 'pod' : 'container', uid: podUidOfCgroup(segs[at] as string) as string };
}

/** The `kube-cgroups` section: "@HIERARCHY" lines, each followed by the kubelet's cgroups in that hierarchy. */
export function parseKubeCgroups(text: string): KubeCgroups {
  const hierarchies: string[] = [];
  const seen = new Map<string, KubeCgroup>();
  let h: string | undefined;
  for (const l of lines(text)) {
    if (l.startsWith('@')) hierarchies.push((h = l.slice(1)));
    else if (h !== undefined) {
      const at = kubeCgroupLevel(l);
      if (!at) continue;
      const c = seen.get(l) ?? { path: l, hierarchies: [], ...at };
      c.hierarchies.push(h);
      seen.set(l, c);
    }
  }
  return { hierarchies, kube: [...seen.values()] };
}

/** The `pods` view's sections: pod dirs, netns inodes, each process's netns, IPAM leases. */
export function parsePodTraces(dirs: string, netnsInodes: string, procNetns: string, leases = ''): PodTraces {
  const t: PodTraces = { dirs: lines(dirs).filter((d) => !d.includes('/')), netnsInodes: new Map(), procNetns: new Map(), leases: [] };
  for (const l of lines(netnsInodes)) {
    const m = /^(\d+) \/(?:var\/)?run\/netns\/(.+)$/.exec(l);
    if (m) t.netnsInodes.set(m[2] as string, m[1] as string);
  }
  for (const l of lines(procNetns)) {
    const m = /\/proc\/(\d+)\/ns\/net -> net:\[(\d+)\]$/.exec(l);
    if (m) t.procNetns.set(Number(m[1]), m[2] as string);
  }
  t.leases = parseLeases(leases);
  return t;
}

/** The `ipam-leases` section: "FILE\tFIRST LINE" per host-local lease. */
export function parseLeases(text: string): PodTraces['leases'] {
  const out: PodTraces['leases'] = [];
  for (const l of lines(text)) {
    // host-local >= 0.8 ends the ID's line with \r (then the interface name): not part of the ID.
    const m = /^(\/var\/lib\/cni\/networks\/([^/]+)\/([^/\t]+))\t(.*)\r?$/.exec(l);
    if (m && /^[0-9a-fA-F.:]+$/.test(m[3] as string)) out.push({ file: m[1] as string, network: m[2] as string, ip: m[3] as string, sandbox: (m[4] as string).trim() });
  }
  return out;
}

/**
 * The running containerd as PID:START (the `containerd-args` section's `daemon` line),
 * and the flags that set its paths among its (or its unit's) arguments, which lead the
 * `containerd-config` section as `arg X` NUL records.
 */
export function parseContainerdArgs(argsText: string, configText = ''): { daemon?: string; flags: { root?: string; state?: string; address?: string } } {
  const daemon = lines(argsText).find((l) => l.startsWith('daemon '))?.slice(7).trim();
  const args = configText.split('\0').map((r) => r.replace(/^\n/, '')).filter((r) => r.startsWith('arg ')).map((r) => r.slice(4));
  const flags: { root?: string; state?: string; address?: string } = {};
  const names: Record<string, keyof typeof flags> = { '--root': 'root', '--state': 'state', '--address': 'address', '-a': 'address' };
  args.forEach((a, i) => {
    const eq = a.indexOf('=');
    const flag = names[eq > 0 ? a.slice(0, eq) : a];
    if (!flag) return;
    const value = eq > 0 ? a.slice(eq + 1) : args[i + 1];
    if (value !== undefined && !value.startsWith('-')) flags[flag] = value;
  });
  return { ...(daemon ? { daemon } : {}), flags };
}

/** The `containerd-config` section: "file PATH" NUL TEXT NUL records, and "missing PATH" NUL for a named file that is not there. */
export function parseContainerdFiles(text: string): { files: { path: string; text: string }[]; missing: string[] } {
  const recs = text.split('\0');
  const files: { path: string; text: string }[] = [];
  const missing: string[] = [];
  for (let i = 0; i < recs.length; i++) {
    const r = (recs[i] as string).replace(/^\n/, '');
    if (r.startsWith('file ')) files.push({ path: r.slice(5), text: recs[++i] ?? '' });
    else if (r.startsWith('missing ')) missing.push(r.slice(8));
  }
  return { files, missing };
}

/** The `etcd-dirs` section: "etcd TAB PID TAB CWD TAB KEY=VALUE TAB…" per running etcd (its ETCD_DATA_DIR, ETCD_NAME, ETCD_CONFIG_FILE). */
export function parseEtcdDirs(text: string): Map<number, { cwd: string; env: Record<string, string> }> {
  const out = new Map<number, { cwd: string; env: Record<string, string> }>();
  for (const l of text.split('\n')) {
    const [tag, pid, cwd, ...kvs] = l.split('\t');
    if (tag !== 'etcd' || !/^\d+$/.test(pid ?? '')) continue;
    const env = Object.fromEntries(kvs.filter((kv) => kv.includes('=')).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    out.set(Number(pid), { cwd: cwd ?? '', env });
  }
  return out;
}

/** The `facts` section, as found: each runtime's `--version` line, the CNI config file picked and its plugins' types, kube-proxy's answer. */
export function parseFacts(text: string): NodeFacts {
  const out: NodeFacts = { runtimes: [], cniTypes: [] };
  for (const l of lines(text)) {
    const m = /^(containerd|docker|crio) (.*)$/.exec(l);
    if (m) {
      const said = (m[2] as string).trim();
      // "containerd github.com/containerd/containerd/v2 2.1.9+ds1 …", "Docker version 20.10.24+dfsg1, build …", "Version:  1.30.4".
      const version = m[1] === 'containerd' ? said.split(/\s+/)[2] : m[1] === 'docker' ? /version ([^,\s]+)/i.exec(said)?.[1] : /version:?\s+(\S+)/i.exec(said)?.[1];
      out.runtimes.push({ name: m[1] as 'containerd' | 'docker' | 'crio', ...(version ? { version } : {}) });
    } else if (l.startsWith('cni-file ')) out.cniFile = l.slice(9);
    else if (l.startsWith('kube-proxy-mode ')) out.kubeProxyMode = l.slice(16).trim();
    else if (l.startsWith('kube-proxy-left ')) out.kubeProxyLeft = l.slice(16).trim();
    else {
      const t = /^"type"\s*:\s*"([^"]*)"$/.exec(l);
      if (t) out.cniTypes.push(t[1] as string);
    }
  }
  return out;
}

/** The `dns` view's sections: each resolver file (PATH TYPE TARGET, then its text or none), resolv.conf's backups, and the services that read them. */
export function parseDns(files: string, backups: string, services: string): DnsView {
  const fields = files.replace(/^\n/, '').split('\0');
  const out: DnsFile[] = [];
  for (let i = 0; i + 5 < fields.length; i += 6) {
    const [path, type, target, has, content, sum] = fields.slice(i, i + 6) as [string, string, string, string, string, string];
    if (!path.startsWith('/')) break;
    const t = type === 'file' || type === 'link' || type === 'other' ? type : 'absent';
    // Text that is not the file's bytes (not UTF-8, a NUL, cut at the cap) is never judged, nor written back.
    const verbatim = has === 'c' && createHash('sha256').update(content).digest('hex') === sum.split(' ')[0];
    out.push({ path, type: t, ...(target ? { target } : {}), ...(verbatim ? { content } : has === 'c' ? { unread: true as const } : {}) });
  }
  const units = new Map<string, Map<string, string>>();
  for (const block of services.split(/\n\s*\n/)) {
    const kv = new Map(block.split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const).filter(([k]) => k));
    const id = kv.get('Id');
    if (id) units.set(id, kv);
  }
  const active = (id: string) => units.get(id)?.get('ActiveState') === 'active';
  return {
    files: out,
    backups: backups.replace(/^\n/, '').split('\0').filter((p) => p.startsWith('/')),
    services: { networkManager: active('NetworkManager.service'), resolved: active('systemd-resolved.service'), resolvedCanReload: units.get('systemd-resolved.service')?.get('CanReload') === 'yes' },
  };
}
