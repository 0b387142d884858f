/**
 * Reading an inventory from disk: the file (or an Ansible inventory directory's files),
 * which format it is in, for an Ansible one the group_vars/ and host_vars/ beside it,
 * and the command line's connection settings laid under and over each host's.
 */
import { readdir, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { isMap, isScalar, type Node } from 'yaml';
import { inputError, UserError, warnOnStderr } from '../util/errors.js';
import {
  ansibleConnectionInputs,
  mergeHostVars,
  mergeRawInventories,
  parseAnsibleIni,
  parseAnsibleYaml,
  plainVars,
  resolveGroupTree,
  type RawInventory,
  type VarsFiles,
} from './ansible.js';
import { commaList, readAnsibleConfig, type AnsibleConfig } from './ansible-cfg.js';
import { commandLineLayer, hostInputs, NO_COMMAND_LINE, withExtraVars, type ConnectionOverrides } from './command-line-settings.js';
import { fsError, readTextFile } from './text-file.js';
import { readVarsText, vaultSecrets, type VaultSecret, type VaultSources } from './vault.js';
import { buildReach, DEFAULT_PORT, type Reach } from './connection.js';
import { DECOM_API_VERSION, type Host, type Inventory } from './types.js';
import { describeValue, fieldError, formatWhere, type Located, type VarSet, type Where } from './where.js';
import { parseYaml, varsFromMap, whereOf, type YamlFile } from './yaml-source.js';

/** The playbook reader reads its files the same way. */
export { readTextFile } from './text-file.js';

export interface LoadOptions {
  /** Login user for hosts that set none (default: the user running decom). */
  defaultUser?: string;
  /** Where the vault passwords come from (the flags): whole encrypted vars files and !vault values are opened with them. */
  vault?: VaultSources;
  /**
   * The command line's connection settings (-u, --private-key, -b, --become-user, -K, -e),
   * each at its place in Ansible's order (ConnectionOverrides says where).
   */
  overrides?: ConnectionOverrides;
  /** Where warnings go, one line each (default: stderr): an inventory directory's files that are no inventory, skipped. */
  warn?: (line: string) => void;
}

/**
 * Reads an inventory: decom's own YAML (`apiVersion: decom/v1`), Ansible/kubespray
 * YAML, or Ansible INI, with group_vars/ and host_vars/ beside an Ansible one; or an
 * Ansible inventory directory, its files read as one with its group_vars/ and host_vars/.
 * Anything wrong in it is a one-line UserError naming file:line:col and the field.
 */
export async function loadInventory(path: string, opts: LoadOptions = {}): Promise<Inventory> {
  try {
    return await load(path, opts);
  } catch (e) {
    if (e instanceof UserError) throw e;
    // Not expected; but a file that trips something we did not foresee still gets
    // one line that names it, not a stack trace.
    const detail = e instanceof Error ? (e.message.split('\n')[0] ?? '') : String(e);
    throw inputError(`${path}: cannot read the inventory: ${detail}`);
  }
}

async function load(path: string, opts: LoadOptions): Promise<Inventory> {
  let user: string | undefined;
  const defaultUser = () => (user ??= opts.defaultUser ?? currentUser());
  const ansible = (raw: RawInventory, varsBase: string, cfg = readAnsibleConfig()) =>
    ansibleInventory(raw, { varsBase, cfg, defaultUser, sources: opts.vault ?? {}, overrides: opts.overrides ?? {} });

  if (await isDirectory(path)) {
    const cfg = readAnsibleConfig();
    const { raw, notInventories } = await readInventoryDirectory(path, cfg);
    const inventory = await ansible(raw, path, cfg);
    // Said once the inventory stands: an inventory that fails is one line, its error.
    const warn = opts.warn ?? warnOnStderr;
    for (const { file, why } of notInventories) warn(`decom: warning: ${file}: skipped, not an inventory (${why})`);
    return inventory;
  }
  const text = await readTextFile(path, 'inventory file');
  refuseUnread(path, text);
  if (looksLikeIni(path, text)) return ansible(parseAnsibleIni(path, text), dirname(path));
  const y = parseYaml(path, text, 'ansible');
  const apiVersion = apiVersionOf(y);
  if (apiVersion && apiVersion.value !== DECOM_API_VERSION) throw fieldError(apiVersion.where, 'apiVersion', `expected ${DECOM_API_VERSION}, got ${describeValue(apiVersion.value)}`);
  if (apiVersion) {
    // zod costs ~90 ms to load: only decom's own format pays for it.
    const { readDecomInventory } = await import('./decom-format.js');
    const overrides = opts.overrides ?? {};
    // The vault passwords only for an -e @FILE: decom's own format has no !vault of its own.
    const vault = overrides.extraVars?.some((v) => v.startsWith('@')) ? await vaultSecrets(opts.vault ?? {}) : [];
    const layer = Object.keys(overrides).length ? await commandLineLayer(overrides, vault) : NO_COMMAND_LINE;
    return readDecomInventory(parseYaml(path, text, 'decom'), defaultUser, layer, vault);
  }
  return ansible(parseAnsibleYaml(y), dirname(path));
}

/** Is `path` a directory (following links)? Anything else, a missing path included, is for readTextFile to name. */
async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/** ansible-inventory's -y output: the one form of a generated inventory decom reads. */
const convertHint = (file: string) => `give decom the inventory it makes: ansible-inventory -i ${file} --list -y > hosts.yaml`;

/**
 * Inventory files decom does not read, refused by name: a script Ansible would run, a TOML
 * inventory. In a directory a script may be anything (kubespray's artifacts/kubectl.sh).
 */
function refuseUnread(file: string, text: string, inDirectory = false): void {
  if (text.startsWith('#!')) {
    throw inputError(inDirectory ? `${file}: a script, which decom does not run; if it is an inventory script, ${convertHint(file)}` : `${file}: an inventory script, which decom does not run; ${convertHint(file)}`);
  }
  if (extname(file).toLowerCase() === '.toml') throw inputError(`${file}: a TOML inventory, which decom does not read; ${convertHint(file)}`);
}

// ---- An inventory directory ----

/**
 * What Ansible's directory walk skips, by default: hidden names, `group_vars`, `host_vars`
 * and `vars_plugins` (read as variables, not inventories), and names ending in one of its
 * ignored extensions (its INVENTORY_IGNORE_EXTS: editors', packages', docs' and `.ini`,
 * `.cfg`, `.retry`). decom adds `.creds`: kubespray's credentials files, one secret line
 * each, which Ansible's INI parser would take for a host (kubespray's ansible.cfg skips
 * them too). ansible.cfg's `inventory_ignore_extensions` and `inventory_ignore_patterns`
 * (or ANSIBLE_INVENTORY_IGNORE, ANSIBLE_INVENTORY_IGNORE_REGEX) replace the last two, as in Ansible.
 */
const IGNORED_NAMES = ['group_vars', 'host_vars', 'vars_plugins'];
const INVENTORY_IGNORED_EXTENSIONS: readonly string[] = ['.pyc', '.pyo', '.swp', '.bak', '~', '.rpm', '.md', '.txt', '.rst', '.orig', '.ini', '.cfg', '.retry', '.creds'];

/** A file of an inventory directory that is no inventory, and why: skipped with a warning, as Ansible skips it. */
interface NotInventory {
  file: string;
  why: string;
}

/**
 * An inventory directory as Ansible reads one: every file in it and in its subdirectories
 * (names in byte order, a directory's files where its name falls), but what Ansible skips,
 * each parsed as its own file and added to one inventory in that order. A file that is no
 * inventory (binary, not YAML or INI an inventory is written in, another tool's file) is
 * skipped, as Ansible skips it with "Unable to parse ... as an inventory source"; the
 * directory fails only when no file in it is an inventory. Its group_vars/ and host_vars/
 * are the directory's own (ansibleInventory reads them).
 */
async function readInventoryDirectory(dir: string, cfg: AnsibleConfig): Promise<{ raw: RawInventory; notInventories: NotInventory[] }> {
  const extensions = commaList(cfg.inventoryIgnoreExtensions) ?? INVENTORY_IGNORED_EXTENSIONS;
  const patterns = (commaList(cfg.inventoryIgnorePatterns) ?? []).map((p) => {
    try {
      return new RegExp(p);
    } catch {
      throw inputError(`${formatWhere(cfg.inventoryIgnorePatterns!.where)}: inventory_ignore_patterns: ${JSON.stringify(p)} is not a regular expression`);
    }
  });
  // Names skipped by extension or pattern, for the error when no file is an inventory (kubespray's inventory.ini).
  const skipped: string[] = [];
  const ignored = (name: string, path: string) => {
    if (name.startsWith('.') || IGNORED_NAMES.includes(name)) return true;
    if (!extensions.some((x) => name.endsWith(x)) && !patterns.some((p) => p.test(name))) return false;
    skipped.push(path);
    return true;
  };
  const files = await inventoryFilesUnder(dir, ignored);
  const parts: RawInventory[] = [];
  const notInventories: (NotInventory & { error: UserError })[] = [];
  const groupsSoFar = new Set<string>();
  for (const file of files) {
    let raw: RawInventory;
    try {
      raw = await readDirectoryFile(file, groupsSoFar);
    } catch (e) {
      if (!(e instanceof UserError)) throw e;
      notInventories.push({ file, why: whyNotInventory(e, file), error: e });
      continue;
    }
    for (const group of raw.groups.keys()) groupsSoFar.add(group);
    parts.push(raw);
  }
  if (parts.length === 0) {
    // One file, and it failed: its own error says best what to write.
    if (notInventories.length === 1 && skipped.length === 0) throw notInventories[0]!.error;
    const list = (items: string[]) => `${items.slice(0, 3).join(', ')}${items.length > 3 ? `, and ${items.length - 3} more` : ''}`;
    const some = skipped.length ? `; skipped as Ansible skips them: ${list(skipped)}` : '';
    const none = notInventories.length ? `; not inventories: ${list(notInventories.map((n) => `${n.file} (${n.why})`))}` : '';
    // The one skipped file that may be the inventory meant: an INI one (kubespray's inventory.ini), else the only one.
    const meant = skipped.filter((f) => f.endsWith('.ini'));
    const give = meant.length === 1 ? `, ${meant[0]}` : skipped.length === 1 ? `, ${skipped[0]}` : '';
    throw inputError(`inventory directory ${dir} holds no inventory file${some}${none}; give the inventory file itself${give}, or name it hosts.yaml or hosts (INI)`);
  }
  return { raw: mergeRawInventories(dir, parts), notInventories: notInventories.map(({ file, why }) => ({ file, why })) };
}

/** One file of an inventory directory as an inventory; a UserError when it is none (the walk skips it). */
async function readDirectoryFile(file: string, groupsSoFar: ReadonlySet<string>): Promise<RawInventory> {
  const text = await readTextFile(file, 'inventory file');
  refuseUnread(file, text, true);
  if (looksLikeIni(file, text)) return parseAnsibleIni(file, text, groupsSoFar);
  const y = parseYaml(file, text, 'ansible');
  const apiVersion = apiVersionOf(y);
  if (apiVersion?.value === DECOM_API_VERSION) throw inputError(`${file}: decom's own format (apiVersion: ${DECOM_API_VERSION}) is one whole inventory: give this file alone, not its directory`);
  if (apiVersion) throw inputError(`${formatWhere(apiVersion.where)}: apiVersion ${describeValue(apiVersion.value)}: another tool's file (a kubeconfig, a Kubernetes manifest), not an Ansible inventory`);
  return parseAnsibleYaml(y);
}

/** Why a directory's file is no inventory, from its error: without the file's name, which the warning gives ("line 3: ..."). */
function whyNotInventory(e: UserError, file: string): string {
  const m = e.message;
  const read = `inventory file ${file} is `; // readTextFile's "is not a text file"
  if (m.startsWith(read)) return m.slice(read.length);
  if (m.startsWith(`${file}:`)) return m.slice(file.length + 1).trimStart().replace(/^(\d+)(?::\d+)?: /, 'line $1: ');
  return m.replace(`inventory file ${file}`, 'it');
}

/** The files of an inventory directory, recursively, in Ansible's order (names sorted as bytes), but those `ignored` says. */
async function inventoryFilesUnder(dir: string, ignored: (name: string, path: string) => boolean): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (e) {
    throw fsError(e, dir, 'inventory directory');
  }
  names.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const files: string[] = [];
  for (const name of names) {
    const path = join(dir, name);
    if (ignored(name, path)) continue;
    const info = await statIfExists(path, 'inventory file');
    if (info?.isDirectory()) files.push(...(await inventoryFilesUnder(path, ignored)));
    else if (info?.isFile()) files.push(path);
  }
  return files;
}

