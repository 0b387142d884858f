// `decom run` for the sandbox tests: its JSON report against the sandbox's inventory, decom
// commands started in the background, and waiting until a condition holds.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { CLI, decom, STATE_DIR } from './sandbox.js';

export const INVENTORY = join(STATE_DIR, 'hosts.yaml');

export interface RunReport {
  run: string;
  journal: string;
  hosts: {
    host: string; reachable: boolean; clean: boolean; ok: number; changed: number; failed: number; skipped: number;
    error?: string; refused?: string; finishes?: string; backup?: string; notRun?: string; warnings?: string[]; down?: string; left?: { kind: string; subject: string; detail: string }[];
    steps: { name: string; status: string; parallel?: string; reason?: string; actions: { what: string; code?: number }[]; left: { kind: string; subject: string }[] }[];
  }[];
}

/** `decom run INVENTORY … --output json` in a state folder of the test's own. */
export function runJson(args: string[], stateDir: string, inventory = INVENTORY): { code: number; report: RunReport; stderr: string } {
  const r = decom(['run', inventory, ...args, '--output', 'json', '--state-dir', stateDir]);
  try {
    return { code: r.code, report: JSON.parse(r.stdout) as RunReport, stderr: r.stderr };
  } catch {
    throw new Error(`decom run printed no JSON (exit ${r.code}): ${r.stdout}${r.stderr}`);
  }
}

/** The actions of every step, with run ids made comparable. */
export const actionsOf = (r: RunReport, host: string) =>
  r.hosts.find((h) => h.host === host)!.steps.map((s) => `${s.name}: ${s.actions.map((a) => a.what.replace(/\d{8}T\d{6}Z-[0-9a-f]{6}/g, 'RUN')).join(' | ')}`);

/** The JSON report a background run (startRun) printed after its progress lines. */
export const reportOf = (out: string): RunReport => JSON.parse(out.slice(out.indexOf('{\n'))) as RunReport;

/** Starts `decom run` in the background; resolves with its exit code and output. */
export const startRun = (args: string[]) => startDecom(['run', ...args]);

/** Starts any decom command in the background; resolves with its exit code and output (stdout, then what it printed on stderr, as it came). */
export function startDecom(args: string[]): { done: Promise<{ code: number; out: string }>; pid: number; kill(): void } {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b));
  child.stderr.on('data', (b: Buffer) => (out += b));
  const done = new Promise<{ code: number; out: string }>((resolve) => child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : -1), out })));
  return { done, pid: child.pid!, kill: () => child.kill('SIGKILL') };
}

/** Waits until `test` holds, polling every 20 ms, for at most `ms`. */
export async function until(test: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!test()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
