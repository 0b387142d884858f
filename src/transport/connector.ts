import { dial, type Dialed } from './dial.js';
import type { SshTarget, Transport } from './types.js';

export interface ConnectFlags {
  connection: 'ssh' | 'local';
  knownHosts?: string;
  acceptNewHostKeys: boolean;
  /** --connection local: the host's root as this pod mounts it (the probe runs chrooted there). */
  hostRoot?: string;
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
        ? Promise.resolve(localTransport(h.name, flags.hostRoot))
        : connectSsh(flags.knownHosts ? { ...h, knownHostsFile: flags.knownHosts } : h, {
            acceptNewHostKeys: flags.acceptNewHostKeys,
            ...(dialed.has(h.name) ? { dialed: dialed.get(h.name)! } : {}),
          }),
    close: () => {
      for (const d of dialed.values()) d.sock.destroy();
    },
  };
}