/**
 * .ini is INI and .yml/.yaml/.json are YAML. Without a telling extension (Ansible's
 * classic `hosts`), INI unless the first line reads as YAML: `---`, `{`, or `key:`.
 */
function looksLikeIni(path: string, text: string): boolean {
  const ext = extname(path).toLowerCase();
  if (ext === '.ini') return true;
  if (['.yml', '.yaml', '.json'].includes(ext)) return false;
  const first = text.split(/\r?\n/).map((l) => l.trim()).find((l) => l !== '' && !l.startsWith('#') && !l.startsWith(';'));
  if (first === undefined) return false;
  const yamlish = first.startsWith('---') || first.startsWith('{') || /^("[^"]*"|'[^']*'|[^\s=#;'"[\]]+)\s*:(\s|$)/.test(first);
  return !yamlish;
}

/**
 * A top-level apiVersion, and where it is written: decom's own format has one (decom/v1), an
 * Ansible inventory never does, another tool's file (a kubeconfig, a manifest) does.
 */
function apiVersionOf(y: YamlFile): { value: unknown; where: Where } | undefined {
  const root = y.doc.contents as Node | null;
  if (!isMap(root)) return undefined;
  const pair = root.items.find((p) => isScalar(p.key) && p.key.value === 'apiVersion');
  if (!pair) return undefined;
  return { value: isScalar(pair.value) ? pair.value.value : pair.value, where: whereOf(y, pair.value as Node) };
}

