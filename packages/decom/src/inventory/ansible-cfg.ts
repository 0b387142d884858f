/**
 * ansible.cfg as Ansible finds and reads it, for the settings of its ssh connection
 * that decom honours or names, its vault passwords and what an inventory directory's
 * walk skips: the file, then the ANSIBLE_* environment over it.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { inputError } from '../util/errors.js';
import type { Located } from './where.js';

/** The settings of ansible.cfg decom reads, each located in the file (or named by its environment variable). */
export interface AnsibleConfig {
  /** The file read, if any. */
  file?: string;
  remoteUser?: Located;
  remotePort?: Located;
  privateKeyFile?: Located;
  timeout?: Located;
  hostKeyChecking?: Located;
  sshArgs?: Located;
  sshCommonArgs?: Located;
  sshExtraArgs?: Located;
  pipelining?: Located;
  controlPath?: Located;
  vaultPasswordFile?: Located;
  vaultIdentityList?: Located;
  /** What an inventory directory's walk skips (comma-separated): names ending so, names matching. */
  inventoryIgnoreExtensions?: Located;
  inventoryIgnorePatterns?: Located;
}

type Setting = Exclude<keyof AnsibleConfig, 'file'>;

/**
 * Where each setting is read, as Ansible's config definitions and its ssh plugin say:
 * the ini sections and keys (a later one in this list wins, as in Ansible), then the
 * environment variable over the file.
 */
const SOURCES: Record<Setting, { ini: [section: string, key: string][]; env: string[] }> = {
  remoteUser: { ini: [['defaults', 'remote_user']], env: ['ANSIBLE_REMOTE_USER'] },
  remotePort: { ini: [['defaults', 'remote_port']], env: ['ANSIBLE_REMOTE_PORT'] },
  privateKeyFile: { ini: [['defaults', 'private_key_file']], env: ['ANSIBLE_PRIVATE_KEY_FILE'] },
  timeout: { ini: [['defaults', 'timeout'], ['ssh_connection', 'timeout']], env: ['ANSIBLE_TIMEOUT', 'ANSIBLE_SSH_TIMEOUT'] },
  hostKeyChecking: { ini: [['defaults', 'host_key_checking'], ['ssh_connection', 'host_key_checking']], env: ['ANSIBLE_HOST_KEY_CHECKING', 'ANSIBLE_SSH_HOST_KEY_CHECKING'] },
  sshArgs: { ini: [['ssh_connection', 'ssh_args']], env: ['ANSIBLE_SSH_ARGS'] },
  sshCommonArgs: { ini: [['ssh_connection', 'ssh_common_args']], env: ['ANSIBLE_SSH_COMMON_ARGS'] },
  sshExtraArgs: { ini: [['ssh_connection', 'ssh_extra_args']], env: ['ANSIBLE_SSH_EXTRA_ARGS'] },
  pipelining: { ini: [['connection', 'pipelining'], ['ssh_connection', 'pipelining']], env: ['ANSIBLE_PIPELINING', 'ANSIBLE_SSH_PIPELINING'] },
  controlPath: { ini: [['ssh_connection', 'control_path']], env: ['ANSIBLE_SSH_CONTROL_PATH'] },
  vaultPasswordFile: { ini: [['defaults', 'vault_password_file']], env: ['ANSIBLE_VAULT_PASSWORD_FILE'] },
  vaultIdentityList: { ini: [['defaults', 'vault_identity_list']], env: ['ANSIBLE_VAULT_IDENTITY_LIST'] },
  inventoryIgnoreExtensions: { ini: [['defaults', 'inventory_ignore_extensions'], ['inventory', 'ignore_extensions']], env: ['ANSIBLE_INVENTORY_IGNORE'] },
  inventoryIgnorePatterns: { ini: [['defaults', 'inventory_ignore_patterns'], ['inventory', 'ignore_patterns']], env: ['ANSIBLE_INVENTORY_IGNORE_REGEX'] },
};

