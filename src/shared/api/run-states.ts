/**
 * The run states (CONTRACT.md §5), shared by the hub, the daemon, the CLI and the console. The moves
 * between them are the hub's (src/hub/runs/state.ts).
 *
 *   queued ─► offered ─► assigned ─► running ⇄ awaiting_input ─► succeeded | failed | cancelled | terminated
 *   queued ─► assigned (a run in a workspace goes straight to its workspace's daemon)
 *   running / awaiting_input ─► lost (lease expired)
 *
 * `assigned`: a daemon holds the run (it won the offer, or it is the workspace's daemon) and has
 * been sent it, but has not reported it started yet.
 */
export const RUN_STATES = [
  'queued',
  'offered',
  'assigned',
  'running',
  'awaiting_input',
  'succeeded',
  'failed',
  'cancelled',
  'terminated',
  'lost',
] as const;
export type RunState = (typeof RUN_STATES)[number];

/**
 * A run in one of these has ended: no daemon works on it, and it changes only when a person acts
 * (`runs/resume` for failed, cancelled and lost; `runs/force_terminate` for lost). A watcher stops
 * here, and a run's slot, review and children are released.
 */
export const TERMINAL_STATES: ReadonlySet<RunState> = new Set([
  'succeeded',
  'failed',
  'cancelled',
  'terminated',
  'lost',
]);

export const isTerminal = (state: string): boolean => TERMINAL_STATES.has(state as RunState);

/** States in which a run is working (a daemon runs it or it waits for a review). */
const ACTIVE: ReadonlySet<RunState> = new Set(['running', 'awaiting_input']);

/**
 * How long a run has worked: the time its history spends `running` or `awaiting_input`, summed over
 * its attempts, so the time it sat queued, failed or cancelled before a resume does not count.
 * `now` closes a span still open.
 */
export function activeTime(history: readonly { at: number; state: RunState }[], now: number): number {
  let total = 0;
  for (let i = 0; i < history.length; i++) {
    const e = history[i]!;
    if (!ACTIVE.has(e.state)) continue;
    total += Math.max(0, (history[i + 1]?.at ?? now) - e.at);
  }
  return total;
}
