import type { SshTarget } from '../transport/types.js';
import { expandHome } from '../util/paths.js';
import { jumps, parseSshArgs, SshArgsError, type SshArgSettings } from './ssh-args.js';
import { describeValue, fieldError, formatWhere, type Located, type Where } from './where.js';
import { VaultEncrypted } from './yaml-source.js';
import { inputError } from '../util/errors.js';

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

export const DEFAULT_PORT = 22;
export const DEFAULT_CONNECT_TIMEOUT_SEC = 10;

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
