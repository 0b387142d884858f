/** TCP connections to nodes, opened before the SSH library loads. */
import { Socket } from 'node:net';

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

