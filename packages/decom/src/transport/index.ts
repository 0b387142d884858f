/** How decom reaches nodes: one SSH connection per node, or the local machine. */
export { TransportError } from './types.js';
export type { ExecOptions, ExecResult, SshTarget, Transport, TransportStep } from './types.js';
export { connectSsh, scanHostKeys, type ConnectOptions, type SeenHostKey } from './ssh.js';
export { DEFAULT_MAX_CHANNELS } from './limiter.js';
export { parseJump } from './jump.js';
export { localTransport } from './local.js';
export {
  appendKnownHost,
  checkHostKey,
  fingerprint,
  knownHostLine,
  knownHostName,
  parseKnownHosts,
  readKnownHosts,
  type HostKeyVerdict,
  type KnownHostEntry,
} from './known-hosts.js';
export { DEFAULT_TIMEOUT_SEC } from './command.js';
