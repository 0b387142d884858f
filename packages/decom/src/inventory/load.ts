/**
 * Reading an inventory from disk: the file, which format it is in, and for an
 * Ansible one the group_vars/ and host_vars/ beside it.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { isMap, isScalar, type Node } from 'yaml';
import { inputError, UserError } from '../util/errors.js';
import {
  ansibleConnectionInputs,
  mergeHostVars,
  parseAnsibleIni,
  parseAnsibleYaml,
  plainVars,
  resolveGroupTree,
  type RawInventory,
  type VarsFiles,
} from './ansible.js';
import { readAnsibleConfig } from './ansible-cfg.js';
import { decryptVault, isVaulted, VaultError, vaultSecrets, type VaultSecret, type VaultSources } from './vault.js';
import { buildReach, DEFAULT_PORT, type Reach } from './connection.js';
import { DECOM_API_VERSION, type Host, type Inventory } from './types.js';
import { describeValue, fieldError, type Located, type VarSet } from './where.js';
import { parseYaml, varsFromMap, whereOf, type YamlFile } from './yaml-source.js';

export interface LoadOptions {
  /** Login user for hosts that set none (default: the user running decom). */
  defaultUser?: string;
  /** Where the vault passwords come from (the flags): whole encrypted vars files and !vault values are opened with them. */
  vault?: VaultSources;
}

/**
 * Reads an inventory: decom's own YAML (`apiVersion: decom/v1`), Ansible/kubespray
 * YAML, or Ansible INI, with group_vars/ and host_vars/ beside an Ansible one.
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
  const text = await readTextFile(path, 'inventory file');
  let user: string | undefined;
  const defaultUser = () => (user ??= opts.defaultUser ?? currentUser());

  const vault = opts.vault ?? {};
  if (looksLikeIni(path, text)) return ansibleInventory(parseAnsibleIni(path, text), defaultUser, vault);
  const y = parseYaml(path, text, 'ansible');
  if (isDecomFormat(y)) {
    // zod costs ~90 ms to load: only decom's own format pays for it.
    const { readDecomInventory } = await import('./decom-format.js');
    return readDecomInventory(parseYaml(path, text, 'decom'), defaultUser);
  }
  return ansibleInventory(parseAnsibleYaml(y), defaultUser, vault);
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

/** decom's own format has a top-level apiVersion; an Ansible inventory never does. */
function isDecomFormat(y: YamlFile): boolean {
  const root = y.doc.contents as Node | null;
  if (!isMap(root)) return false;
  const pair = root.items.find((p) => isScalar(p.key) && p.key.value === 'apiVersion');
  if (!pair) return false;
  const value = isScalar(pair.value) ? pair.value.value : pair.value;
  if (value !== DECOM_API_VERSION) {
    throw fieldError(whereOf(y, pair.value as Node), 'apiVersion', `expected ${DECOM_API_VERSION}, got ${describeValue(value)}`);
  }
  return true;
}

async function ansibleInventory(raw: RawInventory, defaultUser: () => string, sources: VaultSources): Promise<Inventory> {
  const tree = resolveGroupTree(raw);
  const cfg = readAnsibleConfig();
  // Read now, as Ansible reads them before the inventory: a script run once, a prompt asked once.
  const vault = await vaultSecrets({ ...sources, ...(cfg.vaultPasswordFile ? { cfgPasswordFile: cfg.vaultPasswordFile } : {}), ...(cfg.vaultIdentityList ? { cfgIdentityList: cfg.vaultIdentityList } : {}) });
  const files: VarsFiles = {
    groups: await loadVarsFilesFor(raw.file, 'group_vars', [...raw.groups.keys()], vault),
    hosts: await loadVarsFilesFor(raw.file, 'host_vars', raw.hostOrder, vault),
  };
  const varsOf = (name: string) => mergeHostVars(raw, files, name, tree.hostGroups.get(name)!);
  const built = (name: string, bastion?: { hop: string; warnings: Reach['warnings'] }) =>
    buildReach(name, raw.hostWhere.get(name)!, ansibleConnectionInputs(varsOf(name)), defaultUser, cfg, bastion, vault);
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
    throw inputError(`${w ? `${w.where.file}:${w.where.line}:${w.where.col}: ` : ''}bastion: kubespray's bastion needs a plain ansible_host, ansible_user and ansible_port`);
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
    throw inputError('cannot tell which user you are (no passwd entry, no $USER): set the login user in the inventory');
  }
}

// ---- Files ----

/**
 * Reads a text file the user pointed us at, turning every way it can fail into one
 * line that names the path. `what` says which file it is ("inventory file").
 */
export async function readTextFile(path: string, what: string): Promise<string> {
  try {
    const info = await stat(path);
    if (info.isDirectory()) throw inputError(`${what} ${path} is a directory, not a file`);
    const text = await readFile(path, 'utf8');
    if (text.includes('\0')) throw inputError(`${what} ${path} is not a text file`);
    return text.startsWith('\uFEFF') ? text.slice(1) : text;
  } catch (e) {
    throw fsError(e, path, what);
  }
}

/** One-line error for a failed file-system call on `path`. */
function fsError(e: unknown, path: string, what: string): Error {
  if (e instanceof UserError) return e;
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOENT':
    case 'ENOTDIR':
      return inputError(`${what} not found: ${path}`);
    case 'EACCES':
    case 'EPERM':
      return inputError(`cannot read ${what} ${path}: permission denied`);
    case 'EISDIR':
      return inputError(`${what} ${path} is a directory, not a file`);
    default: {
      const detail = e instanceof Error ? (e.message.split('\n')[0] ?? '') : String(e);
      return inputError(`cannot read ${what} ${path}: ${code ?? detail}`);
    }
  }
}

// ---- group_vars/ and host_vars/ ----

type VarsDir = 'group_vars' | 'host_vars';

const EXTENSIONS = ['', '.yml', '.yaml', '.json'];

/**
 * Variables from `group_vars/<name>` or `host_vars/<name>` beside the inventory file,
 * found as Ansible finds them: the first of `<name>`, `<name>.yml`, `<name>.yaml`,
 * `<name>.json` that exists; a directory's files are merged in name order (later wins).
 */
async function loadVarsFiles(inventoryFile: string, kind: VarsDir, name: string, vault: VaultSecret[]): Promise<VarSet> {
  const vars: VarSet = new Map();
  // A name is a file name here: nothing that could step out of the folder.
  if (!name || name === '.' || name === '..' || /[/\\\0]/.test(name)) return vars;
  const base = join(dirname(inventoryFile), kind, name);
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
async function loadVarsFilesFor(inventoryFile: string, kind: VarsDir, names: string[], vault: VaultSecret[]): Promise<Map<string, VarSet>> {
  const dir = join(dirname(inventoryFile), kind);
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
    !present || EXTENSIONS.some((x) => present.has(n + x)) ? loadVarsFiles(inventoryFile, kind, n, vault) : new Map();
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
  let text = await readTextFile(file, `${kind} file`);
  if (isVaulted(text)) {
    try {
      text = decryptVault(text, vault);
    } catch (e) {
      if (e instanceof VaultError) throw inputError(`${file}: ${e.message}`);
      throw e;
    }
  }
  const y = parseYaml(file, text, 'ansible');
  const scope: Located['scope'] = kind === 'host_vars' ? 'host' : 'group';
  return varsFromMap(y, y.doc.contents as Node | null, '', scope);
}
