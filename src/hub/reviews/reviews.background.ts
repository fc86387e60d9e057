import type { Hub } from '../context.js';
import { expireReviews } from './reviews.service.js';

/**
 * The review expiry pass in one hub process, every `everyMs`: open reviews past their deadline close
 * as `expired` and their runs fail. Safe with several hub processes (conditional UPDATEs). Returns a
 * stop function that waits for a pass in progress.
 */
export function startReviewExpiry(hub: Hub, everyMs: number): () => Promise<void> {
  let running: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    if (running) return;
    running = expireReviews(hub)
      .catch((err) => hub.log.error({ err }, 'review expiry failed'))
      .finally(() => {
        running = null;
      });
  }, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
