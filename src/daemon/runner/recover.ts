import { isTerminal } from '../../shared/api/run-states.js';
import type { ExecuteRunBody } from '../../shared/protocol.js';
import { HubRefusedError } from '../hub-api.js';
import {
  type ActiveRunRow,
  forgetActiveRun,
  listActiveRuns,
  type ReviewWaitState,
} from './active-runs.repo.js';
import type { RunnerContext } from './context.js';
import { type HistoryEntry, reviewToResume } from './plan.js';
import type { ReviewWait } from './review-wait.js';

const INTERRUPTED = 'the daemon restarted while the run was running; its agent process was stopped';
const NEEDS_SECRETS =
  'the daemon restarted while the run waited for a review; its secrets are kept in memory only, so it cannot go on here: resume the run (runs/resume) to send it again with them';

/** What recovery needs of the runner: which runs execute here, and how to start one again. */
export interface RecoverDeps extends Pick<RunnerContext, 'db' | 'caller' | 'log' | 'closing'> {
  isRunning(runId: string): boolean;
  launch(body: ExecuteRunBody, resume: ReviewWait): void;
}

/**
 * Runs that were executing when this daemon stopped (their rows are still here) are reported
 * `failed` with a clear error, but for a run that waited for the review of a `review: true` phase:
 * it waits again (see reattach). Rows stay when the hub cannot be reached, for the next attempt.
 * Answers how many runs were reported.
 */
export async function recoverRuns(deps: RecoverDeps): Promise<number> {
  const rows = await listActiveRuns(deps.db);
  let reported = 0;
  for (const row of rows) {
    if (deps.isRunning(row.run_id)) continue;
    const waiting = await reattach(deps, row).catch((err) => {
      deps.log.warn({ err, run_id: row.run_id }, 'could not check a run that waited for a review');
      return 'unknown' as const;
    });
    if (waiting === 'reattached' || waiting === 'unknown') continue;
    const at = row.phase ? { phase: row.phase } : {};
    const error = waiting === 'needs_secrets' ? NEEDS_SECRETS : INTERRUPTED;
    try {
      if (await deps.caller.reportOnce(row.run_id, row.lease_epoch, 'failed', { ...at, error })) reported++;
    } catch (err) {
      deps.log.warn({ err, run_id: row.run_id }, 'could not report an interrupted run');
      continue;
    }
    await forgetActiveRun(deps.db, row.run_id);
  }
  return reported;
}

/**
 * A run that waited for the review of a `review: true` phase when this daemon stopped waits again
 * (its agent had finished): when the hub still has it under the same lease epoch, it is launched
 * again at that review. 'failed' means: report it failed like any interrupted run.
 */
async function reattach(
  deps: RecoverDeps,
  row: ActiveRunRow,
): Promise<'reattached' | 'failed' | 'needs_secrets' | 'unknown'> {
  if (!row.body || !row.review_state || !row.phase || deps.closing()) return 'failed';
  const body = JSON.parse(row.body) as ExecuteRunBody;
  // Secrets were in memory only: a run whose agents need some cannot go on here; it fails with
  // an error saying so, and runs/resume sends it again with them.
  if (Object.values(body.agents).some((a) => (a.secrets ?? []).length > 0)) return 'needs_secrets';
  let hubRun: { state: string; history?: HistoryEntry[] };
  try {
    hubRun = await deps.caller.hub.call('runs/get_by_id', { run_id: row.run_id, with_history: true });
  } catch (err) {
    if (err instanceof HubRefusedError) return 'failed';
    return 'unknown';
  }
  // A stale epoch (the run went to another daemon meanwhile) is fenced by the first report.
  if (isTerminal(hubRun.state)) return 'failed';
  const state = JSON.parse(row.review_state) as ReviewWaitState;
  const noted = { phase: row.phase, reviewId: row.review_id, round: state.round };
  const review = reviewToResume(noted, hubRun.history ?? []);
  if (!review) return 'failed';
  deps.launch(body, {
    phase: row.phase,
    ...review,
    outputs: state.outputs,
    phaseOutputs: state.phase_outputs,
  });
  return 'reattached';
}
