import type { RunState } from '../../shared/api/run-states.js';

/**
 * Run states and the moves between them (CONTRACT.md §5), as data. Every state change of a run goes
 * through `canMove`; an illegal move answers `conflict`.
 *
 *   queued ─► offered ─► running ⇄ awaiting_input ─► succeeded | failed | cancelled | terminated
 *   running / awaiting_input ─► lost (lease expired)
 *   failed | cancelled | lost ─► queued (runs/resume)
 */
const MOVES: Record<RunState, readonly RunState[]> = {
  // A queued run is offered (no workspace) or starts on its workspace's daemon; it can be cancelled or
  // force-terminated before any daemon took it.
  queued: ['offered', 'running', 'failed', 'cancelled', 'terminated'],
  // An offer that nobody claimed goes back to the queue.
  offered: ['queued', 'running', 'failed', 'cancelled', 'terminated'],
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
