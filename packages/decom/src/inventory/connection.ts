/**
 * How to reach a host: its connection settings as an inventory and ansible.cfg write
 * them, checked, and turned into the ssh command line Ansible's ssh plugin builds
 * (ssh -G then reads it with the OpenSSH config: openssh-config.ts) and into the
 * SshTarget the inventory alone gives (split as Python's shlex, read as ssh reads it).
 */
import type { SshTarget } from '../transport/types.js';
import { inputError } from '../util/errors.js';
import { expandHome } from '../util/paths.js';
import { describeValue, fieldError, formatWhere, type Located, type Where } from './where.js';
import { decryptVault, VaultError, type VaultSecret } from './vault.js';
import { ansibleBool } from './ansible-bool.js';
import { VaultEncrypted } from './yaml-source.js';

/**
 * The connection settings of one host as written, each with where it came from.
 * Both inventory formats fill this; `buildReach` checks and converts it, so a
 * bad value gets the same message whichever format it was written in.
 */
export interface ConnectionInputs {
  address?: Located;
  port?: Located;
  user?: Located;
  privateKeyFile?: Located;
  become?: Located;
  becomeUser?: Located;
  becomePassword?: Located;
  becomeMethod?: Located;
  knownHostsFile?: Located;
  strictHostKeyChecking?: Located;
  proxyJump?: Located;
  connectTimeoutSec?: Located;
  /** ansible_connection. */
  connection?: Located;
  /** ansible_password, ansible_ssh_pass: SSH password and keyboard-interactive login, after the keys. */
  loginPassword?: Located;
  /** ansible_host_key_checking: never honoured when false. */
  hostKeyChecking?: Located;
  /** ansible_pipelining, ansible_python_interpreter, ansible_control_path: named and ignored. */
  pipelining?: Located;
  pythonInterpreter?: Located;
  controlPath?: Located;
  /** ansible_ssh_args: over ansible.cfg's ssh_args. */
  sshArgs?: Located;
  /** ansible_ssh_common_args and ansible_ssh_extra_args, each over ansible.cfg's own (the first value of a setting wins, as in ssh). */
  commonArgs?: Located;
  extraArgs?: Located;
}

/** A warning about what decom does not honour, said once however many hosts it concerns. */
export interface ReachWarning {
  /** The same text for every host it concerns: the line is printed once, with the hosts. */
  text: string;
}

/**
 * How decom reaches one host: the ssh command line Ansible's ssh plugin would build
 * (`ssh -G` computes the connection from it, with the OpenSSH config), the target
 * worked out from the inventory alone (used where no `ssh` runs), the warnings.
 */
export interface Reach {
  /** ssh(1)'s options, in Ansible's order. */
  options: string[];
  /** The last word of the ssh command: ansible_host, else the inventory name. */
  destination: string;
  /** What the inventory, ansible.cfg and the args turn off or set that decom does not honour. */
  warnings: ReachWarning[];
  /** The inventory's own words turn StrictHostKeyChecking off / UserKnownHostsFile to /dev/null (named there, not again from ssh -G). */
  strictOffByInventory: boolean;
  knownHostsOffByInventory: boolean;
  /** An ansible_connection decom does not speak: refused when the host is reached, not when another is. */
  refusal?: string;
  /** Where each option word came from, for warnings about what ssh -G reports. */
  sources: { text: string; label: string }[];
}

export const DEFAULT_PORT = 22;
const DEFAULT_CONNECT_TIMEOUT_SEC = 10;

/** ansible_connection values that go over SSH (also as ansible.builtin.*); `local` runs on this machine; any other is refused. */
const SSH_CONNECTIONS = ['ssh', 'smart', 'paramiko', 'paramiko_ssh'];
const connectionName = (s: string) => s.trim().replace(/^ansible\.(builtin|legacy)\./, '');

/** The settings ansible.cfg gives a host (see ansible-cfg.ts), below the inventory's own. */
export interface ConfigInputs {
  sshArgs?: Located;
  remoteUser?: Located;
  remotePort?: Located;
  privateKeyFile?: Located;
  timeout?: Located;
  hostKeyChecking?: Located;
  sshCommonArgs?: Located;
  sshExtraArgs?: Located;
  pipelining?: Located;
  controlPath?: Located;
}

