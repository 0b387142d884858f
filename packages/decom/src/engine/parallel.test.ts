// A `parallel:` group as the engine runs it (engine.ts applyGroup, round-trip.ts's branches):
// the branches run at the same time on the node (each waits for a file the other makes, which
// one after the other can never do), a failure in one hides nothing of another's, action
// numbers and times come back per action, and a step's client-side action runs beside the
// others' node scripts. The node is this machine under dash, in a temporary folder; the
// probe after the actions reads only /proc.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { roundTrip } from './round-trip.js';
import { applyGroup, type PlannedStep } from './engine.js';
import type { Action, Step, StepContext } from './step.js';
import { emptyState } from '../probes/index.js';
import type { Transport } from '../transport/types.js';
import { localTransport } from '../transport/local.js';
import { tempDir } from '../../test/helpers/temp.js';

const work = tempDir('decom-parallel-');
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Runs each exec under dash here, as sshd would run the command (without blocking: a client-side action runs meanwhile); no socket. */
const dash: Transport = {
  host: 'test',
  exec: (cmd, opts) =>
    new Promise((resolve, reject) => {
      const child = spawn('dash', ['-c', cmd], { timeout: 30_000 });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject).on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
      child.stdin.end(String(opts?.stdin ?? ''));
    }),
  openUnixSocket: () => Promise.reject(new Error('no sockets here')),
  close: async () => {},
};

/** Makes `mine`, then waits up to ~1 s for `theirs`: succeeds only while the other runs at the same time. */
const meet = (mine: string, theirs: string): Action => ({
  what: `meet ${mine}`,
  script: `touch ${join(work, mine)}; i=0; until [ -e ${join(work, theirs)} ]; do i=$((i + 1)); [ $i -gt 100 ] && { echo "never saw ${theirs}"; exit 9; }; sleep 0.01; done; echo "saw ${theirs}"`,
});
const fresh = (...names: string[]) => names.forEach((n) => rmSync(join(work, n), { force: true }));

describe('a parallel group on the node', () => {
  it('runs its branches at the same time: each sees the file the other makes', async () => {
    fresh('a', 'b');
    const together = await roundTrip(dash, { actions: { branches: [[meet('a', 'b')], [meet('b', 'a')]] }, views: null, prev: emptyState(), sudo: false, timeoutSec: 30 });
    expect(together.results.map((r) => [r.what, r.code, r.output])).toEqual([['meet a', 0, 'saw b'], ['meet b', 0, 'saw a']]);
    // The same actions one after the other: the first never sees the second's file.
    fresh('a', 'b');
    const inTurn = await roundTrip(dash, { actions: [meet('a', 'b'), meet('b', 'a')], views: null, prev: emptyState(), sudo: false, timeoutSec: 30 });
    expect(inTurn.results.map((r) => r.code)).toEqual([9, 0]);
  });

  it("a failure in one branch hides nothing of another's: every action's exit, output, number and node time", async () => {
    const trip = await roundTrip(dash, {
      actions: {
        branches: [
          [{ what: 'fails', script: 'echo boom; exit 3' }, { what: 'after the failure', script: 'echo still' }],
          [],
          [{ what: 'sleeps', script: 'sleep 0.2; echo slept' }, { what: 'guarded', script: 'echo ran', guard: 'echo "nothing to do"; false' }],
        ],
      },
      views: new Set(),
      prev: emptyState(),
      sudo: false,
      timeoutSec: 30,
    });
    expect(trip.results.map((r) => [r.what, r.code, r.output, r.skipped])).toEqual([
      ['fails', 3, 'boom', undefined],
      ['after the failure', 0, 'still', undefined],
      ['sleeps', 0, 'slept', undefined],
      ['guarded', undefined, 'nothing to do', true],
    ]);
    for (const r of trip.results) expect(r.ms, r.what).toBeGreaterThanOrEqual(0);
    expect(trip.results[2]!.ms).toBeGreaterThanOrEqual(150);
    // The probe after them ran: the state is this machine's.
    expect(trip.state.pid1).not.toBe('');
  });

  it('cut off by its timeout, still says which actions finished, and leaves no scratch dir', async () => {
    const scratch = () => readdirSync('/run').filter((f) => f.startsWith('decom-parallel.'));
    const before = scratch();
    const local = localTransport('test');
    const cut = await roundTrip(local, { actions: { branches: [[{ what: 'quick', script: 'echo done' }], [{ what: 'slow', script: 'sleep 20' }]] }, views: null, prev: emptyState(), sudo: false, timeoutSec: 2 }).then(
      () => undefined,
      (e: unknown) => e as { results?: { what: string; code?: number }[] },
    );
    expect(cut?.results?.map((r) => [r.what, r.code])).toEqual([['quick', 0], ['slow', undefined]]);
    expect(scratch()).toEqual(before);
  });
});

describe('applyGroup', () => {
  const step = (name: string, plan: Action[], o: Partial<Step> = {}): Step => ({
    name, description: name, params: z.object({}), owns: () => false, views: [], paths: [], plan: () => plan, after: (s) => s, ...o,
  });
  const ctx = (p: PlannedStep): { p: PlannedStep; ctx: StepContext } => ({
    p, ctx: { runId: 'r', backupDir: '/nonexistent', host: 'test', vars: {}, params: {}, operatorBackupDir: work, before: new Set() },
  });

  it("runs a step's client-side action beside another's node script, journals each step's own actions, and judges each on its own", async () => {
    fresh('node-started', 'client-done');
    // The client side waits for the node's script to start, and the script for the client side to finish.
    const client: Action = {
      what: 'client side',
      script: '(over the connection) wait for the node script, then mark done',
      client: async () => {
        for (let i = 0; i < 300 && !existsSync(join(work, 'node-started')); i++) await sleep(10);
        if (!existsSync(join(work, 'node-started'))) throw new Error('the node script never started');
        writeFileSync(join(work, 'client-done'), '');
        return 'done';
      },
    };
    const node: Action = { what: 'node script', script: `touch ${join(work, 'node-started')}; i=0; until [ -e ${join(work, 'client-done')} ]; do i=$((i + 1)); [ $i -gt 300 ] && exit 9; sleep 0.01; done` };
    const failing: Action = { what: 'must succeed', script: 'echo broken; exit 4' };
    const events: Record<string, unknown>[] = [];
    const members = [
      { step: step('one', [client]), label: 'one', params: {}, parallel: 'g' },
      { step: step('two', [node]), label: 'two', params: {}, parallel: 'g' },
      { step: step('three', [failing], { mustSucceed: true }), label: 'three', params: {}, parallel: 'g' },
    ].map(ctx);
    const done = await applyGroup(dash, emptyState(), members, false, new Set(['processes']), (e) => events.push(e));
    expect(done.results.map((r) => [r.name, r.status, r.parallel, r.actions.map((a) => [a.what, a.code])])).toEqual([
      ['one', 'changed', 'g', [['client side', 0]]],
      ['two', 'changed', 'g', [['node script', 0]]],
      ['three', 'failed', 'g', [['must succeed', 4]]],
    ]);
    expect(done.results[2]!.reason).toBe('must succeed: exit 4: broken');
    // Every step's start is journaled before any of their actions; each action under its own step.
    expect(events.map((e) => `${e.event} ${e.step}`)).toEqual(['step-start one', 'step-start two', 'step-start three', 'action one', 'action two', 'action three']);
    expect(events.filter((e) => e.event === 'step-start').every((e) => e.parallel === 'g')).toBe(true);
    expect(events.filter((e) => e.event === 'action').every((e) => typeof e.ms === 'number')).toBe(true);
  });
});
