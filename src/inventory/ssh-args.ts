import { expandHome } from '../util/paths.js';
import { ShellSyntaxError, splitShellWords } from './shell-words.js';

/** What ansible_ssh_common_args / ansible_ssh_extra_args say about the connection. */
export interface SshArgSettings {
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
export function jumps(value: string, option: string): string[] {
  const hops = value.split(',').map((h) => h.trim());
  for (const hop of hops) {
    if (!hop || /\s/.test(hop) || hop.startsWith('-')) {
      throw new SshArgsError(`${option} takes [user@]host[:port] hops separated by commas, got ${JSON.stringify(value)}`);
    }
  }
  return hops;
}
