import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import type { DB, Dialect } from '../../db/index.js';
import { TERMINAL_STATES } from '../../shared/api/run-states.js';

/**
 * Retention (SQL only). Each function removes one batch in the caller's transaction and answers
 * what it removed. On PostgreSQL the batch is chosen `FOR UPDATE SKIP LOCKED`, so hub processes
 * running the same pass at once take different rows and each row is removed (and counted) once;
 * SQLite serialises writers, so there the batch is the process's alone anyway.
 */

const TERMINAL = [...TERMINAL_STATES];

// biome-ignore lint/suspicious/noExplicitAny: the batch helpers take any selection of one column
function skipLocked<Q extends SelectQueryBuilder<DB, any, any>>(q: Q, dialect: Dialect): Q {
  return (dialect === 'postgres' ? q.forUpdate().skipLocked() : q) as Q;
}

/** Up to `limit` terminal runs that ended before `cutoff`, oldest first. */
function endedBefore(db: Kysely<DB>, cutoff: number, limit: number) {
  return db
    .selectFrom('runs')
    .select('run_id')
    .where('state', 'in', TERMINAL)
    .where('completed_at', '<', cutoff)
    .orderBy('completed_at')
    .limit(limit);
}

/** What one batch of old runs took with it. */
export interface RunsRemoved {
  runs: number;
  /** The artifact rows that went with the runs, and their digests (the store's files may go too). */
  artifacts: number;
  digests: string[];
  run_history: number;
  run_logs: number;
  log_bytes: number;
  reviews: number;
}

/**
 * Up to `limit` top-level terminal runs that ended before `cutoff`, with their child runs (every
 * run whose root is one of them: children end before their parent does), and with each one's
 * history, logs, reviews (and their submissions) and queue item. Child runs go only with their
 * root, so a tree is never half removed.
 */
export async function removeOldRuns(
  db: Kysely<DB>,
  dialect: Dialect,
  cutoff: number,
  limit: number,
): Promise<RunsRemoved> {
  const roots = await skipLocked(
    endedBefore(db, cutoff, limit).where('parent_run_id', 'is', null),
    dialect,
  ).execute();
  const none: RunsRemoved = {
    runs: 0,
    artifacts: 0,
    digests: [],
    run_history: 0,
    run_logs: 0,
    log_bytes: 0,
    reviews: 0,
  };
  if (roots.length === 0) return none;
  const ids = roots.map((r) => r.run_id);
  const tree = db
    .selectFrom('runs')
    .select('run_id')
    .where((eb) => eb.or([eb('run_id', 'in', ids), eb('root_run_id', 'in', ids)]));
  const logs = await removeLogsOf(db, tree);
  const artifactRows = await db
    .selectFrom('artifacts')
    .select('sha256')
    .where('run_id', 'in', tree)
    .execute();
  const artifacts = await db.deleteFrom('artifacts').where('run_id', 'in', tree).executeTakeFirst();
  const history = await db.deleteFrom('run_history').where('run_id', 'in', tree).executeTakeFirst();
  const reviewIds = db.selectFrom('reviews').select('id').where('run_id', 'in', tree);
  await db.deleteFrom('review_submissions').where('review_id', 'in', reviewIds).execute();
  const reviews = await db.deleteFrom('reviews').where('run_id', 'in', tree).executeTakeFirst();
  const items = db
    .selectFrom('runs')
    .select('queue_item_id')
    .where('queue_item_id', 'is not', null)
    .where((eb) => eb.or([eb('run_id', 'in', ids), eb('root_run_id', 'in', ids)]));
  await db
    .deleteFrom('queue_items')
    .where('id', 'in', items as unknown as SelectQueryBuilder<DB, 'queue_items', { id: string }>)
    .execute();
  const runs = await db
    .deleteFrom('runs')
    .where((eb) => eb.or([eb('run_id', 'in', ids), eb('root_run_id', 'in', ids)]))
    .executeTakeFirst();
  return {
    runs: Number(runs.numDeletedRows),
    artifacts: Number(artifacts.numDeletedRows),
    digests: artifactRows.map((r) => r.sha256),
    run_history: Number(history.numDeletedRows),
    run_logs: logs.rows,
    log_bytes: logs.bytes,
    reviews: Number(reviews.numDeletedRows),
  };
}

/** Removes the log lines of the runs `runIds` selects; answers their number and text bytes. */
async function removeLogsOf(
  db: Kysely<DB>,
  runIds: SelectQueryBuilder<DB, 'runs', { run_id: string }>,
): Promise<{ rows: number; bytes: number }> {
  const size = await db
    .selectFrom('run_logs')
    .select((eb) => [
      eb.fn.countAll<number>().as('n'),
      sql<number>`coalesce(sum(length(text)), 0)`.as('bytes'),
    ])
    .where('run_id', 'in', runIds)
    .executeTakeFirst();
  if (!size || Number(size.n) === 0) return { rows: 0, bytes: 0 };
  const res = await db.deleteFrom('run_logs').where('run_id', 'in', runIds).executeTakeFirst();
  return { rows: Number(res.numDeletedRows), bytes: Number(size.bytes) };
}

