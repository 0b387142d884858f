/**
 * A file on the node copied to the operator's machine over the exec channel, in bounded
 * chunks: its size and SHA-256 read on the node with the first chunk, then `dd | base64`
 * one chunk per round trip, the copy checked against that sum. The same path with and without sudo
 * (SFTP would act as the login user), and a file of any size never sits in memory whole.
 * The etcd snapshot and the node's backup both cross this way.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { shQuote as q } from '../util/run.js';

/** Runs a script on the node and answers its stdout; throws (one line) when it fails. */
export type NodeExec = (script: string) => Promise<string>;

/** How much of the file one round trip carries: 8 MiB, about 11 MB of base64 on the channel. */
export const FETCH_CHUNK = 8 * 1024 * 1024;

/**
 * Copies `nodePath` to `localPath` (created 0600, replaced if there), checked by size and
 * SHA-256. A failed or mismatched copy is removed and the error names the node's path.
 * `before` runs on the node first, in the same exec as the size, the sum and the first
 * chunk (making the file, say: its failure fails the copy); `after` in the exec that reads
 * the last chunk (removing it; its failure is silent), and `after: true` says it ran.
 */
export async function fetchFile(exec: NodeExec, nodePath: string, localPath: string, o: { before?: string; after?: string } = {}): Promise<{ bytes: number; sha256: string; after: boolean }> {
  const fail = (why: string) => new Error(`copying ${nodePath} from the node: ${why}`);
  const ask = (script: string) => exec(script).catch((e: unknown) => Promise.reject(fail((e as Error).message)));
  const chunk = (i: number) => `dd if=${q(nodePath)} bs=${FETCH_CHUNK} skip=${i} count=1 status=none | base64 -w 0 || exit 1`;
  // After the last chunk: a line that cannot be base64, then the script.
  const after = o.after ? `\nprintf '\\n#after\\n'; ( ${o.after}\n) >/dev/null 2>&1` : '';
  const first = await ask(
    `${o.before ? `( ${o.before}\n) || exit 1\n` : ''}S=$(wc -c < ${q(nodePath)}) && H=$(sha256sum < ${q(nodePath)} | cut -d' ' -f1) || exit 1\nprintf '%s\\n%s\\n' "$S" "$H"\n${chunk(0)}${after ? `\n[ "$S" -gt ${FETCH_CHUNK} ] || {${after}\n}` : ''}`,
  );
  const [size = '', sum = '', firstChunk = '', mark = ''] = first.split('\n');
  const bytes = Number(size.trim());
  if (!/^\d+$/.test(size.trim()) || !/^[0-9a-f]{64}$/.test(sum.trim())) throw fail(`the node answered no size and SHA-256 sum (${JSON.stringify(`${size} ${sum}`.slice(0, 80))})`);
  let ran = mark === '#after';
  const fd = openSync(localPath, 'w', 0o600);
  const hash = createHash('sha256');
  let copied = 0;
  try {
    try {
      for (let i = 0; i * FETCH_CHUNK < bytes; i++) {
        let b64 = firstChunk;
        if (i > 0) {
          const last = (i + 1) * FETCH_CHUNK >= bytes;
          const [text = '', m = ''] = (await ask(`${chunk(i)}${last ? after : ''}`)).split('\n');
          b64 = text;
          ran ||= m === '#after';
        }
        const piece = Buffer.from(b64.trim(), 'base64');
        hash.update(piece);
        writeSync(fd, piece);
        copied += piece.length;
      }
    } finally {
      closeSync(fd);
    }
    if (copied !== bytes) throw fail(`${copied} bytes copied, the node said ${bytes}`);
    if (hash.digest('hex') !== sum.trim()) throw fail('the copy does not match its SHA-256 sum on the node');
  } catch (e) {
    rmSync(localPath, { force: true });
    throw e;
  }
  return { bytes, sha256: sum.trim(), after: ran };
}
