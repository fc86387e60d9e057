/**
 * In-process notice that review messages arrived (the messages themselves wait in `hug_messages`).
 * The runner watches the reviews it waits for; `hug/deliver` calls `notify`. A notice that comes while
 * the watcher is busy is kept, so the next `next` returns at once; `maxWaitMs` bounds every wait, so a
 * message is read even if a notice were missed.
 */
export class HugInbox {
  private readonly watched = new Map<string, { dirty: boolean; wake: (() => void) | null }>();

  watch(reviewId: string): void {
    if (!this.watched.has(reviewId)) this.watched.set(reviewId, { dirty: false, wake: null });
  }

  unwatch(reviewId: string): void {
    this.watched.get(reviewId)?.wake?.();
    this.watched.delete(reviewId);
  }

  /** Messages for `reviewId` were queued (only watched reviews are remembered). */
  notify(reviewId: string): void {
    const w = this.watched.get(reviewId);
    if (!w) return;
    w.dirty = true;
    w.wake?.();
  }

  /** Resolves on a notice for `reviewId` (at once if one came meanwhile), an abort, or after `maxWaitMs`. */
  next(reviewId: string, signal: AbortSignal, maxWaitMs: number): Promise<void> {
    const w = this.watched.get(reviewId);
    if (!w || w.dirty || signal.aborted) {
      if (w) w.dirty = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        w.wake = null;
        w.dirty = false;
        resolve();
      };
      const timer = setTimeout(done, maxWaitMs);
      timer.unref();
      signal.addEventListener('abort', done);
      w.wake = done;
    });
  }
}
