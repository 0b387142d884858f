/** The SSH transport: one connection per node (through its ProxyJump hosts), shared by every exec of a run, with sudo and a limit on open channels; and a node's host key read the same way, without logging in (`decom hosts trust`). */
import type { Duplex } from 'node:stream';
import type { Client, ClientChannel } from 'ssh2';
import {
  CLIENT_GRACE_SEC,
  DEFAULT_MAX_OUTPUT_MIB,
  OUTPUT_AFTER_EXIT_MS,
  OutputCap,
  checkTimeout,
  commandArgv,
  finishResult,
  shellCommand,
  signalCode,
  unixConnectAddress,
  type RawResult,
} from './command.js';
import type { Dialed } from './dial.js';
import { defaultKnownHostsFile, type HostKeyVerdict } from './known-hosts.js';
import { DEFAULT_MAX_CHANNELS, Limiter } from './limiter.js';
import { expandHome } from '../util/paths.js';
import { expandProxyCommand, proxyCommandStream } from './proxy-command.js';
import { loadCredentials } from './ssh-auth.js';
import { SUDO_PROBE_TIMEOUT_SEC, SudoGate, sudoBridgeCommand, sudoLetIn } from './sudo-gate.js';
import { hopLabel, parseJump, type Hop } from './jump.js';
import { forwardThrough, openHop, type HostKeyPolicy } from './ssh-connect.js';
import { TransportError, droppedConnection, type ExecOptions, type ExecResult, type SshTarget, type Transport } from './types.js';

export interface ConnectOptions {
  /** Record unknown host keys in known_hosts (as StrictHostKeyChecking=accept-new). Changed keys are still refused. */
  acceptNewHostKeys?: boolean;
  /** Concurrent commands per connection; the rest queue (DEFAULT_MAX_CHANNELS). */
  maxChannels?: number;
  /** The TCP connection to the node, opened early with dial() (only without ProxyJump). */
  dialed?: Dialed;
  /** MiB one exec's answer may hold (--max-output); default DEFAULT_MAX_OUTPUT_MIB. */
  maxOutputMiB?: number;
}

/**
 * Opens the one SSH connection to a node (through its jump hosts, if any) that
 * every exec of the returned Transport shares.
 */
export async function connectSsh(target: SshTarget, opts: ConnectOptions = {}): Promise<Transport> {
  try {
    return await connectSshNow(target, opts);
  } catch (e) {
    opts.dialed?.sock.destroy(); // whatever failed, a socket opened early must not be left open
    throw e;
  }
}

async function connectSshNow(target: SshTarget, opts: ConnectOptions): Promise<Transport> {
  const limiter = new Limiter(opts.maxChannels ?? DEFAULT_MAX_CHANNELS);
  const { hops, clients } = await openHops(target, opts);
  return new SshTransport(target, hops, clients, limiter, opts.maxOutputMiB ?? DEFAULT_MAX_OUTPUT_MIB);
}

/** A scan's hook for one hop (`decom hosts trust`), given the hop and the host-key policy it is checked under. */
type HopScan = (hop: Hop, hostKeys: HostKeyPolicy) => HostKeyPolicy['scan'];

/**
 * The authenticated connections to every hop, the node's last: through its jump hosts
 * (ProxyJump) or its ProxyCommand, each hop's key checked against its known_hosts
 * files first. With `scan`, each hop's key is shown to it, and it says what follows.
 */
