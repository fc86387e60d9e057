import { RateLimitedError } from '../../shared/errors.js';
import type { PasswordGate, PasswordGateStats } from '../ports.js';

/**
 * A bound on password hashing (scrypt: 32 MiB and a thread of libuv's small pool per hash). At most
 * `concurrency` hashes run at once per process; up to `queue` more wait in order; beyond that a
 * caller is answered `rate_limited` at once, so a burst of sign-ins never takes the memory or the
 * thread pool (also used by file and DNS work) from the rest of the hub.
 */
export function createPasswordGate(opts: { concurrency: number; queue: number }): PasswordGate {
  const waiting: (() => void)[] = [];
  const stats: PasswordGateStats = { running: 0, waiting: 0, peak: 0, refused: 0 };

  const enter = (): Promise<void> | null => {
    if (stats.running < opts.concurrency) {
      stats.running++;
      stats.peak = Math.max(stats.peak, stats.running);
      return null;
    }
    if (waiting.length >= opts.queue) {
      stats.refused++;
      throw new RateLimitedError('too many sign-ins at once; try again in a moment', 1000);
    }
    // The slot is handed over by leave(), so `running` never drops between two holders.
    return new Promise((resolve) => {
      waiting.push(resolve);
      stats.waiting = waiting.length;
    });
  };

  const leave = () => {
    const next = waiting.shift();
    stats.waiting = waiting.length;
    if (next) next();
    else stats.running--;
  };

  return {
    async run(work) {
      const queued = enter();
      if (queued) await queued;
      try {
        return await work();
      } finally {
        leave();
      }
    },
    stats: () => ({ ...stats }),
  };
}
