// `decom sandbox` (and the decom-sandbox command it runs) on bad input: bad input costs one
// clear line and exit 2, and builds nothing.
import { existsSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decom, STATE_DIR, INSTANCE } from '../../../decom/test/helpers/sandbox.js';

const nothingBuilt = () => {
  expect(existsSync(STATE_DIR)).toBe(false);
  const links = execFileSync('ip', ['-o', 'link'], { encoding: 'utf8' });
  expect(links).not.toContain(INSTANCE.bridge);
  expect(links).not.toContain(INSTANCE.hostLink);
};

const oneLine = (stderr: string) => {
  const lines = stderr.trim().split('\n');
  // Run as `decom sandbox`, its errors are decom's: one line, `decom: …`.
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^decom: /);
  expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
  return lines[0];
};

describe('decom sandbox up: bad input', () => {
  it('rejects an unknown scenario, naming the known ones', () => {
    const r = decom(['sandbox', 'up', '--scenario', 'kubespray-leftover']);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(
      'decom: --scenario: unknown scenario "kubespray-leftover"; known: kubespray-leftovers, orphaned-shims, docker-runtime, force-deleted-pods, field-2026, cluster, etcd-restore-phantoms, stuck-terminating, pdb-blocked, runtime-lost, clean',
    );
    nothingBuilt();
  });

  it('rejects an unknown --containerd or --init, naming the known ones', () => {
    for (const [flag, v, msg] of [
      ['--containerd', '2,1.5', 'decom: --containerd: unknown runtime "1.5"; known: 2, 1.7, 1.6'],
      ['--init', 'systemd,openrc', 'decom: --init: unknown init "openrc"; known: systemd, none'],
    ] as const) {
      const r = decom(['sandbox', 'up', flag, v]);
      expect(r.code).toBe(2);
      expect(oneLine(r.stderr)).toBe(msg);
    }
    nothingBuilt();
  });

  it('rejects an unknown --containerd-paths, and moved paths on a containerd 1.6 or docker-runtime node, naming the node', () => {
    for (const [args, msg] of [
      [['--containerd-paths', 'default,elsewhere'], 'decom: --containerd-paths: unknown paths "elsewhere"; known: default, moved'],
      [['--nodes', '3', '--containerd', '2,1.6', '--containerd-paths', 'moved'], 'decom: --containerd-paths: node2 runs containerd 1.6: its paths can be moved with containerd 2 or 1.7 only; give it default'],
      [['--nodes', '2', '--scenario', 'clean,docker-runtime', '--containerd-paths', 'default,moved'], "decom: --containerd-paths: node2 (docker-runtime) keeps this host's containerd 1.6: its paths cannot be moved; give it default"],
    ] as const) {
      const r = decom(['sandbox', 'up', ...args]);
      expect(r.code).toBe(2);
      expect(oneLine(r.stderr)).toBe(msg);
    }
    nothingBuilt();
  });

  it('names the cache and how to fill it when a runtime was not fetched, before anything is built', () => {
    const r = decom(['sandbox', 'up', '--nodes', '1', '--containerd', '1.7'], { env: { DECOM_RUNTIME_CACHE: '/nonexistent/decom-runtimes' } });
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(
      'decom: containerd 1.7 is not in the runtime cache /nonexistent/decom-runtimes: run packages/sandbox/scripts/fetch-runtimes.sh (./scripts/setup runs it)',
    );
    nothingBuilt();
  });

  it('rejects --nodes 0 and a non-number', () => {
    for (const [v, msg] of [
      ['0', 'decom: --nodes must be a whole number from 1 to 200, got 0'],
      ['three', 'decom: --nodes takes a whole number, got "three"'],
    ] as const) {
      const r = decom(['sandbox', 'up', '--nodes', v]);
      expect(r.code).toBe(2);
      expect(oneLine(r.stderr)).toBe(msg);
    }
    nothingBuilt();
  });

  it('rejects a --services count out of range or not a number', () => {
    for (const [v, msg] of [
      ['50001', 'decom: --services must be a whole number from 0 to 50000, got 50001'],
      ['lots', 'decom: --services takes a whole number, got "lots"'],
      ['-5', 'decom: --services takes a whole number, got "-5"'],
    ] as const) {
      const r = decom(['sandbox', 'up', '--services', v]);
      expect(r.code).toBe(2);
      expect(oneLine(r.stderr)).toBe(msg);
    }
    nothingBuilt();
  });

  it('rejects more control planes than nodes', () => {
    const r = decom(['sandbox', 'up', '--nodes', '2', '--control-planes', '3']);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe('decom: --control-planes must be from 1 to --nodes (2), got 3');
    nothingBuilt();
  });

  it('rejects a cluster scenario without two workers, and a grace period out of range', () => {
    const r = decom(['sandbox', 'up', '--nodes', '3', '--control-planes', '2', '--scenario', 'clean,pdb-blocked']);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe('decom: scenario pdb-blocked needs two worker nodes at least: --nodes 4 or more with --control-planes 2');
    for (const [v, msg] of [
      ['0', 'decom: --node-monitor-grace-period must be a whole number of seconds from 1 to 3600, got 0'],
      ['1m', 'decom: --node-monitor-grace-period takes a whole number, got "1m"'],
    ] as const) {
      const g = decom(['sandbox', 'up', '--api', '--node-monitor-grace-period', v]);
      expect(g.code).toBe(2);
      expect(oneLine(g.stderr)).toBe(msg);
    }
    nothingBuilt();
  });

  it('sandbox api with no sandbox up, or an unknown action, is an input error', () => {
    const r = decom(['sandbox', 'api', 'stop']);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(`decom: no sandbox is up (${STATE_DIR})`);
    const u = decom(['sandbox', 'api', 'restart']);
    expect(u.code).toBe(2);
    expect(oneLine(u.stderr)).toBe("decom: command-argument value 'restart' is invalid for argument 'action'. Allowed choices are start, stop, status. (see decom sandbox api --help)");
    nothingBuilt();
  });

  it('says so when not root', () => {
    const r = decom(['sandbox', 'up'], { wrap: ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] });
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(
      'decom: decom sandbox up needs root: it creates namespaces, links, mounts and cgroups (run it with sudo)',
    );
    nothingBuilt();
  });

  it('names the missing Debian packages', () => {
    // Hide runc and dockerd in a private mount namespace: /dev/null is not executable.
    const hide = 'mount --bind /dev/null /usr/sbin/runc && mount --bind /dev/null /usr/sbin/dockerd && exec "$@"';
    const r = decom(['sandbox', 'up', '--scenario', 'docker-runtime'], { wrap: ['unshare', '-m', '--propagation', 'private', 'sh', '-c', hide, 'sh'] });
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe('decom: missing Debian packages: docker.io runc (apt-get install -y docker.io runc)');
    nothingBuilt();
  });

  it('answers --help fast and without loading the sandbox', () => {
    const t0 = performance.now();
    const r = decom(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('sandbox');
    expect(performance.now() - t0).toBeLessThan(3000); // a sanity bound, not a benchmark
  });

  it('ssh to a sandbox that is not up is an input error', () => {
    const r = decom(['sandbox', 'ssh', 'node1', 'true']);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(`decom: no sandbox is up (${STATE_DIR})`);
  });

  it('is the decom-sandbox command, which `decom sandbox` runs: the same answers, help and exit codes either way, each named as it was typed', () => {
    const bin = join(import.meta.dirname, '..', '..', 'dist', 'bin.js');
    const direct = (args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' });
    const asTyped = (text: string) => text.replace(/^decom-sandbox: /gm, 'decom: ').replaceAll('decom-sandbox', 'decom sandbox');
    for (const args of [['ssh', 'node1', 'true'], ['up', '--nodes', 'three'], ['--help']]) {
      const viaDecom = decom(['sandbox', ...args]);
      const own = direct(args);
      expect([viaDecom.code, viaDecom.stdout, viaDecom.stderr]).toEqual([own.status, asTyped(own.stdout), asTyped(own.stderr)]);
    }
    expect(direct(['--help']).stdout).toMatch(/^Usage: decom-sandbox /);
    expect(decom(['sandbox', '--help']).stdout).toMatch(/^Usage: decom sandbox /);
    nothingBuilt();
  });
});
