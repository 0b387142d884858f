import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INVENTORY } from './helpers/run.js';
import { CHECKOUT, ROOT, down, nodes, up } from './helpers/sandbox.js';

// decom as it is published: `npm pack` of the product package, installed globally into an
// empty prefix and run from outside the checkout. The sandbox is a package of its own and
// none of it may ship, or be imported by decom's sources.
const SANDBOX = join(CHECKOUT, 'packages', 'sandbox');
const work = mkdtempSync(join(tmpdir(), 'decom-package-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)));

/** The sandbox package's modules, as paths inside its dist (api/server.js, kubelet.js, node-init.sh, …). */
const sandboxModules = () => filesUnder(join(SANDBOX, 'dist'));

const sh = (cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) => {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 240_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
};

describe('the published decom', () => {
  let tarball = '';
  let packed: string[] = [];

  beforeAll(() => {
    const r = sh('npm', ['pack', '--json', '--pack-destination', work], ROOT);
    expect(r.code, r.stderr).toBe(0);
    const [info] = JSON.parse(r.stdout) as { filename: string; files: { path: string }[] }[];
    tarball = join(work, info!.filename);
    packed = info!.files.map((f) => f.path);
  });

  it('packs the product only: its build, playbooks and inventories, no module of the sandbox package', () => {
    expect(packed).toContain('dist/cli.js');
    expect(packed).toContain('playbooks/decommission.yaml');
    expect(packed).toContain('README.md');
    const modules = sandboxModules();
    expect(modules.length).toBeGreaterThan(20); // the check below means something only if the sandbox is built
    expect(packed.filter((p) => modules.some((m) => p === `dist/${m}`))).toEqual([]);
    expect(packed.filter((p) => /(^|\/)sandbox(\/|$)|decom-sandbox|kubelet|node-init|scenarios/.test(p))).toEqual([]);
    // The tarball as npm wrote it: the same list.
    const listed = sh('tar', ['-tzf', tarball], work).stdout.split('\n').filter(Boolean).map((p) => p.replace(/^package\//, ''));
    expect(listed.sort()).toEqual([...packed].sort());
  });

  it("imports nothing of the sandbox package from decom's sources", () => {
    const src = join(ROOT, 'src');
    const importing = filesUnder(src)
      .filter((f) => f.endsWith('.ts'))
      .filter((f) => /from ['"][^'"]*(decom-sandbox|packages\/sandbox|\.\.\/sandbox\/)|import\(['"][^'"]*(decom-sandbox|sandbox\/)/.test(readFileSync(join(src, f), 'utf8')));
    expect(importing).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    expect(Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies, ...manifest.peerDependencies })).not.toContain('decom-sandbox');
  });

  describe('installed with npm i -g into an empty prefix, run outside the checkout', () => {
    const prefix = join(work, 'prefix');
    const bin = join(prefix, 'bin', 'decom');
    const run = (args: string[]) => sh(bin, args, work, { KUBECONFIG: '' });

    beforeAll(() => {
      // Its dependencies as npm resolves them for any user (from the cache this checkout's install filled).
      const r = sh('npm', ['i', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball], work);
      expect(r.code, r.stderr).toBe(0);
      up(['--nodes', '2']);
    });
    afterAll(down);

    it('answers --help and --version', () => {
      const help = run(['--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^Usage: decom /);
      expect(help.stdout).toContain('verify [options] <inventory> [targets...]');
      expect(run(['--version']).stdout.trim()).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
    });

    it('verifies sandbox nodes: clean, exit 0, one report per node', () => {
      const r = run(['verify', INVENTORY, 'all', '--output', 'json']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const report = JSON.parse(r.stdout) as { hosts: { host: string; clean: boolean }[] };
      expect(report.hosts.map((h) => [h.host, h.clean])).toEqual(nodes().map((n) => [n.name, true]));
    });

    it('says how to get the sandbox, which it does not carry', () => {
      const r = run(['sandbox', 'status']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('the sandbox is its own package, decom-sandbox, and it is not installed beside this decom');
    });
  });
});
