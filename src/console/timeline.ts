/** A run's phases as a timeline, computed from its history (unit-tested in timeline.test.ts). */
import { attemptOf } from '../shared/api/run-time.js';
import type { HistoryEntry } from './types.js';

export type PhaseStatus =
  | 'pending'
  | 'running'
  | 'review'
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'terminated'
  | 'lost';

export interface PhaseSpan {
  name: string;
  status: PhaseStatus;
  /** The last attempt's start (a resumed phase starts again), or null when it never started. */
  started_at: number | null;
  ended_at: number | null;
  /** Time of the last attempt, until now while it is running. */
  duration: number | null;
  /** How many times the phase started (more than one after a resume). */
  attempts: number;
  /** Time spent waiting for a review, summed over the attempts. */
  review_ms: number;
}

interface Acc {
  name: string;
  status: PhaseStatus;
  started_at: number | null;
  ended_at: number | null;
  attempts: number;
  review_ms: number;
  review_since: number | null;
}

const END_STATUS: Record<string, PhaseStatus> = {
  failed: 'failed',
  cancelled: 'cancelled',
  terminated: 'terminated',
  lost: 'lost',
  succeeded: 'succeeded',
};

/**
 * One span per phase: the team's phases in order (`planned`), then any other phase the history
 * names. History types (docs/api.md): `phase.started` / `phase.completed` bound an attempt;
 * `review.requested` (or a daemon's `run.awaiting_input`) starts a wait for a review, and
 * `review.submitted` with a verdict, `review.expired` or `run.input_received` ends it; `run.ended`,
 * `run.lost` end the phase that was running with the run's state.
 */
export function phaseTimeline(
  history: readonly HistoryEntry[],
  planned: readonly string[],
  now: number,
): PhaseSpan[] {
  const spans = new Map<string, Acc>();
  const get = (name: string): Acc => {
    let s = spans.get(name);
    if (!s) {
      s = {
        name,
        status: 'pending',
        started_at: null,
        ended_at: null,
        attempts: 0,
        review_ms: 0,
        review_since: null,
      };
      spans.set(name, s);
    }
    return s;
  };
  for (const p of planned) get(p);
  let current: Acc | null = null;
  const stopReview = (s: Acc, at: number) => {
    if (s.review_since !== null) {
      s.review_ms += Math.max(0, at - s.review_since);
      s.review_since = null;
    }
  };
  const sorted = [...history].sort((a, b) => a.at - b.at);
  for (const e of sorted) {
    switch (e.type) {
      case 'phase.started': {
        if (!e.phase) break;
        const s = get(e.phase);
        s.status = 'running';
        s.started_at = e.at;
        s.ended_at = null;
        s.attempts += 1;
        current = s;
        break;
      }
      case 'phase.completed': {
        if (!e.phase) break;
        const s = get(e.phase);
        stopReview(s, e.at);
        s.status = 'succeeded';
        s.ended_at = e.at;
        if (s.started_at === null) s.started_at = e.at;
        if (current === s) current = null;
        break;
      }
      case 'run.awaiting_input':
      case 'review.requested': {
        const s: Acc | null = e.phase ? get(e.phase) : current;
        if (!s) break;
        s.status = 'review';
        s.review_since = e.at;
        if (s.started_at === null) s.started_at = e.at;
        current = s;
        break;
      }
      case 'review.submitted':
      case 'review.expired':
      case 'run.input_received': {
        // A comment leaves the run waiting (the entry's state says so).
        if (e.type === 'review.submitted' && e.state === 'awaiting_input') break;
        const s: Acc | null = e.phase ? get(e.phase) : current;
        if (!s) break;
        stopReview(s, e.at);
        if (s.status === 'review') s.status = s.ended_at === null ? 'running' : 'succeeded';
        break;
      }
      case 'run.ended':
      case 'run.lost': {
        const end = e.type === 'run.lost' ? 'lost' : (END_STATUS[e.state] ?? 'failed');
        const s = current ?? (e.phase ? spans.get(e.phase) : undefined) ?? null;
        if (s && (s.status === 'running' || s.status === 'review')) {
          stopReview(s, e.at);
          // A run that succeeds while a phase waits for a review closes that phase as succeeded.
          s.status = end;
          s.ended_at = e.at;
        }
        current = null;
        break;
      }
      default:
        break;
    }
  }
  return [...spans.values()].map((s) => {
    const review = s.review_since !== null ? s.review_ms + Math.max(0, now - s.review_since) : s.review_ms;
    const end = s.ended_at ?? (s.started_at !== null ? now : null);
    return {
      name: s.name,
      status: s.status,
      started_at: s.started_at,
      ended_at: s.ended_at,
      duration: s.started_at !== null && end !== null ? Math.max(0, end - s.started_at) : null,
      attempts: s.attempts,
      review_ms: review,
    };
  });
}

/**
 * Where a span sits on a bar from `from` to `to`, as percentages (at least 0.5% wide, so an instant
 * phase stays visible).
 */
export function barGeometry(
  span: { started_at: number | null; ended_at: number | null },
  from: number,
  to: number,
  now: number,
): { left: number; width: number } | null {
  if (span.started_at === null) return null;
  const total = Math.max(1, to - from);
  const start = Math.min(Math.max(span.started_at, from), to);
  const end = Math.min(Math.max(span.ended_at ?? now, start), to);
  const left = ((start - from) / total) * 100;
  const width = Math.max(0.5, ((end - start) / total) * 100);
  return { left: Math.min(left, 99.5), width: Math.min(width, 100 - Math.min(left, 99.5)) };
}

/** A log line, or the marker before the first line of a resumed attempt. */
export type LogRow<L> = { line: L } | { attempt: number; at: number };

/**
 * Log lines with a marker before the first line of each attempt after the first; `starts` are the
 * attempts' start times (src/shared/api/run-time.ts `attemptStarts`).
 */
export function withAttemptMarkers<L extends { at: number }>(
  lines: readonly L[],
  starts: readonly number[],
): LogRow<L>[] {
  const out: LogRow<L>[] = [];
  let shown = 1;
  for (const line of lines) {
    const n = attemptOf(starts, line.at);
    if (n > shown) out.push({ attempt: n, at: starts[n - 1]! });
    shown = Math.max(shown, n);
    out.push({ line });
  }
  return out;
}