async function openHops(target: SshTarget, opts: ConnectOptions, scan?: HopScan): Promise<{ hops: Hop[]; clients: Client[] }> {
  if (!(target.connectTimeoutSec > 0)) {
    throw new TransportError(target.name, 'connect', `connectTimeoutSec must be a positive number, got ${target.connectTimeoutSec}`);
  }
  if (opts.dialed && (target.proxyJump.length || target.proxyCommand)) {
    throw new TransportError(target.name, 'connect', 'a connection dialed early cannot go through ProxyJump hosts or a ProxyCommand');
  }
  const creds = loadCredentials(target);
  // The node's login password is for the node: a jump host is never offered it.
  const jumpCreds = { ...creds, offered: creds.offered.filter((c) => c.serverMethod === 'publickey') };
  const hostKeys: HostKeyPolicy = {
    file: expandHome(target.knownHostsFile ?? defaultKnownHostsFile()),
    mode: opts.acceptNewHostKeys ? 'accept-new' : target.strictHostKeyChecking,
    ...(target.moreKnownHostsFiles?.length ? { more: target.moreKnownHostsFiles.map(expandHome) } : {}),
    ...(target.hostKeyAlias ? { alias: target.hostKeyAlias } : {}),
  };
  const keepalive = target.serverAliveIntervalSec ? { intervalSec: target.serverAliveIntervalSec, countMax: target.serverAliveCountMax ?? 3 } : undefined;
  const hops: Hop[] = [
    ...target.proxyJump.map((j) => parseJump(j, target.user, target.name)),
    { user: target.user, address: target.address, port: target.port, isJump: false },
  ];
  const clients: Client[] = [];
  let proxy: ReturnType<typeof proxyCommandStream> | undefined;
  try {
    for (const [i, hop] of hops.entries()) {
      const prev = clients[i - 1];
      let sock = prev && (await forwardThrough(prev, hops[i - 1]!, hop, target.name, target.connectTimeoutSec));
      if (!prev && target.proxyCommand) {
        const tokens = { host: hop.address, port: hop.port, user: hop.user, destination: target.destination ?? target.address };
        proxy = proxyCommandStream(expandProxyCommand(target.proxyCommand, tokens, target.name));
        sock = proxy.sock;
      }
      // A jump host's key is checked against its own known_hosts files, as ssh's own ssh for that hop checks it.
      const jumpFiles = hop.isJump ? target.jumpKnownHostsFiles?.[i] : undefined;
      const policy: HostKeyPolicy = jumpFiles?.length ? { file: expandHome(jumpFiles[0]!), more: jumpFiles.slice(1).map(expandHome), mode: hostKeys.mode } : hostKeys;
      const scanned = scan?.(hop, policy);
      const client = await openHop({
        name: target.name,
        hop,
        via: hops.slice(0, i),
        ...(sock ? { sock } : {}),
        ...(opts.dialed && i === hops.length - 1 ? { dialed: opts.dialed } : {}),
        creds: hop.isJump ? jumpCreds : creds,
        hostKeys: scanned ? { ...policy, scan: scanned } : policy,
        timeoutSec: target.connectTimeoutSec,
        ...(keepalive ? { keepalive } : {}),
      });
      clients.push(client);
    }
  } catch (e) {
    for (const c of clients.reverse()) c.destroy();
    proxy?.sock.destroy();
    // Through a ProxyCommand, what it said on stderr is most often the reason.
    if (proxy && e instanceof TransportError && e.step === 'connect') throw new TransportError(target.name, 'connect', `${e.message.replace(`${target.name}: connect: `, '')} (${await proxy.why()})`);
    throw e;
  }
  return { hops, clients };
}

/** A host key a scan saw: the hop that offered it, the file it is (or would be) recorded in, the name it is known by, how it stands there, and the refusal a connection would say. */
export interface SeenHostKey {
  hop: Hop;
  file: string;
  host: string;
  port: number;
  key: Buffer;
  verdict: HostKeyVerdict;
  refusal?: string;
}

/**
 * The node's host key, read the way a connection reaches it (its jump hosts or
 * ProxyCommand, the same known_hosts files), without logging in to it: what
 * `decom hosts trust` shows and records. A jump host whose key is unknown is logged in
 * to with keys only, for this scan alone, and its key is listed too; a changed or
 * revoked key of a jump host is refused as always. Nothing is recorded here. Returns
 * every key seen, in hop order, and why the node's key was not reached, if it was not.
 */
