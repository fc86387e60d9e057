/**
 * Live data by polling (docs/console.md "Live updates"): a load runs at once, then again `intervalMs`
 * after the previous one finished (never two at a time), is paused while the tab is hidden and runs at
 * once when it shows again. A newer load aborts an older one, so a slow reply never overwrites a newer.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';

export interface Live<T> {
  data: T | undefined;
  error: ApiError | null;
  /** True until the first load settled. */
  loading: boolean;
  refresh(): void;
}

export function useLive<T>(
  load: (signal: AbortSignal) => Promise<T>,
  deps: readonly unknown[],
  intervalMs: number | null,
): Live<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [kick, setKick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  // New deps: forget the old data (another run, another realm).
  useEffect(() => {
    setData(undefined);
    setError(null);
    setLoading(true);
  }, deps);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | null = null;
    let ctl: AbortController | null = null;
    const run = async () => {
      if (timer) clearTimeout(timer);
      timer = null;
      ctl?.abort();
      const mine = new AbortController();
      ctl = mine;
      try {
        const value = await loadRef.current(mine.signal);
        if (stopped || mine.signal.aborted) return;
        setData(value);
        setError(null);
      } catch (err) {
        if (stopped || mine.signal.aborted) return;
        setError(err instanceof ApiError ? err : new ApiError('error', (err as Error).message, 0));
      }
      setLoading(false);
      if (ctl === mine) ctl = null;
      schedule();
    };
    const schedule = () => {
      if (stopped || intervalMs === null || document.hidden) return;
      timer = setTimeout(run, intervalMs);
    };
    const onVisibility = () => {
      if (document.hidden) {
        if (timer) clearTimeout(timer);
        timer = null;
      } else if (intervalMs !== null && !ctl) void run();
    };
    document.addEventListener('visibilitychange', onVisibility);
    void run();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      ctl?.abort();
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [...deps, intervalMs, kick]);

  const refresh = useCallback(() => setKick((k) => k + 1), []);
  return { data, error, loading, refresh };
}

/** The current time, ticking every `ms` while the tab is visible (durations of live runs). */
export function useNow(ms = 1000, active = true): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) {
      setNow(Date.now());
      return;
    }
    const id = setInterval(() => {
      if (!document.hidden) setNow(Date.now());
    }, ms);
    return () => clearInterval(id);
  }, [ms, active]);
  return now;
}
