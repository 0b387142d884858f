/** Commands at once on one connection, over either SSH transport: well under sshd's MaxSessions. */
export const DEFAULT_MAX_CHANNELS = 4;

/**
 * At most `max` tasks at once, the rest wait in order. sshd refuses sessions past
 * its MaxSessions (10 by default), so decom stays well under it per connection.
 */
export class Limiter {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new Error(`channel limit must be a positive integer, got ${max}`);
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((go) => this.waiting.push(go));
    else this.running++;
    try {
      return await task();
    } finally {
      // Hand the slot straight to the next waiter (running stays the same), or free it.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