/**
 * The file Ansible reads, as it finds it: $ANSIBLE_CONFIG (a file, or a dir holding
 * ansible.cfg), ./ansible.cfg (not in a world-writable dir, which Ansible skips),
 * ~/.ansible.cfg, /etc/ansible/ansible.cfg. The first that exists, alone: never merged.
 */
export function findAnsibleConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string | undefined {
  const candidates: string[] = [];
  const fromEnv = env.ANSIBLE_CONFIG;
  if (fromEnv) {
    const path = resolve(cwd, fromEnv.startsWith('~/') ? join(homedir(), fromEnv.slice(2)) : fromEnv);
    candidates.push(isDir(path) ? join(path, 'ansible.cfg') : path);
  }
  if (!isWorldWritable(cwd)) candidates.push(join(cwd, 'ansible.cfg'));
  candidates.push(join(env.HOME ?? homedir(), '.ansible.cfg'), '/etc/ansible/ansible.cfg');
  return candidates.find((p) => existsSync(p) && !isDir(p));
}

/** ansible.cfg's settings (`findAnsibleConfig`), then the environment's over them. */
export function readAnsibleConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): AnsibleConfig {
  const file = findAnsibleConfig(env, cwd);
  const config: AnsibleConfig = {};
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw inputError(`cannot read the Ansible config ${file}: ${(e as NodeJS.ErrnoException).code ?? e}`);
    }
    config.file = file;
    const ini = parseIni(file, text);
    for (const [setting, { ini: keys }] of Object.entries(SOURCES) as [Setting, (typeof SOURCES)[Setting]][]) {
      for (const [section, key] of keys) {
        const found = ini.get(`${section}\0${key}`);
        if (found) config[setting] = found;
      }
    }
  }
  for (const [setting, { env: names }] of Object.entries(SOURCES) as [Setting, (typeof SOURCES)[Setting]][]) {
    for (const name of names) {
      const value = env[name];
      if (value !== undefined) config[setting] = { value, where: { file: `environment variable ${name}`, line: 0, col: 0 }, field: name, scope: 'group' };
    }
  }
  return config;
}

/**
 * A setting Ansible types as a list (`inventory_ignore_extensions`, `vault_identity_list`):
 * comma-separated, each item trimmed, empty ones dropped; undefined when it is not set.
 */
export const commaList = (setting: Located | undefined): string[] | undefined =>
  typeof setting?.value === 'string' ? setting.value.split(',').map((x) => x.trim()).filter(Boolean) : undefined;

/**
 * An ini file as Python's configparser reads it for Ansible: `[section]`, `key = value`
 * or `key: value` (keys in any case), whole-line comments with # or ;, inline comments
 * after ` ;`, indented lines continuing the value above. Keys are `section\0key`.
 */
export function parseIni(file: string, text: string): Map<string, Located> {
  const out = new Map<string, Located>();
  let section: string | undefined;
  let last: { key: string; located: Located } | undefined;
  const lines = text.split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    const line = raw.replace(/\s;.*$/, '');
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) {
      if (trimmed === '') last = undefined;
      continue;
    }
    if (/^\s/.test(line) && last) {
      last.located.value = `${String(last.located.value)}\n${trimmed}`;
      continue;
    }
    const header = /^\[([^\]]+)\]\s*$/.exec(trimmed);
    if (header) {
      section = header[1]!.trim();
      last = undefined;
      continue;
    }
    const kv = /^([^=:]+?)\s*[=:]\s*(.*)$/.exec(trimmed);
    if (!kv || section === undefined) {
      throw inputError(`${file}:${i + 1}: ${section === undefined ? 'a setting before any [section]' : 'expected key = value'}: ${JSON.stringify(trimmed.slice(0, 60))}`);
    }
    const key = kv[1]!.toLowerCase();
    const located: Located = { value: kv[2]!, where: { file, line: i + 1, col: 0 }, field: `[${section}] ${key}`, scope: 'group' };
    out.set(`${section}\0${key}`, located);
    last = { key, located };
  }
  return out;
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isWorldWritable(dir: string): boolean {
  try {
    return (statSync(dir).mode & 0o002) !== 0;
  } catch {
    return false;
  }
}
