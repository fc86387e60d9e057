/**
 * Delivery policy as pure functions: how an attempt's outcome is classified and when the next
 * attempt is due.
 */
export type Outcome = 'success' | 'retry' | 'permanent';

/**
 * 2xx: success. 408, 429, 5xx, timeouts and network errors: worth retrying. Any other status
 * (3xx — redirects are not followed —, 4xx) and refused destinations: permanent.
 */
export function classify(status: number | null): Outcome {
  if (status === null) return 'retry';
  if (status >= 200 && status < 300) return 'success';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  return 'permanent';
}

/**
 * Exponential backoff with "equal jitter": the n-th retry (n ≥ 1) waits between half and all of
 * min(cap, base · 2^(n-1)). `random` is in [0, 1).
 */
export function backoffMs(attempt: number, baseMs: number, capMs: number, random: number): number {
  const d = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(d / 2 + (random * d) / 2);
}
