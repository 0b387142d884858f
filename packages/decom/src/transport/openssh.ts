/**
 * The OpenSSH transport, for what the ssh2 library cannot do (user certificates, hardware
 * keys, PKCS#11, GSSAPI, hosts known by a @cert-authority) and for --ssh openssh: the
 * system's ssh holds one connection per node (a ControlMaster in decom's private folder),
 * and every command, socket and sudo of the run goes over it, as over ssh2.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { Duplex } from 'node:stream';
import { serveAskpass } from './askpass.js';
import { DEFAULT_MAX_OUTPUT_MIB, OutputCap, checkTimeout, commandArgv, finishResult, lastLine, shellCommand, unixConnectAddress, type RawResult } from './command.js';
import { releaseControlDir, takeControlDir } from './control-dir.js';
import { parseJump } from './jump.js';
import { DEFAULT_MAX_CHANNELS, Limiter } from './limiter.js';
import { CLIENT_FAILED, MASTER_READY, clientLabel, clientOptions, explainMasterFailure, keyFilesOf, masterArgv, reportingStatus, statusMarker } from './openssh-command.js';
import { spawnCollect } from './spawn-collect.js';
import { SUDO_PROBE_TIMEOUT_SEC, SudoGate, sudoBridgeCommand, sudoLetIn } from './sudo-gate.js';
import { TransportError, droppedConnection, type ExecOptions, type ExecResult, type SshTarget, type Transport } from './types.js';

export interface OpenSshOptions {
  /** Record unknown host keys (StrictHostKeyChecking=accept-new). Changed keys are still refused. */
  acceptNewHostKeys?: boolean;
  /** Concurrent commands per connection; the rest queue (sshd's MaxSessions counts the master's own session too). */
  maxChannels?: number;
  /** MiB one exec's answer may hold (--max-output). */
  maxOutputMiB?: number;
  /** The ssh client (default: ssh on $PATH). */
  ssh?: string;
}

