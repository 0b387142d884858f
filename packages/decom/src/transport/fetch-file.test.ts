// fetchFile on files of this machine (the "node" runs its scripts by sh): chunks of at most
// 8 MiB per round trip (the size and sum with the first), a copy that does not match the
// node's sum is refused and removed, and a file made and removed in the copy's own round trips.
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
    // Three chunks, the size and sum with the first, none more than 8 MiB as base64.
    expect(answers).toHaveLength(3);
    expect(Math.max(...answers)).toBeLessThanOrEqual((FETCH_CHUNK / 3) * 4 + 4 + 100);
  });

  it('refuses a copy that does not match the sum the node gave, names the path, and leaves no local file', async () => {
    const dir = tempDir('decom-fetch-');
    writeFileSync(join(dir, 'node.db'), 'the snapshot');
    // A chunk that differs from what the node summed (the file changed between the two).
    const exec = async (script: string) => sh(script).replace(Buffer.from('the snapshot').toString('base64'), Buffer.from('the snapshoT').toString('base64'));
    await expect(fetchFile(exec, `${dir}/node.db`, join(dir, 'copy.db'))).rejects.toThrow(`copying ${dir}/node.db from the node: the copy does not match its SHA-256 sum on the node`);
    expect(existsSync(join(dir, 'copy.db'))).toBe(false);
    await expect(fetchFile(async () => 'no such file\n', '/nowhere', join(dir, 'copy.db'))).rejects.toThrow('copying /nowhere from the node: the node answered no size and SHA-256 sum');
  });

  it('makes the file first and removes it after its last chunk, in the same round trips; a failure to make it fails the copy', async () => {
    const dir = tempDir('decom-fetch-');
    const execs: string[] = [];
    const exec = async (script: string) => (execs.push(script), sh(script));
    const small = await fetchFile(exec, `${dir}/a.tar`, join(dir, 'a.copy'), { before: `printf archive > '${dir}/a.tar'`, after: `rm '${dir}/a.tar'` });
    expect([small.after, execs.length, readFileSync(join(dir, 'a.copy'), 'utf8'), existsSync(`${dir}/a.tar`)]).toEqual([true, 1, 'archive', false]);
    execs.length = 0;
    const big = await fetchFile(exec, `${dir}/b.tar`, join(dir, 'b.copy'), { before: `head -c ${FETCH_CHUNK + 3} /dev/zero > '${dir}/b.tar'`, after: `rm '${dir}/b.tar'` });
    expect([big.after, big.bytes, execs.length, existsSync(`${dir}/b.tar`)]).toEqual([true, FETCH_CHUNK + 3, 2, false]);
    await expect(fetchFile(async (script) => {
      const out = execFileSync('sh', ['-c', `${script}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      return out;
    }, `${dir}/c.tar`, join(dir, 'c.copy'), { before: 'false' })).rejects.toThrow(`copying ${dir}/c.tar from the node:`);
  });
});
