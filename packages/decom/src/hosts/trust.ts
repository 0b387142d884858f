/**
 * `decom hosts trust`: each targeted host's SSH host key, read as a connection reaches
 * it and judged against the known_hosts files decom checks, without logging in to it.
 * Pure: the scans in, what each host's key is, the lines shown, the keys to record and
 * the exit code out. Recording is `record`, after the command's one confirmation.
 */
import type { Host } from '../inventory/index.js';
import { appendKnownHost, checkHostKey, fingerprint, keyTypeOf, knownHostName, readKnownHosts } from '../transport/known-hosts.js';
import type { SeenHostKey } from '../transport/ssh.js';
import { withoutHost, type TransportError } from '../transport/types.js';
import { EXIT, foldExit, type ExitCode } from '../util/exit-codes.js';
import { printable } from '../verify/report.js';

/**
 * Where a host's own key stands: `new`, unknown (to record); `trusted`, recorded and
 * the same; `refused`, changed or revoked (never recorded); `unreachable`, not read;
 * `not-ssh`, reached without SSH (ansible_connection=local).
 */
export type KeyStatus = 'new' | 'trusted' | 'refused' | 'unreachable' | 'not-ssh';

export interface HostTrust {
  host: string;
  status: KeyStatus;
  /** Unknown keys to record for this host: its jump hosts' on the way, then its own. */
  unknown: SeenHostKey[];
  /** trusted: the line that records the key ("file:line", or the @cert-authority's); refused, unreachable: why. */
  said?: string;
}

/** What a scan of one host found: the keys seen and why the node's was not reached, or the @cert-authority line that vouches for it, or that it is not reached over SSH. */
export type Scanned = { keys: SeenHostKey[]; failed?: TransportError } | { certAuthority: string } | { notSsh: true };

/** A host's key, as its scan found it. */
export function classify(host: Host, scanned: Scanned): HostTrust {
  const base = { host: host.name };
  if ('notSsh' in scanned) return { ...base, status: 'not-ssh', unknown: [] };
  if ('certAuthority' in scanned) return { ...base, status: 'trusted', unknown: [], said: `@cert-authority at ${scanned.certAuthority}` };
  const { keys, failed } = scanned;
  const refused = keys.find((k) => k.refusal);
  if (refused) return { ...base, status: 'refused', unknown: [], said: refused.refusal as string };
  const unknown = keys.filter((k) => k.verdict.status === 'unknown');
  if (failed) return { ...base, status: 'unreachable', unknown: [], said: withoutHost(failed.host, failed.message) };
  const own = keys[keys.length - 1] as SeenHostKey;
  if (own.verdict.status === 'known') return { ...base, status: 'trusted', unknown, said: `${own.verdict.entry.file}:${own.verdict.entry.line}` };
  return { ...base, status: 'new', unknown };
}

/** One key to record: where, under which name, and the hosts it was seen for. */
export interface ToRecord {
  file: string;
  host: string;
  port: number;
  key: Buffer;
  /** The inventory hosts it is the key of (its own host), or the jump host on their way. */
  of: string[];
  jump: boolean;
}

/** The unknown keys of every host, each once (a jump host shared by several hosts is one key to record). */
export function toRecord(trusts: HostTrust[]): ToRecord[] {
  const out = new Map<string, ToRecord>();
  for (const t of trusts) {
    for (const k of t.unknown) {
      const id = `${k.file}\0${knownHostName(k.host, k.port)}\0${k.key.toString('base64')}`;
      const had = out.get(id);
      if (had) had.of.push(t.host);
      else out.set(id, { file: k.file, host: k.host, port: k.port, key: k.key, of: [t.host], jump: k.hop.isJump });
    }
  }
  return [...out.values()];
}

/** A key as `ssh-keygen -l` shows it: its type and SHA256 fingerprint. */
const keyWords = (key: Buffer) => `${keyTypeOf(key)} ${fingerprint(key)}`;

/**
 * The lines shown before the question: each key to record as `HOST TYPE SHA256:…`
 * (a jump host's by the name it is known by, with the hosts behind it), then each host
 * whose key is not new, named once.
 */
