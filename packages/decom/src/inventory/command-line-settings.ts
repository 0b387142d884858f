/**
 * The connection settings a command line gives (-u, --private-key, -b, --become-user, -K,
 * -e), each at its place in Ansible's order: the flags under a host's own variables (as
 * Ansible's command-line values sit under its keywords and variables) and over
 * ansible.cfg's; -e's variables over everything, as Ansible's extra vars.
 */
import type { Node } from 'yaml';
import type { SshClient } from '../transport/ssh-client.js';
import { inputError } from '../util/errors.js';
import { askSecret } from '../util/prompt.js';
import { expandHome } from '../util/paths.js';
import { ansibleConnectionInputs, CONNECTION_VARIABLES } from './ansible.js';
import { ShellSyntaxError, splitShellWords, type ConnectionInputs } from './connection.js';
import { nearestNames } from './suggest.js';
import { KUBESPRAY_IDENTITY_VARIABLES } from './identity.js';
import { DECOM_VARIABLES, isSecretName } from './types.js';
import { readVarsText, type VaultSecret } from './vault.js';
import { fieldError, formatWhere, type Located, type VarSet, type Where } from './where.js';
import { isNullNode, parseYaml, varsFromMap, type YamlFile } from './yaml-source.js';

/**
 * The command line's connection settings, as its flags give them. Each is at the place
 * Ansible gives the same flag; `--help` states it.
 */
export interface ConnectionOverrides {
  /** -u/--user: the login user of a host whose inventory sets no ansible_user; over ansible.cfg's remote_user and the OpenSSH config's User. */
  user?: string;
  /** --private-key: the key of a host whose inventory sets no ansible_ssh_private_key_file; over ansible.cfg's private_key_file, offered before the OpenSSH config's keys. */
  privateKey?: string;
  /** -b/--become: become root on a host whose inventory sets no ansible_become. */
  become?: boolean;
  /** --become-user: the user to become on a host whose inventory sets no ansible_become_user. */
  becomeUser?: string;
  /** -K/--ask-become-pass's answer: the sudo password of a host whose inventory sets no ansible_become_password; on sudo's stdin, never printed. */
  becomePassword?: string;
  /** -e/--extra-vars, each as given (`key=value ...`, `@FILE`, a JSON/YAML mapping), in order: over the inventory and the flags above. */
  extraVars?: string[];
}

/** The flags as commander gives them, for connectionOverridesOf. */
export interface ConnectionFlags {
  user?: string;
  privateKey?: string;
  become?: boolean;
  becomeUser?: string;
  askBecomePass?: boolean;
  extraVars?: string[];
}

/**
 * Every flag of a command that reaches hosts (cli.ts's reachOptions), as commander gives
 * them: the targets narrowed, host keys, the SSH client, login and become, vault
 * passwords, the pool, the kubeconfig's context.
 */
export interface ReachFlags extends ConnectionFlags {
  limit?: string;
  knownHosts?: string;
  acceptNewHostKeys: boolean;
  ssh?: SshClient;
  askPass: boolean;
  vaultPasswordFile: string[];
  vaultId: string[];
  askVaultPass: boolean;
  forks?: string;
  maxOutput?: string;
  context?: string;
}

/**
 * A command's connection flags as ConnectionOverrides: -K's password asked once on the
 * terminal (after every inline -e is checked, so a refused one asks nothing).
 */
export async function connectionOverridesOf(flags: ConnectionFlags): Promise<ConnectionOverrides> {
  const overrides: ConnectionOverrides = {};
  if (flags.user !== undefined) overrides.user = flags.user;
  if (flags.privateKey !== undefined) overrides.privateKey = flags.privateKey;
  if (flags.become) overrides.become = true;
  if (flags.becomeUser !== undefined) overrides.becomeUser = flags.becomeUser;
  if (flags.extraVars?.length) overrides.extraVars = [...flags.extraVars];
  flagInputs(overrides);
  for (const value of overrides.extraVars ?? []) if (!value.startsWith('@')) inlineExtraVars(value);
  if (flags.askBecomePass) overrides.becomePassword = await askSecret('BECOME password: ', '--ask-become-pass');
  return overrides;
}

/** What the command line gives every host, ready to lay under and over each host's own settings (`hostInputs`). */
export interface CommandLineLayer {
  /** -u, --private-key, -b, --become-user, -K: under each host's own settings. */
  flags: ConnectionInputs;
  /** -e's variables (over each host's own), and the connection settings among them. */
  extraVars: VarSet;
  extraInputs: ConnectionInputs;
}

export const NO_COMMAND_LINE: CommandLineLayer = { flags: {}, extraVars: new Map(), extraInputs: {} };

/** The command line's layer: the flags checked, the -e values read (an @FILE's vault-encrypted text opened with `vault`). */
export async function commandLineLayer(o: ConnectionOverrides, vault: VaultSecret[]): Promise<CommandLineLayer> {
  const extraVars = await parseExtraVars(o.extraVars ?? [], vault);
  return { flags: flagInputs(o), extraVars, extraInputs: ansibleConnectionInputs(extraVars) };
}

/** A host's connection settings with the command line's: its own over the flags, -e over both. */
export const hostInputs = (own: ConnectionInputs, layer: CommandLineLayer): ConnectionInputs => ({ ...layer.flags, ...own, ...layer.extraInputs });

/** A host's variables with -e's over them. */
export function withExtraVars(own: VarSet, layer: CommandLineLayer): VarSet {
  if (layer.extraVars.size === 0) return own;
  const merged: VarSet = new Map(own);
  for (const [name, value] of layer.extraVars) merged.set(name, value);
  return merged;
}

