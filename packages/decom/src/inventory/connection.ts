/**
 * How to reach a host: its connection settings as an inventory writes them, checked
 * and turned into an SshTarget, with whatever ansible_ssh_common_args and
 * ansible_ssh_extra_args say (read as ssh reads them, split as Python's shlex).
 */
import type { SshTarget } from '../transport/types.js';
import { inputError } from '../util/errors.js';
import { expandHome } from '../util/paths.js';
import { describeValue, fieldError, formatWhere, type Located, type Where } from './where.js';
import { VaultEncrypted } from './yaml-source.js';

/**
 * The connection settings of one host as written, each with where it came from.
 * Both inventory formats fill this; `buildSshTarget` checks and converts it, so a
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
  /** ansible_ssh_common_args, then ansible_ssh_extra_args: the first value of a setting wins, as in ssh. */
  sshArgs: Located[];
}

const DEFAULT_PORT = 22;
const DEFAULT_CONNECT_TIMEOUT_SEC = 10;

/**
 * Settings given explicitly (ansible_port, ansible_user, ...) win over the same
 * setting inside the ssh args, as in Ansible, which passes them to ssh first.
 */
export function buildSshTarget(name: string, nameWhere: Where, inputs: ConnectionInputs, defaultUser: () => string): SshTarget {
  const v = new Reader(name);
  const args: SshArgSettings = {};
  for (const loc of inputs.sshArgs) {
    // Not echoed whole: a ProxyCommand in there may carry a password (sshpass -p).
    const text = v.text(loc, { hideValue: true });
    if (text === undefined) continue;
    try {
      parseSshArgs(text, args);
    } catch (e) {
      if (e instanceof SshArgsError) throw v.error(loc, e.message);
      throw e;
    }
  }

  const address = v.word(inputs.address, 'a host name or address') ?? addressFromName(name, nameWhere);
  const become = v.bool(inputs.become) ?? false;
  const method = v.text(inputs.becomeMethod);
  if (become && method !== undefined && method !== 'sudo') {
    throw v.error(inputs.becomeMethod!, `decom becomes root with sudo only, got ${describeValue(method)}`);
  }
  const target: SshTarget = {
    name,
    address,
    port: v.port(inputs.port) ?? args.port ?? DEFAULT_PORT,
    user: v.word(inputs.user, 'a user name') ?? args.user ?? defaultUser(),
    become,
    becomeUser: v.word(inputs.becomeUser, 'a user name') ?? 'root',
    strictHostKeyChecking: v.strictness(inputs.strictHostKeyChecking) ?? args.strictHostKeyChecking ?? 'yes',
    proxyJump: v.jumps(inputs.proxyJump) ?? args.proxyJump ?? [],
    connectTimeoutSec: v.seconds(inputs.connectTimeoutSec) ?? args.connectTimeoutSec ?? DEFAULT_CONNECT_TIMEOUT_SEC,
  };
  const key = v.path(inputs.privateKeyFile) ?? args.identityFile;
  if (key !== undefined) target.privateKeyFile = key;
  const knownHosts = v.path(inputs.knownHostsFile) ?? args.knownHostsFile;
  if (knownHosts !== undefined) target.knownHostsFile = knownHosts;
  const password = v.text(inputs.becomePassword, { hideValue: true });
  if (password !== undefined) target.becomePassword = password;
  return target;
}

/** With no ansible_host, ssh connects to the inventory name itself. */
function addressFromName(name: string, where: Where): string {
  if (!isSshWord(name)) {
    throw inputError(`${formatWhere(where)}: host name ${describeValue(name)} cannot be used as an address; set ansible_host`);
  }
  return name;
}

/** Something safe to hand to ssh as one word: no spaces, no control characters, not an option. */
const isSshWord = (s: string) => s !== '' && !s.startsWith('-') && !/[\s\x00-\x1f\x7f]/.test(s);

const TRUE_WORDS = ['y', 'yes', 'on', '1', 'true', 't'];
const FALSE_WORDS = ['n', 'no', 'off', '0', 'false', 'f'];

/** Checks and converts values for one host; every error names file:line:col and the field. */
class Reader {
  constructor(private readonly host: string) {}

  error(loc: Located, problem: string) {
    const label = loc.scope === 'host' ? loc.field : `${loc.field} (host ${this.host})`;
    return fieldError(loc.where, label, problem);
  }

