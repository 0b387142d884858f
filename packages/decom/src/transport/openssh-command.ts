/**
 * The system ssh's command lines for the OpenSSH transport: the master that holds a
 * node's connection (ControlMaster), each jump host as an ssh of its own that checks
 * its hop's key, the clients that run commands over the master, and ssh's failures
 * read back into the transport's steps.
 */
import { randomBytes } from 'node:crypto';
import { expandHome } from '../util/paths.js';
import { shellCommand } from './command.js';
import { defaultKnownHostsFile } from './known-hosts.js';
import type { Hop } from './jump.js';
import type { SshTarget, TransportStep } from './types.js';

/** What the master's session prints once it is logged in: the control socket is listening by then. */
export const MASTER_READY = 'decom: connected';

/**
 * The master's own session: says it is ready, then holds the connection open until decom
 * closes its stdin (or dies): the master then ends with it, leaving nothing behind.
 */
export const MASTER_SESSION = `echo '${MASTER_READY}'; exec cat >/dev/null`;

/**
 * What a command run over OpenSSH prints last on stderr (spawn-collect.ts's statusMarker),
 * with a nonce of the connection's: a command cannot print a status line that passes for it.
 */
export const statusMarker = (): string => `decom: exit status ${randomBytes(8).toString('hex')} `;

/**
 * A command as a client runs it: its exit status printed last, by a sh around it. ssh's
 * own status loses a death by signal (255, where ssh2 hears the signal), and ssh waits
 * for every process holding the output before it exits; the status line says at once.
 */
export const reportingStatus = (command: string, marker: string): string =>
  shellCommand(['/bin/sh', '-c', `${command}; s=$?; printf '\\n${marker}%d\\n' "$s" >&2; exit "$s"`]);

/** ssh expands %-tokens in a ProxyCommand: a literal % is written %%. */
const literalPercent = (s: string): string => s.replaceAll('%', '%%');

