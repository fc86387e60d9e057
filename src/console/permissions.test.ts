import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunState } from '../shared/api/run-states.js';
import { roleAtLeast, runControls } from './permissions.js';
import type { ForceTerminate, PendingControl } from './types.js';

const ft = (eligible: boolean, blocker: string | null): ForceTerminate => ({
  already_terminated: false,
  terminated_at: null,
  terminated_by_user_id: null,
  terminated_reason: null,
  eligible,
  trigger: eligible ? 'daemon_offline' : null,
  blocker,
});
const run = (
  state: RunState,
  force = ft(false, 'daemon_online_use_cancel'),
  pending: PendingControl | null = null,
) => ({
  state,
  pending_control: pending,
  force_terminate: force,
});

describe('run controls from role and run', () => {
  it('ranks realm roles like the hub', () => {
    assert.ok(roleAtLeast('admin', 'operator'));
    assert.ok(roleAtLeast('operator', 'operator'));
    assert.ok(!roleAtLeast('member', 'operator'));
    assert.ok(!roleAtLeast(null, 'member'));
  });

  it('a member sees no control, only why', () => {
    const c = runControls(run('running'), 'member');
    assert.deepEqual([c.cancel.allowed, c.resume.allowed, c.terminate.allowed], [false, false, false]);
    assert.equal(c.terminate.blocker, null);
    assert.match(c.roleNote!, /\(member\) can view this run but not/);
  });

  it('an operator cancels live runs and resumes failed, cancelled and lost ones; never terminates', () => {
    assert.equal(runControls(run('running'), 'operator').cancel.allowed, true);
    assert.equal(runControls(run('awaiting_input'), 'operator').cancel.allowed, true);
    assert.equal(runControls(run('succeeded'), 'operator').cancel.allowed, false);
    for (const s of ['failed', 'cancelled', 'lost'] as const) {
      assert.equal(runControls(run(s), 'operator').resume.allowed, true, s);
    }
    assert.equal(runControls(run('running'), 'operator').resume.allowed, false);
    assert.equal(runControls(run('lost', ft(true, null)), 'operator').terminate.allowed, false);
    const pending = runControls(
      run('running', undefined, { type: 'cancel', tx_id: 't', requested_by: 'u', requested_at: 1 }),
      'operator',
    );
    assert.equal(pending.cancel.allowed, false);
    assert.match(pending.cancel.blocker!, /waiting for the daemon/);
  });

  it('an admin force-terminates only when eligible, and is told the blocker otherwise', () => {
    assert.equal(runControls(run('lost', ft(true, null)), 'admin').terminate.allowed, true);
    const blocked = runControls(run('running'), 'admin').terminate;
    assert.equal(blocked.allowed, false);
    assert.match(blocked.blocker!, /daemon is online.*use Cancel/);
    // An ended run needs no explanation.
    assert.equal(
      runControls(run('succeeded', ft(false, 'already_terminal')), 'admin').terminate.blocker,
      null,
    );
  });
});
