/** Opening one SSH hop (a jump host or the node): its host key checked against known_hosts, then authentication; and ProxyJump forwarding between hops. */
import type { Duplex } from 'node:stream';
import { Client, type KexAlgorithm, type ServerHostKeyAlgorithm } from 'ssh2';
import {
  appendKnownHost,
  checkHostKey,
  fingerprint,
  keyTypeOf,
  knownHostName,
  knownKeyTypes,
  readKnownHosts,
  type HostKeyVerdict,
} from './known-hosts.js';
import { authHandler, type Credentials } from './ssh-auth.js';
import type { Dialed } from './dial.js';
import { hopLabel, type Hop } from './jump.js';
import { TransportError, type SshTarget } from './types.js';

/**
 * Opens ONE authenticated SSH connection (to a node or to a jump host), checking
 * the server's host key against known_hosts before anything else is sent. Every
 * failure becomes a one-line TransportError naming the step.
 */

export interface HostKeyPolicy {
  /** Checked first, and where accept-new records a key. */
  file: string;
  /** Read too: ssh's second user file and the global ones (missing ones know no hosts). */
  more?: string[];
  mode: SshTarget['strictHostKeyChecking'];
  /** The node's HostKeyAlias: its keys are looked up by this name, without a port, as ssh does. */
  alias?: string;
  /**
   * A host-key scan (`decom hosts trust`): shown each key this hop offers, how it stands,
   * the name it is known by and, for a changed or revoked key, the refusal a connection
   * would say, it says what follows. Nothing is recorded then.
   */
  scan?: (key: Buffer, verdict: HostKeyVerdict, named: { host: string; port: number }, refusal?: string) => ScanDecision;
}

/** What a scan does with a key: go on (unrecorded, for this connection only), stop before logging in, or judge it as any connection does. */
export type ScanDecision = 'go' | 'stop' | 'judge';

export interface OpenHopOptions {
  /** Inventory name, the prefix of every error. */
  name: string;
  hop: Hop;
  /** Jump hosts in front of this hop, for hints. */
  via: Hop[];
  /** A stream forwarded through the previous hop, instead of a TCP connection. */
  sock?: Duplex;
  /** A TCP connection to this hop opened earlier (see dial.ts). */
  dialed?: Dialed;
  creds: Credentials;
  hostKeys: HostKeyPolicy;
  timeoutSec: number;
  /** OpenSSH's ServerAliveInterval (s) and ServerAliveCountMax; default 10 and 3. */
  keepalive?: { intervalSec: number; countMax: number };
}

/** Curve25519 first: ~3x cheaper than OpenSSH 9.2's default sntrup761 hybrid. */
const KEX: KexAlgorithm[] = [
  'curve25519-sha256',
  'curve25519-sha256@libssh.org',
  'ecdh-sha2-nistp256',
  'ecdh-sha2-nistp384',
  'ecdh-sha2-nistp521',
  'diffie-hellman-group-exchange-sha256',
  'diffie-hellman-group14-sha256',
  'diffie-hellman-group16-sha512',
  'diffie-hellman-group18-sha512',
];

const HOST_KEY_ALGORITHMS: Record<string, ServerHostKeyAlgorithm[]> = {
  'ssh-ed25519': ['ssh-ed25519'],
  'ecdsa-sha2-nistp256': ['ecdsa-sha2-nistp256'],
  'ecdsa-sha2-nistp384': ['ecdsa-sha2-nistp384'],
  'ecdsa-sha2-nistp521': ['ecdsa-sha2-nistp521'],
  'ssh-rsa': ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'],
  'ssh-dss': ['ssh-dss'],
};
const DEFAULT_HOST_KEY_ORDER: ServerHostKeyAlgorithm[] = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
];

/**
 * Key types already in known_hosts go first, as `ssh` does: otherwise a server
 * with an ed25519 and an rsa key, known by its rsa key, would present ed25519
 * and be refused as "changed".
 */
export function hostKeyAlgorithms(knownTypes: string[]): ServerHostKeyAlgorithm[] {
  return [...new Set([...knownTypes.flatMap((t) => HOST_KEY_ALGORITHMS[t] ?? []), ...DEFAULT_HOST_KEY_ORDER])];
}

