/** The command an exec runs on a node (`/bin/sh -c` under `timeout`, optionally under sudo) and how its result is read; shared by the SSH and local transports. */
import { constants } from 'node:os';
import { shQuote } from '../util/run.js';
import { TransportError, type ExecResult } from './types.js';

/**
 * What actually runs on a node for exec(script): the script as ONE argument of
 * `/bin/sh -c` (never re-parsed), under `timeout` so the node enforces the limit,
 * optionally under sudo. Shared by the SSH and local transports.
 */

export const DEFAULT_TIMEOUT_SEC = 60;
/** `timeout -k`: how long a script may ignore SIGTERM before it gets SIGKILL. */
export const KILL_AFTER_SEC = 5;
/** How long after the node-side timeout decom stops waiting for an exit status. */
export const CLIENT_GRACE_SEC = 15;
/**
 * After the exit status, how long to wait for the output to end. A script that
 * starts a background process holding stdout open would otherwise hang the exec
 * until that process exits (OpenSSH's `ssh` hangs the same way).
 */
export const OUTPUT_AFTER_EXIT_MS = 2000;

/**
 * --max-output's default: how many MiB one exec's answer (stdout and stderr) may hold
 * before decom stops reading it and that host fails. The full probe of a node with
 * 20,000 Services (`decom sandbox up --services 20000`: ~100,000 iptables rules in
 * ~40,000 chains) measured 14.2 MiB (14,934,369 bytes; the same with --purge): this
 * is 4.5 times that, room for a node with four times as many Services.
 */
export const DEFAULT_MAX_OUTPUT_MIB = 64;

const MIB = 1024 * 1024;

/**
 * One exec's answer counted as it arrives, so a node cannot fill decom's memory: past
 * the cap the transport stops reading, ends the command and fails with `exceeded()`.
 */
export class OutputCap {
  private got = 0;
  constructor(
    private readonly host: string,
    private readonly mib: number,
  ) {}

  /** Counts a chunk: false once the answer is past the cap (the chunk is not to be kept). */
  take(chunk: Buffer): boolean {
    this.got += chunk.length;
    return this.got <= this.mib * MIB;
  }

  exceeded(): TransportError {
    const got = Math.ceil((this.got / MIB) * 10) / 10;
    return new TransportError(
      this.host,
      'output',
      `output of ${got} MiB exceeds --max-output ${this.mib} MiB; stopped reading it: find what makes the node's answer this large, or raise --max-output`,
    );
  }
}

/** Printed on stderr by the command sudo runs: proof that sudo let us in. */
export const SUDO_OK_MARKER = 'decom: sudo ok';

export interface Become {
  user: string;
  /** sudo -S: a password line is written on stdin before the script's own stdin. */
  withPassword: boolean;
}

export function checkTimeout(host: string, timeoutSec: number | undefined): number {
  const t = timeoutSec ?? DEFAULT_TIMEOUT_SEC;
  if (!Number.isFinite(t) || t <= 0) throw new TransportError(host, 'exec', `timeoutSec must be a positive number, got ${t}`);
  return t;
}

/** A socket path safe in a socat address: absolute, of letters, digits and `._/-` (a comma or colon would add socat options). */
const SAFE_SOCKET_PATH = /^\/[A-Za-z0-9._/-]+$/;

/**
 * The socat address of a Unix socket on the node, or a one-line refusal naming the path:
 * the path comes from the node (containerd's config), so a node could smuggle in options.
 */
export function unixConnectAddress(host: string, path: string): string {
  if (!SAFE_SOCKET_PATH.test(path) || path.split('/').includes('..')) {
    throw new TransportError(host, 'exec', `socket path ${JSON.stringify(path)} refused: not an absolute path of letters, digits and ._/- without ..`);
  }
  return `UNIX-CONNECT:${path}`;
}

/** The argv to run on the node. */
export function commandArgv(script: string, timeoutSec: number, become?: Become): string[] {
  const timed = ['timeout', '-k', String(KILL_AFTER_SEC), String(timeoutSec), '/bin/sh', '-c', script];
  return become ? [...becomeArgv(become), ...timed] : timed;
}

/** sudo to `become.user`, then a sh that says so on stderr (SUDO_OK_MARKER) and runs the argv that follows. */
export function becomeArgv(become: Become): string[] {
  // -k: ignore cached credentials, so sudo -S always reads the password line we send
  // (a cached ticket would leave it in the script's stdin). -p '': no prompt in the output.
  const sudo = become.withPassword
    ? ['sudo', '-S', '-k', '-p', '', '-u', become.user]
    : ['sudo', '-n', '-u', become.user];
  return [...sudo, '--', '/bin/sh', '-c', `echo '${SUDO_OK_MARKER}' >&2; exec "$@"`, 'sh'];
}

/** Asks sudo whether it would run a command for us without a password. */
export const sudoProbeArgv = (user: string): string[] => ['sudo', '-n', '-k', '-u', user, '--', '/bin/sh', '-c', 'exit 0'];

/** One string for an SSH exec request (the remote login shell parses it once). */
export const shellCommand = (argv: string[]): string => argv.map(shQuote).join(' ');

/** The last line of a program's output that says something: what an error quotes. */
export const lastLine = (s: string): string => s.trim().split(/\r?\n/).filter(Boolean).pop() ?? '';

export interface RawResult {
  code: number;
  stdout: Buffer;
  stderr: Buffer;
  /** With spawn-collect's statusMarker: whether the command printed its status line. */
  statusReported?: boolean;
}

/** Exit status of a process killed by a signal, as sh reports it: 128 + signal number. */
export function signalCode(signal: string | null | undefined): number {
  const n = signal ? constants.signals[signal as NodeJS.Signals] : undefined;
  return n === undefined ? 255 : 128 + n;
}

/**
 * Decodes the output (UTF-8, only once everything arrived, so no character is
 * split) and, under sudo, strips sudo's own chatter or turns a refusal into a
 * `sudo` error.
 */
export function finishResult(host: string, raw: RawResult, become: Become | undefined, login: string): ExecResult {
  const stdout = raw.stdout.toString('utf8');
  let stderr = raw.stderr.toString('utf8');
  if (become) {
    const at = stderr.indexOf(`${SUDO_OK_MARKER}\n`);
    if (at < 0) {
      const said = lastLine(stderr) || `exit ${raw.code}, nothing on stderr`;
      throw new TransportError(host, 'sudo', `${login} could not sudo to ${become.user}: ${said.trim()}`);
    }
    stderr = stderr.slice(at + SUDO_OK_MARKER.length + 1);
  }
  return { code: raw.code, stdout, stderr };
}
