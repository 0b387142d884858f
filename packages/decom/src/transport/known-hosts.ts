/** OpenSSH known_hosts files: read, a server's host key checked against them, and new keys recorded. */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { appendFileSync, closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * OpenSSH known_hosts, as `ssh` reads it: plain and hashed host lists, wildcards,
 * negation, `[host]:port` for non-22 ports, `@revoked`. `@cert-authority` lines
 * are not checked here (ssh2 verifies no host certificate): a host they alone vouch for
 * is reached through OpenSSH, which checks them. Pure functions plus one reader and one
 * appender.
 */

export interface KnownHostEntry {
  /** Where the entry is, for messages ("file:line"). */
  file: string;
  line: number;
  marker?: 'revoked' | 'cert-authority';
  /** Comma-separated patterns (`*`, `?`, `!negated`), or a hashed `|1|salt|hmac` name. */
  hosts: string;
  keyType: string;
  /** The raw public key blob (base64-decoded). */
  key: Buffer;
}

/** Parses known_hosts text; lines it cannot read are skipped, as ssh does. */
export function parseKnownHosts(text: string, file: string): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  text.split('\n').forEach((raw, i) => {
    const fields = raw.trim().split(/\s+/);
    if (fields[0] === undefined || fields[0] === '' || fields[0].startsWith('#')) return;
    let marker: KnownHostEntry['marker'];
    if (fields[0].startsWith('@')) {
      const m = fields.shift();
      if (m === '@revoked') marker = 'revoked';
      else if (m === '@cert-authority') marker = 'cert-authority';
      else return; // unknown marker: ssh ignores the line
    }
    const [hosts, keyType, base64] = fields;
    if (!hosts || !keyType || !base64) return;
    const key = Buffer.from(base64, 'base64');
    if (key.length === 0 || keyTypeOf(key) !== keyType) return;
    entries.push({ file, line: i + 1, ...(marker ? { marker } : {}), hosts, keyType, key });
  });
  return entries;
}

/** The known_hosts file ssh reads and records in when nothing names one. */
export const defaultKnownHostsFile = (): string => join(homedir(), '.ssh', 'known_hosts');

/** The last parse of each file: a fleet's hosts share one known_hosts, read per host, parsed once. */
const parsed = new Map<string, { text: string; entries: KnownHostEntry[] }>();

/** Reads a known_hosts file; a missing file knows no hosts. */
export function readKnownHosts(file: string): KnownHostEntry[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  let hit = parsed.get(file);
  if (hit?.text !== text) parsed.set(file, (hit = { text, entries: parseKnownHosts(text, file) }));
  return hit.entries;
}

/** The name ssh looks up: "host" on port 22, "[host]:port" otherwise; lower case, as ssh does. */
export const knownHostName = (host: string, port: number): string =>
  port === 22 ? host.toLowerCase() : `[${host.toLowerCase()}]:${port}`;

/** OpenSSH's match_pattern: `*` any run, `?` any one character, case-insensitive. */
function globMatch(name: string, pattern: string): boolean {
  // Most entries are plain names: a fleet's known_hosts is read for every host.
  if (!/[*?]/.test(pattern)) return name === pattern.toLowerCase();
  const re = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*').replaceAll('?', '.');
  return new RegExp(`^${re}$`, 'is').test(name);
}

/** Hashed entry: HMAC-SHA1 of the looked-up name, keyed with the entry's salt. */
function hashedMatch(name: string, hashed: string): boolean {
  const [, magic, salt, hmac] = hashed.split('|');
  if (magic !== '1' || !salt || !hmac) return false;
  const want = Buffer.from(hmac, 'base64');
  const got = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest();
  return want.length === got.length && timingSafeEqual(want, got);
}

/** Whether an entry's host field names `name`; one matching `!pattern` excludes it. */
export function hostsMatch(hosts: string, name: string): boolean {
  if (hosts.startsWith('|')) return hashedMatch(name, hosts);
  let positive = false;
  for (const p of hosts.split(',')) {
    const negated = p.startsWith('!');
    if (!globMatch(name, negated ? p.slice(1) : p)) continue;
    if (negated) return false;
    positive = true;
  }
  return positive;
}

export type HostKeyVerdict =
  | { status: 'known'; entry: KnownHostEntry }
  | { status: 'revoked'; entry: KnownHostEntry }
  /** The host is known, but with other keys: `entry` is the one to show (same type first). */
  | { status: 'changed'; entry: KnownHostEntry }
  | { status: 'unknown' };

/** Entries (not @cert-authority) for host:port. */
export function entriesFor(entries: KnownHostEntry[], host: string, port: number): KnownHostEntry[] {
  const name = knownHostName(host, port);
  return entries.filter((e) => e.marker !== 'cert-authority' && hostsMatch(e.hosts, name));
}

/**
 * The @cert-authority line that vouches for host:port when no key of its own is recorded:
 * such a host can only be checked by a client that asks for host certificates (OpenSSH;
 * ssh2 offers none).
 */
export function certAuthorityOnly(entries: KnownHostEntry[], host: string, port: number): KnownHostEntry | undefined {
  if (entriesFor(entries, host, port).some((e) => e.marker === undefined)) return undefined;
  const name = knownHostName(host, port);
  return entries.find((e) => e.marker === 'cert-authority' && hostsMatch(e.hosts, name));
}

/** How the key a server offered stands against known_hosts. */
export function checkHostKey(entries: KnownHostEntry[], host: string, port: number, key: Buffer): HostKeyVerdict {
  const mine = entriesFor(entries, host, port);
  const revoked = mine.find((e) => e.marker === 'revoked' && e.key.equals(key));
  if (revoked) return { status: 'revoked', entry: revoked };
  const recorded = mine.filter((e) => e.marker === undefined);
  const match = recorded.find((e) => e.key.equals(key));
  if (match) return { status: 'known', entry: match };
  const shown = recorded.find((e) => e.keyType === keyTypeOf(key)) ?? recorded[0];
  return shown ? { status: 'changed', entry: shown } : { status: 'unknown' };
}

/** Key types recorded for host:port, in file order: what to ask the server for first. */
export function knownKeyTypes(entries: KnownHostEntry[], host: string, port: number): string[] {
  const types = entriesFor(entries, host, port)
    .filter((e) => e.marker === undefined)
    .map((e) => e.keyType);
  return [...new Set(types)];
}

/** The type name at the start of an SSH public key blob ("ssh-ed25519", ...). */
export function keyTypeOf(blob: Buffer): string {
  if (blob.length < 4) return '';
  const len = blob.readUInt32BE(0);
  return len > 0 && 4 + len <= blob.length ? blob.subarray(4, 4 + len).toString('latin1') : '';
}

/** As OpenSSH prints it: "SHA256:" and unpadded base64 of the blob's SHA-256. */
export const fingerprint = (blob: Buffer): string =>
  `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;

/** The line `ssh-keyscan` would print for this key. */
export const knownHostLine = (host: string, port: number, blob: Buffer): string =>
  `${knownHostName(host, port)} ${keyTypeOf(blob)} ${blob.toString('base64')}`;

/** Records a key (accept-new). Creates the file (0600) and its folder (0700) if needed. */
export function appendKnownHost(file: string, host: string, port: number, blob: Buffer): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  // Do not glue our line onto a last line that lacks its newline.
  const sep = existsSync(file) && !endsWithNewline(file) ? '\n' : '';
  appendFileSync(file, `${sep}${knownHostLine(host, port, blob)}\n`, { mode: 0o600 });
}

function endsWithNewline(file: string): boolean {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return true;
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] === 0x0a;
  } finally {
    closeSync(fd);
  }
}
