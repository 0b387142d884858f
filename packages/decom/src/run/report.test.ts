// How a run shows its `parallel:` groups (run/report.ts): --check's text names each group's
// steps once, before its first step, and the plain lines and the JSON carry each step's group.
import { describe, expect, it } from 'vitest';
import { plainReporter, renderRunJson, renderRunText } from './report.js';
import type { HostResult } from '../engine/engine.js';
import type { StepResult } from '../engine/step.js';

const step = (name: string, parallel?: string, what: string[] = [`do ${name}`]): StepResult => ({
  name, status: what.length ? 'changed' : 'ok', actions: what.map((w) => ({ what: w, script: w })), left: [], ms: 1200, ...(parallel ? { parallel } : {}),
});
const host = (steps: StepResult[]): HostResult => ({ host: 'node3', reachable: true, clean: true, steps, warnings: [], left: [] });

describe('parallel groups in the report', () => {
  const steps = [step('kubelet'), step('containers', 'g1'), step('trust', 'g1', []), step('processes'), step('mounts', 'g2'), { ...step('links', 'g2'), status: 'skipped' as const, reason: 'when: x is false here' }];

  it('--check names the steps that run together once, before the first of them; a group left with one step here is not', () => {
    const text = renderRunText([host(steps)], { check: true, details: false, journal: 'J' });
    expect(text.split('\n').slice(0, 4)).toEqual([
      'node3  kubelet: do kubelet',
      'node3  containers + trust: run side by side, in one round trip (parallel: g1)',
      'node3  containers: do containers',
      'node3  trust: nothing to do',
    ]);
    expect(text).not.toContain('parallel: g2');
  });

  it('the plain lines and the JSON carry each step its group', () => {
    let out = '';
    const r = plainReporter({ write: (s: string) => ((out += s), true) } as unknown as NodeJS.WritableStream, false);
    r.event({ type: 'step-end', host: 'node3', step: 'containers', result: steps[1]! });
    expect(out).toMatch(/node3  containers changed \[parallel: g1\] \(1 action, 1\.2s\)\n$/);
    const json = JSON.parse(renderRunJson([host(steps)], { runId: 'R', journal: 'J', check: false })) as { hosts: { steps: { name: string; parallel?: string }[] }[] };
    expect(json.hosts[0]!.steps.map((s) => s.parallel ?? '-')).toEqual(['-', 'g1', 'g1', '-', 'g2', 'g2']);
  });
});