/**
 * The logs of up to `limit` terminal runs (kept ones: any run, child runs included) that ended
 * before `cutoff` and whose logs were not pruned yet; the run notes when (`logs_pruned_at`).
 */
export async function removeOldLogs(
  db: Kysely<DB>,
  dialect: Dialect,
  cutoff: number,
  now: number,
  limit: number,
): Promise<{ runs: number; rows: number; bytes: number }> {
  const batch = await skipLocked(
    endedBefore(db, cutoff, limit).where('logs_pruned_at', 'is', null),
    dialect,
  ).execute();
  if (batch.length === 0) return { runs: 0, rows: 0, bytes: 0 };
  const ids = batch.map((r) => r.run_id);
  const removed = await removeLogsOf(db, db.selectFrom('runs').select('run_id').where('run_id', 'in', ids));
  await db
    .updateTable('runs')
    .set({ logs_pruned_at: now })
    .where('run_id', 'in', ids)
    .where('logs_pruned_at', 'is', null)
    .execute();
  return { runs: batch.length, ...removed };
}

/**
 * Up to `limit` acknowledged daemon commands acknowledged before `cutoff`, but never one a record
 * still points at (a workspace or a team install waiting for its result, a run's control command):
 * those read the acknowledgement when they settle.
 */
export async function removeAckedCommands(
  db: Kysely<DB>,
  dialect: Dialect,
  cutoff: number,
  limit: number,
): Promise<number> {
  const batch = await skipLocked(
    db
      .selectFrom('command_outbox as c')
      .select('c.tx_id')
      .where('c.status', '=', 'acked')
      .where('c.acked_at', '<', cutoff)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('team_installs as ti').select('ti.id').whereRef('ti.pending_tx_id', '=', 'c.tx_id'),
          ),
        ),
      )
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(selectFrom('workspaces as ws').select('ws.id').whereRef('ws.pending_tx_id', '=', 'c.tx_id')),
        ),
      )
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('runs as r').select('r.run_id').whereRef('r.control_tx_id', '=', 'c.tx_id'))),
      )
      .orderBy('c.acked_at')
      .limit(limit),
    dialect,
  ).execute();
  if (batch.length === 0) return 0;
  const res = await db
    .deleteFrom('command_outbox')
    .where(
      'tx_id',
      'in',
      batch.map((r) => r.tx_id),
    )
    .where('status', '=', 'acked')
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** Up to `limit` notification deliveries that finished (sent, failed, cancelled) before `cutoff`, with their attempts. */
export async function removeFinishedDeliveries(
  db: Kysely<DB>,
  dialect: Dialect,
  cutoff: number,
  limit: number,
): Promise<number> {
  const batch = await skipLocked(
    db
      .selectFrom('notification_deliveries')
      .select('id')
      .where('state', 'in', ['succeeded', 'failed', 'cancelled'])
      .where('completed_at', '<', cutoff)
      .orderBy('completed_at')
      .limit(limit),
    dialect,
  ).execute();
  if (batch.length === 0) return 0;
  const ids = batch.map((r) => r.id);
  await db.deleteFrom('notification_attempts').where('delivery_id', 'in', ids).execute();
  const res = await db
    .deleteFrom('notification_deliveries')
    .where('id', 'in', ids)
    .where('state', '!=', 'pending')
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/**
 * Up to `limit` artifacts of terminal runs saved before `cutoff`; answers the rows removed and
 * their digests (the caller removes the files no row refers to any more, after commit).
 */
export async function removeOldArtifacts(
  db: Kysely<DB>,
  dialect: Dialect,
  cutoff: number,
  limit: number,
): Promise<{ rows: number; digests: string[] }> {
  const batch = await skipLocked(
    db
      .selectFrom('artifacts as a')
      .select(['a.id', 'a.sha256'])
      .where('a.created_at', '<', cutoff)
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('runs as r')
            .select('r.run_id')
            .whereRef('r.run_id', '=', 'a.run_id')
            .where('r.state', 'in', TERMINAL),
        ),
      )
      .orderBy('a.created_at')
      .limit(limit),
    dialect,
  ).execute();
  if (batch.length === 0) return { rows: 0, digests: [] };
  const res = await db
    .deleteFrom('artifacts')
    .where(
      'id',
      'in',
      batch.map((r) => r.id),
    )
    .executeTakeFirst();
  return { rows: Number(res.numDeletedRows), digests: batch.map((r) => r.sha256) };
}

/**
 * Up to `limit` events recorded before `cutoff` that no notification delivery refers to any more
 * (theirs were removed, or they had none).
 */
export async function removeOldEvents(
  db: Kysely<DB>,
  dialect: Dialect,
  cutoff: number,
  limit: number,
): Promise<number> {
  const batch = await skipLocked(
    db
      .selectFrom('events')
      .select('id')
      .where('created_at', '<', cutoff)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('notification_deliveries as d')
              .select('d.id')
              .whereRef('d.event_id', '=', 'events.id'),
          ),
        ),
      )
      .orderBy('created_at')
      .limit(limit),
    dialect,
  ).execute();
  if (batch.length === 0) return 0;
  const res = await db
    .deleteFrom('events')
    .where(
      'id',
      'in',
      batch.map((r) => r.id),
    )
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