export function renderText(trusts: HostTrust[], keys: ToRecord[]): string {
  const lines = keys.map((k) =>
    k.jump ? `${knownHostName(k.host, k.port)} ${keyWords(k.key)} (jump host of ${k.of.map(printable).join(', ')})` : `${printable(k.of.join(', '))} ${keyWords(k.key)}`,
  );
  for (const t of trusts) {
    const host = printable(t.host);
    if (t.status === 'trusted') lines.push(`${host}: already trusted (${printable(t.said ?? '')})`);
    else if (t.status === 'refused') lines.push(`${host}: NOT RECORDED: ${printable(t.said ?? '')}`);
    else if (t.status === 'unreachable') lines.push(`${host}: UNREACHABLE: ${printable(t.said ?? '')}`);
    else if (t.status === 'not-ssh') lines.push(`${host}: not reached over SSH (ansible_connection=local): no host key`);
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/** The one question for every key to record: how many, where, under which names; its last line says what to type. */
export function question(keys: ToRecord[]): string {
  const files = [...new Set(keys.map((k) => k.file))];
  const where = files.map((f) => `${keys.filter((k) => k.file === f).map((k) => knownHostName(k.host, k.port)).join(', ')} in ${f}`).join('; ');
  return `Record ${keys.length} host key${keys.length === 1 ? '' : 's'}: ${where}.\nCompare each fingerprint with the host's own (ssh-keygen -lf on its public host key) first.\nType "yes" to record ${keys.length === 1 ? 'it' : 'them'}: `;
}

/** A key not recorded at the confirmation: its file now holds another key for its name (or revokes it) since the scan. */
export interface ChangedSinceScan {
  key: ToRecord;
  /** Why, without the inventory host's name: the name the key is known by, the line that now says otherwise. */
  said: string;
}

/** What `record` did: the keys written, and the ones refused because their file changed since the scan. */
export interface Recorded {
  written: ToRecord[];
  changed: ChangedSinceScan[];
}

/**
 * Records each key in its file, as --accept-new-host-keys records one (appendKnownHost):
 * read again first, so a key recorded meanwhile is not written twice, and one whose
 * name now has another key (or this one @revoked) is refused, never written.
 */
export function record(keys: ToRecord[]): Recorded {
  const out: Recorded = { written: [], changed: [] };
  for (const k of keys) {
    const v = checkHostKey(readKnownHosts(k.file), k.host, k.port, k.key);
    const who = `${k.jump ? 'jump host ' : ''}${knownHostName(k.host, k.port)}`;
    if (v.status === 'changed') {
      out.changed.push({
        key: k,
        said:
          `HOST KEY CHANGED for ${who} since it was read: it showed ${keyWords(k.key)}, but ${v.entry.file}:${v.entry.line} now records ` +
          `${v.entry.keyType} ${fingerprint(v.entry.key)}; compare both with the host's own (ssh-keygen -lf on its public host key)`,
      });
    } else if (v.status === 'revoked') {
      out.changed.push({ key: k, said: `${who} showed ${keyWords(k.key)}, which ${v.entry.file}:${v.entry.line} now marks @revoked` });
    } else if (v.status === 'unknown') {
      appendKnownHost(k.file, k.host, k.port, k.key);
      out.written.push(k);
    }
  }
  return out;
}

/** A line per host whose key was refused at the confirmation, naming it once (every inventory host the key was seen for). */
export const renderChanged = (changed: ChangedSinceScan[]): string =>
  changed.flatMap((c) => c.key.of.map((host) => `${printable(host)}: NOT RECORDED: ${printable(c.said)}\n`)).join('');

/**
 * 0 every host's key is trusted (or now recorded); 3 a host's key could not be read; 4 a
 * changed or revoked key, never recorded, whether the scan found it or the confirmation
 * did (`changed`, record's) (3 wins).
 */
export const exitCode = (trusts: HostTrust[], changed: ChangedSinceScan[] = []): ExitCode =>
  foldExit([
    ...trusts.map((t) => (t.status === 'unreachable' ? EXIT.unreachable : t.status === 'refused' ? EXIT.refused : EXIT.clean)),
    ...changed.map(() => EXIT.refused),
  ]);
