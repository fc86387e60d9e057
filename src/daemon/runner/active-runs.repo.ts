import type { Kysely, Selectable } from 'kysely';
import { prepared } from '../../db/prepared.js';
import type { ExecuteRunBody } from '../../shared/protocol.js';
import type { ActiveRunsTable, DaemonDB } from '../db/schema.js';
import { startIndex } from './plan.js';

/**
 * `active_runs`: a row per run executing here, kept until the run ends here, so that the next start
 * of the daemon reports an interrupted run (or waits again for the review it waited for).
 */

export type ActiveRunRow = Selectable<ActiveRunsTable>;

/** What `review_state` holds while a `review: true` phase waits for its verdict. */
export interface ReviewWaitState {
  /** The outputs of the phases before it. */
  outputs: Record<string, unknown>;
  /** The phase's own outputs. */
  phase_outputs: unknown;
  /** The review's round, null until the hub answered the request. */
  round: number | null;
}

/**
 * Notes a run accepted by `runs/execute`, with the phase it starts at; a newer epoch of the same run
 * replaces the row. The body is stored without its secrets: they stay in memory only (see
 * recover.ts for a restart).
 */
export async function saveActiveRun(db: Kysely<DaemonDB>, body: ExecuteRunBody, now: number): Promise<void> {
  const { secrets: _inMemoryOnly, ...kept } = body;
  const phase = body.team.phases[startIndex(body.team.phases, body.start_phase)]?.name ?? body.start_phase;
  await upsertActiveRun(db, body.run_id, now, body.lease_epoch, phase, JSON.stringify(kept));
}

/** Written for every `runs/execute`, on a run's way to its agent: compiled once. */
const upsertActiveRun = prepared(
  (db: Kysely<DaemonDB>, runId: string, now: number, epoch: number, phase: string | null, body: string) =>
    db
      .insertInto('active_runs')
      .values({
        run_id: runId,
        started_at: now,
        lease_epoch: epoch,
        phase,
        body,
        review_id: null,
        review_state: null,
      })
      .onConflict((oc) =>
        oc.column('run_id').doUpdateSet((eb) => ({
          lease_epoch: eb.ref('excluded.lease_epoch'),
          phase: eb.ref('excluded.phase'),
          body: eb.ref('excluded.body'),
          review_id: null,
          review_state: null,
        })),
      ),
);

export function listActiveRuns(db: Kysely<DaemonDB>): Promise<ActiveRunRow[]> {
  return db.selectFrom('active_runs').selectAll().execute();
}

/** The lease epoch of a run noted here, or null. */
export async function leaseEpochOf(db: Kysely<DaemonDB>, runId: string): Promise<number | null> {
  const row = await db
    .selectFrom('active_runs')
    .select('lease_epoch')
    .where('run_id', '=', runId)
    .executeTakeFirst();
  return row?.lease_epoch ?? null;
}

/** The phase the run is at, so an interrupted run is reported failed at it. */
export async function notePhase(db: Kysely<DaemonDB>, runId: string, phase: string): Promise<void> {
  await db.updateTable('active_runs').set({ phase }).where('run_id', '=', runId).execute();
}

/** Notes the review a phase waits for (`reviewId` null: asked, no answer yet), under the run's epoch. */
export async function noteReviewWait(
  db: Kysely<DaemonDB>,
  runId: string,
  epoch: number,
  reviewId: string | null,
  state: ReviewWaitState,
): Promise<void> {
  await db
    .updateTable('active_runs')
    .set({ review_id: reviewId, review_state: JSON.stringify(state) })
    .where('run_id', '=', runId)
    .where('lease_epoch', '=', epoch)
    .execute();
}

/** The verdict came: a restart from now on fails the run like any interrupted one. */
export async function clearReviewWait(db: Kysely<DaemonDB>, runId: string, epoch: number): Promise<void> {
  await db
    .updateTable('active_runs')
    .set({ review_id: null, review_state: null })
    .where('run_id', '=', runId)
    .where('lease_epoch', '=', epoch)
    .execute();
}

/** The run ended here under this epoch (a row of a newer epoch stays). */
export async function removeActiveRun(db: Kysely<DaemonDB>, runId: string, epoch: number): Promise<void> {
  await deleteActiveRun(db, runId, epoch);
}

/** Run at every run's end: compiled once. */
const deleteActiveRun = prepared((db: Kysely<DaemonDB>, runId: string, epoch: number) =>
  db.deleteFrom('active_runs').where('run_id', '=', runId).where('lease_epoch', '=', epoch),
);

/** An interrupted run was reported (or the hub refused the report): its row goes. */
export async function forgetActiveRun(db: Kysely<DaemonDB>, runId: string): Promise<void> {
  await db.deleteFrom('active_runs').where('run_id', '=', runId).execute();
}
