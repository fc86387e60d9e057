import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { ReviewsTable, RunsTable } from '../../db/schema.js';
import type { Actor as HistoryActor } from '../../shared/api/runs.js';
import { conflict, forbidden, invalidParams, notFound } from '../../shared/errors.js';
import { type RealmRole, realmAllows } from '../../shared/permissions.js';
import type { ReviewMessagePayload, ReviewRequestBody } from '../../shared/protocol.js';
import { requireRealm, requireUser } from '../access/access.service.js';
import type { Actor, DaemonActor, UserActor } from '../access/actor.js';
import { writeThenNotify } from '../cluster/bus.js';
import type { Hub, RunEndedHook, Tx } from '../context.js';
import { inTx, Rollback, rolledBack } from '../daemons/commands.js';
import { keysetPage } from '../http/paging.js';
import { runDefinition } from '../runs/dispatch.service.js';
import { addHistory } from '../runs/history.repo.js';
import { mustTransition, transition } from '../runs/lifecycle.js';
import { daemonActor, json, systemActor, userActor } from '../runs/run.mapper.js';
import { loadRun } from '../runs/runs.repo.js';
import { leaseMsOf } from '../runs/settings.js';
import {
  CLOSED_STATES,
  CLOSES_AS,
  cancelOpenReviews,
  closeReview,
  countReviews,
  DEFAULT_REVIEW_MAX_ROUNDS,
  insertSubmission,
  listSubmissions,
  loadReview,
  loadReviewRow,
  namesReviewer,
  openReviewOf,
  type ReviewAction,
  type ReviewOut,
  type ReviewState,
  reviewersOf,
  reviewOut,
  reviewQuery,
} from './reviews.repo.js';

/**
 * Reviews (human gates): a daemon opens one for a run it holds (`reviews/request`, realm token), the
 * run waits in `awaiting_input`, a reviewer decides (`reviews/submit`), and the verdict travels to
 * the daemon through the command outbox (`hug/deliver`), where the runner or the waiting agent
 * reads it. See docs/api.md, "Reviews".
 */

/** At most this much of a summary goes into the history entry and the notification. */
const SUMMARY_IN_EVENTS = 500;

/** May this user decide this review? Operators and admins always; a member when listed. */
function maySubmit(user: UserActor, role: RealmRole, review: Pick<ReviewsTable, 'reviewers'>): boolean {
  if (realmAllows(role, 'reviews.manage')) return true;
  return (reviewersOf(review)?.includes(user.user.handle) ?? false) && realmAllows(role, 'reviews.submit');
}

async function phaseOf(db: Kysely<DB>, run: RunsTable, phase: string) {
  return (await runDefinition(db, run)).phases.find((p) => p.name === phase);
}

