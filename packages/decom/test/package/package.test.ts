// decom as it is published, installed the way the README says: the commands of its
// "From a packed tarball" block, run as written from the repository root, with npm's
// global prefix an empty directory of the test's own (so nothing lands in the machine's),
// then decom run from outside the checkout against sandbox nodes. The sandbox is a package
// of its own and none of it may ship, or be imported by decom's sources. The package carries
// LICENSE and the manual's pages its README links to, and the link checker finds every link
// of the unpacked package resolving inside it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INVENTORY } from '../helpers/run.js';
import { CHECKOUT, ROOT, down, nodes, up } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/temp.js';

const SANDBOX = join(CHECKOUT, 'packages', 'sandbox');
const work = tempDir('decom-package-');
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

const version = () => (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** The one ```sh block of the README's "### From a packed tarball" section (up to the next heading). */
function tarballBlock(readme: string): string {
  const lines = readme.split('\n');
  const start = lines.indexOf('### From a packed tarball');
  if (start < 0) throw new Error('README.md has no "### From a packed tarball" heading');
  const blocks: string[] = [];
  for (let i = start + 1, open = -1; i < lines.length; i++) {
    const line = lines[i]!;
    if (open < 0 && /^#{1,6} /.test(line)) break;
    if (open < 0 && /^```sh\s*$/.test(line)) open = i;
    else if (open >= 0 && /^```\s*$/.test(line)) {
      blocks.push(lines.slice(open + 1, i).join('\n'));
      open = -1;
    }
  }
  if (blocks.length !== 1) throw new Error(`README.md's "### From a packed tarball" has ${blocks.length} \`\`\`sh blocks, not one`);
  return blocks[0]!;
}

/**
 * The block's commands that would rebuild the shared checkout under the suite's feet: `npm ci`
 * deletes node_modules, `npm run build` deletes dist/, a local `npm install` rewrites both,
 * while other tests run from them. The build is this test's precondition, as for every test.
 */
function rebuildsCheckout(block: string): string[] {
  return block
    .split('\n')
    .filter((l) => /^\s*npm\s+(ci|clean-install|install-clean|run(-script)?\s+build)\b/.test(l) || /^\s*npm\s+(i|install|add)\b(?!.*\s(-g|--global)\b)/.test(l));
}