interface AnsibleInventoryOptions {
  /** Where group_vars/ and host_vars/ are: the inventory file's directory, or the inventory directory itself. */
  varsBase: string;
  cfg: AnsibleConfig;
  defaultUser: () => string;
  sources: VaultSources;
  overrides: ConnectionOverrides;
}

async function ansibleInventory(raw: RawInventory, o: AnsibleInventoryOptions): Promise<Inventory> {
  const { cfg, defaultUser } = o;
  const tree = resolveGroupTree(raw);
  // Read now, as Ansible reads them before the inventory: a script run once, a prompt asked once.
  const vault = await vaultSecrets({ ...o.sources, ...(cfg.vaultPasswordFile ? { cfgPasswordFile: cfg.vaultPasswordFile } : {}), ...(cfg.vaultIdentityList ? { cfgIdentityList: cfg.vaultIdentityList } : {}) });
  const commandLine = await commandLineLayer(o.overrides, vault);
  const files: VarsFiles = {
    groups: await loadVarsFilesFor(o.varsBase, 'group_vars', [...raw.groups.keys()], vault),
    hosts: await loadVarsFilesFor(o.varsBase, 'host_vars', raw.hostOrder, vault),
  };
  const ownVarsOf = (name: string) => mergeHostVars(raw, files, name, tree.hostGroups.get(name)!);
  const varsOf = (name: string) => withExtraVars(ownVarsOf(name), commandLine);
  const built = (name: string, bastion?: { hop: string; warnings: Reach['warnings'] }) =>
    buildReach(name, raw.hostWhere.get(name)!, hostInputs(ansibleConnectionInputs(ownVarsOf(name)), commandLine), defaultUser, cfg, bastion, vault);
  const bastion = raw.hostWhere.has(BASTION) ? { hop: bastionHop(varsOf(BASTION)), warnings: built(BASTION).reach.warnings } : undefined;
  const hosts = new Map<string, Host>();
  for (const name of raw.hostOrder) {
    const vars = varsOf(name);
    const { target, reach } = built(name, name === BASTION ? undefined : bastion);
    hosts.set(name, { ...target, groups: tree.hostGroups.get(name)!, vars: plainVars(vars), reach });
  }
  return { file: raw.file, hosts, groups: tree.groupHosts };
}