/** `reviews/request`: the run goes to `awaiting_input` and a review opens (a retry gets the open one). */
export async function requestReview(
  hub: Hub,
  actor: DaemonActor,
  input: ReviewRequestBody,
): Promise<{ review: ReviewOut; created: boolean }> {
  const leaseMs = await leaseMsOf(hub);
  const kind = input.kind ?? 'agent';
  const { id, created } = await inTx(hub, async (tx) => {
    const trx = tx.db;
    const run = await loadRun(trx, input.run_id);
    if (!run || run.realm_id !== actor.daemon.realm_id) throw notFound('run');
    const epoch = input.lease_epoch ?? run.lease_epoch;
    if (run.daemon_id !== actor.daemon.id || run.lease_epoch !== epoch) {
      throw conflict('this daemon no longer holds the run (stale lease epoch)', {
        lease_epoch: run.lease_epoch,
        state: run.state,
      });
    }
    const phase = await phaseOf(trx, run, input.phase);
    if (!phase) throw invalidParams([{ field: 'phase', message: 'is not a phase of this run' }]);
    const open = await openReviewOf(trx, run.run_id, epoch, phase.name);
    if (open) return { id: open.id, created: false };
    if (run.state !== 'running') {
      throw conflict(`a review cannot be requested while the run is ${run.state}`, { state: run.state });
    }
    const now = hub.now();
    const round = (await countReviews(trx, run.run_id, epoch, phase.name)) + 1;
    const timeout = typeof phase.review_timeout_ms === 'number' ? phase.review_timeout_ms : null;
    const reviewers = json<Record<string, string[]>>(run.reviewers)?.[phase.name] ?? null;
    const row: ReviewsTable = {
      id: hub.newId(),
      org_id: run.org_id,
      realm_id: run.realm_id,
      run_id: run.run_id,
      daemon_id: actor.daemon.id,
      lease_epoch: epoch,
      phase: phase.name,
      kind,
      round,
      summary: input.summary,
      state: 'open',
      reviewers: reviewers === null ? null : JSON.stringify(reviewers),
      requested_at: now,
      deadline_at: timeout === null ? null : now + timeout,
      closed_at: null,
      closed_by: null,
      verdict_action: null,
      verdict_comment: null,
      outputs: input.outputs === undefined ? null : JSON.stringify(input.outputs),
      log_excerpt: input.log_excerpt ?? null,
    };
    const moved = await transition(tx, run, 'awaiting_input', {
      set: { current_phase: phase.name, lease_expires_at: now + leaseMs },
      history: {
        type: 'review.requested',
        phase: phase.name,
        actor: daemonActor(actor.daemon.id),
        data: {
          review_id: row.id,
          kind,
          round,
          summary: input.summary.slice(0, SUMMARY_IN_EVENTS),
          reviewers,
          deadline_at: row.deadline_at,
        },
      },
    });
    if (!moved) {
      // Another request of the same review won the race: answer its review.
      const raced = await openReviewOf(trx, run.run_id, epoch, phase.name);
      if (raced) return { id: raced.id, created: false };
      throw conflict('the run changed meanwhile; try again');
    }
    await trx.insertInto('reviews').values(row).execute();
    return { id: row.id, created: true };
  });
  return { review: reviewOut((await loadReview(hub.db, id))!, false), created };
}

/** The review and the caller's role in its realm (any realm member who may view runs). */
async function visibleReview(hub: Hub, actor: Actor | null, reviewId: string) {
  const user = requireUser(actor);
  const review = await loadReview(hub.db, reviewId);
  if (!review) throw notFound('review');
  const { role } = await requireRealm(hub, user, review.realm_id, 'runs.view');
  return { review, user, role };
}

/** `reviews/get`: the review with every submission on it. */
export async function getReview(hub: Hub, actor: Actor | null, reviewId: string) {
  const { review, user, role } = await visibleReview(hub, actor, reviewId);
  return {
    ...reviewOut(review, review.state === 'open' && maySubmit(user, role, review)),
    submissions: await listSubmissions(hub.db, review.id),
  };
}

