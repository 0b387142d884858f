// containerd's own configuration, read the way containerd reads it: where its root, state and
// gRPC socket are, which directories its CRI plugin takes CNI configs, CNI plugins and CDI specs
// from, and where NRI keeps its socket and plugins. decom probes and cleans the runtime's real
// paths, not assumed defaults: a node whose config moves root to /data/containerd has its
// images there, and a CNI that installs into /usr/lib/cni leaves its binaries there.
//
// Pure: the caller reads the files on the node (the main config, then what importsOf names,
// globs expanded by the node's shell) and hands over their text.
//
// The rules below are containerd's own (its config loader, its migrations, the CRI runtime,
// NRI and gRPC server plugins' settings), checked against the real `containerd config default`
// prints kept as fixtures: test/fixtures/containerd/containerd-1.6.20-default.toml,
// containerd-1.7.24-default.toml and containerd-2.1.9-default.toml; config-v2.toml,
// config-v3.toml and config-v4.toml set the same paths under each version's names, and
// debian-package-config.toml is what Debian's packages ship.
//
// - Version 1 (no `version` key) names plugins by short ID (`plugins.cri`, `plugins.nri`);
//   version 2 by URI (`plugins."io.containerd.grpc.v1.cri".cni`); version 3 moved CNI and CDI
//   to `plugins."io.containerd.cri.v1.runtime"`; version 4 (containerd 2.3) moved `[grpc]` to
//   `plugins."io.containerd.server.v1.grpc"`. containerd 2.x reads older files by migrating them,
//   which is modelled here as containerd does it, step by step.
// - Imports are loaded breadth first after the file that names them, each file once; a relative
//   import is relative to the importing file's directory; a pattern is a glob only when it
//   holds `*`, and its matches load in sorted order. A missing plain import stops containerd;
//   here it is reported in `missing`.
// - Files merge in that order: a later non-empty root, state or address wins. Plugin tables are
//   replaced whole by a later file in containerd 1.x and merged key by key from 2.0 on (arrays
//   are replaced, not appended).
// - containerd 2.2 puts `imports = ['/etc/containerd/conf.d/*.toml']` into its built-in default,
//   which the daemon never loads from: only the imports of files it reads are followed, so
//   conf.d counts only when the config file names it (as one printed by `config default` of
//   2.2 or later does). Nothing is added here either.
// - Which of these rules apply depends on the daemon, not the file (containerd 2.x reads
//   version-2 files too). Give the daemon's version when known; otherwise a file of version 4
//   means 2.3 or later, version 3 means 2.0 to 2.2, and older files are read as containerd 1.7
//   reads them.
// - An empty string counts as unset.
import { parse, TomlError } from 'smol-toml';

export interface ContainerdFile {
  path: string;
  text: string;
}

export interface ContainerdPaths {
  /** The config's `version` (1 if absent, as containerd treats it), or undefined when no config file was read. */
  version?: number;
  root: string; // default /var/lib/containerd
  state: string; // default /run/containerd
  address: string; // gRPC socket, default /run/containerd/containerd.sock
  cniConfDirs: string[]; // default ['/etc/cni/net.d']
  cniBinDirs: string[]; // default ['/opt/cni/bin']
  cdiSpecDirs: string[]; // default ['/etc/cdi', '/var/run/cdi']
  nriSocket: string; // default /var/run/nri/nri.sock
  nriPluginDirs: string[]; // default ['/opt/nri/plugins']  (plugin_path)
  nriConfDirs: string[]; // default ['/etc/nri/conf.d']  (plugin_config_path)
  /** The files read, main config first, then each import in the order containerd merges them. */
  files: string[];
  /** Imports named by the config that were not among the files given (the caller could not read them). */
  missing: string[];
  /**
   * Whether the CRI plugin injects CDI devices (`enable_cdi`): default off in containerd 1.7,
   * on from 2.0, absent from 1.6. Undefined when neither the config nor the daemon's version says.
   */
  cdiEnabled?: boolean;
  /**
   * Whether NRI runs (not `disable`): default off in containerd 1.7, on from 2.0, absent from
   * 1.6. Undefined when neither the config nor the daemon's version says.
   */
  nriEnabled?: boolean;
}

