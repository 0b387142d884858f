// The node lock's script under dash here, its files moved to a test folder: a dead
// run's work that still runs keeps the lock (and is named), the lock is taken once it
// ends, a run without flock takes nothing, the lock file is created exclusively, and a
// containerd the dead run started is stopped only when its PID and start time match.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers/temp.js';
import { acquireScript, HOLD_WORK, parseLock, type LockHolder } from './lock.js';
import { STOP_STARTED_CONTAINERD } from './sh.js';

const work = tempDir('decom-lock-');
afterAll(() => rmSync(work, { recursive: true, force: true }));

const me: LockHolder = { runId: '20261128T000000Z-aaaaaa', command: 'run', operator: 'root@ops', since: '2026-11-28T00:00:00.000Z' };
const DEAD = '20261127T000000Z-dead01 1:1\nrun\nroot@ops1\n2026-11-27T00:00:00.000Z\n';

/** The run dir of a test: every /run/decom… path of the scripts moved there. */
const at = (dir: string, script: string) => script.replaceAll('/run/decom', join(dir, 'decom'));
const which = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
const DASH = which('dash');
const sectionsOf = (out: string) => new Map(out.split('\n@@').slice(1).map((x) => [x.slice(0, x.indexOf('\n')), x.slice(x.indexOf('\n') + 1)]));

/** The acquire script, as a round trip's preamble runs it (`s` prints a section's head); PATH as given. */
function acquire(dir: string, path = process.env.PATH ?? '') {
  const r = spawnSync(DASH, ['-c', `s() { printf '\\n@@%s\\n' "$1"; }\n${at(dir, acquireScript(me, false))}`], { encoding: 'utf8', env: { PATH: path } });
  const sections = sectionsOf(r.stdout);
  return { lock: parseLock(sections.get('lock') ?? ''), resumed: sections.get('resumed')?.trim() ?? '', stderr: r.stderr };
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});
/** A process under dash that holds what `script` opens, as a killed run's action would. */
function background(script: string): ChildProcess {
  const c = spawn('dash', ['-c', script], { stdio: 'ignore' });
  children.push(c);
  return c;
}
const until = async (ok: () => boolean) => {
  for (let n = 0; n < 250 && !ok(); n++) await new Promise((r) => setTimeout(r, 20));
};
const startOf = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]!;

describe('the node lock, under dash', () => {
  it("keeps a dead run's lock while a process of one of its round trips runs, naming it; takes it over once that ends", async () => {
    const dir = join(work, 'busy');
    mkdirSync(dir);
    writeFileSync(join(dir, 'decom.lock'), DEAD);
    const action = background(`${at(dir, HOLD_WORK)}exec sleep 30`);
    // Until the action is sleep itself: before its exec, the shell and HOLD_WORK's flock hold the file too.
    const comm = () => (existsSync(`/proc/${action.pid}/comm`) ? readFileSync(`/proc/${action.pid}/comm`, 'utf8').trim() : '');
    await until(() => comm() === 'sleep' && acquire(dir).lock.verdict === 'busy');
    const busy = acquire(dir).lock;
    expect(busy).toMatchObject({ verdict: 'busy', other: '20261127T000000Z-dead01', holder: { command: 'run', operator: 'root@ops1' } });
    expect(busy.detail).toBe(`pid ${action.pid} (sleep), 1 process(es) in all`);
    expect(readFileSync(join(dir, 'decom.lock'), 'utf8')).toBe(DEAD);

    action.kill('SIGKILL');
    await until(() => !existsSync(`/proc/${action.pid}`));
    expect(acquire(dir).lock).toMatchObject({ verdict: 'taken', other: '20261127T000000Z-dead01' });
    expect(readFileSync(join(dir, 'decom.lock'), 'utf8')).toMatch(/^20261128T000000Z-aaaaaa \d+:\d+\nrun\n/);
  });

  it('a daemon started without the lock\'s descriptors does not hold the lock', async () => {
    const dir = join(work, 'daemon');
    mkdirSync(dir);
    writeFileSync(join(dir, 'decom.lock'), DEAD);
    const starter = background(`${at(dir, HOLD_WORK)}sleep 30 8>&- 9>&- & echo $! > ${join(dir, 'daemon.pid')}; wait`);
    await until(() => existsSync(join(dir, 'daemon.pid')));
    expect(acquire(dir).lock.verdict).toBe('busy'); // the starter itself still runs
    starter.kill('SIGKILL');
    await until(() => !existsSync(`/proc/${starter.pid}`));
    expect(acquire(dir).lock.verdict).toBe('taken');
    process.kill(Number(readFileSync(join(dir, 'daemon.pid'), 'utf8')), 'SIGKILL');
  });

  it('refuses without flock on PATH, writing no lock', () => {
    const dir = join(work, 'noflock');
    const bin = join(dir, 'bin');
    mkdirSync(bin, { recursive: true });
    for (const tool of ['tail', 'head', 'sed', 'rm', 'mv', 'readlink', 'sleep']) symlinkSync(which(tool), join(bin, tool));
    const r = acquire(dir, bin);
    expect(r.lock).toMatchObject({ verdict: 'unlockable', detail: expect.stringMatching(/^flock is not installed on this node/) });
    expect(existsSync(join(dir, 'decom.lock'))).toBe(false);
    expect(existsSync(join(dir, 'decom.lock.guard'))).toBe(false);
  });

  it('creates the lock file itself, never through a link planted in its place', () => {
    const dir = join(work, 'link');
    mkdirSync(dir);
    writeFileSync(join(dir, 'victim'), '');
    symlinkSync(join(dir, 'victim'), join(dir, 'decom.lock'));
    expect(acquire(dir).lock.verdict).toBe('acquired');
    expect(lstatSync(join(dir, 'decom.lock')).isFile()).toBe(true);
    expect(readFileSync(join(dir, 'victim'), 'utf8')).toBe('');
  });

  it("stops the containerd a dead run started, by its PID and start time; a record whose start time is another's kills nothing", async () => {
    const dir = join(work, 'containerd');
    mkdirSync(dir);
    for (const match of [true, false]) {
      writeFileSync(join(dir, 'decom.lock'), DEAD);
      const daemon = background('exec sleep 30');
      await until(() => existsSync(`/proc/${daemon.pid}/stat`));
      const start = match ? startOf(daemon.pid!) : '1';
      writeFileSync(join(dir, 'decom-containerd.pid'), `${daemon.pid}:${start}\n`);
      const r = acquire(dir);
      expect(r.lock.verdict).toBe('taken');
      expect(r.resumed).toBe(match ? `stopped containerd ${daemon.pid}:${start}, which decom had started` : `containerd ${daemon.pid}:1, which decom had started, is gone already`);
      await until(() => !match || daemon.exitCode !== null || daemon.signalCode !== null);
      expect(daemon.signalCode, String(match)).toBe(match ? 'SIGTERM' : null);
      expect(existsSync(join(dir, 'decom-containerd.pid'))).toBe(false);
    }
    expect(STOP_STARTED_CONTAINERD).toContain('stop_procs 10');
  });
});