describe("the README's tarball block, parsed", () => {
  it('is the one sh block of its section, and a rebuild of the checkout in it is named', () => {
    const readme = '## Install\n\n### From a packed tarball\n\n```sh\nnpm ci\nnpm pack -w decom\nnpm install -g ./decom-1.0.0.tgz\n```\n\n### Next\n\n```sh\nnot this\n```\n';
    const block = tarballBlock(readme);
    expect(block).toBe('npm ci\nnpm pack -w decom\nnpm install -g ./decom-1.0.0.tgz');
    expect(rebuildsCheckout(block)).toEqual(['npm ci']);
    expect(rebuildsCheckout('npm run build\nnpm i\nnpm i -g x.tgz\nnpm install --global ./x.tgz')).toEqual(['npm run build', 'npm i']);
    expect(() => tarballBlock('### From a packed tarball\n\nno block\n\n## Next\n```sh\nx\n```\n')).toThrow(/has 0 ```sh blocks/);
  });
});

describe("decom's sources", () => {
  it("imports nothing of the sandbox package from decom's sources", () => {
    const src = join(ROOT, 'src');
    // The tests beside them are neither built nor shipped (tsconfig.json excludes them): they may use the sandbox.
    const importing = filesUnder(src)
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .filter((f) => /from ['"][^'"]*(decom-sandbox|packages\/sandbox|\.\.\/sandbox\/)|import\(['"][^'"]*(decom-sandbox|sandbox\/)/.test(readFileSync(join(src, f), 'utf8')));
    expect(importing).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    expect(Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies, ...manifest.peerDependencies })).not.toContain('decom-sandbox');
  });
});

describe('the published decom', () => {
  const prefix = join(work, 'prefix');
  const bin = join(prefix, 'bin', 'decom');
  let tarball = '';
  let packed: string[] = [];
  let installed = { code: -1, stdout: '', stderr: '' };

  /** The tarballs in the repository root the block wrote (new, or rewritten since `since`). */
  const written = (since: number) => readdirSync(CHECKOUT).filter((f) => /^decom-.*\.tgz$/.test(f) && statSync(join(CHECKOUT, f)).mtimeMs >= since);

  beforeAll(() => {
    const block = tarballBlock(readFileSync(join(CHECKOUT, 'README.md'), 'utf8'));
    expect(rebuildsCheckout(block), `README.md's tarball block rebuilds the checkout other tests run from; it should only pack and install (npm pack -w decom; npm install -g ./decom-*.tgz; decom --version), after npm ci and npm run build said in prose:\n${block}`).toEqual([]);
    const since = Date.now() - 1000;
    // npm's global prefix is the test's: the block's `npm install -g` lands there, and its bin comes first on PATH.
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_(prefix|global|global_prefix|local_prefix|location)$/i.test(k)));
    try {
      const r = spawnSync('bash', ['-c', `set -euo pipefail\n${block}`], {
        cwd: CHECKOUT,
        encoding: 'utf8',
        timeout: 240_000,
        // Dependencies as npm resolves them for any user, from the cache this checkout's install filled.
        env: { ...env, NPM_CONFIG_PREFIX: prefix, NPM_CONFIG_PREFER_OFFLINE: 'true', NPM_CONFIG_AUDIT: 'false', NPM_CONFIG_FUND: 'false', PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}` },
      });
      installed = { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
    } finally {
      // Out of the repository root at once, kept for the checks below.
      for (const f of written(since)) renameSync(join(CHECKOUT, f), join(work, f));
    }
    expect(installed.code, `README.md's tarball block failed:\n${block}\n${installed.stderr}`).toBe(0);
    const tarballs = readdirSync(work).filter((f) => /^decom-.*\.tgz$/.test(f));
    expect(tarballs, 'the tarballs the block packed').toHaveLength(1);
    tarball = join(work, tarballs[0]!);
    packed = sh('tar', ['-tzf', tarball], work).stdout.split('\n').filter(Boolean).map((p) => p.replace(/^package\//, ''));
  });

  it('is installed by the block into the empty prefix, and the block proves it', () => {
    expect(existsSync(bin)).toBe(true);
    expect(installed.stdout.trim().split('\n').at(-1)).toBe(version());
    // The tarball it wrote in the repository root was moved out of it.
    expect(existsSync(join(CHECKOUT, relative(work, tarball)))).toBe(false);
  });

  it('packs the product only: its build, playbooks and inventories, no module of the sandbox package', () => {
    expect(packed).toContain('dist/cli.js');
    expect(packed).toContain('playbooks/decommission.yaml');
    expect(packed).toContain('README.md');
    const modules = sandboxModules();
    expect(modules.length).toBeGreaterThan(20); // the check below means something only if the sandbox is built
    expect(packed.filter((p) => modules.some((m) => p === `dist/${m}`))).toEqual([]);
    expect(packed.filter((p) => /(^|\/)sandbox(\/|$)|decom-sandbox|kubelet|node-init|scenarios/.test(p))).toEqual([]);
    // What npm packs of the product package, as `npm pack --dry-run` lists it: the same files.
    const r = sh('npm', ['pack', '--dry-run', '--json'], ROOT);
    expect(r.code, r.stderr).toBe(0);
    const [info] = JSON.parse(r.stdout) as { files: { path: string }[] }[];
    expect([...packed].sort()).toEqual(info!.files.map((f) => f.path).sort());
  });

  it("carries LICENSE and the pages its README links to, and every link of them resolves inside the unpacked package", () => {
    // The repository's LICENSE is Apache-2.0's full text, and the package carries the same file.
    const license = readFileSync(join(CHECKOUT, 'LICENSE'), 'utf8');
    expect(license).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004\s/);
    expect(license).toContain('END OF TERMS AND CONDITIONS');
    expect(packed).toContain('LICENSE');
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked, { recursive: true });
    const untar = sh('tar', ['-xzf', tarball, '-C', unpacked, '--strip-components=1'], work);
    expect(untar.code, untar.stderr).toBe(0);
    expect(readFileSync(join(unpacked, 'LICENSE'), 'utf8')).toBe(license);
    // The README's own links into the package: the manual's pages among them, each shipped.
    const readme = readFileSync(join(unpacked, 'README.md'), 'utf8');
    const linked = [...new Set([...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)\s]*)?\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l)))];
    expect(linked).toEqual(expect.arrayContaining(['docs/commands/run.md', 'docs/inventory.md', 'docs/kubespray.md', 'docs/glossary.md']));
    expect(linked.filter((l) => !packed.includes(l) && !packed.some((f) => f.startsWith(l.endsWith('/') ? l : `${l}/`)))).toEqual([]);
    // The link checker on the unpacked package: README.md and docs/ with their #anchors, and the pages its code cites.
    const check = spawnSync(process.execPath, [join(CHECKOUT, 'scripts', 'check-links.mjs'), '--package', unpacked], { encoding: 'utf8' });
    const out = `${check.stdout}${check.stderr}`;
    expect(check.status, out).toBe(0);
    expect(out).toMatch(/no broken link/);
  });

  describe('run outside the checkout', () => {
    const run = (args: string[]) => sh(bin, args, work, { KUBECONFIG: '' });

    beforeAll(() => {
      up(['--nodes', '2']);
    });
    afterAll(down);

    it('answers --help and --version', () => {
      const help = run(['--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^Usage: decom /);
      expect(help.stdout).toMatch(/^ {2}verify \[options\] INVENTORY TARGET\.\.\. /m);
      // The sandbox comes with a checkout: the package does not carry it, and its help does not list it.
      expect(help.stdout).not.toMatch(/^ {2}sandbox /m);
      expect(run(['--version']).stdout.trim()).toBe(version());
      // A command's help ends with its page, as the package carries it.
      const page = /^More: (.+)$/m.exec(run(['verify', '--help']).stdout)?.[1];
      expect(page).toBe(join(prefix, 'lib', 'node_modules', 'decom', 'docs', 'commands', 'verify.md'));
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
      expect(r.stderr).toMatch(/^decom: the sandbox is its own package, decom-sandbox, not installed beside this decom: .*\n$/);
    });
  });
});
