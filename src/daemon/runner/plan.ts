import path from 'node:path';
import type { ExecuteRunBody, ReviewMessagePayload, RunPhase } from '../../shared/protocol.js';

/**
 * The runner's pure decisions: where a run begins, what a phase's agent or child run gets, what a
 * verdict means for the phase. No I/O, no clock; the rest of src/daemon/runner/ acts on them.
 */

/** What a reviewer asked for when they requested changes: the agent gets it as SVC_REVIEW. */
export interface ReviewRound {
  action: string;
  comment: string | null;
  round: number;
}

/**
 * The index of the phase a run begins with: the phase that waits for its review after a restart,
 * else the execute body's `start_phase`, else the first. A name the team does not have starts at 0.
 */
export function startIndex(
  phases: readonly Pick<RunPhase, 'name'>[],
  startPhase: string | null,
  reviewPhase: string | null = null,
): number {
  const start = reviewPhase ?? startPhase;
  return start
    ? Math.max(
        0,
        phases.findIndex((p) => p.name === start),
      )
    : 0;
}

/** `inputs.files` → the value at that path in `root`, or undefined. */
export function resolvePath(expr: string, root: Record<string, unknown>): unknown {
  let cur: unknown = root;
  for (const part of expr.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/** The elements a `foreach` phase runs one child for: its path read from the run's inputs and the earlier phases' outputs. */
export function foreachItems(
  expr: string,
  inputs: Record<string, unknown>,
  outputs: Record<string, unknown>,
): { items: unknown[] } | { error: string } {
  const items = resolvePath(expr, { inputs, phases: outputs });
  return Array.isArray(items) ? { items } : { error: `foreach: ${expr} is not a list` };
}

/** A `foreach` child's iteration key: the element's `key` when it is an object with one, else its index. */
export function foreachKey(item: unknown, index: number): string {
  return item !== null && typeof item === 'object' && 'key' in item
    ? String((item as { key: unknown }).key)
    : String(index);
}

/** A child run's inputs: the parent's, then the phase's own; a `foreach` child adds `item` and `index`. */
export function childInputs(
  runInputs: Record<string, unknown>,
  phase: Pick<RunPhase, 'inputs'>,
  element?: { item: unknown; index: number },
): Record<string, unknown> {
  const base = { ...runInputs, ...(phase.inputs ?? {}) };
  return element ? { ...base, item: element.item, index: element.index } : base;
}

/** Why a child run fails its phase: its state and error, with the iteration key of a `foreach` child. */
export function childFailure(state: string, error: unknown, key: string | null = null): string {
  return `child run${key === null ? '' : ` [${key}]`} ${state}${error ? `: ${String(error)}` : ''}`;
}

/**
 * The SVC_* values of an agent phase (CONTRACT §5): SVC_INPUTS is exactly the run's inputs,
 * SVC_PHASE_OUTPUTS the earlier phases' outputs by name, SVC_REVIEW only when changes were requested.
 */
export function phaseEnvironment(a: {
  daemonUrl: string;
  runId: string;
  phase: Pick<RunPhase, 'name' | 'inputs'>;
  inputs: Record<string, unknown>;
  outputs: Record<string, unknown>;
  review: ReviewRound | null;
}): Record<string, string> {
  return {
    SVC_DAEMON_URL: a.daemonUrl,
    SVC_RUN_ID: a.runId,
    SVC_PHASE: a.phase.name,
    SVC_INPUTS: JSON.stringify(a.inputs),
    SVC_PHASE_INPUTS: JSON.stringify(a.phase.inputs ?? {}),
    SVC_PHASE_OUTPUTS: JSON.stringify(a.outputs),
    ...(a.review
      ? {
          SVC_REVIEW: JSON.stringify({
            action: a.review.action,
            comment: a.review.comment,
            round: a.review.round,
          }),
        }
      : {}),
  };
}

/** Where an agent works: the run's workspace, else a per-run directory under the daemon's home. */
export function runDirectory(home: string, body: Pick<ExecuteRunBody, 'run_id' | 'workspace_path'>): string {
  return body.workspace_path ?? path.join(home, 'runs', body.run_id);
}

/**
 * A phase of a run as one file name under the daemon's home: each part encoded (`/` and `~`
 * included) and the two joined by `~`, so that no two phases share a name and none reaches another
 * folder.
 */
export function phaseFileName(runId: string, phase: string): string {
  const part = (s: string) => encodeURIComponent(s).replaceAll('~', '%7E');
  return `${part(runId)}~${part(phase)}`;
}

/**
 * The file an agent writes its outputs to (SVC_OUTPUT): one per run, phase and lease epoch, in one
 * private folder under the daemon's home (never in the workspace).
 */
export function outputFile(home: string, runId: string, phase: string, epoch: number): string {
  return path.join(home, 'outputs', `${phaseFileName(runId, phase)}-${epoch}.json`);
}

/**
 * A review's summary: the phase's `review_summary` output when it is a string (what the agent wants
 * its reviewer to read), else its `summary` output, else its outputs as JSON.
 */
export const SUMMARY_MAX = 4096;
export function reviewSummary(outputs: unknown): string {
  const own =
    outputs !== null && typeof outputs === 'object' && !Array.isArray(outputs)
      ? (outputs as { review_summary?: unknown; summary?: unknown })
      : {};
  const given =
    typeof own.review_summary === 'string' && own.review_summary.trim() !== ''
      ? own.review_summary
      : own.summary;
  const text = typeof given === 'string' ? given : JSON.stringify(outputs ?? {});
  const cut = text.length > SUMMARY_MAX ? `${text.slice(0, SUMMARY_MAX - 1)}…` : text;
  return cut.trim() === '' ? '(no summary)' : cut;
}

/**
 * What a verdict means for its phase: `next` (approved), `again` (changes requested: the phase runs
 * again with SVC_REVIEW), `ended` (rejected, expired or past the round limit: the hub ended the run).
 */
export function afterVerdict(
  v: Pick<ReviewMessagePayload, 'action' | 'run_continues'>,
): 'next' | 'again' | 'ended' {
  if (v.action === 'approve' && v.run_continues) return 'next';
  if (v.action === 'request_changes' && v.run_continues) return 'again';
  return 'ended';
}

/** A verdict as the hub delivered it (`hug/deliver` payload), with the defaults for what it left out. */
export function verdictOf(
  p: Partial<ReviewMessagePayload>,
  reviewId: string,
  round: number,
): ReviewMessagePayload {
  return {
    action: p.action ?? 'reject',
    comment: p.comment ?? null,
    actor: p.actor ?? null,
    review_id: reviewId,
    round: p.round ?? round,
    run_continues: p.run_continues === true,
  };
}

/** A history entry of `runs/get_by_id`, as far as the runner reads it. */
export interface HistoryEntry {
  type: string;
  phase?: string | null;
  data?: Record<string, unknown> | null;
}

/**
 * The review a phase waited for when this daemon stopped, from what `active_runs` noted and the run's
 * history: the noted id, else (stopped between the request and noting it) the phase's newest review;
 * its verdict when the history has it already. Null: there is nothing to wait for.
 */
export function reviewToResume(
  noted: { phase: string; reviewId: string | null; round: number | null },
  history: readonly HistoryEntry[],
): { reviewId: string; round: number; known: ReviewMessagePayload | null } | null {
  const requested = history.filter((h) => h.type === 'review.requested' && h.data?.kind === 'phase');
  const last = [...requested].reverse().find((h) => h.data?.review_id && h.phase === noted.phase);
  const reviewId = noted.reviewId ?? (last?.data?.review_id as string | undefined);
  if (!reviewId) return null;
  const round = noted.round ?? (last?.data?.round as number | undefined) ?? 1;
  const decided = history.find(
    (h) =>
      h.type === 'review.submitted' &&
      h.data?.review_id === reviewId &&
      (h.data?.action === 'approve' || h.data?.action === 'request_changes'),
  );
  const known: ReviewMessagePayload | null = decided
    ? {
        action: decided.data!.action as 'approve' | 'request_changes',
        comment: (decided.data!.comment as string | null) ?? null,
        actor: null,
        review_id: reviewId,
        round,
        run_continues: true,
      }
    : null;
  return { reviewId, round, known };
}
