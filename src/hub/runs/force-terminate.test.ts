import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunsTable } from '../../db/schema.js';
import { CANCEL_WAIT_MS, forceTerminateOf } from './run.mapper.js';

const NOW = 1_800_000_000_000;

function run(over: Partial<RunsTable>): RunsTable {
  // Only the fields forceTerminateOf reads matter; the rest keep the row well-formed.
  return {
    state: 'running',
    daemon_id: 'd1',
    lease_expires_at: NOW + 10_000,
    pending_control: null,
    terminated_at: null,
    terminated_by_user_id: null,
    terminated_reason: null,
    ...over,
  } as RunsTable;
}

const cancelAt = (requestedAt: number) =>
  JSON.stringify({ type: 'cancel', tx_id: 't', requested_by: { user_id: 'u' }, requested_at: requestedAt });

describe('force_terminate eligibility (CONTRACT.md §5)', () => {
  const cases: [string, RunsTable, boolean, string | null, string | null][] = [
    ['a terminal run', run({ state: 'succeeded' }), true, null, 'already_terminal'],
    [
      'a terminated run',
      run({ state: 'terminated', terminated_at: NOW - 1 }),
      true,
      null,
      'already_terminal',
    ],
    ['a lost run', run({ state: 'lost' }), true, 'lease_expired', null],
    ['a queued run no daemon took', run({ state: 'queued', daemon_id: null }), true, 'no_daemon', null],
    ['its daemon is offline', run({}), false, 'daemon_offline', null],
    ['its lease expired', run({ lease_expires_at: NOW - 1 }), true, 'lease_expired', null],
    [
      'a cancel waiting under 60 s',
      run({ pending_control: cancelAt(NOW - CANCEL_WAIT_MS + 1) }),
      true,
      null,
      'cancel_pending',
    ],
    [
      'a cancel unacknowledged for over 60 s',
      run({ pending_control: cancelAt(NOW - CANCEL_WAIT_MS - 1) }),
      true,
      'cancel_unacknowledged',
      null,
    ],
    ['a healthy run with its daemon online', run({}), true, null, 'daemon_online_use_cancel'],
    [
      'awaiting input with an expired lease',
      run({ state: 'awaiting_input', lease_expires_at: NOW - 1 }),
      true,
      'lease_expired',
      null,
    ],
  ];
  for (const [name, r, online, trigger, blocker] of cases) {
    it(name, () => {
      const f = forceTerminateOf(r, online, NOW);
      assert.equal(f.eligible, trigger !== null);
      assert.equal(f.trigger, trigger);
      assert.equal(f.blocker, blocker);
      assert.equal(f.already_terminated, r.state === 'terminated');
    });
  }
});
