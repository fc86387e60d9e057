import type {
  ExecuteRunBody,
  ReviewMessagePayload,
  RunPhase,
  RunReportEvent,
} from '../../shared/protocol.js';
import type { ActiveRun } from './active-run.js';
import { clearReviewWait, notePhase } from './active-runs.repo.js';
import { runAgentPhase } from './agent-phase.js';
import type { PhaseResult } from './children.js';
import type { RunnerContext } from './context.js';
import { Closing, Fenced } from './hub-caller.js';
import { afterVerdict, type ReviewRound, startIndex } from './plan.js';
import { awaitVerdict, type ReviewWait, requestReview } from './review-wait.js';

/**
 * A run's phases in order, from `start_phase` (or the phase that waits for its review after a
 * restart), each reported to the hub under the run's lease epoch: `started`, `phase.started`,
 * `phase.completed`, then `succeeded`, `failed` or `cancelled`; the run's start goes with its first
 * phase's, its last phase's end with its own. A fenced run (`conflict`: another
 * daemon or a force-terminate took it over) or a stopping daemon reports nothing more.
 */
export async function driveRun(
  ctx: RunnerContext,
  run: ActiveRun,
  body: ExecuteRunBody,
  resume: ReviewWait | null,
): Promise<void> {
  const phases = body.team.phases;
  const from = startIndex(phases, body.start_phase, resume?.phase ?? null);
  const outputs: Record<string, unknown> = { ...(resume?.outputs ?? body.outputs) };
  // After a restart, the first phase's agent has run already: wait for its verdict again.
  let waitAgain = resume;
  try {
    // `started` goes with the first phase's `phase.started` (one report). A run that waits again for
    // a verdict sends it at once, while it waits. A retried `started` of this epoch changes nothing
    // on the hub.
    ctx.caller.hold(run, 'started');
    if (waitAgain) ctx.caller.flush(run);
    const todo = phases.slice(from);
    for (const [i, phase] of todo.entries()) {
      if (run.stopped) break;
      // The first phase is noted already (with the run, or before the restart it resumes after).
      const noted = i === 0 ? Promise.resolve() : notePhase(ctx.db, run.id, phase.name);
      noted.catch(() => {}); // its error is thrown where it is awaited, after the phase
      const r = await runPhase(ctx, run, body, phase, outputs, waitAgain);
      await noted;
      waitAgain = null;
      if (run.stopped) break;
      if (!r.ok) {
        await ctx.caller.report(run, 'failed', {
          phase: phase.name,
          error: `phase "${phase.name}": ${r.error}`,
        });
        return;
      }
      outputs[phase.name] = r.outputs;
      const completed = { phase: phase.name, outputs: (r.outputs ?? {}) as RunReportEvent['outputs'] };
      // The last phase's end goes with the run's own.
      if (i === todo.length - 1) ctx.caller.hold(run, 'phase.completed', completed);
      else await ctx.caller.report(run, 'phase.completed', completed);
    }
    await run.logs.flush();
    if (run.fenced) return;
    if (run.cancelled) {
      await ctx.caller.report(run, 'cancelled', run.cancelReason ? { error: run.cancelReason } : {});
      return;
    }
    await ctx.caller.report(run, 'succeeded');
  } catch (err) {
    if (err instanceof Fenced || err instanceof Closing) return;
    ctx.log.error({ err, run_id: run.id }, 'run failed in the daemon');
    try {
      await ctx.caller.report(run, 'failed', {
        error: `the daemon could not run it: ${(err as Error).message}`,
      });
    } catch {}
  }
}

/**
 * One phase, with its review rounds: a `review: true` agent phase asks for a review after it
 * succeeds and waits for the verdict; request_changes runs it again with the reviewer's words in
 * SVC_REVIEW. `waitAgain`: the phase's agent ran before a restart, only its verdict is awaited.
 */
async function runPhase(
  ctx: RunnerContext,
  run: ActiveRun,
  body: ExecuteRunBody,
  phase: RunPhase,
  outputs: Record<string, unknown>,
  waitAgain: ReviewWait | null,
): Promise<PhaseResult> {
  let review: ReviewRound | null = null;
  for (;;) {
    let r: PhaseResult;
    let verdict: ReviewMessagePayload | null;
    if (waitAgain) {
      r = { ok: true, outputs: waitAgain.phaseOutputs };
      run.systemLine(phase.name, `waiting again for review ${waitAgain.reviewId} after a restart`);
      const { reviewId, round, known } = waitAgain;
      verdict = await awaitVerdict(ctx, run, phase.name, reviewId, round, known);
      waitAgain = null;
    } else {
      run.logs.startPhase(phase.name);
      r = phase.team_version_id
        ? await ctx.children.runPhase(run, body, phase, outputs)
        : await runAgentPhase(ctx, run, body, phase, outputs, review);
      await run.logs.flush();
      if (run.stopped || !r.ok || phase.review !== true || phase.team_version_id) return r;
      verdict = await requestReview(ctx, run, phase.name, outputs, r.outputs);
    }
    if (verdict === null) return r; // the wait was stopped (cancel, fencing, daemon stopping)
    await clearReviewWait(ctx.db, run.id, run.epoch);
    const next = afterVerdict(verdict);
    if (next === 'next') return r;
    if (next === 'again') {
      review = { action: verdict.action, comment: verdict.comment, round: verdict.round };
      continue;
    }
    // Rejected, expired, or past the round limit: the hub has ended the run; report nothing more.
    run.fenced = true;
    return r;
  }
}
