import type { Kysely } from 'kysely';
import type { ReviewMessagePayload } from '../../shared/protocol.js';
import type { DaemonDB } from '../db/schema.js';
import { takeHugMessages } from '../hug/hug.repo.js';
import type { HugInbox } from '../hug/inbox.js';
import type { ActiveRun } from './active-run.js';
import { noteReviewWait } from './active-runs.repo.js';
import type { RunHubCaller } from './hub-caller.js';
import { reviewSummary, verdictOf } from './plan.js';

/** A `review: true` phase that waits for its verdict again after a restart of this daemon. */
export interface ReviewWait {
  phase: string;
  reviewId: string;
  round: number;
  /** The outputs of the phases before it. */
  outputs: Record<string, unknown>;
  /** The phase's own outputs. */
  phaseOutputs: unknown;
  /** The verdict, when the run's history has it already (it may have been read before the restart). */
  known: ReviewMessagePayload | null;
}

/** A review wait's needs: where messages wait, who wakes it, whether the daemon is stopping. */
export interface ReviewWaitDeps {
  db: Kysely<DaemonDB>;
  caller: RunHubCaller;
  inbox: HugInbox;
  closing(): boolean;
  /** The longest wait between two looks at the queue, in case a notice was missed (default 5 s). */
  recheckMs?: number;
}

/**
 * After a `review: true` phase: asks the hub for a review (the run awaits input there), notes it in
 * `active_runs` (so a restart waits again rather than failing the run) and waits for the verdict.
 * Null when the wait was stopped (cancel, fencing, the daemon stopping).
 */
export async function requestReview(
  deps: ReviewWaitDeps,
  run: ActiveRun,
  phase: string,
  outputs: Record<string, unknown>,
  phaseOutputs: unknown,
): Promise<ReviewMessagePayload | null> {
  const state = (round: number | null) => ({ outputs, phase_outputs: phaseOutputs ?? {}, round });
  const excerpt = run.logs.excerpt(phase);
  // Noted before the request, so a stop right after it still finds the review (by the history).
  await noteReviewWait(deps.db, run.id, run.epoch, null, state(null));
  const review = await deps.caller.call<{ id: string; round: number }>(run, 'reviews/request', {
    run_id: run.id,
    lease_epoch: run.epoch,
    phase,
    summary: reviewSummary(phaseOutputs),
    kind: 'phase',
    ...(isRecord(phaseOutputs) ? { outputs: phaseOutputs } : {}),
    ...(excerpt === null ? {} : { log_excerpt: excerpt }),
  });
  await noteReviewWait(deps.db, run.id, run.epoch, review.id, state(review.round));
  run.systemLine(
    phase,
    `waiting for a review of phase ${phase} (review ${review.id}, round ${review.round})`,
  );
  return awaitVerdict(deps, run, phase, review.id, review.round, null);
}

/**
 * Waits for the verdict of a review, which the hub delivers through `hug/deliver`; comments go to the
 * run's logs. Only messages the hub sent decide: one queued by another process of this machine is
 * noted and ignored. `known`: the verdict is known already (the run's history), the queue is drained
 * first. Null when the wait was stopped (cancel, fencing, the daemon stopping).
 */
export async function awaitVerdict(
  deps: ReviewWaitDeps,
  run: ActiveRun,
  phase: string,
  reviewId: string,
  round: number,
  known: ReviewMessagePayload | null,
): Promise<ReviewMessagePayload | null> {
  const line = (text: string) => run.systemLine(phase, text);
  const { inbox } = deps;
  inbox.watch(reviewId);
  try {
    for (;;) {
      if (run.abort.signal.aborted || deps.closing()) return null;
      const entries = await deps.db.transaction().execute((trx) => takeHugMessages(trx, reviewId));
      for (const e of entries) {
        const p = e.payload as Partial<ReviewMessagePayload>;
        if (!e.fromHub) {
          line(`ignored a review ${e.type} that did not come from the hub`);
          continue;
        }
        if (e.type === 'verdict') {
          line(
            `review ${p.action ?? '?'}${p.actor ? ` by ${p.actor}` : ''}${p.comment ? `: ${p.comment}` : ''}`,
          );
          return verdictOf(p, reviewId, round);
        }
        line(`review comment${p.actor ? ` by ${p.actor}` : ''}: ${p.comment ?? ''}`);
      }
      if (known) {
        line(
          `review ${known.action} (read from the run's history)${known.comment ? `: ${known.comment}` : ''}`,
        );
        return known;
      }
      await inbox.next(reviewId, run.abort.signal, deps.recheckMs ?? 5_000);
    }
  } finally {
    inbox.unwatch(reviewId);
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);
