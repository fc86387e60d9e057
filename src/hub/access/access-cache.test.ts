import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { post, startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { addOrgUser, buildWorld, type World } from '../../../test/helpers/world.js';
import { authenticate } from '../auth/authenticate.js';
import type { RunningHub } from '../server.js';
import { requireRealm } from './access.service.js';
import { ACCESS_CACHE_MS, changesAccess } from './access-cache.js';

describe('access cache', () => {
  let h: TestHub;
  let w: World;
  let other: RunningHub;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    other = await h.startAnother();
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  it('is cleared by writes that can change an answer, and only by those', () => {
    const db = h.running.hub.db;
    const cases: [boolean, { toOperationNode(): unknown }][] = [
      [false, db.updateTable('tokens').set({ last_used_at: 1 }).where('id', '=', 'x')],
      [true, db.updateTable('tokens').set({ revoked_at: 1 }).where('id', '=', 'x')],
      [false, db.updateTable('daemons').set({ last_seen_at: 1, status: 'online' }).where('id', '=', 'x')],
      [true, db.updateTable('daemons').set({ revoked_at: 1 }).where('id', '=', 'x')],
      [true, db.updateTable('org_members').set({ role: 'member' }).where('user_id', '=', 'x')],
      [true, db.deleteFrom('realm_members').where('realm_id', '=', 'x')],
      [true, db.insertInto('group_members').values({ group_id: 'g', user_id: 'u', created_at: 1 })],
      [true, db.updateTable('orgs').set({ deleted_at: 1 }).where('id', '=', 'x')],
      [false, db.updateTable('runs').set({ state: 'failed' }).where('run_id', '=', 'x')],
      [false, db.deleteFrom('run_logs').where('run_id', '=', 'x')],
      [false, db.selectFrom('tokens').selectAll()],
    ];
    for (const [expected, q] of cases) {
      assert.equal(
        changesAccess(q.toOperationNode() as never),
        expected,
        JSON.stringify(q.toOperationNode()),
      );
    }
  });

  it('a revoked token is refused at once by its hub process and within a second by another', async () => {
    const u = await addOrgUser(h, w.orgId, `revoke-${Date.now()}@acme.test`, 'member');
    // The other process has the token in its cache.
    assert.equal((await post(`${other.url}/v1/auth/whoami`, {}, u.token)).status, 200);
    assert.equal((await h.call('auth/sign_out', {}, u.token)).status, 200);
    assert.equal((await h.call('auth/whoami', {}, u.token)).status, 401);
    await sleep(ACCESS_CACHE_MS);
    assert.equal((await post(`${other.url}/v1/auth/whoami`, {}, u.token)).status, 401);
  });

  it('a removed member is refused at once by its hub process and within a second by another', async () => {
    const u = await addOrgUser(h, w.orgId, `removed-${Date.now()}@acme.test`, 'member');
    await h.ok('realms/add_member', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: u.id,
      role: 'member',
    });
    const list = { realm_id: w.realmId };
    assert.equal((await post(`${other.url}/v1/runs/list`, list, u.token)).status, 200);
    await h.ok('orgs/remove_member', { org_id: w.orgId, user_id: u.id });
    // Removal from the org ends the token's access (its sessions may be revoked too).
    assert.ok([401, 403].includes((await h.call('runs/list', list, u.token)).status));
    await sleep(ACCESS_CACHE_MS);
    assert.ok([401, 403].includes((await post(`${other.url}/v1/runs/list`, list, u.token)).status));
  });

  it('a lowered role is refused at once by its hub process and within a second by another', async () => {
    const u = await addOrgUser(h, w.orgId, `lowered-${Date.now()}@acme.test`, 'member');
    await h.ok('realms/add_member', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: u.id,
      role: 'admin',
    });
    const on = async (hub: RunningHub['hub']) => {
      const actor = await authenticate(hub, `Bearer ${u.token}`);
      return requireRealm(hub, actor, w.realmId, 'daemons.manage').then(
        () => 'allowed',
        (err: { code?: string }) => err.code,
      );
    };
    assert.equal(await on(other.hub), 'allowed');
    assert.equal(await on(h.running.hub), 'allowed');
    await h.ok('realms/set_member_role', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: u.id,
      role: 'member',
    });
    assert.equal(await on(h.running.hub), 'forbidden');
    await sleep(ACCESS_CACHE_MS);
    assert.equal(await on(other.hub), 'forbidden');
  });
});
