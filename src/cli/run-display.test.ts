import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { HistoryEntry, Run } from '../shared/api/runs.js';
import { didYouMean } from './resolve.js';
import { attemptOf, attemptStarts, formatRunningTime, logTime, runningTime } from './run-display.js';

const entry = (type: string, at: number, state: HistoryEntry['state']): HistoryEntry => ({
  type,
  at,
  state,
  from_phase: null,
  phase: null,
  error: null,
  actor: null,
  data: null,
});

// Started at 1000, ran 1000–2500, failed; resumed at 5000, ran 6000–8500, succeeded.
const history = [
  entry('run.queued', 1000, 'queued'),
  entry('run.started', 1000, 'running'),
  entry('run.ended', 2500, 'failed'),
  entry('run.resume_requested', 5000, 'queued'),
  entry('run.resumed', 6000, 'running'),
  entry('review.requested', 7000, 'awaiting_input'),
  entry('review.submitted', 7500, 'running'),
  entry('run.ended', 8500, 'succeeded'),
];
const run = { started_at: 1000, state: 'succeeded' } as Run;

describe('run display', () => {
  test('attempts begin when the run leaves an ended state', () => {
    const starts = attemptStarts(run, history);
    assert.deepEqual(starts, [1000, 5000]);
    assert.equal(attemptOf(starts, 2400), 1);
    assert.equal(attemptOf(starts, 5000), 2);
    assert.equal(attemptOf(starts, 9000), 2);
  });

  test('running time counts only time running, over the attempts', () => {
    const t = runningTime(run, history, 10_000);
    assert.deepEqual(t, { ms: 1500 + 1000 + 1000, attempts: 2 });
    assert.equal(formatRunningTime(t), 'ran 3.5 s over 2 attempts');
    assert.equal(formatRunningTime({ ms: 90_000, attempts: 1 }), 'ran 1.5 min over 1 attempt');
    assert.equal(formatRunningTime({ ms: 0, attempts: 0 }), 'not started');
    // A run still running counts up to now.
    const live = runningTime({ ...run, state: 'running' }, history.slice(0, 2), 4000);
    assert.deepEqual(live, { ms: 3000, attempts: 1 });
  });

  test('log times: local clock today, with the date on other days, full UTC with --utc', () => {
    const at = new Date(2026, 10, 23, 9, 5, 7, 42).getTime();
    assert.equal(logTime(at, false, at + 1000), '09:05:07.042');
    assert.equal(logTime(at, false, at + 86_400_000 * 2), '2026-11-23 09:05:07.042');
    assert.equal(logTime(Date.UTC(2026, 10, 23, 22, 8, 1, 123), true), '2026-11-23 22:08:01.123Z');
  });

  test('did you mean: near names and shared prefixes, nothing when nothing is near', () => {
    assert.equal(didYouMean('helo-team', ['hello-team', 'other']), '; did you mean hello-team?');
    assert.equal(didYouMean('hello', ['hello-team', 'zzz']), '; did you mean hello-team?');
    assert.equal(didYouMean('qqqqqq', ['hello-team']), '');
  });
});