export async function scanHostKeys(target: SshTarget): Promise<{ keys: SeenHostKey[]; failed?: TransportError }> {
  const keys: SeenHostKey[] = [];
  const scan: HopScan = (hop, hostKeys) => (key, verdict, named, refusal) => {
    keys.push({ hop, file: hostKeys.file, ...named, key, verdict, ...(refusal ? { refusal } : {}) });
    if (!hop.isJump) return 'stop';
    return verdict.status === 'unknown' ? 'go' : 'judge';
  };
  try {
    const { clients } = await openHops(target, {}, scan);
    for (const c of clients.reverse()) c.destroy(); // not reached: the node's hop always stops
  } catch (e) {
    if (!(e instanceof TransportError)) throw e;
    if (!keys.some((k) => !k.hop.isJump)) return { keys, failed: e };
  }
  return { keys };
}

class SshTransport implements Transport {
  readonly host: string;
  private readonly client: Client;
  private readonly label: string;
  /** Why the connection is gone, once it is. */
  private lost?: string;
  private closedByUs = false;
  /** Rejecters of the commands in flight, called when the connection goes. */
  private readonly running = new Set<(e: TransportError) => void>();
  private readonly closed: Promise<void>[];
  private readonly sudo: SudoGate;

  constructor(
    private readonly target: SshTarget,
    hops: Hop[],
    private readonly clients: Client[],
    private readonly limiter: Limiter,
    private readonly maxOutputMiB: number,
  ) {
    this.host = target.name;
    this.client = clients[clients.length - 1]!;
    this.label = hopLabel(hops[hops.length - 1]!);
    this.sudo = new SudoGate(target, (command) => this.limiter.run(() => this.runChannel(command, Buffer.alloc(0), SUDO_PROBE_TIMEOUT_SEC)));
    let lastError: string | undefined;
    this.closed = clients.map((c, i) => {
      const who = hops[i]!.isJump ? `jump host ${hopLabel(hops[i]!)}: ` : '';
      c.on('error', (e: Error) => (lastError ??= who + e.message));
      return new Promise<void>((done) =>
        c.once('close', () => {
          this.connectionLost(lastError ?? `${who}the remote end closed the connection`);
          done();
        }),
      );
    });
  }

  async exec(script: string, opts: ExecOptions = {}): Promise<ExecResult> {
    const timeoutSec = checkTimeout(this.host, opts.timeoutSec);
    const become = await this.sudo.become(opts.sudo ?? this.target.become);
    const input = toBuffer(opts.stdin);
    // The password line goes first, for sudo -S; never on a command line.
    const stdin = become?.withPassword ? Buffer.concat([Buffer.from(`${this.target.becomePassword}\n`), input]) : input;
    const command = shellCommand(commandArgv(script, timeoutSec, become));
    const raw = await this.limiter.run(() => this.runChannel(command, stdin, timeoutSec));
    return finishResult(this.host, raw, become, `${this.target.user}@${this.target.address}`);
  }

  async openUnixSocket(path: string, opts: { sudo?: boolean } = {}): Promise<Duplex> {
    const address = unixConnectAddress(this.host, path);
    const become = await this.sudo.become(opts.sudo ?? this.target.become);
    if (this.lost !== undefined) throw this.droppedError(false);
    const what = `${this.label}:${path}`;
    const opened = (e: Error | undefined, ch: ClientChannel, resolve: (d: Duplex) => void, reject: (e: Error) => void) =>
      e ? reject(new TransportError(this.host, 'exec', `cannot open ${what}: ${e.message}`)) : resolve(ch);
    return new Promise((resolve, reject) => {
      if (!become) return this.client.openssh_forwardOutStreamLocal(path, (e, ch) => opened(e, ch, resolve, reject));
      this.client.exec(sudoBridgeCommand(become, address), (e, ch) => {
        if (e) return opened(e, ch, resolve, reject);
        sudoLetIn(this.host, what, ch.stderr, (ended) => ch.once('close', ended)).then(() => resolve(ch), reject);
        if (become.withPassword) ch.write(`${this.target.becomePassword}\n`);
      });
    });
  }