/** A list of files as one ssh option value: quoted, as ssh's own parser splits on spaces. */
const fileList = (files: string[]): string => files.map((f) => (/[\s"]/.test(f) ? `"${f.replaceAll('"', '')}"` : f)).join(' ');

/** `[addr]:port` for -W, as ssh writes an IPv6 address. */
const hostPort = (address: string, port: number): string => `${address.includes(':') ? `[${address}]` : address}:${port}`;

export interface HostKeyFiles {
  /** Checked first; an accepted new key is recorded here. */
  file: string;
  more: string[];
}

/** The known_hosts files a target's key is checked against: the inventory's (or ~/.ssh/known_hosts), then the others. */
export function hostKeyFiles(target: SshTarget): HostKeyFiles {
  return {
    file: expandHome(target.knownHostsFile ?? defaultKnownHostsFile()),
    more: (target.moreKnownHostsFiles ?? []).map(expandHome),
  };
}

/**
 * What decom holds every ssh it runs to, whatever the inventory or the OpenSSH config say:
 * host keys checked against the files decom names (not DNS, not skipped for localhost),
 * nothing forwarded, no prompt on a terminal.
 */
function fixedOptions(mode: SshTarget['strictHostKeyChecking'], keys: HostKeyFiles, batch: boolean): string[] {
  return [
    '-o', `StrictHostKeyChecking=${mode}`,
    '-o', `UserKnownHostsFile=${literalPercent(fileList([keys.file, ...keys.more]))}`,
    '-o', 'GlobalKnownHostsFile=none',
    '-o', 'VerifyHostKeyDNS=no',
    '-o', 'NoHostAuthenticationForLocalhost=no',
    '-o', `BatchMode=${batch ? 'yes' : 'no'}`,
    '-o', 'ForwardAgent=no',
    '-o', 'ForwardX11=no',
    '-o', 'ClearAllForwardings=yes',
    '-o', 'PermitLocalCommand=no',
  ];
}

/** The key files decom gives ssh: the inventory's, then the config's (ssh adds a KEY-cert.pub beside each). */
export const keyFilesOf = (target: SshTarget): string[] => [target.privateKeyFile, ...(target.identityFiles ?? [])].filter((f): f is string => !!f).map(expandHome);

const identityOptions = (target: SshTarget): string[] => keyFilesOf(target).flatMap((f) => ['-o', `IdentityFile=${literalPercent(fileList([f]))}`]);

/**
 * The command that reaches `hops[i]` and forwards its stdio to `next` (ssh -W), each
 * earlier hop in turn its ProxyCommand: the hop's key checked against its own files,
 * in batch mode (a jump host is never given the node's password).
 */
function jumpCommand(target: SshTarget, hops: Hop[], i: number, next: { address: string; port: number }, mode: SshTarget['strictHostKeyChecking'], ssh: string): string {
  const hop = hops[i]!;
  const own = target.jumpKnownHostsFiles?.[i];
  const keys = own?.length ? { file: expandHome(own[0]!), more: own.slice(1).map(expandHome) } : hostKeyFiles(target);
  const through = i > 0 ? literalPercent(jumpCommand(target, hops, i - 1, hop, mode, ssh)) : 'none';
  return shellCommand([
    ssh,
    ...(target.sshConfigFile ? ['-F', expandHome(target.sshConfigFile)] : []),
    '-T',
    ...fixedOptions(mode, keys, true),
    '-o', 'ControlMaster=no',
    '-o', 'ControlPath=none',
    '-o', `ConnectTimeout=${target.connectTimeoutSec}`,
    '-o', 'ProxyJump=none',
    '-o', `ProxyCommand=${through}`,
    ...identityOptions(target),
    '-W', hostPort(next.address, next.port),
    '-l', hop.user,
    '-p', String(hop.port),
    hop.address,
  ]);
}

export interface MasterOptions {
  controlPath: string;
  mode: SshTarget['strictHostKeyChecking'];
  /** A password or passphrase is to be asked through SSH_ASKPASS: not batch mode. */
  askpass: boolean;
  /** The target's jump hosts, parsed. */
  jumps: Hop[];
  ssh: string;
}

/**
 * The master: decom's fixed options first (ssh keeps the first value it is given), then
 * the connection as decom computed it (address, port, user, keys, jump hosts), then the
 * options Ansible would have given ssh (`sshOptions`: -F, ssh_args, common and extra
 * args), so that what only OpenSSH does (certificates, PKCS#11, GSSAPI, the ciphers and
 * algorithms) is as the user set it.
 */
export function masterArgv(target: SshTarget, o: MasterOptions): string[] {
  const proxy = o.jumps.length
    ? literalPercent(jumpCommand(target, o.jumps, o.jumps.length - 1, target, o.mode, o.ssh))
    : (target.proxyCommand ?? 'none');
  const alive = target.serverAliveIntervalSec ? { interval: target.serverAliveIntervalSec, count: target.serverAliveCountMax ?? 3 } : { interval: 10, count: 3 };
  return [
    '-T',
    '-o', 'ControlMaster=yes',
    '-o', `ControlPath=${literalPercent(o.controlPath)}`,
    '-o', 'ControlPersist=no',
    ...fixedOptions(o.mode, hostKeyFiles(target), !o.askpass),
    '-o', 'NumberOfPasswordPrompts=1',
    // Errors only: a server's banner or ssh's notices would crowd the one-line message of a failure.
    '-o', 'LogLevel=ERROR',
    '-o', 'RemoteCommand=none',
    ...(target.hostKeyAlias ? ['-o', `HostKeyAlias=${target.hostKeyAlias}`] : []),
    '-o', `ConnectTimeout=${target.connectTimeoutSec}`,
    '-o', `ServerAliveInterval=${alive.interval}`,
    '-o', `ServerAliveCountMax=${alive.count}`,
    '-o', `HostName=${literalPercent(target.address)}`,
    '-o', `Port=${target.port}`,
    '-o', `User=${target.user}`,
    '-o', 'ProxyJump=none',
    '-o', `ProxyCommand=${proxy}`,
    ...(target.identitiesOnly ? ['-o', 'IdentitiesOnly=yes'] : []),
    ...identityOptions(target),
    ...(target.sshOptions ?? []),
    target.destination ?? target.address,
    MASTER_SESSION,
  ];
}

/**
 * A client of the master: no config read (a Match exec is not run again), never a
 * connection of its own (a ProxyCommand that fails at once, should the master be gone).
 */
export function clientOptions(controlPath: string): string[] {
  return ['-F', 'none', '-T', '-S', literalPercent(controlPath), '-o', 'ControlMaster=no', '-o', 'BatchMode=yes', '-o', 'ProxyCommand=false', '-o', 'LogLevel=ERROR'];
}

/** The destination a client names: only a label (the master decides where it goes), the host's name when it is a plain word. */
export const clientLabel = (name: string): string => (/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) ? name : 'node');

/** A client's exit 255 with these words is ssh's own failure to reach the master, not the command's status. */
export const CLIENT_FAILED = /kex_exchange_identification|Control socket connect|mux_client_|Connection closed by UNKNOWN/;

/** ssh's lines about itself, not about the failure: left out of messages. */
const NOISE = /^(Warning: Permanently added|Pseudo-terminal will not be allocated|@@@@@|IT IS POSSIBLE THAT SOMEONE|Someone could be eavesdropping|It is also possible that|Please contact your system administrator|Add correct host key in|Password authentication is disabled|Keyboard-interactive authentication is disabled|Agent forwarding is disabled|X11 forwarding is disabled|Port forwarding is disabled|UpdateHostkeys is disabled)/;

/** Why the master did not connect, from what ssh said: the step, and its own words an SRE can act on. */
export function explainMasterFailure(stderr: string, code: number | null, target: SshTarget): { step: TransportStep; message: string } {
  const lines = stderr.split(/\r?\n/).map((l) => l.trim().replace(/\.$/, '')).filter((l) => l && !NOISE.test(l));
  const said = lines.join('; ') || (code === null ? 'ssh was killed' : `ssh exited ${code} and said nothing`);
  const where = `${target.user}@${target.address}:${target.port}`;
  const keys = hostKeyFiles(target);
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED|REVOKED HOST KEY|Host key verification failed|host key is known for .* you have requested strict checking|Certificate invalid|No matching host key/i.test(stderr)) {
    const unknown = /No .* host key is known for|you have requested strict checking/i.test(stderr) && !/CHANGED|REVOKED/i.test(stderr);
    const hint = unknown ? `; if that is the right key, add it to ${keys.file} (or record it with decom hosts trust, or rerun with --accept-new-host-keys)` : '';
    return { step: 'host-key', message: `${where} (OpenSSH): ${said}${hint}` };
  }
  if (/Permission denied|Too many authentication failures|no more authentication methods|Load key .*: (incorrect passphrase|invalid format|bad permissions)/i.test(stderr)) {
    return { step: 'auth', message: `${where} (OpenSSH): ${said}` };
  }
  return { step: 'connect', message: `${where} (OpenSSH): ${said}` };
}