export interface ContainerdDaemon {
  /** The daemon's version, e.g. "1.7.24", "v2.1.9" or a whole `containerd --version` line. */
  version?: string;
}

const DEFAULT_CNI_BIN_DIRS = ['/opt/cni/bin'];

/** The config file containerd reads when its command line names none (`--config`, defaults.DefaultConfigDir + config.toml). */
export const CONTAINERD_CONFIG = '/etc/containerd/config.toml';

export const CONTAINERD_DEFAULTS: ContainerdPaths = Object.freeze({
  root: '/var/lib/containerd',
  state: '/run/containerd',
  address: '/run/containerd/containerd.sock',
  cniConfDirs: Object.freeze(['/etc/cni/net.d']) as string[],
  cniBinDirs: Object.freeze([...DEFAULT_CNI_BIN_DIRS]) as string[],
  cdiSpecDirs: Object.freeze(['/etc/cdi', '/var/run/cdi']) as string[],
  nriSocket: '/var/run/nri/nri.sock',
  nriPluginDirs: Object.freeze(['/opt/nri/plugins']) as string[],
  nriConfDirs: Object.freeze(['/etc/nri/conf.d']) as string[],
  files: Object.freeze([]) as unknown as string[],
  missing: Object.freeze([]) as unknown as string[],
});

const KNOWN_VERSIONS = [1, 2, 3, 4];

// Plugin URIs and the keys read under them.
const CRI_V2 = 'io.containerd.grpc.v1.cri';
const CRI_RUNTIME = 'io.containerd.cri.v1.runtime';
const NRI = 'io.containerd.nri.v1.nri';
const GRPC_SERVER = 'io.containerd.server.v1.grpc';

// --- paths, as Go's path/filepath does them on Linux ----------------------------------------

function clean(p: string): string {
  if (p === '') return '.';
  const rooted = p.startsWith('/');
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (!rooted) out.push('..');
      continue;
    }
    out.push(part);
  }
  const joined = out.join('/');
  if (rooted) return '/' + joined;
  return joined === '' ? '.' : joined;
}

function dirname(p: string): string {
  const i = p.lastIndexOf('/');
  if (i < 0) return '.';
  return clean(p.slice(0, i + 1));
}

/** One import as containerd 2.x resolves it: cleaned, and joined to the importing file's directory when relative. */
function resolveImport(parent: string, imp: string): string {
  const p = clean(imp);
  return p.startsWith('/') ? p : clean(`${dirname(parent)}/${p}`);
}

// Go's filepath.Match for one path element: `*` any run of characters, `?` one, `[...]` a
// class (`^` negates, `a-z` ranges), `\` escapes.
function elementMatcher(pattern: string): RegExp | undefined {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '\\') {
      if (i + 1 >= pattern.length) return undefined;
      re += escapeRe(pattern[++i]!);
    } else if (c === '[') {
      let j = i + 1;
      let cls = '';
      if (pattern[j] === '^') {
        cls += '^';
        j++;
      }
      let first = true;
      for (;;) {
        if (j >= pattern.length) return undefined;
        let ch = pattern[j]!;
        if (ch === ']' && !first) break;
        first = false;
        if (ch === '\\') {
          if (++j >= pattern.length) return undefined;
          ch = pattern[j]!;
        }
        cls += escapeClass(ch);
        if (pattern[j + 1] === '-' && pattern[j + 2] !== undefined && pattern[j + 2] !== ']') {
          let hi = pattern[j + 2]!;
          j += 2;
          if (hi === '\\') {
            if (++j >= pattern.length) return undefined;
            hi = pattern[j]!;
          }
          cls += '-' + escapeClass(hi);
        }
        j++;
      }
      if (cls === '' || cls === '^') return undefined;
      re += `[${cls}]`;
      i = j;
    } else re += escapeRe(c);
  }
  return new RegExp(`^${re}$`, 's');
}

const escapeRe = (c: string): string => c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const escapeClass = (c: string): string => c.replace(/[\]\\^-]/g, '\\$&');

