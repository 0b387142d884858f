/** A program run on this machine as the transports run a command: its stdin fed, its output collected under the cap, killed past the deadline. */
import { spawn } from 'node:child_process';
import { CLIENT_GRACE_SEC, OUTPUT_AFTER_EXIT_MS, OutputCap, signalCode, type RawResult } from './command.js';
import { TransportError } from './types.js';

export interface CollectOptions {
  /**
   * The program reports the exit status itself, as a last stderr line `\n<marker><status>\n`
   * (statusLine below): the status is that one, the line is not in the result, and a background
   * process that keeps the output open delays the result by OUTPUT_AFTER_EXIT_MS at most, as
   * the program's own exit does.
   */
  statusMarker?: string;
}

/** The status line a command prints last on stderr for CollectOptions.statusMarker. */
const statusLine = (marker: string) => new RegExp(`\n${marker.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\d+)\n`);

/** stderr without the status line, and the status it held. */
function takeStatus(stderr: Buffer, marker: string): { stderr: Buffer; status?: number } {
  const text = stderr.toString('latin1'); // byte for byte: the cut is at the same offsets
  const m = [...text.matchAll(new RegExp(statusLine(marker).source, 'g'))].pop();
  if (!m) return { stderr };
  return { stderr: Buffer.concat([stderr.subarray(0, m.index), stderr.subarray(m.index + m[0].length)]), status: Number(m[1]) };
}

/**
 * Runs `file args` (no shell), feeds it `stdin`, collects its output. Past
 * `timeoutSec` + the client grace it is killed (a 'timeout' error); past the cap, too.
 */
export function spawnCollect(name: string, file: string, args: string[], stdin: string | Buffer | undefined, timeoutSec: number, cap: OutputCap, opts: CollectOptions = {}): Promise<RawResult> {
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
    const succeed = () =>
      settle(() => {
        const stderr = Buffer.concat(err);
        if (!opts.statusMarker) return resolve({ code: code!, stdout: Buffer.concat(out), stderr });
        const said = takeStatus(stderr, opts.statusMarker);
        resolve({ code: said.status ?? code!, stdout: Buffer.concat(out), stderr: said.stderr, statusReported: said.status !== undefined });
      });
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
    // The status line seen: the command has exited, whatever still holds its output.
    if (opts.statusMarker) {
      const line = statusLine(opts.statusMarker);
      let tail = '';
      child.stderr.on('data', (b: Buffer) => {
        tail = (tail + b.toString('latin1')).slice(-256);
        if (code !== undefined || outputTimer || !line.test(tail)) return;
        outputTimer = setTimeout(() => (succeedWith(takeStatus(Buffer.concat(err), opts.statusMarker!).status), child.kill('SIGKILL')), OUTPUT_AFTER_EXIT_MS);
      });
    }
    const succeedWith = (status: number | undefined) => {
      code ??= status ?? 255;
      succeed();
    };
    child.on('error', (e) => settle(() => reject(new TransportError(name, 'exec', `cannot run ${file}: ${e.message}`))));
    // As over SSH: once the script exited, a background process holding its
    // stdout open delays the result by at most OUTPUT_AFTER_EXIT_MS.
    child.on('exit', (status, signal) => {
      code = status ?? signalCode(signal);
      clearTimeout(outputTimer);
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
