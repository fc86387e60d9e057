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
