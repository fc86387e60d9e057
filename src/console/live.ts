/**
 * Live data (docs/console.md "Live updates"). With a `stream` (a run's or a realm's server-sent
 * events, CONTRACT.md §14), a load runs at once and again when the hub pushes a change it `wakes` on
 * (by default every event; changes close together load once, at most every `SETTLE_MS`); nothing
 * polls. Data an event carries itself (a log line) is handed to `onEvent` instead of loaded again, so
 * a page follows a busy run with a handful of requests. Without a stream, or while it cannot be
 * opened, a load runs again `intervalMs` after the previous one finished. Either way never two loads
 * at a time, paused while the tab is hidden and run at once when it shows again. A change during a
 * load runs one more load after it, rather than aborting it: changes arriving faster than a slow hub
 * answers would otherwise abort every load and never show anything.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { followEvents, type StreamEvent } from '../shared/api/event-stream.js';
import { ApiError, session } from './api.js';
import type { Run } from './types.js';

/** A run's event stream (its state, history and log lines), for `useLive`'s `stream`. */
export const runEvents = (runId: string) => `/v1/runs/${encodeURIComponent(runId)}/events`;
/** A realm's event stream (the state of each of its runs that changes). */
export const realmEvents = (realmId: string) => `/v1/realms/${encodeURIComponent(realmId)}/events`;

/** Changes pushed within this long of the first cause one load. */
const SETTLE_MS = 150;

/** `minGapMs` of the lists that follow a realm's stream. */
const LIST_GAP_MS = 1_000;

/** A stream to follow (`useLive`): its path, which of its events load again, and what it carries. */
export interface LiveStream {
  path: string;
  /** Whether an event loads again (default: every event). */
  wakes?(e: StreamEvent): boolean;
  /** Each event as it comes, woken or not (while the tab is hidden too). */
  onEvent?(e: StreamEvent): void;
  /**
   * Loads woken by events start at least this long after the previous one started (a list of a busy
   * realm, whose runs change many times a second, loads about once a second).
   */
  minGapMs?: number;
}

/** A run's stream, loading again on the kinds of its events named (`state`, `history`, `log`). */
export const runStream = (runId: string, ...kinds: string[]): LiveStream => ({
  path: runEvents(runId),
  wakes: (e) => kinds.includes(e.event),
});

/**
 * A realm's stream for a list of its runs: loading again on the changes of the runs `which` names
 * (every run by default), at most once a second.
 */
export const realmRunsStream = (
  realmId: string,
  which: (run: Partial<Run>) => boolean = () => true,
): LiveStream => ({
  path: realmEvents(realmId),
  minGapMs: LIST_GAP_MS,
  wakes: (e) => which(e.data as Partial<Run>),
});

interface Shared {
  listeners: Set<Listener>;
  stop: AbortController;
  /** Whether the stream is open (else listeners poll). */
  open: boolean;
}
interface Listener {
  change(e: StreamEvent): void;
  state(open: boolean): void;
}
/** One connection per stream path, shared by every component that follows it. */
const streams = new Map<string, Shared>();

function subscribe(path: string, l: Listener): () => void {
  let s = streams.get(path);
  if (!s) {
    const shared: Shared = { listeners: new Set(), stop: new AbortController(), open: false };
    const tell = (open: boolean) => {
      shared.open = open;
      for (const x of shared.listeners) x.state(open);
    };
    void followEvents(path, {
      token: session.token(),
      signal: shared.stop.signal,
      onOpen: () => tell(true),
      onEvent(e) {
        for (const x of shared.listeners) x.change(e);
        return false;
      },
    })
      .catch(() => {})
      // Refused, unreachable, or ended (a run that ended): the listeners go back to their interval.
      .finally(() => {
        if (streams.get(path) === shared) streams.delete(path);
        tell(false);
      });
    streams.set(path, shared);
    s = shared;
  }
  const shared = s;
  shared.listeners.add(l);
  if (shared.open) l.state(true);
  return () => {
    shared.listeners.delete(l);
    if (shared.listeners.size === 0) {
      streams.delete(path);
      shared.stop.abort();
    }
  };
}

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
  stream: string | LiveStream | null = null,
): Live<T> {
  const follow: LiveStream | null = typeof stream === 'string' ? { path: stream } : stream;
  const path = follow?.path ?? null;
  // The stream's callbacks as of the last render (a new object each render must not reopen it).
  const followRef = useRef(follow);
  followRef.current = follow;
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
    /** A change came during the load in flight: load again once it is done. */
    let again = false;
    /** A change's load is due `SETTLE_MS` after it: the changes until then join it. */
    let settling = false;
    /** When the last load started (`performance.now()`). */
    let startedAt = Number.NEGATIVE_INFINITY;
    const run = async () => {
      if (timer) clearTimeout(timer);
      timer = null;
      settling = false;
      startedAt = performance.now();
      if (ctl) {
        again = true;
        return;
      }
      const mine = new AbortController();
      ctl = mine;
      let failed = false;
      try {
        const value = await loadRef.current(mine.signal);
        if (stopped || mine.signal.aborted) return;
        setData(value);
        setError(null);
      } catch (err) {
        if (stopped || mine.signal.aborted) return;
        failed = true;
        setError(err instanceof ApiError ? err : new ApiError('error', (err as Error).message, 0));
      }
      setLoading(false);
      if (ctl === mine) ctl = null;
      if (again && !stopped) {
        again = false;
        void run();
        return;
      }
      schedule(failed);
    };
    // While the stream is open, loads follow its changes instead of the interval; a load that failed
    // is tried again after the interval all the same, since no change may come to retry it.
    let pushed = false;
    const schedule = (retry = false) => {
      if (stopped || intervalMs === null || document.hidden || (pushed && !retry)) return;
      timer = setTimeout(run, intervalMs);
    };
    const unsubscribe = path
      ? subscribe(path, {
          change(e) {
            if (stopped) return;
            const f = followRef.current;
            f?.onEvent?.(e);
            if (document.hidden || settling || (f?.wakes && !f.wakes(e))) return;
            if (timer) clearTimeout(timer);
            settling = true;
            const gap = startedAt + (f?.minGapMs ?? 0) - performance.now();
            timer = setTimeout(run, Math.max(SETTLE_MS, gap));
          },
          state(open) {
            pushed = open;
            if (!open && !ctl && !timer) schedule();
          },
        })
      : null;
    const onVisibility = () => {
      if (document.hidden) {
        if (timer) clearTimeout(timer);
        timer = null;
      } else if ((intervalMs !== null || pushed) && !ctl) void run();
    };
    document.addEventListener('visibilitychange', onVisibility);
    void run();
    return () => {
      stopped = true;
      unsubscribe?.();
      if (timer) clearTimeout(timer);
      ctl?.abort();
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [...deps, intervalMs, path, kick]);

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
