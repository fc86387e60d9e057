import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  dayRange,
  explainBlocker,
  formatDuration,
  formatRelative,
  formatStamp,
  formatTime,
  humanize,
  runDuration,
  waitingText,
} from './format.js';

describe('console formatting', () => {
  it('formats durations from milliseconds to days', () => {
    assert.equal(formatDuration(0), '0 ms');
    assert.equal(formatDuration(850), '850 ms');
    assert.equal(formatDuration(1000), '1.0 s');
    assert.equal(formatDuration(12_345), '12.3 s');
    assert.equal(formatDuration(59_999), '59.9 s');
    assert.equal(formatDuration(60_000), '1 min 00 s');
    assert.equal(formatDuration(245_000), '4 min 05 s');
    assert.equal(formatDuration(3_600_000), '1 h 00 min');
    assert.equal(formatDuration(2 * 3_600_000 + 3 * 60_000 + 59_000), '2 h 03 min');
    assert.equal(formatDuration(3 * 86_400_000 + 4 * 3_600_000), '3 d 4 h');
  });

  it('shows a dash for missing, negative or non-finite durations', () => {
    for (const v of [null, undefined, -1, Number.NaN, Number.POSITIVE_INFINITY])
      assert.equal(formatDuration(v), '—');
  });

  it('formats times relative to now, past and future', () => {
    const now = 1_700_000_000_000;
    assert.equal(formatRelative(now - 1000, now), 'just now');
    assert.equal(formatRelative(now - 42_000, now), '42 s ago');
    assert.equal(formatRelative(now - 5 * 60_000, now), '5 min ago');
    assert.equal(formatRelative(now - 3 * 3_600_000, now), '3 h ago');
    assert.equal(formatRelative(now - 2 * 86_400_000, now), '2 d ago');
    assert.equal(formatRelative(now + 5 * 60_000, now), 'in 5 min');
    assert.equal(formatRelative(null, now), '—');
  });

  it('shows every time with its date', () => {
    assert.equal(formatTime(new Date(2025, 10, 21, 9, 5, 7).getTime()), '2025-11-21 09:05:07');
    assert.equal(formatTime(new Date(2025, 10, 20, 23, 59, 0).getTime()), '2025-11-20 23:59:00');
    assert.equal(formatTime(null), '—');
  });

  it('turns the filter days into a range that includes both days', () => {
    const r = dayRange('2026-11-01', '2026-11-02');
    assert.equal(r.after, new Date(2026, 10, 1).getTime());
    assert.equal(r.before, new Date(2026, 10, 3).getTime());
    assert.deepEqual(dayRange(null, 'not a day'), { after: null, before: null });
    assert.equal(dayRange(null, '2026-12-31').before, new Date(2027, 0, 1).getTime());
    assert.equal(formatStamp(new Date(2025, 10, 21, 9, 5, 7).getTime()), '2025-11-21 09:05');
  });

  it('humanizes codes, measures runs and explains force-terminate blockers', () => {
    assert.equal(humanize('awaiting_input'), 'awaiting input');
    assert.equal(humanize('run.cancel_requested'), 'run cancel requested');
    assert.equal(runDuration({ started_at: 1000, completed_at: 4000 }, 9999), 3000);
    assert.equal(runDuration({ started_at: 1000, completed_at: null }, 9000), 8000);
    assert.match(explainBlocker('daemon_online_use_cancel'), /use Cancel/);
    assert.match(explainBlocker('cancel_pending'), /wait/);
    assert.equal(explainBlocker('something_new'), 'something new');
    assert.equal(explainBlocker(null), '');
  });
  it('says what a queued run waits for', () => {
    assert.equal(waitingText(null), null);
    assert.equal(
      waitingText({ key: 'inputs.repo', value: 'svc', limit: 2, running: 2 }),
      'inputs.repo=svc full (2/2 running)',
    );
  });
});
