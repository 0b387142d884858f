/**
 * How a command connects to its hosts: over SSH (ssh2, the first wave's sockets dialed
 * early; the system's OpenSSH for what ssh2 cannot do, or with --ssh openssh), or on
 * this machine with --connection local or a host's ansible_connection=local.
 */
import { count } from '../util/flags.js';
import { expandHome } from '../util/paths.js';
import { DEFAULT_MAX_OUTPUT_MIB } from './command.js';
import { dial, type Dialed } from './dial.js';
import { certAuthorityOnly, defaultKnownHostsFile, readKnownHosts, type KnownHostEntry } from './known-hosts.js';
import type { SshClient } from './ssh-client.js';
import { TransportError, type SshTarget, type Transport } from './types.js';

export interface ConnectFlags {
  connection: 'ssh' | 'local';
  knownHosts?: string;
  acceptNewHostKeys: boolean;
  /** --connection local: the host's root as this pod mounts it (the probe runs chrooted there). */
  hostRoot?: string;
  /** MiB one exec's answer may hold (--max-output, read with maxOutputOf); default DEFAULT_MAX_OUTPUT_MIB. */
  maxOutputMiB?: number;
  /** --ssh: every host through the system's OpenSSH, or ssh2 only (default: ssh2, OpenSSH for the hosts that need it). */
  ssh?: SshClient;
}

export type { SshClient } from './ssh-client.js';

/** The host as its keys are checked: with --known-hosts, that file alone, for every hop; else the inventory's and ssh's files. */
export const withKnownHosts = <T extends SshTarget>(h: T, knownHosts: string | undefined): T =>
  knownHosts ? { ...h, knownHostsFile: knownHosts, moreKnownHostsFiles: [], jumpKnownHostsFiles: [] } : h;

/** The @cert-authority line that alone vouches for the host's key, in the files it is checked against. */
export function vouchedByCertAuthority(h: SshTarget, knownHosts: string | undefined): KnownHostEntry | undefined {
  const files = knownHosts ? [knownHosts] : [h.knownHostsFile ?? defaultKnownHostsFile(), ...(h.moreKnownHostsFiles ?? [])];
  let entries: KnownHostEntry[] = [];
  try {
    for (const f of files) entries = [...entries, ...readKnownHosts(expandHome(f))];
  } catch {
    return undefined; // unreadable: the connection says so, with the file
  }
  return h.hostKeyAlias ? certAuthorityOnly(entries, h.hostKeyAlias, 22) : certAuthorityOnly(entries, h.address, h.port);
}

/** Why a host goes through the system's ssh; undefined: ssh2. With --ssh ssh2, a host that needs OpenSSH is refused by name. */
export function openSshReason(h: SshTarget, flags: Pick<ConnectFlags, 'ssh' | 'knownHosts'>): string | undefined {
  if (flags.ssh === 'openssh') return '--ssh openssh';
  const ca = vouchedByCertAuthority(h, flags.knownHosts);
  const why = h.needsOpenSsh ?? (ca ? `its host key is known only through the @cert-authority line at ${ca.file}:${ca.line}` : undefined);
  if (why && flags.ssh === 'ssh2') throw new TransportError(h.name, 'connect', `${why}: only the system's OpenSSH client can do that, and --ssh ssh2 was given`);
  return why;
}

/** --max-output: whole MiB, at least 1; its default when not given. */
export const maxOutputOf = (v: string | undefined): number => count('--max-output', v, 1) ?? DEFAULT_MAX_OUTPUT_MIB;

/** The SSH library and decom's transports, loaded once: a command may start it early, while its hosts' ssh -G run. */
let sshTransports: Promise<typeof import('./index.js')> | undefined;
export const loadSshTransports = (): Promise<typeof import('./index.js')> => (sshTransports ??= import('./index.js'));

/**
 * The TCP connections dialed before the SSH library loads (dial.ts), by host name:
 * a host ssh2 reaches directly (no ProxyJump, ProxyCommand or OpenSSH, not local) is
 * dialed once, as soon as its connection is known (reach.ts onReached), so the
 * nodes' sshd start while decom still loads and the other hosts' ssh -G run.
 */
export class EarlyDials<T extends SshTarget> {
  /** By host name: the socket (its error recorded on it, dial.ts) and the address:port it was dialed to. */
  private readonly dialed = new Map<string, { socket: Dialed; to: string }>();
  /** Closed: a host reached after a failure (another host's ssh -G still answering) is not dialed. */
  private closed = false;

  constructor(private readonly flags: ConnectFlags) {}

  dial(h: T): void {
    if (this.closed || this.flags.connection !== 'ssh' || h.connection === 'local' || h.proxyJump.length || h.proxyCommand || this.dialed.has(h.name)) return;
    try {
      if (openSshReason(h, this.flags) !== undefined) return;
    } catch {
      return; // refused when it connects: not dialed
    }
    this.dialed.set(h.name, { socket: dial(h.address, h.port), to: `${h.address}:${h.port}` });
  }

  /** The socket dialed for the host's first connection, taken: a later one dials anew. */
  take(h: T): Dialed | undefined {
    const d = this.dialed.get(h.name);
    this.dialed.delete(h.name);
    // A host whose address changed since it was dialed is dialed anew.
    if (d?.to === `${h.address}:${h.port}`) return d.socket;
    d?.socket.sock.destroy();
    return undefined;
  }

  /** Ends the sockets no host took (a failure before connecting). */
  close(): void {
    this.closed = true;
    for (const d of this.dialed.values()) d.socket.sock.destroy();
    this.dialed.clear();
  }
}

/**
 * How a command reaches its hosts: the given hosts' TCP connections dialed now (the
 * host pool's first wave; with `early`, those it dialed already), the SSH library
 * loaded meanwhile (the nodes answer while it loads); any other host is dialed when it
 * connects. `close` ends the early sockets no host took (a failure before connecting).
 */
export async function connector<T extends SshTarget>(
  hosts: T[],
  flags: ConnectFlags,
  early: EarlyDials<T> = new EarlyDials(flags),
): Promise<{ connect(h: T): Promise<Transport>; close(): void }> {
  const local = (h: T) => flags.connection === 'local' || h.connection === 'local';
  for (const h of hosts) early.dial(h);
  const { connectSsh, localTransport } = await loadSshTransports();
  return {
    connect: async (h) => {
      // ansible_connection=local: this machine, judged by the interlocks (hostname, machine-id) as any host.
      if (local(h)) return localTransport(h.name, flags.connection === 'local' ? flags.hostRoot : undefined, flags.maxOutputMiB);
      // A socket dialed early serves the host's first connection only: a later one (a fix after its audit, past the pool's bound) dials anew.
      const dialed = early.take(h);
      const target = withKnownHosts(h, flags.knownHosts);
      let why: string | undefined;
      try {
        why = openSshReason(h, flags);
      } catch (e) {
        dialed?.sock.destroy();
        throw e;
      }
      if (why !== undefined) {
        dialed?.sock.destroy();
        const { connectOpenSsh } = await import('./openssh.js');
        return connectOpenSsh({ ...target, needsOpenSsh: why }, { acceptNewHostKeys: flags.acceptNewHostKeys, ...(flags.maxOutputMiB ? { maxOutputMiB: flags.maxOutputMiB } : {}) });
      }
      return connectSsh(target, {
        acceptNewHostKeys: flags.acceptNewHostKeys,
        ...(flags.maxOutputMiB ? { maxOutputMiB: flags.maxOutputMiB } : {}),
        ...(dialed ? { dialed } : {}),
      });
    },
    close: () => early.close(),
  };
}
