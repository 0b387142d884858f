import { join } from 'node:path';
import { decom, STATE_DIR } from './sandbox.js';

export const INVENTORY = join(STATE_DIR, 'hosts.yaml');

export interface RunReport {
  run: string;
  journal: string;
  hosts: {
    host: string; reachable: boolean; clean: boolean; ok: number; changed: number; failed: number; skipped: number;
    error?: string; refused?: string; finishes?: string; backup?: string; notRun?: string;
    steps: { name: string; status: string; reason?: string; actions: { what: string; code?: number }[]; left: { kind: string; subject: string }[] }[];
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
