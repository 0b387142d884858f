// Every tracked source file opens with a comment saying what it is for
// (scripts/check-headers.mjs): the tree as it is, and a planted file without one.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../packages/decom/test/helpers/temp.js';
// @ts-expect-error: a plain ESM script of the repository, without type declarations
import { filesWithoutHeader } from '../scripts/check-headers.mjs';

const SCRIPT = join(import.meta.dirname, '..', 'scripts', 'check-headers.mjs');

describe('first comments', () => {
  it('every tracked source file of the tree has one', () => {
    expect(filesWithoutHeader()).toEqual([]);
  });

  it('a file without one is named, and the check fails', () => {
    const root = tempDir('decom-headers-');
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: root });
    git('init', '-q');
    mkdirSync(join(root, 'src'));
    writeFileSync(join(root, 'src', 'good.ts'), '// What good.ts is for.\nexport const a = 1;\n');
    writeFileSync(join(root, 'src', 'bad.ts'), "import { a } from './good.js';\nexport const b = a;\n");
    writeFileSync(join(root, 'run.sh'), '#!/bin/sh\necho no comment\n');
    mkdirSync(join(root, 'fixtures'));
    writeFileSync(join(root, 'fixtures', 'recorded.yaml'), 'a: 1\n');
    git('add', '.');
    expect(filesWithoutHeader(root)).toEqual(['run.sh', 'src/bad.ts']);
    const r = spawnSync(process.execPath, [SCRIPT, root], { encoding: 'utf8' });
    expect([r.stdout, r.status]).toEqual(['run.sh\nsrc/bad.ts\n', 1]);
  });
});
