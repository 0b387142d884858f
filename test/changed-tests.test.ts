// What `./scripts/test --changed` runs for a change (scripts/changed-tests.mjs): the map from
// changed paths to node test folders on representative changes, the map held to the folders
// on disk, and the script itself on a planted git history (a branch's commit, staged,
// unstaged, untracked and ignored files, main moving on meanwhile).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../packages/decom/test/helpers/temp.js';
// @ts-expect-error: a plain ESM script of the repository, without type declarations
import { NODE_FOLDERS, TABLE, testsFor } from '../scripts/changed-tests.mjs';

const CHECKOUT = join(import.meta.dirname, '..');
const RUN = 'packages/decom/test/run';
const VERIFY = 'packages/decom/test/verify';
const AUDIT = 'packages/decom/test/audit';
const REACH = 'packages/decom/test/reach';
const FIRST_CONTACT = 'packages/decom/test/first-contact';
const PACKAGE = 'packages/decom/test/package';
const API = 'packages/sandbox/test/api';
const UP = 'packages/sandbox/test/up';
const IMAGE = 'packages/sandbox/test/image';

describe('testsFor: changed paths → what runs', () => {
  it('a step: the node tests of every command that runs it, and the unit tests that import it', () => {
    expect(testsFor(['packages/decom/src/steps/pods.ts'])).toEqual({
      unitNeeded: true,
      nodeFolders: [RUN, VERIFY, AUDIT, FIRST_CONTACT],
      reasons: [expect.stringMatching(/^changed: packages\/decom\/src\/steps\/pods\.ts → node tests in packages\/decom\/test\/run, packages\/decom\/test\/verify, packages\/decom\/test\/audit, packages\/decom\/test\/first-contact \(used by every command: /)],
    });
  });

  it("a command's own folder: that command's node tests only", () => {
    expect(testsFor(['packages/decom/src/run/progress.ts']).nodeFolders).toEqual([RUN]);
    expect(testsFor(['packages/decom/src/verify/report.ts']).nodeFolders).toEqual([VERIFY]);
    expect(testsFor(['packages/decom/src/audit/fix.ts']).nodeFolders).toEqual([AUDIT]);
    expect(testsFor(['packages/decom/src/journal/cli.ts']).nodeFolders).toEqual([RUN]);
    expect(testsFor(['packages/decom/src/ping/ping.ts']).nodeFolders).toEqual([FIRST_CONTACT]);
    expect(testsFor(['packages/decom/src/hosts/trust.ts']).nodeFolders).toEqual([FIRST_CONTACT]);
    expect(testsFor(['packages/decom/src/firewall/restore.ts']).nodeFolders).toEqual([RUN, VERIFY]);
  });

  it('a test helper: every node test folder, decom\'s and the sandbox\'s', () => {
    const r = testsFor(['packages/decom/test/helpers/sandbox.ts']);
    expect(r.nodeFolders).toEqual([RUN, VERIFY, AUDIT, FIRST_CONTACT, REACH, PACKAGE, API, UP, IMAGE]);
    expect(r.unitNeeded).toBe(true);
    expect(r.reasons).toEqual([expect.stringMatching(/^changed: packages\/decom\/test\/helpers\/sandbox\.ts → node tests in .* \(a test helper: /)]);
  });

  it("the sandbox: its API's folder for src/api, test/up for the rest; a shell file needs no unit run", () => {
    expect(testsFor(['packages/sandbox/src/api/server.ts']).nodeFolders).toEqual([API]);
    expect(testsFor(['packages/sandbox/src/scenarios/lib.sh', 'packages/sandbox/src/layout.ts']).nodeFolders).toEqual([API, UP]);
    expect(testsFor(['packages/sandbox/src/node-init.sh'])).toEqual({
      unitNeeded: false,
      nodeFolders: [UP],
      reasons: [expect.stringMatching(/^changed: packages\/sandbox\/src\/node-init\.sh → node tests in packages\/sandbox\/test\/up \(/)],
    });
  });

  it('documentation only: nothing to run, unit or node', () => {
    expect(testsFor(['docs/development.md', 'docs/commands/run.md'])).toEqual({
      unitNeeded: false,
      nodeFolders: [],
      reasons: ['changed: docs/commands/run.md, docs/development.md → nothing to run: documentation (`npm run check:links` checks its links)'],
    });
  });

  it("a file of a node test folder: that folder, a new folder too; a unit test file: no node folder", () => {
    expect(testsFor(['packages/decom/test/run/reset.test.ts'])).toEqual({
      unitNeeded: true,
      nodeFolders: [RUN],
      reasons: ['changed: packages/decom/test/run/reset.test.ts → node tests in packages/decom/test/run (its own folder)'],
    });
    expect(testsFor(['packages/sandbox/test/up/instances.test.ts', 'packages/decom/test/journal/journal.test.ts']).nodeFolders).toEqual([UP, 'packages/decom/test/journal']);
    for (const unit of ['packages/decom/src/steps/steps.test.ts', 'packages/sandbox/scripts/fetch-runtimes.test.ts', 'test/links.test.ts']) {
      expect(testsFor([unit]), unit).toEqual({ unitNeeded: true, nodeFolders: [], reasons: [`changed: ${unit} → that unit test (vitest --changed runs a changed test file)`] });
    }
  });

  it('vitest.config.ts or a package.json: every unit test, as vitest reruns them all; decom\'s package.json its package test too', () => {
    expect(testsFor(['vitest.config.ts'])).toEqual({
      unitNeeded: true,
      nodeFolders: [],
      reasons: ['changed: vitest.config.ts → every unit test (vitest --changed runs them all when a package.json or vitest.config.* changes)'],
    });
    expect(testsFor(['packages/decom/package.json']).nodeFolders).toEqual([PACKAGE]);
  });

  it('a fixture or script nothing imports and no folder maps: said so, not silently dropped', () => {
    const r = testsFor(['packages/decom/test/fixtures/iptables/node-v4.rules', 'scripts/setup']);
    expect(r).toMatchObject({ unitNeeded: false, nodeFolders: [] });
    expect(r.reasons).toEqual([expect.stringMatching(/^changed: packages\/decom\/test\/fixtures\/iptables\/node-v4\.rules, scripts\/setup → no test found: /)]);
    expect(testsFor(['packages/decom/test/fixtures/versions/containerd-2.1/config.json']).nodeFolders).toEqual([VERIFY]);
  });

  it('a mixed change: folders once each, in the suite\'s order; one line per kind of change, long lists cut short', () => {
    const paths = ['packages/sandbox/src/bin.ts', 'packages/sandbox/src/commands.ts', 'packages/sandbox/src/layout.ts', 'packages/sandbox/src/node.ts', 'packages/decom/src/audit/cli.ts', 'docs/sandbox.md', 'packages/decom/src/audit/cli.ts'];
    const r = testsFor(paths);
    expect(r.nodeFolders).toEqual([AUDIT, UP]);
    expect(r.reasons).toHaveLength(3);
    expect(r.reasons).toContain('changed: packages/sandbox/src/bin.ts, packages/sandbox/src/commands.ts, packages/sandbox/src/layout.ts and 1 more → node tests in packages/sandbox/test/up (the sandbox: nodes, up and down, the kubelet stand-in)');
  });
});

describe("the map against the checkout", () => {
  const dirs = (path: string) => readdirSync(join(CHECKOUT, path)).filter((n) => statSync(join(CHECKOUT, path, n)).isDirectory());

  it('names every node test folder there is (a new one goes into NODE_FOLDERS, so a helper change runs it)', () => {
    const onDisk = dirs('packages').flatMap((pkg) => (existsSync(join(CHECKOUT, 'packages', pkg, 'test')) ? dirs(`packages/${pkg}/test`).map((d) => `packages/${pkg}/test/${d}`) : []));
    expect([...NODE_FOLDERS].sort()).toEqual(onDisk.filter((f) => !/\/(helpers|fixtures)$/.test(f)).sort());
  });

  it('every path of the table is there (a renamed folder would stop mapping without a word)', () => {
    const missing = (TABLE as Array<[string, string[], string]>).flatMap(([path, folders]) => [path, ...folders]).filter((p) => !existsSync(join(CHECKOUT, p)));
    expect(missing).toEqual([]);
  });
});

describe('scripts/changed-tests.mjs on a planted git history', () => {
  const root = tempDir('decom-changed-tests-');
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: root, encoding: 'utf8' });
  const write = (path: string, text = `// ${path}\n`) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  const script = (...args: string[]) => spawnSync(process.execPath, [join(root, 'scripts', 'changed-tests.mjs'), ...args], { cwd: root, encoding: 'utf8' });

  mkdirSync(join(root, 'scripts'));
  copyFileSync(join(CHECKOUT, 'scripts', 'changed-tests.mjs'), join(root, 'scripts', 'changed-tests.mjs'));
  git('init', '-q', '-b', 'main');
  write('.gitignore', 'dist/\n');
  for (const p of ['packages/decom/src/run/a.ts', 'packages/decom/src/audit/b.ts', 'packages/decom/src/verify/c.ts', 'packages/sandbox/src/api/d.ts', 'notes.md']) write(p);
  git('add', '.');
  git('commit', '-q', '-m', 'base');

  it('nothing changed: nothing to run', () => {
    const r = script();
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.split('\n').slice(1)).toEqual(['changed: nothing since main', expect.stringMatching(/^unit: none /), expect.stringMatching(/^node: none /), '']);
  });

  it("counts the branch's commits since the merge-base, staged, unstaged and untracked files; not main's later commits nor ignored files", () => {
    git('checkout', '-q', '-b', 'topic');
    write('packages/decom/src/run/a.ts', '// changed on the branch\n');
    git('commit', '-q', '-am', 'topic');
    git('checkout', '-q', 'main');
    write('packages/decom/src/audit/b.ts', '// main moved on\n');
    git('commit', '-q', '-am', 'main');
    git('checkout', '-q', 'topic');
    write('packages/decom/src/verify/c.ts', '// staged\n');
    git('add', 'packages/decom/src/verify/c.ts');
    write('packages/sandbox/src/api/d.ts', '// unstaged\n');
    write('packages/sandbox/src/node-init.sh', '# untracked\n');
    write('dist/ignored.ts');
    const base = git('merge-base', 'HEAD', 'main').trim();

    const r = script();
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`base: ${base.slice(0, 12)} (git merge-base HEAD main); 4 path(s) changed since, staged, unstaged or untracked`);
    expect(lines).toContain(`unit: vitest run --project unit --changed ${base.slice(0, 12)} (the unit tests whose imports reach a changed file)`);
    expect(lines.at(-1)).toBe('node: vitest run --project image --project node --project host packages/decom/test/run/ packages/decom/test/verify/ packages/sandbox/test/api/ packages/sandbox/test/up/ (the folders above)');
    expect(r.stdout).not.toMatch(/audit|ignored/);

    // What scripts/test evaluates: the same, as bash assignments.
    const shell = script('--shell');
    const vars = execFileSync('bash', ['-c', `${shell.stdout}\nprintf '%s|' "$base" "$unit" "\${folders[@]}"; printf '%s\\n' "\${#lines[@]}"`], { encoding: 'utf8' });
    expect(vars).toBe(`${base}|1|packages/decom/test/run/|packages/decom/test/verify/|packages/sandbox/test/api/|packages/sandbox/test/up/|${lines.length}\n`);
  });

  it('an unknown argument, or a base that is no commit: one line, exit 2', () => {
    const bad = script('--fast');
    expect([bad.status, bad.stdout, bad.stderr.trimEnd().split('\n').length]).toEqual([2, '', 1]);
    const base = script('--base', 'no-such-ref');
    expect([base.status, base.stdout]).toEqual([2, '']);
    expect(base.stderr).toMatch(/^changed-tests: .*no-such-ref.*\n$/);
  });
});

