import type { RunState } from '../../shared/api/run-states.js';

/**
 * The moves between run states (CONTRACT.md §5), as data. Every state change of a run goes through
 * `transition` (lifecycle.ts), which refuses a move this table does not allow.
 *
 *   queued ─► offered ─► assigned ─► running ⇄ awaiting_input ─► succeeded | failed | cancelled | terminated
 *   queued ─► assigned (workspace runs); offered/assigned ─► queued (offer withdrawn, claimer gone)
 *   running / awaiting_input ─► lost (lease expired)
 *   failed | cancelled | lost ─► queued (runs/resume); lost ─► terminated (runs/force_terminate)
 */
const MOVES: Record<RunState, readonly RunState[]> = {
  // A queued run is offered (no workspace) or assigned to its workspace's daemon; it can be
  // cancelled or force-terminated before any daemon took it.
  queued: ['offered', 'assigned', 'failed', 'cancelled', 'terminated'],
  // An offer is won (assigned), or goes back to the queue when nobody claimed it.
  offered: ['queued', 'assigned', 'failed', 'cancelled', 'terminated'],
  // Its daemon starts it, or ends it before starting (cancel, a failure); a claimer that never
  // started it before its lease expired gives it back to the queue.
  assigned: ['queued', 'running', 'failed', 'cancelled', 'terminated'],
  running: ['awaiting_input', 'succeeded', 'failed', 'cancelled', 'terminated', 'lost'],
  awaiting_input: ['running', 'failed', 'cancelled', 'terminated', 'lost'],
  failed: ['queued'],
  cancelled: ['queued'],
  lost: ['queued', 'terminated'],
  succeeded: [],
  terminated: [],
};

export function canMove(from: RunState, to: RunState): boolean {
  return MOVES[from].includes(to);
}

export const RESUMABLE: readonly RunState[] = ['failed', 'cancelled', 'lost'];