/** Quotes a word for a hint only when a shell would need it. */
const hintArg = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`);

/** The name and port a hop's key is known by: the node's HostKeyAlias (no port, as ssh), else its address. */
function keyName(o: OpenHopOptions): { host: string; port: number } {
  return !o.hop.isJump && o.hostKeys.alias ? { host: o.hostKeys.alias, port: 22 } : { host: o.hop.address, port: o.hop.port };
}

function describeRefusal(v: Exclude<HostKeyVerdict, { status: 'known' }>, o: OpenHopOptions, key: Buffer): string {
  const { hop, hostKeys } = o;
  const named = keyName(o);
  const known = knownHostName(named.host, named.port);
  const offered = `${keyTypeOf(key)} ${fingerprint(key)}`;
  const who = hop.isJump ? `jump host ${known}` : known;
  if (v.status === 'revoked') {
    return `${who} offered host key ${offered}, which is marked @revoked at ${v.entry.file}:${v.entry.line}; refusing to connect`;
  }
  if (v.status === 'changed') {
    return (
      `HOST KEY CHANGED for ${who}: it offered ${offered}, but ${v.entry.file}:${v.entry.line} records ` +
      `${v.entry.keyType} ${fingerprint(v.entry.key)} (the machine was reinstalled, or someone is intercepting the connection); ` +
      `if the change is expected, remove the old key with: ssh-keygen -R ${hintArg(known)} -f ${hintArg(hostKeys.file)}`
    );
  }
  const add = o.via.length
    ? `ssh -J ${o.via.map(hopLabel).join(',')} -p ${hop.port} -o UserKnownHostsFile=${hintArg(hostKeys.file)} ${hop.user}@${hop.address} true`
    : `ssh-keyscan -p ${hop.port} ${hintArg(hop.address)} >> ${hintArg(hostKeys.file)}`;
  return (
    `unknown host key for ${who}: it offered ${offered}, which is not in ${hostKeys.file}; ` +
    `if that is the right key, add it with: ${add} (or record it with decom hosts trust, or rerun with --accept-new-host-keys)`
  );
}

const SOCKET_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused: nothing listens there, or a firewall rejects it',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'timed out',
  ECONNRESET: 'connection reset by the other end',
  ENOTFOUND: 'no such host name',
  EAI_AGAIN: 'temporary DNS failure',
};

type SshError = Error & { level?: string; code?: string };

export function openHop(o: OpenHopOptions): Promise<Client> {
  const { name, hop, hostKeys } = o;
  const where = `${hop.address}:${hop.port}`;
  const prefix = hop.isJump ? `jump host ${hopLabel(hop)}: ` : '';
  const fail = (step: 'connect' | 'host-key' | 'auth', msg: string) => new TransportError(name, step, prefix + msg);

  const named = keyName(o);
  let entries: ReturnType<typeof readKnownHosts> = [];
  for (const file of [hostKeys.file, ...(hostKeys.more ?? [])]) {
    try {
      entries = [...entries, ...readKnownHosts(file)];
    } catch (e) {
      return Promise.reject(fail('host-key', `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? e}`));
    }
  }

  let refusal: TransportError | undefined;
  let tcpConnected = false;
  let hostKeyAccepted = false;
  const progress: { tried: string[]; serverMethods?: string[]; agentError?: string } = { tried: [] };

  const verifyHostKey = (key: Buffer): boolean => {
    const v = checkHostKey(entries, named.host, named.port, key);
    const scanned = hostKeys.scan?.(key, v, named, v.status === 'changed' || v.status === 'revoked' ? describeRefusal(v, o, key) : undefined) ?? 'judge';
    if (scanned === 'go') return (hostKeyAccepted = true);
    if (scanned === 'stop') {
      refusal = fail('host-key', `${knownHostName(named.host, named.port)} offered ${keyTypeOf(key)} ${fingerprint(key)}: read, not logged in`);
      return false;
    }
    if (v.status === 'known') return (hostKeyAccepted = true);
    if (v.status === 'unknown' && hostKeys.mode === 'accept-new') {
      try {
        appendKnownHost(hostKeys.file, named.host, named.port, key);
      } catch (e) {
        refusal = fail('host-key', `cannot record the new host key in ${hostKeys.file}: ${(e as NodeJS.ErrnoException).code ?? e}`);
        return false;
      }
      return (hostKeyAccepted = true);
    }
    refusal = new TransportError(name, 'host-key', describeRefusal(v, o, key));
    return false;
  };

  const explain = (err: SshError): TransportError => {
    if (refusal) return refusal;
    if (err.level === 'client-authentication') {
      const only = progress.serverMethods && !progress.serverMethods.includes('publickey')
        ? `; the server accepts only: ${progress.serverMethods.join(', ')}`
        : '';
      const agent = progress.agentError ? `; ssh-agent failed: ${progress.agentError}` : '';
      const what = o.creds.offered.some((c) => c.serverMethod !== 'publickey') ? 'every key and the password' : 'every key';
      return fail('auth', `${hop.user}@${where} refused ${what} offered (tried: ${progress.tried.join(', ') || 'none'})${only}${agent}`);
    }
    if (err.level === 'client-timeout') {
      if (hostKeyAccepted) return fail('auth', `${hop.user}@${where}: login did not finish within ${o.timeoutSec}s (timeout)`);
      if (tcpConnected) return fail('connect', `${where} accepted the connection but the SSH handshake did not finish within ${o.timeoutSec}s (timeout)`);
      return fail('connect', `no answer from ${where} within ${o.timeoutSec}s (timeout)`);
    }
    if (err.level === 'client-socket' && err.code) {
      return fail('connect', `cannot connect to ${where}: ${err.code} (${SOCKET_ERRORS[err.code] ?? err.message})`);
    }
    if (hostKeyAccepted) return fail('auth', `${hop.user}@${where} ended the login: ${err.message}`);
    return fail('connect', `SSH handshake with ${where} failed: ${err.message}`);
  };

  return new Promise((resolve, reject) => {
    const client = new Client();
    let settled = false;
    const settle = (f: () => void) => {
      if (!settled) (settled = true), f();
    };
    client.on('connect', () => {
      tcpConnected = true;
      // Small request/response packets: without this, Nagle + delayed ACKs add ~40 ms per round trip.
      client.setNoDelay(true);
    });
    // Errors after `ready` are the transport's business; this listener only keeps
    // an 'error' event from ever going unhandled.
    client.on('error', (err: SshError) => {
      // An unreachable agent is not fatal: ssh2 goes on with the next key.
      if (err.level === 'agent') return void (progress.agentError = err.message);
      settle(() => (client.destroy(), reject(explain(err))));
    });
    client.on('close', () => settle(() => reject(explain(new Error('connection closed during the SSH handshake')))));
    client.once('ready', () => settle(() => resolve(client)));

    const known = knownKeyTypes(entries, named.host, named.port);
    const early = o.dialed;
    if (early?.error || early?.sock.destroyed) {
      const err: SshError = early.error ?? new Error('connection closed before the SSH handshake');
      if (early.error) err.level = 'client-socket';
      return settle(() => (early.sock.destroy(), reject(explain(err))));
    }
    const sock = o.sock ?? early?.sock;
    try {
      client.connect({
        host: hop.address,
        port: hop.port,
        username: hop.user,
        ...(sock ? { sock } : {}),
        readyTimeout: o.timeoutSec * 1000,
        // A silent network drop is noticed within ~30 s instead of never (or as ServerAlive* say).
        keepaliveInterval: (o.keepalive?.intervalSec ?? 10) * 1000,
        keepaliveCountMax: o.keepalive?.countMax ?? 3,
        algorithms: { kex: KEX, serverHostKey: hostKeyAlgorithms(known) },
        hostVerifier: verifyHostKey,
        authHandler: authHandler(o.creds, hop.user, progress),
      });
    } catch (e) {
      settle(() => reject(fail('connect', `cannot start SSH to ${where}: ${(e as Error).message}`)));
    }
  });
}

/** A TCP stream to `hop`, opened by the previous hop's sshd (ProxyJump). */
export function forwardThrough(jump: Client, jumpHop: Hop, hop: Hop, name: string, timeoutSec: number): Promise<Duplex> {
  const target = `${hop.address}:${hop.port}`;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new TransportError(name, 'connect', `jump host ${hopLabel(jumpHop)} got no answer from ${target} within ${timeoutSec}s (timeout)`)),
      timeoutSec * 1000,
    );
    jump.forwardOut('127.0.0.1', 0, hop.address, hop.port, (err, stream) => {
      clearTimeout(timer);
      if (err) {
        reject(new TransportError(name, 'connect', `jump host ${hopLabel(jumpHop)} could not connect to ${target}: ${err.message}`));
      } else resolve(stream);
    });
  });
}
