/** The local transport (--connection local): scripts run on this machine, or chrooted into the host root a pod mounts, as the SSH transport runs them. */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { Duplex } from 'node:stream';
import { DEFAULT_MAX_OUTPUT_MIB, OutputCap, checkTimeout, commandArgv, finishResult, unixConnectAddress } from './command.js';
import { spawnCollect } from './spawn-collect.js';
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
