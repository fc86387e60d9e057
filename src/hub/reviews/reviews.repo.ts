import { type Kysely, sql } from 'kysely';
import { type DB, updateOne } from '../../db/index.js';
import { preparedQuery } from '../../db/prepared.js';
import type { ReviewsTable } from '../../db/schema.js';
import {
  REVIEW_ACTIONS,
  REVIEW_STATES,
  type ReviewAction,
  type ReviewState,
} from '../../shared/api/review-states.js';
import type { Review } from '../../shared/api/reviews.js';
import type { Write } from '../cluster/bus.js';

/** Reviews: SQL and the row → Review mapper (src/hub/reviews/). */

export { REVIEW_ACTIONS, REVIEW_STATES, type ReviewAction, type ReviewState };
export const CLOSED_STATES: readonly ReviewState[] = REVIEW_STATES.filter((s) => s !== 'open');

/** The state a closing action leaves the review in (`comment` closes nothing). */
export const CLOSES_AS: Record<Exclude<ReviewAction, 'comment'>, ReviewState> = {
  approve: 'approved',
  reject: 'rejected',
  request_changes: 'changes_requested',
};

/** Rounds of request_changes on a `review: true` phase before the run fails, unless the phase says. */
export const DEFAULT_REVIEW_MAX_ROUNDS = 3;

export function loadReviewRow(db: Kysely<DB>, id: string): Promise<ReviewsTable | undefined> {
  return db.selectFrom('reviews').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The open review of a run's phase under one lease epoch (at most one: the run awaits it). */
export function openReviewOf(
  db: Kysely<DB>,
  runId: string,
  epoch: number,
  phase: string,
): Promise<ReviewsTable | undefined> {
  return db
    .selectFrom('reviews')
    .selectAll()
    .where('run_id', '=', runId)
    .where('lease_epoch', '=', epoch)
    .where('phase', '=', phase)
    .where('state', '=', 'open')
    .executeTakeFirst();
}

/** Reviews of a run's phase under one lease epoch: the next one is round n + 1. */
export async function countReviews(db: Kysely<DB>, runId: string, epoch: number, phase: string) {
  const r = await db
    .selectFrom('reviews')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('run_id', '=', runId)
    .where('lease_epoch', '=', epoch)
    .where('phase', '=', phase)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * Closes a review if it is still open: one conditional UPDATE, so of two verdicts racing (in one hub
 * process or several) exactly one wins. False when it was closed already.
 */
export async function closeReview(
  db: Kysely<DB>,
  id: string,
  set: Pick<ReviewsTable, 'state' | 'closed_at' | 'closed_by' | 'verdict_action' | 'verdict_comment'>,
): Promise<boolean> {
  return updateOne(db.updateTable('reviews').set(set).where('id', '=', id).where('state', '=', 'open'));
}

/**
 * A run ended (or was lost) another way: its open reviews close as `cancelled`. The write, to run
 * in the caller's transaction with the writes nothing reads back (bus.ts `writeThenNotify`).
 */
export const cancelOpenReviews: (db: Kysely<DB>, runId: string, now: number) => Write = preparedQuery(
  (db: Kysely<DB>, runId: string, now: number) =>
    db
      .updateTable('reviews')
      .set({ state: 'cancelled', closed_at: now })
      .where('run_id', '=', runId)
      .where('state', '=', 'open'),
);

export async function insertSubmission(
  db: Kysely<DB>,
  row: {
    id: string;
    review_id: string;
    action: ReviewAction;
    comment: string | null;
    actor_id: string | null;
    actor_handle: string | null;
    created_at: number;
  },
): Promise<void> {
  await db.insertInto('review_submissions').values(row).execute();
}

export async function listSubmissions(db: Kysely<DB>, reviewId: string) {
  const rows = await db
    .selectFrom('review_submissions')
    .selectAll()
    .where('review_id', '=', reviewId)
    .orderBy('id')
    .execute();
  return rows.map((s) => ({
    action: s.action,
    comment: s.comment,
    actor: s.actor_id === null ? null : { user_id: s.actor_id, handle: s.actor_handle },
    created_at: s.created_at,
  }));
}

/** Reviews with what the API shows beside them: the run's name, the team's name, who closed it. */
export function reviewQuery(db: Kysely<DB>) {
  return db
    .selectFrom('reviews')
    .innerJoin('runs', 'runs.run_id', 'reviews.run_id')
    .leftJoin('team_versions', 'team_versions.id', 'runs.team_version_id')
    .leftJoin('users', 'users.id', 'reviews.closed_by')
    .selectAll('reviews')
    .select([
      'runs.run_name as run_name',
      'team_versions.name as team_name',
      'users.handle as closed_by_handle',
    ]);
}
export type ReviewRow = ReviewsTable & {
  run_name: string;
  team_name: string | null;
  closed_by_handle: string | null;
};

export function loadReview(db: Kysely<DB>, id: string): Promise<ReviewRow | undefined> {
  return reviewQuery(db).where('reviews.id', '=', id).executeTakeFirst();
}

/** Rows naming `handle` among their reviewers (`reviewers` is a JSON array of handles). */
export function namesReviewer(handle: string) {
  const pattern = `%${JSON.stringify(handle).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return sql<boolean>`${sql.ref('reviews.reviewers')} like ${pattern} escape '\\'`;
}

export const reviewersOf = (r: Pick<ReviewsTable, 'reviewers'>): string[] | null =>
  r.reviewers === null ? null : (JSON.parse(r.reviewers) as string[]);

/** The Review as the API shows it (docs/api.md, "Reviews"). */
export function reviewOut(r: ReviewRow, canSubmit: boolean): Review {
  return {
    id: r.id,
    run_id: r.run_id,
    realm_id: r.realm_id,
    org_id: r.org_id,
    phase: r.phase,
    kind: r.kind,
    round: r.round,
    summary: r.summary,
    outputs: r.outputs === null ? null : (JSON.parse(r.outputs) as Record<string, unknown>),
    log_excerpt: r.log_excerpt,
    state: r.state,
    reviewers: reviewersOf(r),
    requested_at: r.requested_at,
    deadline_at: r.deadline_at,
    closed_at: r.closed_at,
    closed_by: r.closed_by === null ? null : { user_id: r.closed_by, handle: r.closed_by_handle },
    verdict: r.verdict_action === null ? null : { action: r.verdict_action, comment: r.verdict_comment },
    run_name: r.run_name,
    team_name: r.team_name,
    can_submit: canSubmit,
  };
}
export type ReviewOut = ReturnType<typeof reviewOut>;
