import type { Logger } from './logger.js';

/** How long a hub or daemon finishes in-flight work after SIGTERM before it cuts what is left. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

export interface StopOptions {
  /** Finishes in-flight work and releases everything, in order. */
  graceful(): Promise<void>;
  /** Cuts what is left (open connections, pools); called once the grace period is over. */
  force(): void | Promise<void>;
  graceMs: number;
  /** How long `force` may take before the stop gives up waiting (default 2 s). */
  forceMs?: number;
  log: Logger;
  what: string;
}

/**
 * A stop that always ends: `graceful` gets `graceMs`; after it `force` cuts the rest, and after
 * `forceMs` more the stop returns whatever is still pending (the caller then exits the process).
 * Never rejects.
 */
export async function stopWithin(opts: StopOptions): Promise<'graceful' | 'forced' | 'abandoned'> {
  const timer = (ms: number) => {
    let t: NodeJS.Timeout | undefined;
    const p = new Promise<'timeout'>((resolve) => {
      t = setTimeout(() => resolve('timeout'), ms);
    });
    return { p, clear: () => clearTimeout(t) };
  };
  const done = opts.graceful().then(
    () => 'done' as const,
    (err: unknown) => {
      opts.log.error({ err }, `${opts.what}: error while stopping`);
      return 'done' as const;
    },
  );
  const grace = timer(opts.graceMs);
  const first = await Promise.race([done, grace.p]);
  grace.clear();
  if (first === 'done') return 'graceful';
  opts.log.warn(
    { grace_ms: opts.graceMs },
    `${opts.what}: in-flight work did not finish in time; cutting it`,
  );
  try {
    await opts.force();
  } catch (err) {
    opts.log.error({ err }, `${opts.what}: error while forcing the stop`);
  }
  const last = timer(opts.forceMs ?? 2_000);
  const second = await Promise.race([done, last.p]);
  last.clear();
  if (second === 'done') return 'forced';
  opts.log.warn(`${opts.what}: still not stopped; leaving the rest to the process exit`);
  return 'abandoned';
}