/** The files among `candidates` that Go's filepath.Glob(pattern) would return, in its order. */
function globMatches(pattern: string, candidates: Iterable<string>, file: string): string[] {
  const parts = pattern.split('/');
  const matchers = parts.map((p) => (/[*?[\\]/.test(p) ? elementMatcher(p) : p));
  if (matchers.some((m) => m === undefined)) {
    throw new Error(`${file}: import ${JSON.stringify(pattern)} is not a valid glob pattern (containerd refuses it)`);
  }
  const out: string[][] = [];
  for (const c of candidates) {
    const cp = c.split('/');
    if (cp.length !== parts.length) continue;
    if (cp.every((el, i) => (typeof matchers[i] === 'string' ? el === matchers[i] : (matchers[i] as RegExp).test(el)))) out.push(cp);
  }
  // Glob lists each directory in sorted order, element by element.
  out.sort((a, b) => {
    for (let i = 0; i < a.length; i++) {
      const x = a[i]!;
      const y = b[i]!;
      if (x !== y) return x < y ? -1 : 1;
    }
    return 0;
  });
  return out.map((p) => p.join('/'));
}

// --- TOML ---------------------------------------------------------------------------------------

type Table = Record<string, unknown>;

const isTable = (v: unknown): v is Table => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);

function parseToml(file: ContainerdFile): Table {
  try {
    return parse(file.text) as Table;
  } catch (e) {
    if (e instanceof TomlError || (e instanceof Error && typeof (e as { line?: unknown }).line === 'number')) {
      const err = e as Error & { line: number; column?: number };
      const reason = (err.message.split('\n')[0] ?? '').replace(/^Invalid TOML document:\s*/, '');
      const column = typeof err.column === 'number' ? ` (column ${err.column})` : '';
      throw new Error(`${file.path} line ${err.line}: not valid TOML: ${reason}${column}`);
    }
    throw new Error(`${file.path}: not valid TOML: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function importsRaw(path: string, doc: Table): string[] {
  const v = doc.imports;
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new Error(`${path}: \`imports\` must be an array of strings`);
  }
  return v as string[];
}

/** The import patterns of one config file, resolved as containerd resolves them (relative to the importing file's directory); globs are left as globs. */
export function importsOf(file: ContainerdFile): string[] {
  return importsRaw(file.path, parseToml(file)).map((imp) => resolveImport(file.path, imp));
}

// --- one file, as containerd's Config struct holds it -------------------------------------------

interface Cfg {
  path: string;
  /** As written (0 when absent); `version` is what migrations have made of it. */
  written: number;
  version: number;
  root: string;
  state: string;
  grpcAddress: string;
  plugins: Table;
  imports: string[];
}

const where = (keys: string[]): string => keys.map((k) => (/^[A-Za-z0-9_-]+$/.test(k) ? k : JSON.stringify(k))).join('.');

