import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import { isTerminal, type RunState } from '../../shared/api/run-states.js';
import { conflict } from '../../shared/errors.js';
import { merged } from '../../shared/merged.js';
import type { Tx } from '../context.js';
import { addHistory, type HistoryEntry } from './history.repo.js';
import { json } from './run.mapper.js';
import { loadRun, moveRow, mustMoveRow, type RunChanges, type RunGuard } from './runs.repo.js';
import { canMove } from './state.js';

/**
 * The one way a run changes state. `transition` checks the state table (state.ts), moves the row
 * with one conditional UPDATE (still in its state, with its lease epoch, and `guard`), writes the
 * history entry with its event, and when the run ends, tells its parent's daemon and runs the
 * `runEnded` hooks (reviews close) — all in the caller's transaction. It answers whether the move
 * applied: false means the run changed meanwhile (another process, a daemon report, the sweeper).
 * Two moves save a statement and go through the same check and record: a new run offered as it is
 * written (`movedAtBirth`), and a claim that moves its run with the statement that finds it (`movedBy`).
 */

export interface Move {
  /** Columns that change with the state (`updated_at` is set here). */
  set?: RunChanges;
  /** Conditions beside "still in its state with its lease epoch". */
  guard?: RunGuard;
  /** The history entry; its type defaults by the new state (DEFAULT_ENTRY). */
  history?: Partial<HistoryEntry>;
  /**
   * The row is written with the run's other moves of this transaction (`RunWrite`), not at once; a
   * run that changed meanwhile then refuses the transaction rather than answering false.
   */
  with?: RunWrite;
}

/**
 * The row of a run that several moves and steps change in one transaction (a daemon's report with
 * the events that follow it), written once: the state the last move leaves it in and every column
 * the moves set. The write checks that the row is still as the report found it: in its state with its
 * lease epoch, and every other column a report reads (runs.repo.ts `mustMoveRow`), whether the row was
 * read in this transaction or is the row as this process last wrote it (runs/daemon.service.ts). Each
 * move is checked against the state table and writes its history entry as it is made. A run that
 * changed meanwhile refuses the whole transaction (`RUN_CHANGED`): on PostgreSQL the write does not
 * wait for its answer but leaves with the transaction's next statement, which then fails.
 */
export class RunWrite {
  private to: RunState;
  private readonly set: RunChanges = {};
  private changed = false;
  /** Whether a write was made. */
  wrote = false;

  constructor(private readonly run: RunsTable) {
    this.to = run.state;
  }

  /** A move to `to` (or a step in the same state) and the columns it sets. */
  add(to: RunState, set: RunChanges): void {
    this.to = to;
    Object.assign(this.set, set);
    this.changed = true;
  }

  /** Writes what the moves since the last write changed. */
  async write(db: Kysely<DB>): Promise<void> {
    if (!this.changed) return;
    this.changed = false;
    // A second write finds the row as the first left it, which only this transaction has seen.
    await mustMoveRow(db, this.run, this.to, this.set, RUN_CHANGED, !this.wrote);
    this.wrote = true;
  }

  /** The row as the writes leave it. */
  row(): RunsTable {
    return { ...this.run, ...this.set, state: this.to };
  }
}

/** Why a move that found its run changed refuses its transaction. */
export const RUN_CHANGED = 'the run changed meanwhile; try again';

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

function mayMove(from: RunState, to: RunState): void {
  if (!canMove(from, to)) throw conflict(`a ${from} run cannot become ${to}`, { state: from, to });
}

export async function transition(tx: Tx, run: RunsTable, to: RunState, move: Move = {}): Promise<boolean> {
  mayMove(run.state, to);
  const now = tx.hub.now();
  const set: RunChanges = { updated_at: now, ...move.set };
  if (isTerminal(to)) {
    set.current_pid = null;
    if (to !== 'lost') set.completed_at ??= now;
  }
  if (move.with) {
    if (move.guard) throw new Error('a move written with others takes no guard of its own');
    move.with.add(to, set);
    // The run's end is written before its hooks run: they see the row as it ends.
    if (isTerminal(to)) await move.with.write(tx.db);
  } else if (!(await moveRow(tx.db, run, to, set, move.guard))) {
    return false;
  }
  await recordMove(tx, { ...run, ...set, state: to }, move.history);
  return true;
}

/** What follows every move: its history entry, and when the run ends, its end's consequences. */
async function recordMove(tx: Tx, after: RunsTable, history: Partial<HistoryEntry> = {}): Promise<void> {
  const entry: HistoryEntry = merged(merged({ phase: after.current_phase }, history), {
    type: history.type ?? DEFAULT_ENTRY[after.state],
  });
  await addHistory(tx.db, tx.hub, after, after.state, entry);
  if (isTerminal(after.state)) await ended(tx, after);
}

/**
 * A move made by the statement that found the run: a claim that wins its queue item moves the item's
 * run with a conditional update of its own, which answers the row (queue.repo.ts `claimQueueItems`;
 * on PostgreSQL within the claim's statement). `after` is the row as that statement left it, moved
 * from `from`. Checked against the state table like every move (a refused
 * one throws, which undoes the transaction) and recorded as `transition` records its moves.
 */
export async function movedBy(
  tx: Tx,
  from: RunState,
  after: RunsTable,
  history?: Partial<HistoryEntry>,
): Promise<void> {
  mayMove(from, after.state);
  await recordMove(tx, after, history);
}

/**
 * A new run that moves in the transaction that writes it (offered as it is written) is inserted in
 * the state that move leaves it in, rather than inserted and then moved: a statement fewer. The move
 * is checked against the state table like every move. Answers the row to insert and the move's
 * history entry, which goes after the run's `run.queued`.
 */
export function movedAtBirth(
  row: RunsTable,
  to: RunState,
  set: RunChanges,
): { row: RunsTable; entry: HistoryEntry } {
  mayMove(row.state, to);
  if (isTerminal(to)) throw new Error('a run does not end in the transaction that writes it');
  const after: RunsTable = { ...row, ...set, state: to };
  return { row: after, entry: { phase: after.current_phase, type: DEFAULT_ENTRY[to] } };
}

/** Like `transition`, but a run that changed meanwhile is a `conflict` for the caller to answer. */
export async function mustTransition(tx: Tx, run: RunsTable, to: RunState, move: Move = {}): Promise<void> {
  if (!(await transition(tx, run, to, move))) throw conflict(RUN_CHANGED);
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
