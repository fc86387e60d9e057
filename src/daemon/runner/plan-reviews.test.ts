import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { afterVerdict, type HistoryEntry, reviewToResume, verdictOf } from './plan.js';

describe('verdicts', () => {
  const cases: [string, boolean, 'next' | 'again' | 'ended'][] = [
    ['approve', true, 'next'],
    ['request_changes', true, 'again'],
    ['approve', false, 'ended'],
    ['request_changes', false, 'ended'],
    ['reject', false, 'ended'],
    ['reject', true, 'ended'],
    ['expired', false, 'ended'],
  ];
  for (const [action, runContinues, next] of cases) {
    it(`${action} with run_continues ${runContinues} → ${next}`, () =>
      assert.equal(afterVerdict({ action: action as 'approve', run_continues: runContinues }), next));
  }

  it('reads a delivered verdict, a missing action being a reject that ends the run', () => {
    assert.deepEqual(verdictOf({}, 'rv1', 2), {
      action: 'reject',
      comment: null,
      actor: null,
      review_id: 'rv1',
      round: 2,
      run_continues: false,
    });
    assert.deepEqual(
      verdictOf(
        { action: 'approve', comment: 'ok', actor: 'ann', round: 3, run_continues: true, review_id: 'x' },
        'rv1',
        2,
      ),
      { action: 'approve', comment: 'ok', actor: 'ann', review_id: 'rv1', round: 3, run_continues: true },
    );
  });
});

describe('the review to wait for again after a restart', () => {
  const requested = (id: string, phase: string, round: number, kind = 'phase'): HistoryEntry => ({
    type: 'review.requested',
    phase,
    data: { review_id: id, round, kind },
  });
  const submitted = (id: string, action: string, comment: string | null = null): HistoryEntry => ({
    type: 'review.submitted',
    data: { review_id: id, action, comment },
  });

  it('is the noted review, undecided', () => {
    assert.deepEqual(reviewToResume({ phase: 'build', reviewId: 'rv1', round: 2 }, []), {
      reviewId: 'rv1',
      round: 2,
      known: null,
    });
  });

  it('is the phase’s newest phase review when the daemon stopped before noting it', () => {
    const history = [
      requested('rv1', 'build', 1),
      requested('rv2', 'build', 2),
      requested('rv3', 'other', 1),
      requested('rv4', 'build', 3, 'agent'),
    ];
    assert.deepEqual(reviewToResume({ phase: 'build', reviewId: null, round: null }, history), {
      reviewId: 'rv2',
      round: 2,
      known: null,
    });
  });

  it('is nothing when no review was requested', () => {
    assert.equal(
      reviewToResume({ phase: 'build', reviewId: null, round: null }, [requested('rv1', 'x', 1)]),
      null,
    );
  });

  it('defaults to round 1', () => {
    const history: HistoryEntry[] = [
      { type: 'review.requested', phase: 'build', data: { review_id: 'rv1', kind: 'phase' } },
    ];
    assert.equal(reviewToResume({ phase: 'build', reviewId: null, round: null }, history)?.round, 1);
  });

  it('carries a verdict the history has already, approve or request_changes only', () => {
    const history = [
      submitted('rv0', 'approve'),
      submitted('rv1', 'comment'),
      submitted('rv1', 'request_changes', 'again'),
    ];
    assert.deepEqual(reviewToResume({ phase: 'build', reviewId: 'rv1', round: 1 }, history)?.known, {
      action: 'request_changes',
      comment: 'again',
      actor: null,
      review_id: 'rv1',
      round: 1,
      run_continues: true,
    });
    assert.equal(
      reviewToResume({ phase: 'build', reviewId: 'rv1', round: 1 }, [submitted('rv1', 'reject')])?.known,
      null,
    );
  });
});