export const HOST_KEYS_ALWAYS_CHECKED =
  'host keys are always checked (an unknown key is refused; give --accept-new-host-keys to record unknown keys)';

/**
 * A host's SshTarget and Reach from its connection settings, as Ansible's ssh plugin
 * builds its command line: ansible.cfg's ssh_args; the host's port, key and user (its
 * variables, else ansible.cfg's); the timeout; then ansible_ssh_common_args and
 * ansible_ssh_extra_args (else ansible.cfg's). ssh takes the first value of a setting.
 * `bastion`: kubespray's jump host (its hop, and the warnings of its own settings), used
 * when the host sets no ssh args of its own.
 */
export function buildReach(
  name: string,
  nameWhere: Where,
  inputs: ConnectionInputs,
  defaultUser: () => string,
  cfg: ConfigInputs = {},
  bastion?: { hop: string; warnings: ReachWarning[] },
  vault: VaultSecret[] = [],
): { target: SshTarget; reach: Reach } {
  const v = new Reader(name, vault);
  const warnings: ReachWarning[] = [];
  let strictOff = false;
  let knownHostsOff = false;
  let refusal: string | undefined;
  const warn = (text: string) => warnings.push({ text });
  const at = (loc: Located) => `${loc.field} (${formatWhere(loc.where)})`;

  const written = v.text(inputs.connection);
  const connection = written === undefined ? undefined : connectionName(written);
  if (connection !== undefined && connection !== 'local' && !SSH_CONNECTIONS.includes(connection)) {
    refusal = v.error(inputs.connection!, `decom does not speak the ${describeValue(written)} connection: it reaches hosts over SSH (ssh, smart, paramiko) or runs on this machine (local)`).message;
  }
  for (const loc of [inputs.hostKeyChecking, cfg.hostKeyChecking]) {
    if (loc && v.bool(loc) === false) warn(`${at(loc)} = ${String(loc.value)} is not honoured: ${HOST_KEYS_ALWAYS_CHECKED}`);
  }
  for (const loc of [inputs.pipelining, cfg.pipelining]) {
    if (loc && v.bool(loc)) warn(`${at(loc)} is ignored: decom sends each phase to a host as one script`);
  }
  if (inputs.pythonInterpreter && inputs.pythonInterpreter.value != null) {
    warn(`${at(inputs.pythonInterpreter)} is ignored: decom runs POSIX sh on the nodes, no Python`);
  }
  const controlPath = inputs.controlPath ?? cfg.controlPath;
  if (controlPath) warn(`${at(controlPath)} is ignored: decom keeps one connection per host for the whole run`);

  const become = v.bool(inputs.become) ?? false;
  const method = v.text(inputs.becomeMethod);
  if (become && method !== undefined && method !== 'sudo') {
    throw v.error(inputs.becomeMethod!, `decom becomes root with sudo only, got ${describeValue(method)}: set it to sudo, or remove it`);
  }

  // The command line, in Ansible's order, each part checked where it was written.
  const options: string[] = [];
  const sources: Reach['sources'] = [];
  const addArgs = (loc: Located | undefined) => {
    if (!loc) return;
    // Not echoed whole: a ProxyCommand in there may carry a password (sshpass -p).
    const text = v.text(loc, { hideValue: true });
    if (text === undefined) return;
    let parsed: SshArgSettings;
    try {
      parsed = parseSshArgs(text);
    } catch (e) {
      // A ProxyCommand may carry a password (sshpass -p): then no word of the args is quoted back.
      if (e instanceof SshArgsError) throw v.error(loc, /proxycommand/i.test(text) ? e.message.replace(/"[^"]*"/g, '(not shown: these args hold a ProxyCommand)') : e.message);
      throw e;
    }
    if (parsed.strictHostKeyChecking === 'no') {
      warn(`StrictHostKeyChecking=no in ${at(loc)} is not honoured: ${HOST_KEYS_ALWAYS_CHECKED}`);
      strictOff = true;
    }
    if (parsed.knownHostsOff) {
      warn(`UserKnownHostsFile=/dev/null in ${at(loc)} is not honoured: ${HOST_KEYS_ALWAYS_CHECKED} against ~/.ssh/known_hosts`);
      knownHostsOff = true;
    }
    options.push(...splitShellWords(text).map((w) => w.text));
    sources.push({ text, label: at(loc) });
  };
  const addOption = (key: string, value: string | undefined, quoted = false) => {
    if (value !== undefined) options.push('-o', `${key}=${quoted ? `"${value.replaceAll('"', '')}"` : value}`);
  };

  addArgs(inputs.sshArgs ?? cfg.sshArgs);
  addOption('Port', optional(v.port(inputs.port) ?? v.port(cfg.remotePort)));
  addOption('IdentityFile', v.path(inputs.privateKeyFile) ?? v.path(cfg.privateKeyFile), true);
  addOption('User', v.word(inputs.user, 'a user name') ?? v.word(cfg.remoteUser, 'a user name'), true);
  addOption('ConnectTimeout', String(v.seconds(inputs.connectTimeoutSec) ?? v.seconds(cfg.timeout) ?? DEFAULT_CONNECT_TIMEOUT_SEC));
  // decom's own format's fields, as -o options (an Ansible inventory sets these in its args).
  addOption('UserKnownHostsFile', v.path(inputs.knownHostsFile), true);
  const strict = v.strictness(inputs.strictHostKeyChecking);
  if (strict === 'no') {
    warn(`${at(inputs.strictHostKeyChecking!)}: no is not honoured: ${HOST_KEYS_ALWAYS_CHECKED}`);
    strictOff = true;
  } else addOption('StrictHostKeyChecking', strict);
  const hops = v.jumps(inputs.proxyJump);
  if (hops) addOption('ProxyJump', hops.length ? hops.join(',') : 'none');

  // kubespray's defaults set ansible_ssh_common_args to go through the bastion: a variable, so over ansible.cfg's, under the host's own.
  if (inputs.commonArgs) addArgs(inputs.commonArgs);
  else if (bastion) {
    addOption('ProxyJump', bastion.hop);
    // How the bastion itself is reached is how every host behind it is: what it turns off is named for them too.
    warnings.push(...bastion.warnings.filter((w) => !warnings.some((mine) => mine.text === w.text)));
  } else addArgs(cfg.sshCommonArgs);
  addArgs(inputs.extraArgs ?? cfg.sshExtraArgs);

  const destination = v.word(inputs.address, 'a host name or address') ?? addressFromName(name, nameWhere);
  // The target as the inventory alone says it: ssh's first-value-wins over the whole command line.
  const args = parseSshWords(options);
  const target: SshTarget = {
    name,
    address: args.hostName ?? destination,
    port: args.port ?? DEFAULT_PORT,
    user: args.user ?? defaultUser(),
    become,
    becomeUser: v.word(inputs.becomeUser, 'a user name') ?? 'root',
    strictHostKeyChecking: args.strictHostKeyChecking === 'accept-new' ? 'accept-new' : 'yes',
    proxyJump: args.proxyJump ?? [],
    connectTimeoutSec: args.connectTimeoutSec ?? DEFAULT_CONNECT_TIMEOUT_SEC,
  };
  if (connection === 'local') target.connection = 'local';
  if (args.identityFile !== undefined) target.privateKeyFile = args.identityFile;
  if (args.knownHostsFile !== undefined && !args.knownHostsOff) target.knownHostsFile = args.knownHostsFile;
  if (args.proxyCommand !== undefined) target.proxyCommand = args.proxyCommand;
  if (args.configFile !== undefined) target.sshConfigFile = args.configFile;
  const password = v.text(inputs.becomePassword, { hideValue: true });
  if (password !== undefined) target.becomePassword = password;
  const login = v.text(inputs.loginPassword, { hideValue: true });
  if (login !== undefined) target.password = login;
  return {
    target,
    reach: { options, destination, warnings, strictOffByInventory: strictOff, knownHostsOffByInventory: knownHostsOff, sources, ...(refusal ? { refusal } : {}) },
  };
}

const optional = (n: number | undefined) => (n === undefined ? undefined : String(n));

/** With no ansible_host, ssh connects to the inventory name itself. */
function addressFromName(name: string, where: Where): string {
  if (!isSshWord(name)) {
    throw inputError(`${formatWhere(where)}: host name ${describeValue(name)} cannot be used as an address; set ansible_host`);
  }
  return name;
}

/** Something safe to hand to ssh as one word: no spaces, no control characters, not an option. */
const isSshWord = (s: string) => s !== '' && !s.startsWith('-') && !/[\s\x00-\x1f\x7f]/.test(s);

/** Checks and converts values for one host; every error names file:line:col and the field. */
class Reader {
  constructor(
    private readonly host: string,
    private readonly vault: VaultSecret[] = [],
  ) {}

  error(loc: Located, problem: string) {
    const label = loc.scope === 'host' ? loc.field : `${loc.field} (host ${this.host})`;
    return fieldError(loc.where, label, problem);
  }

  /** A string setting; numbers are taken as written. Secrets (`hideValue`) are never echoed. */
  text(loc: Located | undefined, opts: { hideValue?: boolean } = {}): string | undefined {
    if (!loc || loc.value === null || loc.value === undefined) return undefined;
    const value = loc.value;
    if (value instanceof VaultEncrypted) return this.opened(loc, value);
    if (typeof value === 'number') return String(value);
    if (typeof value !== 'string') {
      const got = typeof value === 'object' || !opts.hideValue ? `, got ${describeValue(value)}` : '';
      throw this.error(loc, `expected a string${got}`);
    }
    if (/\{\{|\{%/.test(value)) {
      const got = opts.hideValue ? '' : `: ${describeValue(value)}`;
      throw this.error(loc, `is a Jinja template, which decom does not evaluate; write the value itself${got}`);
    }
    return value;
  }

  /** A !vault value, decrypted with the vault passwords given; without them, or with wrong ones, one line naming it. */
  private opened(loc: Located, value: VaultEncrypted): string {
    try {
      return decryptVault(value.envelope, this.vault);
    } catch (e) {
      if (e instanceof VaultError) throw this.error(loc, e.message);
      throw e;
    }
  }

  word(loc: Located | undefined, what: string): string | undefined {
    const s = this.text(loc);
    if (s === undefined) return undefined;
    if (!isSshWord(s)) throw this.error(loc!, `expected ${what}, got ${describeValue(s)}`);
    return s;
  }

  path(loc: Located | undefined): string | undefined {
    const s = this.text(loc);
    if (s === undefined) return undefined;
    if (s === '') throw this.error(loc!, 'expected a file path, got ""');
    return expandHome(s);
  }

  port(loc: Located | undefined): number | undefined {
    const n = this.wholeNumber(loc);
    if (n === undefined) return undefined;
    if (!(n >= 1 && n <= 65535)) throw this.error(loc!, `expected a port number 1-65535, got ${describeValue(loc!.value)}`);
    return n;
  }

  seconds(loc: Located | undefined): number | undefined {
    const n = this.wholeNumber(loc);
    if (n === undefined) return undefined;
    if (!(n >= 1)) throw this.error(loc!, `expected a whole number of seconds from 1, got ${describeValue(loc!.value)}`);
    return n;
  }

  /** Ansible's booleans: true/false, yes/no, on/off, 1/0, y/n, t/f, any case. */
  bool(loc: Located | undefined): boolean | undefined {
    if (!loc || loc.value === null || loc.value === undefined) return undefined;
    const value = loc.value instanceof VaultEncrypted ? this.opened(loc, loc.value) : loc.value;
    const said = ansibleBool(value);
    if (said !== undefined) return said;
    throw this.error(loc, `expected true or false, got ${describeValue(value)}`);
  }

  strictness(loc: Located | undefined): 'yes' | 'accept-new' | 'no' | undefined {
    const s = this.text(loc);
    if (s === undefined) return undefined;
    if (s === 'yes' || s === 'accept-new' || s === 'no') return s;
    throw this.error(loc!, `expected yes, accept-new or no, got ${describeValue(s)}`);
  }

  /** A comma-separated string or a list of hops. */
  jumps(loc: Located | undefined): string[] | undefined {
    if (!loc || loc.value === null || loc.value === undefined) return undefined;
    const list = Array.isArray(loc.value) ? loc.value : [this.text(loc)];
    if (list.length === 1 && typeof list[0] === 'string' && list[0].toLowerCase() === 'none') return []; // as ssh's ProxyJump=none
    if (!list.every((h): h is string => typeof h === 'string')) throw this.error(loc, 'expected [user@]host[:port] hops');
    try {
      return list.length === 0 ? [] : jumps(list.join(','), 'ProxyJump');
    } catch (e) {
      if (e instanceof SshArgsError) throw this.error(loc, e.message);
      throw e;
    }
  }

  private wholeNumber(loc: Located | undefined): number | undefined {
    if (!loc || loc.value === null || loc.value === undefined) return undefined;
    const value = loc.value instanceof VaultEncrypted ? this.opened(loc, loc.value) : loc.value;
    if (typeof value === 'number' && Number.isInteger(value)) return value;
    if (typeof value === 'string' && /^\s*[0-9]+\s*$/.test(value)) return Number(value);
    return NaN;
  }
}

// ---- ssh arguments ----

/** What an ssh command line says about the connection (ssh -G's answer, when no ssh runs). */
interface SshArgSettings {
  port?: number;
  user?: string;
  hostName?: string;
  identityFile?: string;
  knownHostsFile?: string;
  /** UserKnownHostsFile=/dev/null: never honoured, named in a warning. */
  knownHostsOff?: boolean;
  strictHostKeyChecking?: 'yes' | 'accept-new' | 'no';
  proxyJump?: string[];
  proxyCommand?: string;
  configFile?: string;
  connectTimeoutSec?: number;
}

/** A malformed or unsupported ssh argument; the caller says which host and field. */
export class SshArgsError extends Error {}

// ssh(1)'s single-letter options: these take a value, the rest of the letters are flags.
const TAKES_VALUE = new Set('BbcDEeFIiJLlmOoPpQRSWw');
const FLAGS = new Set('46AaCfGgKkMNnqsTtVvXxYy');

/**
 * What of ssh's letters the OpenSSH transport's master is not given: what would change what
 * the connection does rather than how it logs in (-A and -X forward, -N -n -f -s -T -t -W
 * change the session, -M -S -O the control socket, -D -L -R forwards, -E -G -V -Q ssh itself),
 * and -J, whose hops decom already reaches itself (ssh -G's proxyjump).
 */
const NOT_FOR_THE_MASTER = new Set('ADEfGgJKLMNnOQRSsTtVWwXYy');

/** Ansible's ssh options as the OpenSSH transport's master is given them: each option a word of its own, without NOT_FOR_THE_MASTER's. */
export function optionsForMaster(words: string[]): string[] {
  const kept: string[] = [];
  walkSshWords(
    words,
    (letter) => {
      if (!NOT_FOR_THE_MASTER.has(letter)) kept.push(`-${letter}`);
    },
    (letter, value, i) => {
      if (!NOT_FOR_THE_MASTER.has(letter)) kept.push(`-${letter}`, value);
      return i;
    },
  );
  return kept;
}

/**
 * Reads an ssh command line fragment as ssh would. Like ssh, the first value given
 * for a setting wins, so call this on the common args first, then the extra args,
 * with the same `into`. Options decom has no use for are skipped.
 */
export function parseSshArgs(text: string, into: SshArgSettings = {}): SshArgSettings {
  let words: string[];
  try {
    words = splitShellWords(text).map((w) => w.text);
  } catch (e) {
    if (e instanceof ShellSyntaxError) throw new SshArgsError(`${e.message} at character ${e.col}`);
    throw e;
  }
  return parseSshWords(words, into);
}

/**
 * ssh's getopt over words already split ("-vC", "-p22", "-p 22", "-oKey=Value", "-o Key=Value"):
 * `flag` for each flag letter, `option` for each option letter with its value, which returns
 * the index of the last word it used (decom's -o reader may take the next word too).
 */
function walkSshWords(words: string[], flag: (letter: string) => void, option: (letter: string, value: string, i: number) => number): void {
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (!word.startsWith('-') || word === '-' || word === '--') {
      throw new SshArgsError(`unexpected argument ${JSON.stringify(word)}: only ssh options belong here`);
    }
    for (let j = 1; j < word.length; j++) {
      const letter = word[j]!;
      if (FLAGS.has(letter)) {
        flag(letter);
        continue;
      }
      if (!TAKES_VALUE.has(letter)) throw new SshArgsError(`unknown ssh option -${letter}`);
      let value = word.slice(j + 1);
      if (!value) {
        const next = words[i + 1];
        if (next === undefined) throw new SshArgsError(`-${letter} needs a value after it`);
        value = next;
        i++;
      }
      i = option(letter, value, i);
      break;
    }
  }
}

/** parseSshArgs on words already split. */
export function parseSshWords(words: string[], into: SshArgSettings = {}): SshArgSettings {
  walkSshWords(
    words,
    () => {},
    (letter, value, i) => {
      if (letter === 'o') return sshOption(value, words, i, into);
      sshLetter(letter, value, into);
      return i;
    },
  );
  return into;
}

function sshLetter(letter: string, value: string, into: SshArgSettings): void {
  switch (letter) {
    case 'p':
      into.port ??= port(value, '-p');
      return;
    case 'l':
      into.user ??= userName(value, '-l');
      return;
    case 'i':
      into.identityFile ??= expandHome(value);
      return;
    case 'J':
      if (into.proxyCommand === undefined) into.proxyJump ??= jumps(value, '-J');
      return;
    case 'F':
      into.configFile ??= expandHome(value);
      return;
  }
}

/** `-o Key=Value`, `-o "Key Value"`, or (leniently) `-o Key Value`. Returns the index of the last word used. */
function sshOption(arg: string, words: string[], i: number, into: SshArgSettings): number {
  const m = /^\s*([A-Za-z][A-Za-z0-9]*)\s*(?:=\s*|\s+)(.*?)\s*$/.exec(arg);
  let key: string;
  let value: string;
  if (m) {
    key = m[1]!;
    value = m[2]!;
  } else if (/^\s*[A-Za-z][A-Za-z0-9]*\s*=?\s*$/.test(arg)) {
    key = arg.replace(/[\s=]/g, '');
    const next = words[i + 1];
    if (next === undefined || next.startsWith('-')) throw new SshArgsError(`-o ${key} needs a value, e.g. -o ${key}=VALUE`);
    value = next;
    i++;
  } else {
    throw new SshArgsError(`-o needs Key=Value, got ${JSON.stringify(arg)}`);
  }
  if (!value) throw new SshArgsError(`-o ${key} needs a value, e.g. -o ${key}=VALUE`);
  value = value.replace(/^"(.*)"$/, '$1');

  switch (key.toLowerCase()) {
    case 'stricthostkeychecking':
      into.strictHostKeyChecking ??= strictness(value);
      break;
    case 'userknownhostsfile':
      if (into.knownHostsFile === undefined && !into.knownHostsOff) {
        // ssh accepts several files; decom checks against the first.
        const first = value.split(/\s+/)[0]!;
        if (first === '/dev/null') into.knownHostsOff = true;
        else into.knownHostsFile = expandHome(first);
      }
      break;
    case 'proxyjump':
      // ProxyJump and ProxyCommand: whichever comes first, as in ssh.
      if (into.proxyCommand === undefined) into.proxyJump ??= value.toLowerCase() === 'none' ? [] : jumps(value, '-o ProxyJump');
      break;
    case 'proxycommand':
      if (into.proxyJump === undefined && into.proxyCommand === undefined && value.toLowerCase() !== 'none') into.proxyCommand = value;
      break;
    case 'connecttimeout':
      into.connectTimeoutSec ??= timeout(value);
      break;
    case 'port':
      into.port ??= port(value, '-o Port');
      break;
    case 'user':
      into.user ??= userName(value, '-o User');
      break;
    case 'hostname':
      into.hostName ??= value;
      break;
    case 'identityfile':
      into.identityFile ??= expandHome(value);
      break;
  }
  return i;
}

function strictness(value: string): 'yes' | 'accept-new' | 'no' {
  switch (value.toLowerCase()) {
    case 'yes':
    case 'ask': // decom cannot ask: refuse unknown keys, as "yes" does
    case 'true':
      return 'yes';
    case 'accept-new':
      return 'accept-new';
    case 'no':
    case 'off':
    case 'false':
      return 'no';
  }
  throw new SshArgsError(`-o StrictHostKeyChecking takes yes, accept-new or no, got ${JSON.stringify(value)}`);
}

function port(value: string, option: string): number {
  const n = /^[0-9]+$/.test(value) ? Number(value) : NaN;
  if (!(n >= 1 && n <= 65535)) throw new SshArgsError(`${option} takes a port number 1-65535, got ${JSON.stringify(value)}`);
  return n;
}

function userName(value: string, option: string): string {
  if (value.startsWith('-') || /[\s\x00-\x1f\x7f]/.test(value)) throw new SshArgsError(`${option} takes a user name, got ${JSON.stringify(value)}`);
  return value;
}

function timeout(value: string): number {
  const n = /^[0-9]+$/.test(value) ? Number(value) : NaN;
  if (!(n >= 1)) throw new SshArgsError(`-o ConnectTimeout takes a whole number of seconds from 1, got ${JSON.stringify(value)}`);
  return n;
}

/** `hop1,hop2`, each [user@]host[:port] (or ssh://...), in connection order. */
function jumps(value: string, option: string): string[] {
  const hops = value.split(',').map((h) => h.trim());
  for (const hop of hops) {
    if (!hop || /\s/.test(hop) || hop.startsWith('-')) {
      throw new SshArgsError(`${option} takes [user@]host[:port] hops separated by commas, got ${JSON.stringify(value)}`);
    }
  }
  return hops;
}

// ---- Shell words ----

/**
 * POSIX shell word splitting, as Python's shlex.split (which Ansible uses for INI
 * host lines and for ansible_ssh_common_args): whitespace separates words, '...' is
 * literal, "..." honours \\ \" \$ \`, and a backslash outside quotes escapes the next
 * character. Nothing is expanded or executed: no $VAR, no globs, no ~.
 */

export interface Word {
  text: string;
  /** 1-based column of the word's first character (a quote, if it starts with one). */
  col: number;
  /** 1-based column of the first character that is part of the text (after an opening quote). */
  textCol: number;
}

/** Bad quoting; `col` is 1-based in the split text. */
export class ShellSyntaxError extends Error {
  constructor(
    message: string,
    readonly col: number,
  ) {
    super(message);
  }
}

/** With `comments`, an unquoted # ends the line (shlex's comments=True). */
export function splitShellWords(line: string, opts: { comments?: boolean } = {}): Word[] {
  const words: Word[] = [];
  let i = 0;
  let commentStarted = false;
  while (i < line.length && !commentStarted) {
    while (i < line.length && /\s/.test(line[i]!)) i++;
    if (i >= line.length) break;
    if (opts.comments && line[i] === '#') break;
    const start = i;
    let text = '';
    let textCol = 0;
    const take = (s: string, at: number) => {
      if (!textCol) textCol = at + 1;
      text += s;
    };
    while (i < line.length && !/\s/.test(line[i]!)) {
      const c = line[i]!;
      if (opts.comments && c === '#') {
        // As shlex: an unquoted # ends the line even inside a word (a=b#c is a=b).
        commentStarted = true;
        break;
      }
      if (c === "'") {
        const close = line.indexOf("'", i + 1);
        if (close < 0) throw new ShellSyntaxError(`unterminated ' quote`, i + 1);
        if (close > i + 1) take(line.slice(i + 1, close), i + 1);
        else if (!textCol) textCol = i + 2;
        i = close + 1;
      } else if (c === '"') {
        const open = i;
        i++;
        if (!textCol) textCol = i + 1;
        while (i < line.length && line[i] !== '"') {
          if (line[i] === '\\' && i + 1 < line.length && '\\"$`\n'.includes(line[i + 1]!)) {
            take(line[i + 1]!, i + 1);
            i += 2;
          } else {
            take(line[i]!, i);
            i++;
          }
        }
        if (i >= line.length) throw new ShellSyntaxError(`unterminated " quote`, open + 1);
        i++;
      } else if (c === '\\') {
        if (i + 1 >= line.length) throw new ShellSyntaxError('ends with a lone backslash', i + 1);
        take(line[i + 1]!, i + 1);
        i += 2;
      } else {
        take(c, i);
        i++;
      }
    }
    if (i > start) words.push({ text, col: start + 1, textCol: textCol || start + 1 });
  }
  return words;
}
