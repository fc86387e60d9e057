import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cronProblem, nextSlot, slotsBetween } from './cron.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const at = (s: string) => Date.parse(s);

describe('schedule times (fixed clock)', () => {
  it('reads 5 fields, or 6 with seconds first', () => {
    assert.equal(
      iso(nextSlot('*/2 * * * * *', 'UTC', at('2026-01-01T00:00:00.500Z'))),
      '2026-01-01T00:00:02.000Z',
    );
    assert.equal(iso(nextSlot('15 * * * *', 'UTC', at('2026-01-01T00:20:00Z'))), '2026-01-01T01:15:00.000Z');
    const { slots, count } = slotsBetween(
      '* * * * * *',
      'UTC',
      at('2026-01-01T00:00:00Z'),
      at('2026-01-01T00:00:09Z'),
      3,
    );
    assert.equal(count, 10);
    assert.deepEqual(slots.map(iso), [
      '2026-01-01T00:00:07.000Z',
      '2026-01-01T00:00:08.000Z',
      '2026-01-01T00:00:09.000Z',
    ]);
  });

  it('refuses bad expressions and zones, naming the field', () => {
    assert.equal(cronProblem('* * *', 'UTC')?.field, 'cron');
    assert.equal(cronProblem('* * * * * * *', 'UTC')?.field, 'cron');
    assert.equal(cronProblem('61 * * * *', 'UTC')?.field, 'cron');
    assert.equal(cronProblem('* * * * *', 'Mars/Olympus')?.field, 'timezone');
    assert.equal(cronProblem('0 9 * * 1-5', 'Europe/Berlin'), null);
  });

  it('clocks going forward: a time inside the gap fires once, right after it (no lost fire)', () => {
    // Europe/Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that day.
    const s = slotsBetween(
      '30 2 * * *',
      'Europe/Berlin',
      at('2026-03-28T00:00:00Z'),
      at('2026-03-31T00:00:00Z'),
      10,
    );
    assert.deepEqual(s.slots.map(iso), [
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST, the first valid time after the gap
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
  });

  it('clocks going back: a fixed time that happens twice fires once (no double fire)', () => {
    // Europe/Berlin, 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    const s = slotsBetween(
      '30 2 * * *',
      'Europe/Berlin',
      at('2026-10-24T00:00:00Z'),
      at('2026-10-27T00:00:00Z'),
      10,
    );
    assert.deepEqual(s.slots.map(iso), [
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T00:30:00.000Z', // 02:30 CEST, its first occurrence only
      '2026-10-26T01:30:00.000Z', // 02:30 CET
    ]);
    // An interval fires at every real instant: the repeated hour has its two half-hours twice.
    const every = slotsBetween(
      '*/30 * * * *',
      'Europe/Berlin',
      at('2026-10-25T00:00:00Z'),
      at('2026-10-25T01:59:00Z'),
      10,
    );
    assert.equal(every.count, 4);
  });

  it('America/New_York: the daily 09:00 follows local time across the change', () => {
    const before = nextSlot('0 9 * * *', 'America/New_York', at('2026-03-07T15:00:00Z'));
    const after = nextSlot('0 9 * * *', 'America/New_York', at('2026-03-08T15:00:00Z'));
    assert.equal(iso(before), '2026-03-08T13:00:00.000Z'); // EDT already (the change is at 02:00)
    assert.equal(iso(after), '2026-03-09T13:00:00.000Z');
    assert.equal(
      iso(nextSlot('0 9 * * *', 'America/New_York', at('2026-03-06T15:00:00Z'))),
      '2026-03-07T14:00:00.000Z',
    );
  });
});