  async close(): Promise<void> {
    if (this.closedByUs) return;
    this.closedByUs = true;
    this.connectionLost('the transport was closed');
    for (const c of [...this.clients].reverse()) c.end();
    await Promise.race([Promise.all(this.closed), new Promise((r) => setTimeout(r, 2000).unref())]);
    for (const c of this.clients) c.destroy();
  }

  private droppedError(whileRunning: boolean): TransportError {
    return droppedConnection(this.host, this.label, this.lost, whileRunning);
  }

  private connectionLost(why: string): void {
    if (this.lost !== undefined) return;
    this.lost = why;
    const err = this.droppedError(true);
    for (const reject of [...this.running]) reject(err);
    // The node is gone; do not keep the jump hosts' connections open for nothing.
    if (!this.closedByUs) for (const c of this.clients) c.destroy();
  }

  /** One session channel: runs `command`, feeds `stdin`, collects the output. */
  private runChannel(command: string, stdin: Buffer, timeoutSec: number): Promise<RawResult> {
    return new Promise((resolve, reject) => {
      if (this.closedByUs) return reject(new TransportError(this.host, 'exec', 'the transport is already closed'));
      if (this.lost !== undefined) return reject(this.droppedError(false));
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      const cap = new OutputCap(this.host, this.maxOutputMiB);
      let channel: ClientChannel | undefined;
      let code: number | undefined;
      let outputTimer: NodeJS.Timeout | undefined;
      const limitSec = timeoutSec + CLIENT_GRACE_SEC;

      const settle = (f: () => void) => {
        if (!this.running.delete(onLost)) return; // already settled
        clearTimeout(deadline);
        clearTimeout(outputTimer);
        f();
      };
      const onLost = (e: TransportError) => settle(() => reject(e));
      const succeed = () =>
        settle(() => resolve({ code: code!, stdout: Buffer.concat(out), stderr: Buffer.concat(err) }));
      this.running.add(onLost);

      const deadline = setTimeout(
        () =>
          settle(() => {
            channel?.close();
            reject(
              new TransportError(
                this.host,
                'timeout',
                `no exit status ${limitSec}s after the command started (the node-side timeout of ${timeoutSec}s did not end it); gave up waiting`,
              ),
            );
          }),
        limitSec * 1000,
      );

      try {
        this.client.exec(command, (e, ch) => {
          if (e) {
            return settle(() =>
              reject(this.lost !== undefined ? this.droppedError(true) : new TransportError(this.host, 'exec', `cannot open a session on ${this.label}: ${e.message}`)),
            );
          }
          channel = ch;
          if (!this.running.has(onLost)) return ch.close(); // gave up before the channel opened
          // Past the cap nothing more is kept: the session is closed, which ends the command on the node.
          const keep = (into: Buffer[]) => (b: Buffer) => {
            if (cap.take(b)) into.push(b);
            else settle(() => (ch.close(), reject(cap.exceeded())));
          };
          ch.on('data', keep(out));
          ch.stderr.on('data', keep(err));
          ch.on('error', () => {}); // e.g. writing stdin to a script that already exited
          ch.on('exit', (status: number | null, signal?: string) => {
            code = status ?? signalCode(signal);
            // Something the script left running still holds its output open: take what
            // came, and close the session so it does not count against MaxSessions.
            outputTimer = setTimeout(() => (succeed(), ch.close()), OUTPUT_AFTER_EXIT_MS);
          });
          ch.on('close', () => {
            if (code !== undefined) return succeed();
            // No exit status: the connection is going (dropped), or sshd ended the session.
            setImmediate(() =>
              settle(() =>
                reject(this.lost !== undefined ? this.droppedError(true) : new TransportError(this.host, 'exec', `${this.label} ended the session without an exit status`)),
              ),
            );
          });
          ch.end(stdin);
        });
      } catch (e) {
        // ssh2 throws "Not connected" when the socket is already gone.
        this.connectionLost((e as Error).message);
        settle(() => reject(this.droppedError(false)));
      }
    });
  }
}

const toBuffer = (s: string | Buffer | undefined): Buffer => (s === undefined ? Buffer.alloc(0) : Buffer.isBuffer(s) ? s : Buffer.from(s));