/** How long past ConnectTimeout the login may take (a password prompt, a slow PAM) before decom gives up on it. */
const LOGIN_GRACE_SEC = 30;
/** How long close() waits for the master to end on its own (its session's stdin closed) before it is terminated. */
const MASTER_EXIT_WAIT_MS = 3000;
/** How long after the master's exit its stderr may take to reach its end. */
const STDERR_DRAIN_MS = 500;
/** What of the master's stderr is kept for messages. */
const STDERR_KEPT = 4096;
/** A command without its status line may be the connection going: this long for the master's exit to be seen first. */
const LOST_SETTLE_MS = 1000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** Opens a node's connection through the system's ssh: the master logged in, its control socket listening. */
export async function connectOpenSsh(target: SshTarget, opts: OpenSshOptions = {}): Promise<Transport> {
  if (!(target.connectTimeoutSec > 0)) {
    throw new TransportError(target.name, 'connect', `connectTimeoutSec must be a positive number, got ${target.connectTimeoutSec}`);
  }
  const ssh = opts.ssh ?? 'ssh';
  const jumps = target.proxyJump.map((j) => parseJump(j, target.user, target.name));
  const { prefix } = takeControlDir();
  const controlPath = `${prefix}.m`;
  let askpass: Awaited<ReturnType<typeof serveAskpass>> | undefined;
  try {
    const secrets = target.password !== undefined || target.passphrase !== undefined;
    if (secrets) {
      askpass = await serveAskpass(`${prefix}.a`, {
        ...(target.password !== undefined ? { password: target.password } : {}),
        ...(target.passphrase !== undefined ? { passphrase: target.passphrase } : {}),
        login: `${target.user}@${target.hostKeyAlias ?? target.address}`,
        keyFiles: keyFilesOf(target),
      });
    }
    const mode = opts.acceptNewHostKeys ? 'accept-new' : target.strictHostKeyChecking;
    const argv = masterArgv(target, { controlPath, mode, askpass: secrets, jumps, ssh });
    const master = spawn(ssh, argv, { env: { ...process.env, ...askpass?.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    const stderr = await loggedIn(target, ssh, master);
    return new OpenSshTransport(target, ssh, master, controlPath, prefix, stderr, new Limiter(opts.maxChannels ?? DEFAULT_MAX_CHANNELS), opts.maxOutputMiB ?? DEFAULT_MAX_OUTPUT_MIB);
  } catch (e) {
    releaseControlDir();
    throw e;
  } finally {
    askpass?.close();
  }
}

/** Waits for the master's session to say it is in; its stderr so far (kept for later messages). */
function loggedIn(target: SshTarget, ssh: string, master: ChildProcessWithoutNullStreams): Promise<{ text: string }> {
  const stderr = { text: '' };
  return new Promise((resolve, reject) => {
    let out = '';
    let settled = false;
    const settle = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      master.stdout.off('data', onOut);
      f();
    };
    const limitSec = target.connectTimeoutSec + LOGIN_GRACE_SEC;
    const deadline = setTimeout(() => {
      master.kill('SIGTERM');
      settle(() => reject(new TransportError(target.name, 'connect', `${target.user}@${target.address}:${target.port} (OpenSSH): not logged in ${limitSec}s after ssh started (${lastLine(stderr.text) || 'ssh said nothing'}); killed it`)));
    }, limitSec * 1000);
    const onOut = (b: Buffer) => {
      out += b.toString();
      if (out.includes(MASTER_READY)) settle(() => resolve(stderr));
    };
    master.stdout.on('data', onOut);
    master.stderr.on('data', (b: Buffer) => (stderr.text = (stderr.text + b.toString()).slice(-STDERR_KEPT)));
    master.stdin.on('error', () => {}); // the master may be gone when close() ends its input
    master.once('error', (e: NodeJS.ErrnoException) =>
      settle(() =>
        reject(
          new TransportError(
            target.name,
            'connect',
            e.code === 'ENOENT'
              ? `no ssh client (${ssh}) on this machine: ${target.needsOpenSsh ?? 'the OpenSSH transport'} needs it; install OpenSSH's client`
              : `cannot run ${ssh}: ${e.message}`,
          ),
        ),
      ),
    );
    master.once('exit', (code) => {
      const explain = () =>
        settle(() => {
          const why = explainMasterFailure(stderr.text, code, target);
          reject(new TransportError(target.name, why.step, why.message));
        });
      // The last of its stderr may still be in the pipe: read to its end (a ProxyCommand's child may hold it open a moment longer).
      master.once('close', explain);
      setTimeout(explain, STDERR_DRAIN_MS).unref();
    });
  });
}

class OpenSshTransport implements Transport {
  readonly host: string;
  private readonly label: string;
  private readonly sudo: SudoGate;
  private readonly exited: Promise<void>;
  /** Why the connection is gone, once it is. */
  private lost?: string;
  private closedByUs = false;
  /** Local sockets forwarded to the node's, by the node's path. */
  private readonly forwards = new Map<string, Promise<string>>();
  private forwardsMade = 0;
  /** The status line's marker, this connection's own. */
  private readonly marker = statusMarker();

  constructor(
    private readonly target: SshTarget,
    private readonly ssh: string,
    private readonly master: ChildProcessWithoutNullStreams,
    private readonly controlPath: string,
    private readonly prefix: string,
    private readonly stderr: { text: string },
    private readonly limiter: Limiter,
    private readonly maxOutputMiB: number,
  ) {
    this.host = target.name;
    this.label = `${target.user}@${target.address}:${target.port}`;
    this.sudo = new SudoGate(target, (command) => this.limiter.run(() => this.runClient(command, Buffer.alloc(0), SUDO_PROBE_TIMEOUT_SEC)));
    master.stdout.resume();
    this.exited = new Promise((done) =>
      master.once('exit', (code, signal) => {
        this.lost ??= `ssh exited ${code ?? signal}${lastLine(this.stderr.text) ? `: ${lastLine(this.stderr.text)}` : ''}`;
        done();
      }),
    );
  }

  async exec(script: string, opts: ExecOptions = {}): Promise<ExecResult> {
    const timeoutSec = checkTimeout(this.host, opts.timeoutSec);
    const become = await this.sudo.become(opts.sudo ?? this.target.become);
    const input = opts.stdin === undefined ? Buffer.alloc(0) : Buffer.from(opts.stdin);
    // The password line goes first, for sudo -S; never on a command line.
    const stdin = become?.withPassword ? Buffer.concat([Buffer.from(`${this.target.becomePassword}\n`), input]) : input;
    const raw = await this.limiter.run(() => this.runClient(shellCommand(commandArgv(script, timeoutSec, become)), stdin, timeoutSec));
    return finishResult(this.host, raw, become, `${this.target.user}@${this.target.address}`);
  }

  async openUnixSocket(path: string, opts: { sudo?: boolean } = {}): Promise<Duplex> {
    const address = unixConnectAddress(this.host, path);
    const become = await this.sudo.become(opts.sudo ?? this.target.become);
    this.usable();
    const what = `${this.label}:${path}`;
    if (!become) {
      const local = await this.forwardOf(path, what);
      return new Promise((resolve, reject) => {
        const sock = connect(local, () => resolve(sock)).once('error', (e) => reject(new TransportError(this.host, 'exec', `cannot open ${what}: ${e.message}`)));
      });
    }
    // As root through sudo: a session bridged to the socket by socat (a forwarded socket would act as the login user).
    const child = spawn(this.ssh, [...clientOptions(this.controlPath), clientLabel(this.host), sudoBridgeCommand(become, address)], { stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.on('error', () => {});
    const letIn = sudoLetIn(this.host, what, child.stderr, (ended) => {
      child.once('close', ended);
      child.once('exit', () => setTimeout(ended, STDERR_DRAIN_MS).unref()); // its stdout, unread yet, may keep 'close' back
      child.once('error', ended);
    });
    if (become.withPassword) child.stdin.write(`${this.target.becomePassword}\n`);
    await letIn;
    child.stderr.resume();
    const stream = Duplex.from({ writable: child.stdin, readable: child.stdout });
    stream.once('close', () => child.kill());
    return stream;
  }

  async close(): Promise<void> {
    if (this.closedByUs) return;
    this.closedByUs = true;
    this.lost ??= 'the transport was closed';
    this.master.stdin.end(); // the master's session ends, and the master with it
    const gone = await Promise.race([this.exited.then(() => true), sleep(MASTER_EXIT_WAIT_MS).then(() => false)]);
    if (!gone) {
      this.master.kill('SIGTERM');
      await Promise.race([this.exited, sleep(MASTER_EXIT_WAIT_MS)]);
    }
    for (const local of await Promise.allSettled(this.forwards.values())) if (local.status === 'fulfilled') rmSync(local.value, { force: true });
    releaseControlDir();
  }

  private usable(): void {
    if (this.closedByUs) throw new TransportError(this.host, 'exec', 'the transport is already closed');
    if (this.lost !== undefined) throw this.droppedError(false);
  }

  private droppedError(whileRunning: boolean): TransportError {
    return droppedConnection(this.host, this.label, this.lost, whileRunning);
  }

  /** A local socket in the private folder that the master forwards to the node's `path` (one per path, for the run). */
  private forwardOf(path: string, what: string): Promise<string> {
    let local = this.forwards.get(path);
    if (!local) {
      const file = `${this.prefix}.f${this.forwardsMade++}`;
      local = spawnCollect(this.host, this.ssh, [...clientOptions(this.controlPath), '-O', 'forward', '-L', `${file}:${path}`, clientLabel(this.host)], undefined, 30, new OutputCap(this.host, 1)).then((r) => {
        if (r.code !== 0) throw new TransportError(this.host, 'exec', `cannot forward ${what}: ${lastLine(r.stderr.toString()) || `ssh exited ${r.code}`}`);
        return file;
      });
      local.catch(() => this.forwards.delete(path));
      this.forwards.set(path, local);
    }
    return local;
  }

  /**
   * One command over the master. Its status is the one its status line says; without that line
   * the command did not finish as far as anyone can tell: the connection went, or ssh could not
   * run it (ssh's own 255 is never taken for the command's).
   */
  private async runClient(command: string, stdin: Buffer, timeoutSec: number): Promise<RawResult> {
    this.usable();
    const argv = [...clientOptions(this.controlPath), clientLabel(this.host), reportingStatus(command, this.marker)];
    const raw = await spawnCollect(this.host, this.ssh, argv, stdin, timeoutSec, new OutputCap(this.host, this.maxOutputMiB), { statusMarker: this.marker });
    if (raw.statusReported) return raw;
    await Promise.race([this.exited, sleep(LOST_SETTLE_MS)]);
    if (this.lost !== undefined) throw this.droppedError(true);
    const said = lastLine(raw.stderr.toString());
    throw new TransportError(
      this.host,
      'exec',
      CLIENT_FAILED.test(said) ? `ssh could not run the command over the connection to ${this.label}: ${said}` : `${this.label} ended the session without an exit status${said ? ` (${said})` : ''}`,
    );
  }
}