export interface ListReviewsInput {
  realm_id: string;
  state: ReviewState | 'closed' | 'all';
  mine?: boolean | undefined;
  run_id?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/**
 * `reviews/list`: operators and admins see every review of the realm; a member sees those naming
 * them as a reviewer. `mine` narrows to the reviews the caller is asked to decide: naming them, and
 * for operators and admins also those naming nobody. Oldest first.
 */
export async function listReviews(hub: Hub, actor: Actor | null, input: ListReviewsInput) {
  const { actor: user, role } = await requireRealm(hub, actor, input.realm_id, 'runs.view');
  const all = realmAllows(role, 'reviews.manage');
  const handle = user.user.handle;
  const q = reviewQuery(hub.db)
    .where('reviews.realm_id', '=', input.realm_id)
    .$if(input.state === 'closed', (b) => b.where('reviews.state', 'in', CLOSED_STATES))
    .$if(input.state !== 'closed' && input.state !== 'all', (b) =>
      b.where('reviews.state', '=', input.state as ReviewState),
    )
    .$if(input.run_id !== undefined, (b) => b.where('reviews.run_id', '=', input.run_id!))
    .$if(!all, (b) => b.where(namesReviewer(handle)))
    .$if(all && input.mine === true, (b) =>
      b.where((eb) => eb.or([namesReviewer(handle), eb('reviews.reviewers', 'is', null)])),
    );
  const page = await keysetPage(q, input, 'reviews.id');
  return {
    data: page.data.map((r) => reviewOut(r, r.state === 'open' && maySubmit(user, role, r))),
    next_cursor: page.next_cursor,
  };
}

async function maxRoundsOf(db: Kysely<DB>, run: RunsTable, phase: string): Promise<number> {
  const p = await phaseOf(db, run, phase);
  const n = p?.review_max_rounds ?? (p as { max_review_rounds?: unknown } | undefined)?.max_review_rounds;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? n : DEFAULT_REVIEW_MAX_ROUNDS;
}

/** Queues a review message for the daemon that asked (`hug/deliver`, through the outbox). */
function deliver(
  tx: Tx,
  review: Pick<ReviewsTable, 'id' | 'daemon_id'>,
  type: 'verdict' | 'comment',
  role: 'reviewer' | 'system',
  payload: ReviewMessagePayload,
): Promise<string> {
  return tx.command(review.daemon_id, 'hug/deliver', {
    review_id: review.id,
    message: { type, role, payload },
  });
}

/** Fails a run that awaits a review (reject, round limit, expiry), with its `run.ended` entry. */
function failAwaitingRun(tx: Tx, run: RunsTable, error: string, phase: string, actor: HistoryActor) {
  return mustTransition(tx, run, 'failed', {
    set: { error, pending_control: null, current_phase: phase },
    history: { phase, error, actor },
  });
}

/** A run that ends while a review is open: the review closes with it (a `runEnded` hook). */
export const closeReviewsOfEndedRun: RunEndedHook = async (tx, run) => {
  await writeThenNotify(tx.db, [cancelOpenReviews(tx.db, run.run_id, tx.hub.now())], []);
};

/**
 * `reviews/submit`: a verdict (approve, reject, request_changes) closes the review, once; a comment
 * closes nothing. For a `review: true` phase the hub moves the run (on, failed, or back to running
 * for another round); for an agent's review the run goes back to running and the agent decides.
 * The message is queued for the daemon in the same transaction.
 */
export async function submitReview(
  hub: Hub,
  actor: Actor | null,
  input: { review_id: string; action: ReviewAction; comment?: string | undefined },
) {
  const { review, user, role } = await visibleReview(hub, actor, input.review_id);
  if (!maySubmit(user, role, review)) {
    throw forbidden(
      review.reviewers === null
        ? 'only realm operators and admins review this run'
        : 'you are not a reviewer of this review (nor a realm operator or admin)',
    );
  }
  const comment = input.comment?.trim() ? input.comment : null;
  if (input.action === 'comment' && comment === null) {
    throw invalidParams([{ field: 'comment', message: 'is required for action comment' }]);
  }
  if (review.state !== 'open') {
    throw conflict(`the review is already ${review.state}`, { state: review.state });
  }
  const leaseMs = await leaseMsOf(hub);
  const who = userActor(user.user);
  await inTx(hub, async (tx) => {
    const trx = tx.db;
    const now = hub.now();
    if (input.action === 'comment') {
      const cur = await loadReviewRow(trx, review.id);
      if (cur?.state !== 'open') throw conflict(`the review is already ${cur?.state}`, { state: cur?.state });
    } else {
      const closed = await closeReview(trx, review.id, {
        state: CLOSES_AS[input.action],
        closed_at: now,
        closed_by: user.user.id,
        verdict_action: input.action,
        verdict_comment: comment,
      });
      if (!closed) {
        const cur = await loadReviewRow(trx, review.id);
        throw conflict(`the review is already ${cur?.state}`, { state: cur?.state });
      }
    }
    await insertSubmission(trx, {
      id: hub.newId(),
      review_id: review.id,
      action: input.action,
      comment,
      actor_id: user.user.id,
      actor_handle: user.user.handle,
      created_at: now,
    });
    const run = (await loadRun(trx, review.run_id))!;
    let runContinues = input.action === 'comment' ? run.state === 'awaiting_input' : false;
    let ending: string | null = null;
    const waiting = run.state === 'awaiting_input' && run.lease_epoch === review.lease_epoch;
    if (input.action !== 'comment' && waiting) {
      if (review.kind === 'phase' && input.action === 'reject') {
        ending = comment ?? `rejected by ${user.user.handle}`;
      } else if (review.kind === 'phase' && input.action === 'request_changes') {
        const max = await maxRoundsOf(trx, run, review.phase);
        if (review.round >= max) ending = `review: changes requested ${review.round} times, the limit`;
      }
    }
    const submitted = {
      type: 'review.submitted',
      phase: review.phase,
      actor: who,
      data: { review_id: review.id, action: input.action, comment, round: review.round },
    };
    if (input.action !== 'comment' && waiting && ending === null) {
      await mustTransition(tx, run, 'running', {
        set: { lease_expires_at: now + leaseMs },
        history: submitted,
      });
      runContinues = true;
    } else {
      await addHistory(trx, hub, run, ending !== null ? 'failed' : run.state, submitted);
      if (ending !== null) await failAwaitingRun(tx, run, ending, review.phase, who);
    }
    await deliver(tx, review, input.action === 'comment' ? 'comment' : 'verdict', 'reviewer', {
      action: input.action,
      comment,
      actor: user.user.handle,
      review_id: review.id,
      round: review.round,
      run_continues: runContinues,
    });
  });
  const after = (await loadReview(hub.db, review.id))!;
  return reviewOut(after, after.state === 'open' && maySubmit(user, role, after));
}

/**
 * The expiry pass: an open review past its deadline closes as `expired` and its run fails. One
 * conditional UPDATE per review, so several hub processes may run it at once. Answers how many expired.
 */
export async function expireReviews(hub: Hub): Promise<number> {
  const now = hub.now();
  const due = await hub.db
    .selectFrom('reviews')
    .selectAll()
    .where('state', '=', 'open')
    .where('deadline_at', '<', now)
    .orderBy('deadline_at')
    .limit(500)
    .execute();
  let expired = 0;
  for (const review of due) {
    const why = `review expired: no verdict within ${review.deadline_at! - review.requested_at} ms`;
    const closedIt = await inTx(hub, async (tx) => {
      const trx = tx.db;
      const closed = await closeReview(trx, review.id, {
        state: 'expired',
        closed_at: now,
        closed_by: null,
        verdict_action: 'expired',
        verdict_comment: why,
      });
      if (!closed) return false;
      const run = await loadRun(trx, review.run_id);
      if (run) {
        const waiting = run.state === 'awaiting_input' && run.lease_epoch === review.lease_epoch;
        await addHistory(trx, hub, run, waiting ? 'failed' : run.state, {
          type: 'review.expired',
          phase: review.phase,
          error: why,
          actor: systemActor,
          data: { review_id: review.id, round: review.round, deadline_at: review.deadline_at },
        });
        if (waiting) {
          // The run moved meanwhile: undo, and let the next pass look again.
          const failed = await transition(tx, run, 'failed', {
            set: { error: why, pending_control: null, current_phase: review.phase },
            history: { phase: review.phase, error: why, actor: systemActor },
          });
          if (!failed) throw new Rollback();
        }
      }
      await deliver(tx, review, 'verdict', 'system', {
        action: 'expired',
        comment: why,
        actor: null,
        review_id: review.id,
        round: review.round,
        run_continues: false,
      });
      return true;
    }).catch(rolledBack);
    if (closedIt) expired++;
  }
  return expired;
}
