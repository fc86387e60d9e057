import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { TEST_DB } from '../../../test/helpers/db.js';
import { post, startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { startHubProcess } from '../../../test/helpers/hub-process.js';
import { until } from '../../../test/helpers/until.js';
import { addOrgUser, buildWorld, type World } from '../../../test/helpers/world.js';
import { ACCESS_CACHE_MS, changesAccess, createAccessCache } from './access-cache.js';
import type { Actor } from './actor.js';

/**
 * How long a test waits for another hub process to refuse what was revoked: a bound for a loaded
 * machine, not the promise (that is ACCESS_CACHE_MS).
 */
const REFUSED_WITHIN_MS = 10 * ACCESS_CACHE_MS;

describe('access cache', () => {
  let h: TestHub;
  let w: World;
  /**
   * Another hub process on the same database: on PostgreSQL a real `svc hub` child process; SQLite
   * has one hub process, so there a second hub in this process on the same file stands for it.
   */
  let other: { url: string; close(): Promise<void> };
  before(async () => {
    const secretsKey = randomBytes(32).toString('base64');
    h = await startTestHub({ secretsKey });
    w = await buildWorld(h);
    other = TEST_DB === 'postgres' ? await startHubProcess(h, secretsKey) : await h.startAnother();
  });
  after(async () => {
    await other.close();
    await h.close();
  });
  /** Polls the other process with `op` until it answers one of `statuses`. */
  const refusedByOther = (what: string, op: string, body: unknown, token: string, statuses: number[]) =>
    until(
      `${what} refused by the other hub process`,
      async () => statuses.includes((await post(`${other.url}/v1/${op}`, body, token)).status),
      REFUSED_WITHIN_MS,
    );

  it('keeps each kind of answer apart, and reads one in use again in the background', async () => {
    let now = 1_000;
    const cache = createAccessCache(1_000, () => now);
    const actor = { kind: 'user', user: { id: 'u' } } as unknown as Actor;
    let reads = 0;
    const load = async () => {
      reads++;
      return actor;
    };
    assert.equal(await cache.token('h', load), actor);
    assert.equal(await cache.realmRole('u', 'r', async () => 'member'), 'member');
    assert.equal(await cache.orgRole('u', 'r', async () => 'admin'), 'admin', 'not the realm role');
    assert.equal(await cache.realmRole('u', 'r', async () => 'admin'), 'member');
    assert.equal(cache.size(), 3);
    now += 600;
    assert.equal(await cache.token('h', load), actor);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(reads, 2, 'read again past half its time, after the turn');
    cache.clear();
    assert.equal(cache.size(), 0);
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

  it('a revoked token is refused at once by its hub process, and then by another', async () => {
    const u = await addOrgUser(h, w.orgId, `revoke-${Date.now()}@acme.test`, 'member');
    // The other process has the token in its cache.
    assert.equal((await post(`${other.url}/v1/auth/whoami`, {}, u.token)).status, 200);
    assert.equal((await h.call('auth/sign_out', {}, u.token)).status, 200);
    assert.equal((await h.call('auth/whoami', {}, u.token)).status, 401);
    await refusedByOther('the revoked token', 'auth/whoami', {}, u.token, [401]);
  });

  it('a removed member is refused at once by its hub process, and then by another', async () => {
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
    await refusedByOther('the removed member', 'runs/list', list, u.token, [401, 403]);
  });

  it('a lowered role is refused at once by its hub process, and then by another', async () => {
    const u = await addOrgUser(h, w.orgId, `lowered-${Date.now()}@acme.test`, 'member');
    await h.ok('realms/add_member', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: u.id,
      role: 'admin',
    });
    // Listing a realm's secrets takes a realm admin.
    const adminOnly = { realm_id: w.realmId };
    assert.equal((await post(`${other.url}/v1/secrets/list`, adminOnly, u.token)).status, 200);
    assert.equal((await h.call('secrets/list', adminOnly, u.token)).status, 200);
    await h.ok('realms/set_member_role', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: u.id,
      role: 'member',
    });
    assert.equal((await h.call('secrets/list', adminOnly, u.token)).status, 403);
    await refusedByOther('the lowered role', 'secrets/list', adminOnly, u.token, [403]);
  });
});
