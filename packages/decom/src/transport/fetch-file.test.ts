// fetchFile on files of this machine (the "node" runs its scripts by sh): chunks of at most
// 8 MiB per round trip, and a copy that does not match the node's sum is refused and removed.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers/temp.js';
import { FETCH_CHUNK, fetchFile } from './fetch-file.js';

const sh = (script: string): string => execFileSync('sh', ['-c', script], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });

describe('fetchFile', () => {
  it('copies a file in chunks of 8 MiB, one round trip each, checked by its size and SHA-256', async () => {
    const dir = tempDir('decom-fetch-');
    sh(`head -c ${2 * FETCH_CHUNK + 5} /dev/urandom > '${dir}/node.db'`);
    const answers: number[] = [];
    const got = await fetchFile(async (script) => {
      const out = sh(script);
      answers.push(out.length);
      return out;
    }, `${dir}/node.db`, join(dir, 'copy.db'));
    expect(got.bytes).toBe(2 * FETCH_CHUNK + 5);
    expect(readFileSync(join(dir, 'copy.db')).equals(readFileSync(join(dir, 'node.db')))).toBe(true);
    // The size and sum, then three chunks, none more than 8 MiB as base64.
    expect(answers).toHaveLength(4);
    expect(Math.max(...answers)).toBeLessThanOrEqual((FETCH_CHUNK / 3) * 4 + 4);
  });

  it('refuses a copy that does not match the sum the node gave, names the path, and leaves no local file', async () => {
    const dir = tempDir('decom-fetch-');
    writeFileSync(join(dir, 'node.db'), 'the snapshot');
    // A chunk that differs from what the node summed (the file changed between the two).
    const exec = async (script: string) => (script.startsWith('dd ') ? Buffer.from('the snapshoT').toString('base64') : sh(script));
    await expect(fetchFile(exec, `${dir}/node.db`, join(dir, 'copy.db'))).rejects.toThrow(`copying ${dir}/node.db from the node: the copy does not match its SHA-256 sum on the node`);
    expect(existsSync(join(dir, 'copy.db'))).toBe(false);
    await expect(fetchFile(async () => 'no such file\n', '/nowhere', join(dir, 'copy.db'))).rejects.toThrow('copying /nowhere from the node: the node answered no size and SHA-256 sum');
  });
});
