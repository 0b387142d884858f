// The one way a test makes a temporary directory: under the system's temp dir, removed
// when the test file that made it ends, whether it was made in a test, a hook or a
// describe's body. Nothing is left in /tmp.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
