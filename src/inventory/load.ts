import { userInfo } from 'node:os';
import { extname } from 'node:path';
import { isMap, isScalar, type Node } from 'yaml';
import { inputError, UserError } from '../util/errors.js';
import { parseAnsibleIni } from './ansible-ini.js';
import { ansibleConnectionInputs, mergeHostVars, plainVars, type VarsFiles } from './ansible-vars.js';
import { parseAnsibleYaml } from './ansible-yaml.js';
import { buildSshTarget } from './connection.js';
import { DECOM_API_VERSION } from './api-version.js';
import { resolveGroupTree } from './group-tree.js';
import type { RawInventory } from './raw.js';
import { readTextFile } from './read-file.js';
import type { Host, Inventory } from './types.js';
import { loadVarsFilesFor } from './vars-files.js';
import { describeValue, fieldError } from './where.js';
import { parseYaml, whereOf, type YamlFile } from './yaml-source.js';

export interface LoadOptions {
  /** Login user for hosts that set none (default: the user running decom). */
  defaultUser?: string;
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

  if (looksLikeIni(path, text)) return ansibleInventory(parseAnsibleIni(path, text), defaultUser);
  const y = parseYaml(path, text, 'ansible');
  if (isDecomFormat(y)) {
    // zod costs ~90 ms to load: only decom's own format pays for it.
    const { readDecomInventory } = await import('./decom-format.js');
    return readDecomInventory(parseYaml(path, text, 'decom'), defaultUser);
  }
  return ansibleInventory(parseAnsibleYaml(y), defaultUser);
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

async function ansibleInventory(raw: RawInventory, defaultUser: () => string): Promise<Inventory> {
  const tree = resolveGroupTree(raw);
  const files: VarsFiles = {
    groups: await loadVarsFilesFor(raw.file, 'group_vars', [...raw.groups.keys()]),
    hosts: await loadVarsFilesFor(raw.file, 'host_vars', raw.hostOrder),
  };
  const hosts = new Map<string, Host>();
  for (const name of raw.hostOrder) {
    const groups = tree.hostGroups.get(name)!;
    const vars = mergeHostVars(raw, files, name, groups);
    const target = buildSshTarget(name, raw.hostWhere.get(name)!, ansibleConnectionInputs(vars), defaultUser);
    hosts.set(name, { ...target, groups, vars: plainVars(vars) });
  }
  return { file: raw.file, hosts, groups: tree.groupHosts };
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
