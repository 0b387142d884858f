import { readdir, stat } from 'node:fs/promises';
import { dirname, extname, join } from 'node:path';
import type { Node } from 'yaml';
import { inputError } from '../util/errors.js';
import { fsError, readTextFile } from './read-file.js';
import type { Located, VarSet } from './where.js';
import { parseYaml, varsFromMap } from './yaml-source.js';

export type VarsDir = 'group_vars' | 'host_vars';

const EXTENSIONS = ['', '.yml', '.yaml', '.json'];

/**
 * Variables from `group_vars/<name>` or `host_vars/<name>` beside the inventory file,
 * found as Ansible finds them: the first of `<name>`, `<name>.yml`, `<name>.yaml`,
 * `<name>.json` that exists; a directory's files are merged in name order (later wins).
 */
export async function loadVarsFiles(inventoryFile: string, kind: VarsDir, name: string): Promise<VarSet> {
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
      for (const [k, v] of await readVarsFile(file, kind)) vars.set(k, v);
    }
    break;
  }
  return vars;
}

/**
 * loadVarsFiles for every name, listing the folder once: a fleet whose hosts have no
 * vars files then costs one readdir, not four stats per host.
 */
export async function loadVarsFilesFor(inventoryFile: string, kind: VarsDir, names: string[]): Promise<Map<string, VarSet>> {
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
  const load = async (n: string): Promise<VarSet> =>
    !present || EXTENSIONS.some((x) => present.has(n + x)) ? loadVarsFiles(inventoryFile, kind, n) : new Map();
  return new Map(await Promise.all(names.map(async (n) => [n, await load(n)] as const)));
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

async function readVarsFile(file: string, kind: VarsDir): Promise<VarSet> {
  const text = await readTextFile(file, `${kind} file`);
  if (text.trimStart().startsWith('$ANSIBLE_VAULT')) {
    throw inputError(`${file}: encrypted with ansible-vault, which decom cannot decrypt`);
  }
  const y = parseYaml(file, text, 'ansible');
  const scope: Located['scope'] = kind === 'host_vars' ? 'host' : 'group';
  return varsFromMap(y, y.doc.contents as Node | null, '', scope);
}
