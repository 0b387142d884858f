/** How a command connects to its hosts: over SSH (the first wave's sockets dialed early), or on this machine with --connection local or a host's ansible_connection=local. */
import { count } from '../util/flags.js';
import { DEFAULT_MAX_OUTPUT_MIB } from './command.js';
import { dial, type Dialed } from './dial.js';
import type { SshTarget, Transport } from './types.js';

export interface ConnectFlags {
  connection: 'ssh' | 'local';
  knownHosts?: string;
  acceptNewHostKeys: boolean;
  /** --connection local: the host's root as this pod mounts it (the probe runs chrooted there). */
  hostRoot?: string;
  /** MiB one exec's answer may hold (--max-output, read with maxOutputOf); default DEFAULT_MAX_OUTPUT_MIB. */
  maxOutputMiB?: number;
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
  if (flags.connection === 'ssh') for (const h of hosts) if (!h.proxyJump.length && !h.proxyCommand && !local(h)) dialed.set(h.name, dial(h.address, h.port));
  const { connectSsh, localTransport } = await import('./index.js');
  return {
    connect: (h) => {
      // ansible_connection=local: this machine, judged by the interlocks (hostname, machine-id) as any host.
      if (local(h)) return Promise.resolve(localTransport(h.name, flags.connection === 'local' ? flags.hostRoot : undefined, flags.maxOutputMiB));
      // A socket dialed early serves the host's first connection only: a later one (a fix after its audit, past the pool's bound) dials anew.
      const early = dialed.get(h.name);
      dialed.delete(h.name);
      // --known-hosts: that file alone, for every hop.
      return connectSsh(flags.knownHosts ? { ...h, knownHostsFile: flags.knownHosts, moreKnownHostsFiles: [], jumpKnownHostsFiles: [] } : h, {
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
