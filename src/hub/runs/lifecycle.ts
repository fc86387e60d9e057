import type { RunsTable } from '../../db/schema.js';
import { isTerminal, type RunState } from '../../shared/api/run-states.js';
import { conflict } from '../../shared/errors.js';
import type { Tx } from '../context.js';
import { addHistory, type HistoryEntry } from './history.repo.js';
import { json } from './run.mapper.js';
import { loadRun, moveRow, type RunChanges, type RunGuard } from './runs.repo.js';
import { canMove } from './state.js';

/**
 * The one way a run changes state. `transition` checks the state table (state.ts), moves the row
 * with one conditional UPDATE (still in its state, with its lease epoch, and `guard`), writes the
 * history entry with its event, and when the run ends, tells its parent's daemon and runs the
 * `runEnded` hooks (reviews close) — all in the caller's transaction. It answers whether the move
 * applied: false means the run changed meanwhile (another process, a daemon report, the sweeper).
 */

export interface Move {
  /** Columns that change with the state (`updated_at` is set here). */
  set?: RunChanges;
  /** Conditions beside "still in its state with its lease epoch". */
  guard?: RunGuard;
  /** The history entry; its type defaults by the new state (DEFAULT_ENTRY). */
  history?: Partial<HistoryEntry>;
}

/** The history entry a move writes unless the caller names another. */
const DEFAULT_ENTRY: Record<RunState, string> = {
  queued: 'run.queued',
  offered: 'run.offered',
  assigned: 'run.assigned',
  running: 'run.started',
  awaiting_input: 'run.awaiting_input',
  lost: 'run.lost',
  succeeded: 'run.ended',
  failed: 'run.ended',
  cancelled: 'run.ended',
  terminated: 'run.ended',
};

export async function transition(tx: Tx, run: RunsTable, to: RunState, move: Move = {}): Promise<boolean> {
  if (!canMove(run.state, to)) {
    throw conflict(`a ${run.state} run cannot become ${to}`, { state: run.state, to });
  }
  const now = tx.hub.now();
  const set: RunChanges = { updated_at: now, ...move.set };
  if (isTerminal(to)) {
    set.current_pid = null;
    if (to !== 'lost') set.completed_at ??= now;
  }
  if (!(await moveRow(tx.db, run, to, set, move.guard))) return false;
  const after: RunsTable = { ...run, ...set, state: to };
  await addHistory(tx.db, tx.hub, after, to, {
    phase: after.current_phase,
    ...move.history,
    type: move.history?.type ?? DEFAULT_ENTRY[to],
  });
  if (isTerminal(to)) await ended(tx, after);
  return true;
}

/** Like `transition`, but a run that changed meanwhile is a `conflict` for the caller to answer. */
export async function mustTransition(tx: Tx, run: RunsTable, to: RunState, move: Move = {}): Promise<void> {
  if (!(await transition(tx, run, to, move))) throw conflict('the run changed meanwhile; try again');
}

/**
 * A run ended: its parent's daemon, waiting for it, is told (`runs/child_ended`), and the features
 * that keep something open for a run close it.
 */
async function ended(tx: Tx, run: RunsTable): Promise<void> {
  if (run.parent_run_id) {
    const parent = await loadRun(tx.db, run.parent_run_id);
    if (parent?.daemon_id && !isTerminal(parent.state)) {
      await tx.command(parent.daemon_id, 'runs/child_ended', {
        run_id: parent.run_id,
        child_run_id: run.run_id,
        state: run.state,
        outputs: json<Record<string, unknown>>(run.outputs) ?? {},
        error: run.error,
      });
    }
  }
  for (const hook of tx.hub.runEnded) await hook(tx, run, run.state);
}
