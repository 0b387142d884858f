// With CI=true a test that cannot run fails the suite: the closing line and the exit
// code of scripts/test-summary.mjs (what scripts/test ends with), on a real vitest run
// of a planted skip and a planted todo.
import { spawnSync } from 'node:child_process';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../packages/decom/test/helpers/temp.js';

const CHECKOUT = join(import.meta.dirname, '..');
const VITEST = join(CHECKOUT, 'node_modules', 'vitest', 'vitest.mjs');
const SUMMARY = join(CHECKOUT, 'scripts', 'test-summary.mjs');

describe('a skipped or todo test, with CI=true', () => {
  const root = tempDir('decom-ci-skips-');
  const report = join(root, 'vitest.json');
  beforeAll(() => {
    copyFileSync(join(CHECKOUT, 'test', 'fixtures', 'planted-skip', 'planted.ts'), join(root, 'planted.test.ts'));
    writeFileSync(join(root, 'vitest.config.mjs'), 'export default { test: { include: ["planted.test.ts"] } };\n');
    const r = spawnSync(process.execPath, [VITEST, 'run', '--root', root, '--reporter=json', `--outputFile=${report}`], { cwd: root, encoding: 'utf8', env: { ...process.env, CI: '' } });
    // vitest itself passes the file: one passed, one skipped, one todo.
    expect(r.status, r.stderr).toBe(0);
  });
  

  const summary = (env: NodeJS.ProcessEnv) => spawnSync(process.execPath, [SUMMARY, report], { encoding: 'utf8', env: { ...process.env, ...env } });

  it('counts as failed: in the closing line, by name, and in the exit code', () => {
    const r = summary({ CI: 'true' });
    expect(r.stdout.trim().split('\n').at(-1)).toBe('1 passed, 2 failed');
    expect(r.stdout).toMatch(/not run \(counted as failed, CI=true\): .*planted\.test\.ts: is skipped/);
    expect(r.stdout).toMatch(/not run \(counted as failed, CI=true\): .*planted\.test\.ts: is still to write/);
    expect(r.status).toBe(1);
  });

  it('is reported, not failed, outside CI', () => {
    const r = summary({ CI: '' });
    expect(r.stdout.trim()).toBe('1 passed, 0 failed (2 skipped)');
    expect(r.status).toBe(0);
  });

  it('a report with no test, or none at all, fails either way', () => {
    const missing = spawnSync(process.execPath, [SUMMARY, join(root, 'absent.json')], { encoding: 'utf8', env: { ...process.env, CI: '' } });
    expect([missing.stdout.trim(), missing.status]).toEqual(['0 passed, 1 failed', 1]);
  });
});
