export interface BackoffOptions {
  /** Delay ceiling of the first retry (ms). */
  baseMs: number;
  /** Largest delay (ms). */
  capMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 500, capMs: 30_000 };

/**
 * Exponential backoff with full jitter: a uniformly random delay in [0, min(cap, base·2^attempt)).
 * Full jitter spreads reconnecting daemons out after a hub restart instead of having them return in
 * waves. Pure: pass `random` to make it deterministic.
 */
export function backoffDelay(
  attempt: number,
  opts: BackoffOptions,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(opts.capMs, opts.baseMs * 2 ** Math.min(Math.max(attempt, 0), 30));
  return Math.floor(random() * ceiling);
}