function get(t: unknown, keys: string[]): unknown {
  let cur = t;
  for (const k of keys) {
    if (!isTable(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

function expectString(path: string, doc: Table, keys: string[]): string {
  const v = get(doc, keys);
  if (v === undefined) return '';
  if (typeof v !== 'string') throw new Error(`${path}: \`${where(keys)}\` must be a string`);
  return v;
}

// The tables and keys decom reads, wherever some version keeps them; a wrong type there makes
// containerd fail to decode the file, so it is refused here too, naming the file.
const STRING_KEYS = ['conf_dir', 'bin_dir'];
function checkTypes(path: string, doc: Table): void {
  for (const keys of [['grpc'], ['plugins']]) {
    const v = get(doc, keys);
    if (v !== undefined && !isTable(v)) throw new Error(`${path}: \`${where(keys)}\` must be a table`);
  }
  for (const plugin of ['cri', CRI_V2, CRI_RUNTIME]) {
    const base = ['plugins', plugin];
    for (const k of STRING_KEYS) expectString(path, doc, [...base, 'cni', k]);
    for (const k of ['bin_dirs', 'cdi_spec_dirs']) {
      const keys = k === 'bin_dirs' ? [...base, 'cni', k] : [...base, k];
      const v = get(doc, keys);
      if (v !== undefined && (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))) {
        throw new Error(`${path}: \`${where(keys)}\` must be an array of strings`);
      }
    }
    const cdi = get(doc, [...base, 'enable_cdi']);
    if (cdi !== undefined && typeof cdi !== 'boolean') throw new Error(`${path}: \`${where([...base, 'enable_cdi'])}\` must be true or false`);
    const runtimes = get(doc, [...base, 'containerd', 'runtimes']);
    if (isTable(runtimes)) for (const name of Object.keys(runtimes)) expectString(path, doc, [...base, 'containerd', 'runtimes', name, 'cni_conf_dir']);
  }
  for (const plugin of ['nri', NRI]) {
    for (const k of ['socket_path', 'plugin_path', 'plugin_config_path']) expectString(path, doc, ['plugins', plugin, k]);
    const d = get(doc, ['plugins', plugin, 'disable']);
    if (d !== undefined && typeof d !== 'boolean') throw new Error(`${path}: \`${where(['plugins', plugin, 'disable'])}\` must be true or false`);
  }
  expectString(path, doc, ['plugins', GRPC_SERVER, 'address']);
}

function readCfg(file: ContainerdFile): Cfg {
  const doc = parseToml(file);
  const v = doc.version;
  let version = 0;
  if (v !== undefined) {
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      throw new Error(`${file.path}: \`version\` must be an integer; decom knows config versions ${KNOWN_VERSIONS.join(', ')}`);
    }
    if (v !== 0 && !KNOWN_VERSIONS.includes(v)) {
      throw new Error(`${file.path}: config version ${v} is not one decom knows (it reads versions ${KNOWN_VERSIONS.join(', ')})`);
    }
    version = v;
  }
  checkTypes(file.path, doc);
  const plugins = doc.plugins;
  return {
    path: file.path,
    written: version,
    version,
    root: expectString(file.path, doc, ['root']),
    state: expectString(file.path, doc, ['state']),
    grpcAddress: expectString(file.path, doc, ['grpc', 'address']),
    plugins: isTable(plugins) ? (structuredClone(plugins) as Table) : {},
    imports: importsRaw(file.path, doc),
  };
}

// --- the daemon ---------------------------------------------------------------------------------

interface Daemon {
  /** '1' for containerd 1.x, '2' for 2.0 to 2.2, '2.3' for 2.3 and later. */
  line: '1' | '2' | '2.3';
  /** The newest config version it reads. */
  max: number;
  /** From 2.1 the CRI plugin has cni.bin_dirs. */
  binDirs: boolean;
  /** containerd 1.6 has neither CDI nor NRI. */
  cdiNri: boolean;
  /** Told by the caller, or implied by a config version only 2.x reads. */
  known: boolean;
  label: string;
}

function daemonFrom(version: string): Daemon {
  const m = /(\d+)\.(\d+)(?:\.\d+)?/.exec(version);
  if (!m) throw new Error(`containerd version ${JSON.stringify(version)} has no major.minor number`);
  const major = Number(m[1]);
  const minor = Number(m[2]);
  const label = `containerd ${m[0]}`;
  if (major < 2) return { line: '1', max: 2, binDirs: false, cdiNri: minor >= 7, known: true, label };
  if (major === 2 && minor < 3) return { line: '2', max: 3, binDirs: minor >= 1, cdiNri: true, known: true, label };
  return { line: '2.3', max: 4, binDirs: true, cdiNri: true, known: true, label };
}

function inferDaemon(cfgs: Cfg[]): Daemon {
  const highest = Math.max(0, ...cfgs.map((c) => c.written));
  if (highest >= 4) return { line: '2.3', max: 4, binDirs: true, cdiNri: true, known: true, label: 'containerd 2.3 or later' };
  if (highest === 3) return { line: '2', max: 3, binDirs: true, cdiNri: true, known: true, label: 'containerd 2.x' };
  return { line: '1', max: 2, binDirs: false, cdiNri: true, known: false, label: 'containerd 1.7' };
}

// --- migrations, as containerd runs them ----------------------------------------------------------

// The short plugin names of version 1 and their URIs (containerd's v1Migrate).
const CORE_PLUGINS: Record<string, string> = {
  cri: 'io.containerd.grpc.v1.cri',
  cgroups: 'io.containerd.monitor.v1.cgroups',
  linux: 'io.containerd.runtime.v1.linux',
  scheduler: 'io.containerd.gc.v1.scheduler',
  bolt: 'io.containerd.metadata.v1.bolt',
  task: 'io.containerd.runtime.v2.task',
  opt: 'io.containerd.internal.v1.opt',
  restart: 'io.containerd.internal.v1.restart',
  tracing: 'io.containerd.internal.v1.tracing',
  otlp: 'io.containerd.tracing.processor.v1.otlp',
  aufs: 'io.containerd.snapshotter.v1.aufs',
  btrfs: 'io.containerd.snapshotter.v1.btrfs',
  devmapper: 'io.containerd.snapshotter.v1.devmapper',
  native: 'io.containerd.snapshotter.v1.native',
  overlayfs: 'io.containerd.snapshotter.v1.overlayfs',
  zfs: 'io.containerd.snapshotter.v1.zfs',
};

function v1PluginName(name: string): string {
  if (name.includes('.')) return name;
  const core = CORE_PLUGINS[name];
  if (core) return core;
  if (name.endsWith('-service')) return `io.containerd.service.v1.${name}`;
  if (name === 'windows' || name === 'windows-lcow') return `io.containerd.snapshotter.v1.${name}`;
  return `io.containerd.grpc.v1.${name}`; // so a version-1 `plugins.nri` is lost, as in containerd
}

function v1Migrate(c: Cfg): void {
  const plugins: Table = {};
  for (const [k, v] of Object.entries(c.plugins)) plugins[v1PluginName(k)] = v;
  c.plugins = plugins;
}

// Version 3 to 4: the listeners became server plugins; only the address matters here.
function serviceMigrate(c: Cfg): void {
  if (c.grpcAddress !== '' && c.plugins[GRPC_SERVER] == null) {
    c.plugins[GRPC_SERVER] = { address: c.grpcAddress };
    c.grpcAddress = '';
  }
}

/** Config.MigrateConfigTo: one step per version, migrations[version] of the daemon's list. */
function migrateTo(c: Cfg, target: number, d: Daemon): void {
  const steps: Array<((c: Cfg) => void) | undefined> = [undefined, v1Migrate, undefined, d.line === '2.3' ? serviceMigrate : undefined];
  while (c.version < target) {
    steps[c.version]?.(c);
    c.version++;
  }
}

// Arrays that the CRI migration itself wrote: its `bin_dirs.([]string)` check only sees those,
// not the []interface{} a TOML decode makes.
const migrated = new WeakSet<object>();

/** The CRI runtime plugin's ConfigMigration, the part that moves paths. */
function criMigration(configVersion: number, plugins: Table, d: Daemon): void {
  if (configVersion >= d.max) return;
  const src = plugins[CRI_V2];
  if (!isTable(src)) return;
  const dst: Table = isTable(plugins[CRI_RUNTIME]) ? (plugins[CRI_RUNTIME] as Table) : {};
  const skip = new Set([
    'cni',
    'containerd',
    'sandbox_image',
    'registry',
    'image_decryption',
    'max_concurrent_downloads',
    'image_pull_progress_timeout',
    'image_pull_with_sync_fs',
    'stats_collect_period',
    'disable_tcp_service',
    'stream_server_address',
    'stream_server_port',
    'stream_idle_timeout',
    'enable_tls_streaming',
    'x509_key_pair_streaming',
  ]);
  for (const [k, v] of Object.entries(src)) if (!skip.has(k) && !(k in dst)) dst[k] = v;
  const cni = src.cni;
  if (isTable(cni)) {
    const next: Table = isTable(dst.cni) ? dst.cni : {};
    for (const [k, v] of Object.entries(cni)) {
      if (k === 'bin_dir') {
        const dirs = next.bin_dirs;
        if (!(Array.isArray(dirs) && migrated.has(dirs) && dirs.length > 0)) {
          const list = [v as string];
          migrated.add(list);
          next.bin_dirs = list;
        }
      } else if (!(k in next)) next[k] = v;
    }
    dst.cni = next;
  }
  const ctd = src.containerd;
  if (isTable(ctd)) {
    const next: Table = isTable(dst.containerd) ? dst.containerd : {};
    for (const [k, v] of Object.entries(ctd)) {
      if (k === 'snapshotter' || k === 'disable_snapshot_annotations' || k === 'discard_unpacked_layers') continue;
      if (!(k in next)) next[k] = v;
    }
    dst.containerd = next;
  }
  plugins[CRI_RUNTIME] = dst;
}

// --- merging ------------------------------------------------------------------------------------

/** mergo.Merge with override on map[string]any: tables merge key by key, anything else is replaced. */
function deepMerge(dst: Table, src: Table): void {
  for (const [k, v] of Object.entries(src)) {
    const d = dst[k];
    if (isTable(v) && isTable(d) && Object.keys(d).length > 0) deepMerge(d, v);
    else dst[k] = v;
  }
}

function mergeConfig(to: Cfg, from: Cfg, d: Daemon): void {
  if (from.version !== 0) to.version = from.version;
  if (from.root !== '') to.root = from.root;
  if (from.state !== '') to.state = from.state;
  if (from.grpcAddress !== '') to.grpcAddress = from.grpcAddress;
  if (d.line === '1') Object.assign(to.plugins, from.plugins); // whole sections replaced
  else deepMerge(to.plugins, from.plugins);
}

// --- reading ------------------------------------------------------------------------------------

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const strs = (v: unknown): string[] | undefined => (Array.isArray(v) ? (v as string[]) : undefined);
const uniq = (xs: string[]): string[] => [...new Set(xs)];

/** containerd's effective paths from its config and the imports (already expanded by the node's shell), with command-line overrides (--root, --state, --address) applied last. */
export function containerdPaths(
  files: ContainerdFile[],
  flags: { root?: string; state?: string; address?: string } = {},
  daemon: ContainerdDaemon = {},
): ContainerdPaths {
  const given = new Map<string, ContainerdFile>();
  for (const f of files) {
    const p = clean(f.path);
    if (!given.has(p)) given.set(p, f);
  }

  // Load order: breadth first from the main config (LoadConfig's pending queue).
  const cfgs: Cfg[] = [];
  const missing: string[] = [];
  const first = files[0];
  if (first) {
    const loaded = new Set<string>();
    const pending = [clean(first.path)];
    while (pending.length > 0) {
      const p = pending.shift()!;
      if (loaded.has(p)) continue;
      const f = given.get(p);
      if (!f) {
        if (!missing.includes(p)) missing.push(p);
        continue;
      }
      const cfg = readCfg(f);
      loaded.add(p);
      cfgs.push(cfg);
      for (const imp of cfg.imports) {
        const r = resolveImport(f.path, imp);
        pending.push(...(r.includes('*') ? globMatches(r, given.keys(), f.path) : [r]));
      }
    }
  }

  const d = daemon.version !== undefined ? daemonFrom(daemon.version) : inferDaemon(cfgs);
  // 2.x refuses a version newer than it knows (ValidateVersion); 1.x has no such check.
  for (const c of cfgs) {
    if (d.line !== '1' && c.version > d.max) {
      throw new Error(`${c.path}: config version ${c.version} is newer than ${d.label} reads (versions up to ${d.max}); containerd refuses it`);
    }
  }

  const out: Cfg = {
    path: '',
    written: 0,
    version: d.line === '1' ? 1 : d.max,
    root: CONTAINERD_DEFAULTS.root,
    state: CONTAINERD_DEFAULTS.state,
    grpcAddress: d.line === '2.3' ? '' : CONTAINERD_DEFAULTS.address,
    plugins: d.line === '2.3' ? { [GRPC_SERVER]: { address: CONTAINERD_DEFAULTS.address } } : {},
    imports: [],
  };

  if (d.line === '1') {
    for (const c of cfgs) mergeConfig(out, c, d);
  } else if (d.line === '2') {
    // 2.0 to 2.2: a file without a version (or version 1) is migrated as it loads; the merged
    // config is migrated once more, by the version the last file left, when the server starts.
    for (const c of cfgs) {
      if (c.version === 0 || c.version === 1) migrateTo(c, out.version, d);
      mergeConfig(out, c, d);
    }
    const from = out.version;
    if (from < d.max) {
      migrateTo(out, d.max, d);
      for (let v = from; v < d.max; v++) criMigration(v, out.plugins, d);
    }
  } else {
    // 2.3: each file is migrated to the newest version before it merges; a drop-in may not be
    // newer than the main config.
    let rootVersion = 0;
    let rootPath = '';
    for (const c of cfgs) {
      if (rootVersion === 0) {
        rootVersion = c.version;
        rootPath = c.path;
      }
      if (c.version > rootVersion) {
        throw new Error(`${c.path}: drop-in config version ${c.version} is higher than root config version ${rootVersion} (${rootPath}); containerd refuses it`);
      }
      if (c.version < out.version) {
        for (let v = c.version; v < out.version; v++) {
          migrateTo(c, v + 1, d);
          criMigration(v, c.plugins, d);
        }
      }
      mergeConfig(out, c, d);
    }
  }

  // The plugin sections that hold the paths, under the names the merged config uses.
  const shortNames = d.line === '1' && out.version <= 1;
  const cri = get(out.plugins, [d.line === '1' ? (shortNames ? 'cri' : CRI_V2) : CRI_RUNTIME]);
  const nri = get(out.plugins, [shortNames ? 'nri' : NRI]);

  const confDir = str(get(cri, ['cni', 'conf_dir'])) ?? CONTAINERD_DEFAULTS.cniConfDirs[0]!;
  const runtimes = get(cri, ['containerd', 'runtimes']);
  const runtimeConfDirs = isTable(runtimes)
    ? Object.keys(runtimes)
        .sort()
        .map((name) => str(get(runtimes, [name, 'cni_conf_dir'])))
        .filter((x): x is string => x !== undefined)
    : [];

  const binDir = str(get(cri, ['cni', 'bin_dir']));
  let cniBinDirs: string[];
  if (!d.binDirs) {
    cniBinDirs = [binDir ?? DEFAULT_CNI_BIN_DIRS[0]!];
  } else {
    // ValidateRuntimeConfig (2.1): a bin_dir replaces bin_dirs while those are the default.
    let dirs = (strs(get(cri, ['cni', 'bin_dirs'])) ?? DEFAULT_CNI_BIN_DIRS).filter((x) => x !== '');
    let dir = binDir;
    if (dir !== undefined) {
      if (dirs.length === DEFAULT_CNI_BIN_DIRS.length && dirs.every((x, i) => x === DEFAULT_CNI_BIN_DIRS[i])) dirs = [];
      if (dirs.length === 0) {
        dirs = [dir];
        dir = undefined;
      }
    }
    // Both set: containerd's CRI plugin refuses to start; every directory named is kept.
    cniBinDirs = dir !== undefined ? [...dirs, dir] : dirs;
  }

  const cdiSpecDirs = strs(get(cri, ['cdi_spec_dirs']))?.filter((x) => x !== '') ?? CONTAINERD_DEFAULTS.cdiSpecDirs;

  const cdiKey = get(cri, ['enable_cdi']);
  const nriKey = get(nri, ['disable']);
  let cdiEnabled: boolean | undefined;
  let nriEnabled: boolean | undefined;
  if (d.known && !d.cdiNri) {
    cdiEnabled = false;
    nriEnabled = false;
  } else {
    const on = d.line !== '1'; // enabled by default from 2.0 (containerd 2.0 release notes, #9744)
    cdiEnabled = typeof cdiKey === 'boolean' ? cdiKey : d.known ? on : undefined;
    nriEnabled = typeof nriKey === 'boolean' ? !nriKey : d.known ? on : undefined;
  }

  const address =
    d.line === '2.3' ? str(get(out.plugins, [GRPC_SERVER, 'address'])) ?? CONTAINERD_DEFAULTS.address : str(out.grpcAddress) ?? CONTAINERD_DEFAULTS.address;

  const result: ContainerdPaths = {
    root: str(flags.root) ?? out.root,
    state: str(flags.state) ?? out.state,
    address: str(flags.address) ?? address,
    cniConfDirs: uniq([confDir, ...runtimeConfDirs]),
    cniBinDirs: uniq(cniBinDirs),
    cdiSpecDirs: [...cdiSpecDirs],
    nriSocket: str(get(nri, ['socket_path'])) ?? CONTAINERD_DEFAULTS.nriSocket,
    nriPluginDirs: [str(get(nri, ['plugin_path'])) ?? CONTAINERD_DEFAULTS.nriPluginDirs[0]!],
    nriConfDirs: [str(get(nri, ['plugin_config_path'])) ?? CONTAINERD_DEFAULTS.nriConfDirs[0]!],
    files: cfgs.map((c) => clean(c.path)),
    missing,
  };
  if (cfgs[0]) result.version = cfgs[0].written === 0 ? 1 : cfgs[0].written;
  if (cdiEnabled !== undefined) result.cdiEnabled = cdiEnabled;
  if (nriEnabled !== undefined) result.nriEnabled = nriEnabled;
  return result;
}