/** kubespray's jump host: a host of this name sends every other host through it (its defaults' ProxyCommand). */
const BASTION = 'bastion';

/** The bastion as kubespray's defaults name it: its ansible_user @ its ansible_host : its ansible_port (default 22). */
function bastionHop(vars: VarSet): string {
  const text = (n: string) => {
    const v = vars.get(n)?.value;
    return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
  };
  const host = text('ansible_host') ?? BASTION;
  const user = text('ansible_user');
  const port = text('ansible_port') ?? String(DEFAULT_PORT);
  if (/[\s,@]/.test(host) || (user && /[\s,@]/.test(user)) || !/^[0-9]+$/.test(port)) {
    const w = vars.get('ansible_host') ?? vars.get('ansible_user') ?? vars.get('ansible_port');
    throw inputError(`${w ? `${formatWhere(w.where)}: ` : ''}bastion: kubespray's bastion needs a plain ansible_host, ansible_user and ansible_port (a host name or address, a user name, a port number)`);
  }
  const address = host.includes(':') ? `[${host}]` : host;
  return `${user ? `${user}@` : ''}${address}:${port}`;
}

function currentUser(): string {
  try {
    return userInfo().username;
  } catch {
    // A container user with no passwd entry.
    const fromEnv = process.env.USER ?? process.env.LOGNAME;
    if (fromEnv) return fromEnv;
    throw inputError('cannot tell which user you are (no passwd entry, no $USER): set the login user in the inventory (ansible_user) or give -u USER');
  }
}

