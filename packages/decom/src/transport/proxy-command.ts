/** OpenSSH's ProxyCommand: the command run on this machine, its %h %p %r %n tokens expanded, SSH spoken over its stdin and stdout. */
import { spawn } from 'node:child_process';
import { Duplex } from 'node:stream';
import { TransportError } from './types.js';

export interface ProxyTokens {
  host: string;
  port: number;
  user: string;
  /** The destination as the inventory names it (%n). */
  destination: string;
}

/** %% %h %p %r %n, as ssh expands them in a ProxyCommand; any other token is refused, as ssh refuses it. */
export function expandProxyCommand(command: string, t: ProxyTokens, name: string): string {
  return command.replace(/%(.)/g, (_all, c: string) => {
    switch (c) {
      case '%':
        return '%';
      case 'h':
        return t.host;
      case 'p':
        return String(t.port);
      case 'r':
        return t.user;
      case 'n':
        return t.destination;
    }
    throw new TransportError(name, 'connect', `the ProxyCommand holds %${c}, a token decom does not expand (it expands %h %p %r %n %%)`);
  });
}

/** How long a failing connection waits for the command's exit status and last words. */
const EXIT_WAIT_MS = 500;

/** How much of the command's stderr a failure message quotes. */
const STDERR_KEPT = 2048;

/**
 * Runs the ProxyCommand as ssh does (`$SHELL -c "exec COMMAND"`) and returns its stdio
 * as one stream. `why()` gives what the command said on stderr, for a failure's
 * message. Destroying the stream ends the command.
 */
export function proxyCommandStream(command: string): { sock: Duplex; why: () => Promise<string> } {
  const child = spawn(process.env.SHELL || '/bin/sh', ['-c', `exec ${command}`], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let exit = '';
  child.stderr.on('data', (b: Buffer) => {
    if (stderr.length < STDERR_KEPT) stderr += b.toString().slice(0, STDERR_KEPT - stderr.length);
  });
  const exited = new Promise<void>((done) => child.on('close', () => done()));
  child.on('exit', (code, signal) => (exit = signal ? `killed by ${signal}` : `exited ${code}`));
  child.on('error', (e) => (exit = `could not start: ${e.message}`));
  const sock = Duplex.from({ readable: child.stdout, writable: child.stdin });
  // Its stdin closed, a command such as `ssh -W` ends by itself; one that does not is ended, a moment later.
  sock.on('close', () => {
    const running = () => child.exitCode === null && child.signalCode === null;
    if (running()) setTimeout(() => running() && child.kill('SIGTERM'), EXIT_WAIT_MS).unref();
  });
  // ssh2 may set these on a socket; a pipe has no such knobs.
  Object.assign(sock, { setNoDelay: () => sock, setKeepAlive: () => sock });
  // The handshake fails as the command's stdout closes, a moment before it has exited and said all on stderr.
  const why = async () => {
    await Promise.race([exited, new Promise((r) => setTimeout(r, EXIT_WAIT_MS).unref())]);
    const said = stderr.split('\n').map((l) => l.trim()).filter(Boolean).slice(-3).join('; ');
    return `the ProxyCommand ${exit || 'is still running'}${said ? `: ${said}` : ''}`;
  };
  return { sock, why };
}
