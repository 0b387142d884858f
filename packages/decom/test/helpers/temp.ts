// The one way a test makes a temporary directory: under the system's temp dir, removed
// when the test file that made it ends, whether it was made in a test, a hook or a
// describe's body. Nothing is left in /tmp. And files written into one as a tree.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll } from 'vitest';

const made: string[] = [];

// Registered when a test file first imports this module (vitest gives each file its
// own modules), on the file's own suite: it runs once the file's last test has ended.
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix = 'decom-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Files (path relative to `dir` -> content) written under `dir`, folders made; DIR in a content is `dir` itself. Returns `dir`. */
export function fileTree(dir: string, files: Record<string, string>): string {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content.replaceAll('DIR', dir));
  }
  return dir;
}
