/**
 * The one host pool: every command (verify, audit, its fixes, run) works on at most
 * `limit` hosts at once, so at most that many SSH connections are open. The
 * operator's machine pays a key exchange per connection, and sshd's MaxStartups
 * drops handshakes past its limit when hosts sit behind one bastion; 50 at once still
 * probes a 50-node fleet in one wave.
 */
import { count } from './flags.js';

export const DEFAULT_FORKS = 50;

/** --forks: hosts worked on at once (the default bound when not given). */
export const forksOf = (v: string | undefined): number => count('--forks', v, 1) ?? DEFAULT_FORKS;

/** Runs `work` on every item, at most `limit` at a time, keeping their order in the results. */
export async function pool<T, R>(items: readonly T[], limit: number, work: (x: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}
