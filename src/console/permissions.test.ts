import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunState } from '../shared/api/run-states.js';
import { canManageScoped, orgAdmin, roleAtLeast, runControls } from './permissions.js';
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

describe('management controls', () => {
  const who = (
    role: 'member' | 'operator' | 'admin' | null,
    orgRole: 'owner' | 'admin' | 'member' | null,
  ) => ({
    role,
    orgRole,
    userId: 'u1',
  });
  const realmThing = { realm_id: 'r1', org_id: null, user_id: null };
  const orgThing = { realm_id: null, org_id: 'o1', user_id: null };
  it('a realm thing follows the realm role', () => {
    assert.equal(canManageScoped(realmThing, who('operator', 'member'), 'operator'), true);
    assert.equal(canManageScoped(realmThing, who('member', 'admin'), 'operator'), false);
    assert.equal(canManageScoped(realmThing, who('operator', null), 'admin'), false);
  });
  it('an organization thing needs an org owner or admin', () => {
    assert.equal(canManageScoped(orgThing, who('admin', 'member'), 'operator'), false);
    assert.equal(canManageScoped(orgThing, who(null, 'owner'), 'operator'), true);
    assert.equal(orgAdmin('admin'), true);
    assert.equal(orgAdmin(null), false);
  });
  it('a personal thing belongs to its person only', () => {
    assert.equal(
      canManageScoped({ realm_id: null, org_id: null, user_id: 'u1' }, who(null, null), 'admin'),
      true,
    );
    assert.equal(
      canManageScoped({ realm_id: null, org_id: null, user_id: 'u2' }, who('admin', 'owner'), 'admin'),
      false,
    );
  });
});
