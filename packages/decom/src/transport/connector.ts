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

/**
 * How a command reaches its hosts: the given hosts' TCP connections dialed now (the
 * host pool's first wave), the SSH library loaded meanwhile (the nodes answer while
 * it loads); any other host is dialed when it connects. `close` ends the early
 * sockets no host took (a failure before connecting).
 */
export async function connector<T extends SshTarget>(hosts: T[], flags: ConnectFlags): Promise<{ connect(h: T): Promise<Transport>; close(): void }> {
  const dialed = new Map<string, Dialed>();
  const local = (h: T) => flags.connection === 'local' || h.connection === 'local';
  const viaOpenSsh = (h: T) => {
    try {
      return openSshReason(h, flags) !== undefined;
    } catch {
      return true; // refused when it connects: not dialed
    }
  };
  if (flags.connection === 'ssh') for (const h of hosts) if (!h.proxyJump.length && !h.proxyCommand && !local(h) && !viaOpenSsh(h)) dialed.set(h.name, dial(h.address, h.port));
  const { connectSsh, localTransport } = await import('./index.js');
  return {
    connect: async (h) => {
      // ansible_connection=local: this machine, judged by the interlocks (hostname, machine-id) as any host.
      if (local(h)) return localTransport(h.name, flags.connection === 'local' ? flags.hostRoot : undefined, flags.maxOutputMiB);
      // A socket dialed early serves the host's first connection only: a later one (a fix after its audit, past the pool's bound) dials anew.
      const early = dialed.get(h.name);
      dialed.delete(h.name);
      const target = withKnownHosts(h, flags.knownHosts);
      let why: string | undefined;
      try {
        why = openSshReason(h, flags);
      } catch (e) {
        early?.sock.destroy();
        throw e;
      }
      if (why !== undefined) {
        early?.sock.destroy();
        const { connectOpenSsh } = await import('./openssh.js');
        return connectOpenSsh({ ...target, needsOpenSsh: why }, { acceptNewHostKeys: flags.acceptNewHostKeys, ...(flags.maxOutputMiB ? { maxOutputMiB: flags.maxOutputMiB } : {}) });
      }
      return connectSsh(target, {
        acceptNewHostKeys: flags.acceptNewHostKeys,
        ...(flags.maxOutputMiB ? { maxOutputMiB: flags.maxOutputMiB } : {}),
        ...(early ? { dialed: early } : {}),
      });
    },
    close: () => {
      for (const d of dialed.values()) d.sock.destroy();
    },
  };
}
