import type { ConnectionInputs } from './connection.js';
import type { RawInventory } from './raw.js';
import type { Located, VarSet } from './where.js';

/** Variables from group_vars/ and host_vars/ files, by group or host name. */
export interface VarsFiles {
  groups: Map<string, VarSet>;
  hosts: Map<string, VarSet>;
}

/**
 * One host's variables, merged in Ansible's order, lowest first (a later layer
 * replaces a whole variable; mappings are not deep-merged, as Ansible's default):
 *
 *   1. group vars written in the inventory (vars:, [g:vars]): `all`, then parents
 *      before children (deeper wins), same depth by name
 *   2. group_vars/all
 *   3. group_vars/<group>, same order as 1
 *   4. host vars written in the inventory
 *   5. host_vars/<host>
 *
 * `groups` is the host's groups, already in that order (`all` first).
 */
export function mergeHostVars(raw: RawInventory, files: VarsFiles, host: string, groups: string[]): VarSet {
  const layers: (VarSet | undefined)[] = [
    ...groups.map((g) => raw.groups.get(g)?.vars),
    files.groups.get('all'),
    ...groups.filter((g) => g !== 'all').map((g) => files.groups.get(g)),
    raw.hostVars.get(host),
    files.hosts.get(host),
  ];
  const merged: VarSet = new Map();
  for (const layer of layers) for (const [name, value] of layer ?? []) merged.set(name, value);
  return merged;
}

/**
 * Ansible's connection variables. Where Ansible has an older alias, the current
 * name wins if both are set.
 */
const CONNECTION_VARS: Record<keyof Omit<ConnectionInputs, 'sshArgs'>, string[]> = {
  address: ['ansible_host', 'ansible_ssh_host'],
  port: ['ansible_port', 'ansible_ssh_port'],
  user: ['ansible_user', 'ansible_ssh_user'],
  privateKeyFile: ['ansible_ssh_private_key_file', 'ansible_private_key_file'],
  become: ['ansible_become'],
  becomeUser: ['ansible_become_user'],
  becomePassword: ['ansible_become_password', 'ansible_become_pass'],
  becomeMethod: ['ansible_become_method'],
  knownHostsFile: [],
  strictHostKeyChecking: [],
  proxyJump: [],
  connectTimeoutSec: ['ansible_ssh_timeout', 'ansible_timeout'],
};
const SSH_ARGS_VARS = ['ansible_ssh_common_args', 'ansible_ssh_extra_args'];

export function ansibleConnectionInputs(vars: VarSet): ConnectionInputs {
  const isSet = (v: Located | undefined): v is Located => v !== undefined && v.value !== null && v.value !== undefined;
  const inputs: ConnectionInputs = { sshArgs: SSH_ARGS_VARS.map((n) => vars.get(n)).filter(isSet) };
  for (const [input, names] of Object.entries(CONNECTION_VARS) as [keyof typeof CONNECTION_VARS, string[]][]) {
    const found = names.map((n) => vars.get(n)).find(isSet);
    if (found) inputs[input] = found;
  }
  return inputs;
}

/** The merged variables as a plain object, for Host.vars. */
export function plainVars(vars: VarSet): Record<string, unknown> {
  // fromEntries, not assignment: a variable named __proto__ stays a variable.
  return Object.fromEntries([...vars].map(([name, located]) => [name, located.value]));
}
