/** The transports' shared types: what exec takes and returns, Transport, TransportError and SshTarget. */
import type { Duplex } from 'node:stream';
/**
 * How decom reaches a node. One Transport per host, one connection reused for every
 * command of a run. Scripts are POSIX sh (the node's /bin/sh may be dash).
 */
export interface ExecOptions {
  /** Bytes for the script's stdin. */
  stdin?: string | Buffer;
  /** Run as root through sudo (the target's `become`). */
  sudo?: boolean;
  /** Enforced on the node (`timeout`), so a hung command cannot outlive it. Default 60. */
  timeoutSec?: number;
}

export interface ExecResult {
  /** The script's exit status; 124 when the node-side timeout fired. */
  code: number;
  stdout: string;
  stderr: string;
}

export interface Transport {
  /** Inventory name of the host, for messages. */
  readonly host: string;
  exec(script: string, opts?: ExecOptions): Promise<ExecResult>;
  /**
   * A byte stream to a Unix socket on the node (the Docker API), over the same
   * connection. Reached as root: with `sudo` (become) the stream is bridged through
   * `sudo socat`, since a forwarded socket would act as the login user.
   */
  openUnixSocket(path: string, opts?: { sudo?: boolean }): Promise<Duplex>;
  close(): Promise<void>;
}

/** Where a step failed to reach a host; the message is one line an SRE can act on. */
export type TransportStep = 'connect' | 'host-key' | 'auth' | 'sudo' | 'exec' | 'timeout' | 'dropped' | 'output';

export class TransportError extends Error {
  constructor(
    readonly host: string,
    readonly step: TransportStep,
    message: string,
  ) {
    super(`${host}: ${step}: ${message}`);
    this.name = 'TransportError';
  }
}

/**
 * A host's error for a line that already starts with the host's name: a TransportError
 * names its host first (`node1: connect: …`, for the JSON and the journal), and a text
 * line names it once.
 */
export const withoutHost = (host: string, error: string): string => (error.startsWith(`${host}: `) ? error.slice(host.length + 2) : error);

/** The connection to `label` is gone (`why`): a command that was running, or any later one. */
export function droppedConnection(host: string, label: string, why: string | undefined, whileRunning: boolean): TransportError {
  return new TransportError(
    host,
    'dropped',
    whileRunning
      ? `connection to ${label} was lost while a command ran (${why}); what the command did on the node is unknown`
      : `connection to ${label} was lost earlier (${why}); connect again`,
  );
}

/** Everything needed to open an SSH connection to one host (from the inventory). */
export interface SshTarget {
  /** Inventory name. */
  name: string;
  address: string;
  port: number;
  user: string;
  privateKeyFile?: string;
  /** Passphrase of privateKeyFile, if it has one. Never printed. */
  passphrase?: string;
  /** SSH login password (ansible_password, -k): password and keyboard-interactive login, after the keys. Never printed. */
  password?: string;
  become: boolean;
  becomeUser: string;
  /** sudo password, sent on stdin (`sudo -S`); never printed or logged. */
  becomePassword?: string;
  /** known_hosts file to check host keys against first, and to record new ones in (default ~/.ssh/known_hosts). */
  knownHostsFile?: string;
  /** More known_hosts files to read (ssh's second user file and the global ones); missing ones are skipped. */
  moreKnownHostsFiles?: string[];
  /** The name host keys are known by instead of the address (OpenSSH's HostKeyAlias, without the port). */
  hostKeyAlias?: string;
  /**
   * yes: refuse unknown keys; accept-new: record unknown keys, refuse changed ones.
   * Never "no": decom does not turn host keys off, whatever the inventory says.
   */
  strictHostKeyChecking: 'yes' | 'accept-new';
  /** Jump hosts, in order, as OpenSSH's ProxyJump: [user@]host[:port]. */
  proxyJump: string[];
  /** Per jump host, the known_hosts files its key is checked against (ssh -G's for that hop; else the node's). */
  jumpKnownHostsFiles?: string[][];
  /** OpenSSH's ProxyCommand, its %h %p %r %n tokens unexpanded: run on this machine, SSH spoken over its stdio. */
  proxyCommand?: string;
  /** The destination as the inventory names it (ProxyCommand's %n). */
  destination?: string;
  /** Key files OpenSSH would offer after privateKeyFile (the config's, or its defaults); missing ones are skipped. */
  identityFiles?: string[];
  /** OpenSSH's IdentitiesOnly: offer the key files alone, not ssh-agent's keys. */
  identitiesOnly?: boolean;
  /** The -F file the inventory names (read by ssh -G; kept for messages). */
  sshConfigFile?: string;
  connectTimeoutSec: number;
  /** OpenSSH's ServerAliveInterval and ServerAliveCountMax (0: decom's own, 10 s and 3). */
  serverAliveIntervalSec?: number;
  serverAliveCountMax?: number;
  /**
   * The options decom gave `ssh -G` for this host (Ansible's ssh command line: -F, ssh_args,
   * common and extra args): the OpenSSH transport gives ssh the same.
   */
  sshOptions?: string[];
  /** Why this host needs the system's OpenSSH client (a user certificate, a hardware key, PKCS#11, GSSAPI): said in messages. */
  needsOpenSsh?: string;
  /** ansible_connection=local: the host is this machine, reached without SSH. */
  connection?: 'local';
}