  /** A string setting; numbers are taken as written. Secrets (`hideValue`) are never echoed. */
  text(loc: Located | undefined, opts: { hideValue?: boolean } = {}): string | undefined {
    if (!loc || loc.value === null || loc.value === undefined) return undefined;
    const value = loc.value;
    if (value instanceof VaultEncrypted) throw this.error(loc, 'is encrypted with ansible-vault, which decom cannot decrypt');
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
    const value = loc.value;
    if (typeof value === 'boolean') return value;
    const word = typeof value === 'number' || typeof value === 'string' ? String(value).trim().toLowerCase() : undefined;
    if (word !== undefined && TRUE_WORDS.includes(word)) return true;
    if (word !== undefined && FALSE_WORDS.includes(word)) return false;
    throw this.error(loc, `expected true or false, got ${describeValue(value)}`);
  }

  strictness(loc: Located | undefined): SshTarget['strictHostKeyChecking'] | undefined {
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
    const value = loc.value;
    if (typeof value === 'number' && Number.isInteger(value)) return value;
    if (typeof value === 'string' && /^\s*[0-9]+\s*$/.test(value)) return Number(value);
    return NaN;
  }
}

// ---- ssh arguments ----

/** What ansible_ssh_common_args / ansible_ssh_extra_args say about the connection. */
interface SshArgSettings {
  port?: number;
  user?: string;
  identityFile?: string;
  knownHostsFile?: string;
  strictHostKeyChecking?: 'yes' | 'accept-new' | 'no';
  proxyJump?: string[];
  connectTimeoutSec?: number;
}

/** A malformed or unsupported ssh argument; the caller says which host and field. */
export class SshArgsError extends Error {}

// ssh(1)'s single-letter options: these take a value, the rest of the letters are flags.
const TAKES_VALUE = new Set('BbcDEeFIiJLlmOoPpQRSWw');
const FLAGS = new Set('46AaCfGgKkMNnqsTtVvXxYy');

/**
 * Reads an ssh command line fragment as ssh would. Like ssh, the first value given
 * for a setting wins, so call this on the common args first, then the extra args,
 * with the same `into`. Options decom has no use for are skipped; options that would
 * send the connection somewhere decom cannot follow (ProxyCommand, -F) are refused
 * rather than silently ignored.
 */
export function parseSshArgs(text: string, into: SshArgSettings = {}): SshArgSettings {
  let words: string[];
  try {
    words = splitShellWords(text).map((w) => w.text);
  } catch (e) {
    if (e instanceof ShellSyntaxError) throw new SshArgsError(`${e.message} at character ${e.col}`);
    throw e;
  }
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (!word.startsWith('-') || word === '-' || word === '--') {
      throw new SshArgsError(`unexpected argument ${JSON.stringify(word)}: only ssh options belong here`);
    }
    // getopt style: "-vC", "-p22", "-p 22", "-oKey=Value", "-o Key=Value".
    for (let j = 1; j < word.length; j++) {
      const letter = word[j]!;
      if (FLAGS.has(letter)) continue;
      if (!TAKES_VALUE.has(letter)) throw new SshArgsError(`unknown ssh option -${letter}`);
      let value = word.slice(j + 1);
      if (!value) {
        const next = words[i + 1];
        if (next === undefined) throw new SshArgsError(`-${letter} needs a value after it`);
        value = next;
        i++;
      }
      if (letter === 'o') i = sshOption(value, words, i, into);
      else sshLetter(letter, value, into);
      break;
    }
  }
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
      into.proxyJump ??= jumps(value, '-J');
      return;
    case 'F':
      if (value !== '/dev/null') {
        throw new SshArgsError('-F (an ssh config file) is not supported: decom does not read ssh config files; give ProxyJump, UserKnownHostsFile etc. as -o options');
      }
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
      // ssh accepts several files; decom checks against the first.
      into.knownHostsFile ??= expandHome(value.split(/\s+/)[0]!);
      break;
    case 'proxyjump':
      into.proxyJump ??= value.toLowerCase() === 'none' ? [] : jumps(value, '-o ProxyJump');
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
    case 'identityfile':
      into.identityFile ??= expandHome(value);
      break;
    case 'proxycommand':
      // The value is not echoed: it may carry a password (sshpass -p ...).
      if (value.toLowerCase() !== 'none') {
        throw new SshArgsError('-o ProxyCommand is not supported: decom connects directly or through jump hosts; use -o ProxyJump=[user@]bastion[:port] or -J');
      }
      break;
    case 'hostname':
      throw new SshArgsError('-o HostName is not supported here: set ansible_host to the address to connect to');
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
