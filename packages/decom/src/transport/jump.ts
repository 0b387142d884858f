/** ProxyJump hops: the machines on the way to a node, as both SSH transports parse and name them. */
import { TransportError } from './types.js';

/** One machine on the way: a jump host or the node itself. */
export interface Hop {
  user: string;
  address: string;
  port: number;
  /** True for ProxyJump hosts (messages say "jump host ..."). */
  isJump: boolean;
}

export const hopLabel = (h: Hop): string => `${h.user}@${h.address}:${h.port}`;

/** One ProxyJump hop, `[user@]host[:port]` (IPv6 as `[addr]:port`); the user defaults to the node's. */
export function parseJump(spec: string, defaultUser: string, name: string): Hop {
  const at = spec.lastIndexOf('@');
  const user = at >= 0 ? spec.slice(0, at) : defaultUser;
  const rest = at >= 0 ? spec.slice(at + 1) : spec;
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(rest) ?? /^([^:]+)(?::(\d+))?$/.exec(rest) ?? [rest, rest, undefined];
  const address = m[1] ?? '';
  const port = m[2] === undefined ? 22 : Number(m[2]);
  if (!user || !address || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new TransportError(name, 'connect', `bad ProxyJump hop "${spec}": expected [user@]host[:port]`);
  }
  return { user, address, port, isJump: true };
}
