// decom killed with SIGKILL at every step boundary of the reset, then run again: a sandbox of
// kubespray-leftovers with a node per boundary, each run killed at its own, and an init-less
// node of orphaned-shims whose run is killed once it has started a containerd for its CRI
// teardown; the rerun finishes every node clean, and stops that containerd.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, down, ssh, sshArgv, up } from '../helpers/sandbox.js';
import { leftovers } from '../helpers/residue.js';
import { INVENTORY, runJson } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

/** Where decom is killed: right after the run starts on the host, then after each step but the last. */
const BOUNDARIES = ['host-start', 'backup', 'static-pods', 'kubelet', 'containers', 'trust', 'processes', 'etcd', 'ports', 'mounts', 'links', 'routes', 'netns', 'firewall', 'files'];

/** The node after them: init-less, containerd gone (orphaned-shims), its run killed once the reset has started one. */
const STARTED_ON = `node${BOUNDARIES.length + 1}`;
const CONTAINERD_STARTED = 'containerd started';

/** Resolves once a containerd runs on the node: watched there, so the kill follows its start within a few ms. */
const containerdStarts = (node: string): Promise<unknown> =>
  new Promise((r) => spawn('ssh', sshArgv(node, 'until pgrep -x containerd >/dev/null; do sleep 0.02; done'), { stdio: 'ignore' }).on('close', r));

const events = (dir: string): Record<string, unknown>[] => {
  const runs = join(dir, 'runs');
  if (!existsSync(runs)) return [];
  // Only whole lines: decom may be appending one right now.
  return readdirSync(runs).flatMap((f) => readFileSync(join(runs, f), 'utf8').split('\n').slice(0, -1).map((l) => JSON.parse(l) as Record<string, unknown>));
};

const journalSize = (dir: string): number => {
  const runs = join(dir, 'runs');
  return existsSync(runs) ? readdirSync(runs).reduce((n, f) => n + statSync(join(runs, f)).size, 0) : 0;
};

describe('decom killed with SIGKILL at every step boundary, then run again', () => {
  const base = tempDir('decom-killed-');
  const killed = new Map<string, { run: string; finished: boolean }>();
  let containerdWhenKilled = '';
  beforeAll(async () => {
    up([
      '--nodes', String(BOUNDARIES.length + 1),
      '--init', [...BOUNDARIES.map(() => 'systemd'), 'none'].join(','),
      '--scenario', [...BOUNDARIES.map(() => 'kubespray-leftovers'), 'orphaned-shims'].join(','),
    ]);
    // One decom per node, all at once, each killed at its own boundary.
    await Promise.all(
      [...BOUNDARIES, CONTAINERD_STARTED].map(async (boundary, i) => {
        const host = `node${i + 1}`;
        const dir = join(base, host);
        let started = false;
        if (boundary === CONTAINERD_STARTED) void containerdStarts(host).then(() => (started = true));
        const child = spawn(process.execPath, [CLI, 'run', INVENTORY, host, '--playbook', 'reset', '--yes', '--state-dir', dir], { stdio: 'ignore' });
        const closed = new Promise((r) => child.on('close', r));
        // Parsed again only when the journal grew: fifteen pollers must not starve the runs they watch.
        let seen = -1;
        const reached = () => {
          if (boundary === CONTAINERD_STARTED) return started;
          const size = journalSize(dir);
          if (size === seen) return false;
          seen = size;
          return events(dir).some((e) => (boundary === 'host-start' ? e.event === 'host-start' : e.event === 'step' && e.step === boundary));
        };
        const end = Date.now() + 120_000;
        while (!reached() && child.exitCode === null && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
        child.kill('SIGKILL');
        await closed;
        if (boundary === CONTAINERD_STARTED) containerdWhenKilled = ssh(host, 'pgrep -x containerd; true').trim();
        const ev = events(dir);
        killed.set(host, { run: String(ev[0]?.run), finished: ev.some((e) => e.event === 'run-end') });
      }),
    );
  });
  afterAll(() => down());

  it('killed every run before it finished, the init-less node\'s with the containerd it had started running', () => {
    expect([...killed.values()].filter((k) => k.finished)).toEqual([]);
    expect(containerdWhenKilled).toMatch(/^\d+$/);
  });

  it('a rerun finishes every node clean, and its journal names the run it finished', () => {
    const hosts = [...BOUNDARIES.map((_, i) => `node${i + 1}`), STARTED_ON];
    // A killed run's action that still runs (a grace period, a wait for the kubelet) holds its node: waited for.
    const r = runJson([...hosts, '--playbook', 'reset', '--yes', '--wait-lock', '1m'], join(base, 'rerun'));
    expect(r.code, JSON.stringify(r.report.hosts.filter((h) => !h.clean))).toBe(0);
    const journal = readFileSync(r.report.journal, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const h of r.report.hosts) {
      expect(h.finishes, h.host).toBe(killed.get(h.host)!.run);
      expect(journal.some((e) => e.host === h.host && e.event === 'resume' && e.finishes === killed.get(h.host)!.run)).toBe(true);
    }
    for (const h of hosts) expect(leftovers(h), h).toEqual([]);
    // The containerd the killed run started (in its journal) was stopped by the rerun (in its journal), by PID and start time.
    expect(ssh(STARTED_ON, 'pgrep -x containerd; ls /run/decom-containerd.pid 2>/dev/null; true')).toBe('');
    expect(events(join(base, STARTED_ON)).find((e) => e.event === 'daemon-start')).toMatchObject({ host: STARTED_ON, step: 'containers', daemon: 'containerd' });
    const resumed = journal.find((e) => e.host === STARTED_ON && e.event === 'resume');
    expect(resumed?.stopped).toMatch(new RegExp(`^stopped containerd ${containerdWhenKilled}:\\d+, which decom had started$`));
  });
});