const COMMAND_LINE: Where = { file: 'the command line', line: 0, col: 0 };
const onCommandLine = (flag: string, value: unknown): Located => ({ value, where: COMMAND_LINE, field: flag, scope: 'host' });

/** The flags as connection inputs, each checked here so a bad one is named once, not once per host. */
function flagInputs(o: ConnectionOverrides): ConnectionInputs {
  const inputs: ConnectionInputs = {};
  const userName = (flag: string, v: string) => {
    if (v === '' || v.startsWith('-') || /[\s\x00-\x1f\x7f]/.test(v)) throw inputError(`${flag} ${JSON.stringify(v)}: expected a user name (one word, not starting with -)`);
    return onCommandLine(flag, v);
  };
  if (o.user !== undefined) inputs.user = userName('--user', o.user);
  if (o.privateKey !== undefined) {
    if (o.privateKey === '') throw inputError('--private-key "": expected the path of a private key file');
    inputs.privateKeyFile = onCommandLine('--private-key', o.privateKey);
  }
  if (o.become) inputs.become = onCommandLine('--become', true);
  if (o.becomeUser !== undefined) inputs.becomeUser = userName('--become-user', o.becomeUser);
  if (o.becomePassword !== undefined) inputs.becomePassword = onCommandLine('--ask-become-pass', o.becomePassword);
  return inputs;
}

// ---- -e/--extra-vars ----

/** What -e takes: the variables decom reads of a host (the connection's, decom's own, kubespray's Node name and addresses). */
const EXTRA_VARIABLES: readonly string[] = [...CONNECTION_VARIABLES, ...DECOM_VARIABLES, ...KUBESPRAY_IDENTITY_VARIABLES];

/** Where an inline -e value came from: its variables have no line to point at. */
const INLINE: Where = { file: '-e', line: 0, col: 0 };

/**
 * The -e values as one set of variables, read as Ansible reads them: `@FILE` is a YAML
 * or JSON file (a whole vault-encrypted one opened with `vault`, as the vars files are);
 * a value starting with `{` or `[` is a YAML/JSON mapping; any other is `key=value` words,
 * split as a shell splits them. A later value replaces an earlier one's variable. Only
 * the variables decom reads are taken (EXTRA_VARIABLES); a secret only from a file (inline, it
 * would show in `ps` and in a systemd unit that runs the command).
 */
export async function parseExtraVars(values: readonly string[], vault: VaultSecret[] = []): Promise<VarSet> {
  const vars: VarSet = new Map();
  for (const value of values) {
    const some = value.startsWith('@') ? await fileExtraVars(value.slice(1), vault) : inlineExtraVars(value);
    for (const [name, located] of some) vars.set(name, located);
  }
  return vars;
}

function inlineExtraVars(value: string): VarSet {
  if (value === '') return new Map();
  if (value.startsWith('/') || value.startsWith('.')) throw inputError(`-e ${JSON.stringify(value)}: a file is given with an @: -e @${value}`);
  const vars = value.startsWith('{') || value.startsWith('[') ? mappingVars(parseYaml('-e', value, 'ansible')) : keyValueVars(value);
  for (const [name, located] of vars) {
    refuseUnknown(name, located.where);
    if (isSecretName(name)) {
      throw inputError(
        `${formatWhere(located.where)}: ${name} is a secret: given inline it would show in ps and in audit --print-systemd-timer's unit; put it in a YAML file (ansible-vault encrypted if you like) and give -e @FILE`,
      );
    }
  }
  return vars;
}

/** `key=value key2='value two'`: words split as Ansible's parse_kv splits them (a shell's quoting), each key=value. */
function keyValueVars(value: string): VarSet {
  let words;
  try {
    words = splitShellWords(value);
  } catch (e) {
    if (e instanceof ShellSyntaxError) throw inputError(`-e: ${e.message} at character ${e.col}`);
    throw e;
  }
  const vars: VarSet = new Map();
  words.forEach((word, i) => {
    const eq = word.text.indexOf('=');
    const name = eq > 0 ? word.text.slice(0, eq).trim() : '';
    // The word itself is not echoed: it may be a password that lost its name.
    if (!name) throw inputError(`-e: word ${i + 1} is not key=value: write -e key=value (quote values with spaces), -e @FILE, or -e '{"key": "value"}'`);
    vars.set(name, { value: word.text.slice(eq + 1).trim(), where: INLINE, field: name, scope: 'group' });
  });
  return vars;
}

/** A YAML/JSON text that must be a mapping of variables, each located where it was written. */
function mappingVars(y: YamlFile): VarSet {
  const root = y.doc.contents as Node | null;
  if (isNullNode(root)) {
    throw inputError(`${y.file}: holds no variables: write a mapping, e.g. {"ansible_user": "admin"}`);
  }
  return varsFromMap(y, root, '', 'group');
}

/** -e @FILE: a YAML or JSON file (JSON is YAML), vault-encrypted whole or not. */
async function fileExtraVars(path: string, vault: VaultSecret[]): Promise<VarSet> {
  const file = expandHome(path);
  const text = await readVarsText(file, '-e file', vault);
  const vars = mappingVars(parseYaml(file, text, 'ansible'));
  for (const [name, located] of vars) refuseUnknown(name, located.where);
  return vars;
}

function refuseUnknown(name: string, where: Where): void {
  if (EXTRA_VARIABLES.includes(name)) return;
  const near = nearestNames(name, EXTRA_VARIABLES, 1);
  const hint = near.length ? `; did you mean ${near[0]}?` : '';
  throw fieldError(
    where,
    name,
    `decom does not read this variable: -e takes only the ansible_* connection variables decom reads (ansible_user, ansible_become, ...), ${DECOM_VARIABLES.join(', ')} and kubespray's ${KUBESPRAY_IDENTITY_VARIABLES.join(', ')}${hint}`,
  );
}
