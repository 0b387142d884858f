/** The local transport (--connection local): scripts run on this machine, or chrooted into the host root a pod mounts, as the SSH transport runs them. */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { Duplex } from 'node:stream';
import {
  CLIENT_GRACE_SEC,
  DEFAULT_MAX_OUTPUT_MIB,
  OUTPUT_AFTER_EXIT_MS,
  OutputCap,
  checkTimeout,
  commandArgv,
  finishResult,
  signalCode,
  unixConnectAddress,
  type RawResult,
} from './command.js';
import { TransportError, type ExecOptions, type ExecResult, type Transport } from './types.js';

/**
 * The machine decom runs on, with the same exec semantics as SSH: `/bin/sh -c`
 * under `timeout`, sudo (non-interactive) only when asked and not already root.
 * Spawned without a shell, so the script is exactly one argument. With `root`
 * (a pod with the host's / mounted there, and the host's PID and network
 * namespaces) the script runs chrooted into it: the host's tools, the host's paths.
 * One exec's answer may hold `maxOutputMiB` (--max-output).
 */
export function localTransport(name = 'localhost', root?: string, maxOutputMiB = DEFAULT_MAX_OUTPUT_MIB): Transport {
  let closed = false;
  return {
    host: name,
    async exec(script: string, opts: ExecOptions = {}): Promise<ExecResult> {
      if (closed) throw new TransportError(name, 'exec', 'the transport is already closed');
      const timeoutSec = checkTimeout(name, opts.timeoutSec);
      const become = opts.sudo && process.getuid?.() !== 0 ? { user: 'root', withPassword: false } : undefined;
      const [file, ...args] = [...(root ? ['chroot', root] : []), ...commandArgv(script, timeoutSec, become)];
      const raw = await spawnCollect(name, file!, args, opts.stdin, timeoutSec, new OutputCap(name, maxOutputMiB));
      return finishResult(name, raw, become, process.env.USER ?? `uid ${process.getuid?.()}`);
    },
    async openUnixSocket(path: string, opts: { sudo?: boolean } = {}): Promise<Duplex> {
      const address = unixConnectAddress(name, path);
      if (!opts.sudo || process.getuid?.() === 0) {
        return new Promise((resolve, reject) => {
          const sock = connect(path, () => resolve(sock)).once('error', (e) => reject(new TransportError(name, 'exec', `cannot open ${path}: ${e.message}`)));
        });
      }
      const child = spawn('sudo', ['-n', '--', 'socat', '-', address], { stdio: ['pipe', 'pipe', 'inherit'] });
      return Duplex.from({ writable: child.stdin, readable: child.stdout });
    },
    async close() {
      closed = true;
    },
  };
}

function spawnCollect(name: string, file: string, args: string[], stdin: string | Buffer | undefined, timeoutSec: number, cap: OutputCap): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let code: number | undefined;
    let settled = false;
    let outputTimer: NodeJS.Timeout | undefined;
    const settle = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      clearTimeout(outputTimer);
      f();
    };
    const succeed = () => settle(() => resolve({ code: code!, stdout: Buffer.concat(out), stderr: Buffer.concat(err) }));
    const limitSec = timeoutSec + CLIENT_GRACE_SEC;
    const deadline = setTimeout(
      () =>
        settle(() => {
          child.kill('SIGKILL');
          reject(new TransportError(name, 'timeout', `no exit status ${limitSec}s after the command started; killed it`));
        }),
      limitSec * 1000,
    );
    // Past the cap nothing more is kept: the child is killed and its pipes closed, so the script's next write ends it too.
    const keep = (into: Buffer[]) => (b: Buffer) => {
      if (cap.take(b)) into.push(b);
      else {
        settle(() => {
          child.kill('SIGKILL');
          child.stdout.destroy();
          child.stderr.destroy();
          reject(cap.exceeded());
        });
      }
    };
    child.stdout.on('data', keep(out));
    child.stderr.on('data', keep(err));
    child.on('error', (e) => settle(() => reject(new TransportError(name, 'exec', `cannot run ${file}: ${e.message}`))));
    // As over SSH: once the script exited, a background process holding its
    // stdout open delays the result by at most OUTPUT_AFTER_EXIT_MS.
    child.on('exit', (status, signal) => {
      code = status ?? signalCode(signal);
      outputTimer = setTimeout(() => {
        succeed();
        child.stdout.destroy();
        child.stderr.destroy();
      }, OUTPUT_AFTER_EXIT_MS);
    });
    child.on('close', () => {
      if (code !== undefined) succeed();
    });
    child.stdin.on('error', () => {}); // the script may exit without reading its input
    child.stdin.end(stdin ?? '');
  });
}
