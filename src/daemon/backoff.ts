import { SERVICE_RESTART } from '../shared/protocol.js';

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

/** The ceiling while the hub that closed the tunnel said it was restarting. */
export const RESTART_CAP_MS = 5_000;

/**
 * The backoff for the dials after a tunnel closed with `closeCode`: a hub that said it is restarting
 * (1012) is expected back within seconds, so the ceiling stops at RESTART_CAP_MS instead of growing
 * to the cap for an outage; daemons then return soon after it does, still spread by the jitter.
 */
export function reconnectBackoff(opts: BackoffOptions, closeCode: number | null): BackoffOptions {
  return closeCode === SERVICE_RESTART ? { ...opts, capMs: Math.min(opts.capMs, RESTART_CAP_MS) } : opts;
}