// ---- group_vars/ and host_vars/ ----

type VarsDir = 'group_vars' | 'host_vars';

const EXTENSIONS = ['', '.yml', '.yaml', '.json'];

/**
 * Variables from `group_vars/<name>` or `host_vars/<name>` in `varsBase` (beside the inventory file, or in the inventory directory),
 * found as Ansible finds them: the first of `<name>`, `<name>.yml`, `<name>.yaml`,
 * `<name>.json` that exists; a directory's files are merged in name order (later wins).
 */
async function loadVarsFiles(varsBase: string, kind: VarsDir, name: string, vault: VaultSecret[]): Promise<VarSet> {
  const vars: VarSet = new Map();
  // A name is a file name here: nothing that could step out of the folder.
  if (!name || name === '.' || name === '..' || /[/\\\0]/.test(name)) return vars;
  const base = join(varsBase, kind, name);
  for (const ext of EXTENSIONS) {
    const path = base + ext;
    const info = await statIfExists(path, `${kind} file`);
    if (!info) continue;
    const files = info.isDirectory() ? await filesUnder(path, kind) : [path];
    for (const file of files) {
      for (const [k, v] of await readVarsFile(file, kind, vault)) vars.set(k, v);
    }
    break;
  }
  return vars;
}

/**
 * loadVarsFiles for every name, listing the folder once: a fleet whose hosts have no
 * vars files then costs one readdir, not four stats per host.
 */
async function loadVarsFilesFor(varsBase: string, kind: VarsDir, names: string[], vault: VaultSecret[]): Promise<Map<string, VarSet>> {
  const dir = join(varsBase, kind);
  // undefined: the folder cannot be listed (searchable but not readable), so look name by name.
  let present: Set<string> | undefined;
  try {
    present = new Set(await readdir(dir));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') present = new Set();
    else if (code !== 'EACCES') throw fsError(e, dir, `${kind} directory`);
  }
  const varsOf = async (n: string): Promise<VarSet> =>
    !present || EXTENSIONS.some((x) => present.has(n + x)) ? loadVarsFiles(varsBase, kind, n, vault) : new Map();
  return new Map(await Promise.all(names.map(async (n) => [n, await varsOf(n)] as const)));
}

async function statIfExists(path: string, what: string) {
  try {
    return await stat(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw fsError(e, path, what);
  }
}

/** Files of a vars directory, recursively, sorted; hidden files and editor backups (~) skipped. */
async function filesUnder(dir: string, kind: VarsDir): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (e) {
    throw fsError(e, dir, `${kind} directory`);
  }
  const names = entries.map((e) => e.name).sort();
  const files: string[] = [];
  for (const entry of names) {
    if (entry.startsWith('.') || entry.endsWith('~')) continue;
    const path = join(dir, entry);
    const ext = extname(entry);
    const info = await statIfExists(path, `${kind} file`);
    if (info?.isDirectory() && !ext) files.push(...(await filesUnder(path, kind)));
    else if (info?.isFile() && EXTENSIONS.includes(ext)) files.push(path);
  }
  return files;
}

/** A vars file, opened with the vault passwords when it is encrypted whole, as Ansible opens it. */
async function readVarsFile(file: string, kind: VarsDir, vault: VaultSecret[]): Promise<VarSet> {
  const text = await readVarsText(file, `${kind} file`, vault);
  const y = parseYaml(file, text, 'ansible');
  const scope: Located['scope'] = kind === 'host_vars' ? 'host' : 'group';
  return varsFromMap(y, y.doc.contents as Node | null, '', scope);
}
