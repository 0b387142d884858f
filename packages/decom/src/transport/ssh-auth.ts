/** SSH authentication: the keys decom offers (the inventory's key file, the ssh-agent, the default keys) and the ssh2 auth handler that tries them. */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import ssh2, { type AnyAuthMethod, type AuthHandlerMiddleware, type ParsedKey } from 'ssh2';
import { expandHome } from '../util/paths.js';
import { TransportError, type SshTarget } from './types.js';

// ssh2 is CommonJS: Node's ESM loader cannot see `utils` as a named export.
const { utils } = ssh2;

/**
 * Which keys decom offers, in order, like `ssh`: the inventory's key file, then
 * the ssh-agent (not with IdentitiesOnly), then the OpenSSH config's key files (its
 * defaults when it names none; without ssh -G, when no key file is set,
 * ~/.ssh/id_ed25519, id_ecdsa, id_rsa). Messages name key files and the agent socket,
 * never key material.
 */

const DEFAULT_KEYS = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

export interface Credential {
  /** For messages: a key path, "ssh-agent (socket)", "password" or "keyboard-interactive". Never a secret. */
  label: string;
  /** The SSH method it is offered as: only when the server still accepts that one. */
  serverMethod: 'publickey' | 'password' | 'keyboard-interactive';
  method: (user: string) => AnyAuthMethod;
}

export interface Credentials {
  offered: Credential[];
  /** Default keys found but not usable, with why (e.g. encrypted). */
  skipped: string[];
}

/** Parsed keys by file, content and passphrase: a fleet shares one key, parsed once, not once per host. */
const parsedKeys = new Map<string, ParsedKey | Error>();

function parsePrivateKey(data: Buffer, passphrase: string | undefined, file: string): ParsedKey | Error {
  const id = `${file}\0${passphrase ?? ''}\0${data.toString('base64')}`;
  let key = parsedKeys.get(id);
  if (!key) parsedKeys.set(id, (key = parseKeyNow(data, passphrase)));
  return key;
}

function parseKeyNow(data: Buffer, passphrase: string | undefined): ParsedKey | Error {
  const parsed = utils.parseKey(data, passphrase);
  if (parsed instanceof Error) return parsed;
  const key = Array.isArray(parsed) ? (parsed[0] as ParsedKey | undefined) : parsed;
  if (!key || !key.isPrivateKey()) return new Error('not a private key');
  return key;
}

function keyCredential(label: string, key: ParsedKey): Credential {
  return { label, serverMethod: 'publickey', method: (username) => ({ type: 'publickey', username, key }) };
}

/** Loads the keys to offer. A bad explicit key file is an `auth` error right away. */
export function loadCredentials(target: SshTarget): Credentials {
  const offered: Credential[] = [];
  const skipped: string[] = [];
  if (target.privateKeyFile) {
    const file = expandHome(target.privateKeyFile);
    let data: Buffer;
    try {
      data = readFileSync(file);
    } catch (e) {
      throw new TransportError(target.name, 'auth', `cannot read private key ${file}: ${(e as NodeJS.ErrnoException).code ?? e}`);
    }
    const key = parsePrivateKey(data, target.passphrase, file);
    if (key instanceof Error) throw new TransportError(target.name, 'auth', `cannot use private key ${file}: ${key.message}`);
    offered.push(keyCredential(file, key));
  }
  const agent = process.env.SSH_AUTH_SOCK;
  if (agent && !target.identitiesOnly) offered.push({ label: `ssh-agent (${agent})`, serverMethod: 'publickey', method: (username) => ({ type: 'agent', username, agent }) });
  // The OpenSSH config's key files (or its defaults), else decom's own defaults when no key file is set.
  const more = target.identityFiles ?? (target.privateKeyFile ? [] : DEFAULT_KEYS.map((k) => join(homedir(), '.ssh', k)));
  for (const file of more) {
    if (!existsSync(file)) continue; // as ssh: a key file that is not there is skipped
    let data: Buffer;
    try {
      data = readFileSync(file);
    } catch (e) {
      skipped.push(`${file} (${(e as NodeJS.ErrnoException).code ?? e})`);
      continue;
    }
    const key = parsePrivateKey(data, target.passphrase, file);
    if (key instanceof Error) skipped.push(`${file} (${key.message})`);
    else offered.push(keyCredential(file, key));
  }
  // The login password last, after every key has failed, as ssh tries it.
  if (target.password !== undefined) offered.push(...passwordCredentials(target.password));
  if (offered.length === 0) {
    const why = skipped.length ? `; unusable: ${skipped.join(', ')}` : '';
    throw new TransportError(
      target.name,
      'auth',
      `no key to offer as ${target.user}: no private key file given, SSH_AUTH_SOCK is not set, and none of ` +
        `${(target.identityFiles ?? DEFAULT_KEYS.map((k) => join(homedir(), '.ssh', k))).join(', ')} is usable${why}`,
    );
  }
  return { offered, skipped };
}

/**
 * The login password as SSH's password method, then as keyboard-interactive (PAM's
 * "Password:"): every prompt that does not echo is answered with it, an echoed one
 * (a user name, a menu) with nothing.
 */
function passwordCredentials(password: string): Credential[] {
  return [
    { label: 'password', serverMethod: 'password', method: (username) => ({ type: 'password', username, password }) },
    {
      label: 'keyboard-interactive',
      serverMethod: 'keyboard-interactive',
      method: (username) => ({
        type: 'keyboard-interactive',
        username,
        prompt: (_name, _instructions, _lang, prompts, finish) => finish(prompts.map((p) => (p.echo ? '' : password))),
      }),
    },
  ];
}

/**
 * ssh2's authHandler: offers each credential the server still accepts in turn, then
 * gives up. `tried` fills in as it goes, and `serverMethods` records what the server
 * said it accepts.
 */
export function authHandler(
  creds: Credentials,
  user: string,
  progress: { tried: string[]; serverMethods?: string[] },
): AuthHandlerMiddleware {
  let next = 0;
  return (methodsLeft, _partial, callback) => {
    // ssh2 takes `false` for "no more methods"; its typings omit it.
    const give = callback as (m: AnyAuthMethod | false) => void;
    // null on the first call, before the server said anything.
    if (methodsLeft) progress.serverMethods = methodsLeft;
    while (next < creds.offered.length) {
      const cred = creds.offered[next++]!;
      if (methodsLeft && !methodsLeft.includes(cred.serverMethod)) continue;
      progress.tried.push(cred.label);
      return give(cred.method(user));
    }
    give(false);
  };
}