describe("the short loop's closing line: scripts/test-summary.mjs over its two runs' reports", () => {
  const SUMMARY = join(CHECKOUT, 'scripts', 'test-summary.mjs');
  const report = (passed: number, failed: number) => ({
    numTotalTests: passed + failed, numPassedTests: passed, numFailedTests: failed, numPendingTests: 0, numTodoTests: 0,
    testResults: [{ name: `f${passed}${failed}.test.ts`, status: failed ? 'failed' : 'passed', assertionResults: failed ? [{ status: 'failed', fullName: 'a test' }] : [] }],
  });
  const summary = (...files: string[]) => spawnSync(process.execPath, [SUMMARY, '--allow-empty', ...files], { encoding: 'utf8', env: { ...process.env, CI: '' } });

  it('sums both runs; a run that left no report is a failed file; runs that found no test end 0 passed, 0 failed', () => {
    const dir = tempDir('decom-summary-');
    const put = (name: string, r: unknown) => (writeFileSync(join(dir, name), JSON.stringify(r)), join(dir, name));
    const unit = put('unit.json', report(3, 0));
    const node = put('node.json', report(4, 1));
    expect([summary(unit, node).status, summary(unit, node).stdout]).toEqual([1, '7 passed, 1 failed\n']);
    expect([summary(unit).status, summary(unit).stdout]).toEqual([0, '3 passed, 0 failed\n']);
    expect([summary(unit, join(dir, 'missing.json')).status, summary(unit, join(dir, 'missing.json')).stdout]).toEqual([1, '3 passed, 1 failed\n']);
    const empty = put('empty.json', { numTotalTests: 0, numPassedTests: 0, numFailedTests: 0, numPendingTests: 0, numTodoTests: 0, testResults: [] });
    expect([summary(empty).status, summary(empty).stdout]).toEqual([0, '0 passed, 0 failed (no test file imports what changed)\n']);
  });
});
