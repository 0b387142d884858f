import { Socket } from 'node:net';
import type { SshTarget, Transport } from './types.js';

/**
 * A TCP connection opened before the SSH library is even loaded: the name lookup,
 * the handshake and the server's own start-up (sshd forks and re-executes itself
 * for every connection) then overlap with decom's start instead of following it.
 * Loads nothing but node:net. SSH itself starts when connectSsh takes the socket.
 */
export interface Dialed {
  sock: Socket;
  /** A socket error before connectSsh took over (refused, unreachable, no such name). */
  error?: NodeJS.ErrnoException;
}

export function dial(address: string, port: number): Dialed {
  const sock = new Socket();
  const d: Dialed = { sock };
  // Kept for connectSsh to report; until then no error may go unhandled.
  sock.on('error', (e: NodeJS.ErrnoException) => (d.error ??= e));
  // Small request/response packets: without this, Nagle + delayed ACKs add ~40 ms per round trip.
  sock.setNoDelay(true);
  sock.connect({ host: address, port });
  return d;
}

export interface ConnectFlags {
  connection: 'ssh' | 'local';
  knownHosts?: string;
  acceptNewHostKeys: boolean;
}

/**
 * How a command reaches its hosts: every node's TCP connection dialed now, the SSH
 * library loaded meanwhile (the nodes start up while it loads). `close` ends the
 * early sockets no host took (a failure before connecting).
 */
export async function connector<T extends SshTarget>(hosts: T[], flags: ConnectFlags): Promise<{ connect(h: T): Promise<Transport>; close(): void }> {
  const dialed = new Map<string, Dialed>();
  if (flags.connection === 'ssh') for (const h of hosts) if (!h.proxyJump.length) dialed.set(h.name, dial(h.address, h.port));
  const { connectSsh, localTransport } = await import('./index.js');
  return {
    connect: (h) =>
      flags.connection === 'local'
        ? Promise.resolve(localTransport(h.name))
        : connectSsh(flags.knownHosts ? { ...h, knownHostsFile: flags.knownHosts } : h, {
            acceptNewHostKeys: flags.acceptNewHostKeys,
            ...(dialed.has(h.name) ? { dialed: dialed.get(h.name)! } : {}),
          }),
    close: () => {
      for (const d of dialed.values()) d.sock.destroy();
    },
  };
}
