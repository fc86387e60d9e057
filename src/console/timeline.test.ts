import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunState } from '../shared/api/run-states.js';
import { barGeometry, phaseTimeline, withAttemptMarkers } from './timeline.js';
import type { HistoryEntry } from './types.js';

const e = (type: string, at: number, phase: string | null, state: RunState = 'running'): HistoryEntry => ({
  type,
  at,
  phase,
  from_phase: null,
  error: null,
  actor: null,
  state,
  data: null,
});

describe('phase timeline', () => {
  it('lists planned phases in order, with durations of finished and running ones', () => {
    const history = [
      e('run.queued', 0, null, 'queued'),
      e('run.started', 100, null),
      e('phase.started', 100, 'draft'),
      e('phase.completed', 1100, 'draft'),
      e('phase.started', 1200, 'publish'),
    ];
    const spans = phaseTimeline(history, ['draft', 'publish', 'notify'], 5000);
    assert.deepEqual(
      spans.map((s) => [s.name, s.status, s.duration]),
      [
        ['draft', 'succeeded', 1000],
        ['publish', 'running', 3800],
        ['notify', 'pending', null],
      ],
    );
  });

  it('shows a phase waiting for a review and the time the review took', () => {
    const waiting = [
      e('phase.started', 0, 'draft'),
      e('review.requested', 1000, 'draft', 'awaiting_input'),
      e('review.submitted', 2000, 'draft', 'awaiting_input'), // a comment: still waiting
    ];
    const [w] = phaseTimeline(waiting, ['draft'], 4000);
    assert.equal(w!.status, 'review');
    assert.equal(w!.review_ms, 3000);
    const approved = [
      ...waiting,
      e('review.submitted', 5000, 'draft', 'running'),
      e('phase.completed', 5100, 'draft'),
      e('run.ended', 5200, null, 'succeeded'),
    ];
    const [a] = phaseTimeline(approved, ['draft'], 9000);
    assert.deepEqual([a!.status, a!.duration, a!.review_ms], ['succeeded', 5100, 4000]);
  });

  it('ends the running phase with the run: failed, lost; counts resumed attempts', () => {
    const failed = phaseTimeline(
      [e('phase.started', 0, 'build'), e('run.ended', 700, 'build', 'failed')],
      ['build', 'ship'],
      9000,
    );
    assert.deepEqual(
      failed.map((s) => [s.status, s.ended_at]),
      [
        ['failed', 700],
        ['pending', null],
      ],
    );
    const resumed = phaseTimeline(
      [
        e('phase.started', 0, 'build'),
        e('run.lost', 500, 'build', 'lost'),
        e('run.resume_requested', 600, 'build', 'queued'),
        e('phase.started', 1000, 'build'),
        e('phase.completed', 1500, 'build'),
      ],
      [],
      9000,
    );
    assert.deepEqual(
      resumed.map((s) => [s.name, s.status, s.attempts, s.duration]),
      [['build', 'succeeded', 2, 500]],
    );
  });

  it('places bars proportionally, never invisible and never outside the track', () => {
    assert.deepEqual(barGeometry({ started_at: 0, ended_at: 500 }, 0, 1000, 2000), { left: 0, width: 50 });
    assert.deepEqual(barGeometry({ started_at: 500, ended_at: null }, 0, 1000, 750), { left: 50, width: 25 });
    assert.deepEqual(barGeometry({ started_at: 1000, ended_at: 1000 }, 0, 1000, 1000), {
      left: 99.5,
      width: 0.5,
    });
    assert.equal(barGeometry({ started_at: null, ended_at: null }, 0, 1000, 1000), null);
  });
});

describe('attempt markers in the logs', () => {
  it('marks the first line of each attempt after the first', () => {
    const starts = [10, 100, 200];
    const lines = [{ at: 11 }, { at: 20 }, { at: 250 }, { at: 260 }];
    assert.deepEqual(withAttemptMarkers(lines, starts), [
      { line: { at: 11 } },
      { line: { at: 20 } },
      { attempt: 3, at: 200 },
      { line: { at: 250 } },
      { line: { at: 260 } },
    ]);
    assert.deepEqual(withAttemptMarkers([{ at: 5 }], [0]), [{ line: { at: 5 } }]);
  });
});
