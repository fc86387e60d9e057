import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TEST_DB } from '../helpers/db.js';
import { post, startTestHub, type TestHub } from '../helpers/hub.js';
import { registerTeam } from '../helpers/runs.js';
import { buildWorld, uniq, type World } from '../helpers/world.js';

/** runs/new with idempotency_key (CONTRACT.md §10): one run per key and realm for 24 h. */
describe('idempotent starts', () => {
  let h: TestHub;
  let w: World;
  let clock = Date.now();
  before(async () => {
    h = await startTestHub({ now: () => clock });
    w = await buildWorld(h);
    await h.ok('agents/register', {
      org_id: w.orgId,
      manifest: { name: 'idem-agent', version: '1.0.0', agent_type: 'exec', command: ['true'] },
    });
    await registerTeam(h, w.orgId, 'idem-team', [{ name: 'p', agent: 'idem-agent' }]);
  });
  after(() => h.close());

  const start = (key: string, realmId = w.realmId, token = w.tokens.realm_member) =>
    h.call('runs/new', { realm_id: realmId, team: 'idem-team', idempotency_key: key }, token);
  const runsWithKey = async (key: string) =>
    h.running.hub.db
      .selectFrom('run_idempotency_keys')
      .innerJoin('runs', 'runs.run_id', 'run_idempotency_keys.run_id')
      .select('runs.run_id')
      .where('key', '=', key)
      .execute();

  it('answers the first run (200) to a repeat, and 201 to the first', async () => {
    const key = `k-${uniq()}`;
    const first = await start(key);
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const again = await start(key);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.data.run_id, first.body.data.run_id);
    const other = await start(`k-${uniq()}`);
    assert.equal(other.status, 201);
    assert.notEqual(other.body.data.run_id, first.body.data.run_id);
  });

  it('starts exactly one run for 20 concurrent repeats', async () => {
    const key = `c-${uniq()}`;
    const replies = await Promise.all(Array.from({ length: 20 }, () => start(key)));
    const ids = new Set(replies.map((r) => r.body.data?.run_id));
    assert.equal(ids.size, 1, JSON.stringify(replies.map((r) => r.body)));
    assert.deepEqual(replies.map((r) => r.status).sort(), [...Array(19).fill(200), 201]);
    assert.equal((await runsWithKey(key)).length, 1);
    const runs = await h.running.hub.db
      .selectFrom('runs')
      .select('run_id')
      .where('run_id', '=', [...ids][0]!)
      .execute();
    assert.equal(runs.length, 1);
  });

  it('starts one run for repeats spread over two hub processes', {
    skip: TEST_DB !== 'postgres' && 'PostgreSQL only: SQLite has one hub process',
  }, async () => {
    const other = await h.startAnother({ now: () => clock });
    try {
      const key = `p-${uniq()}`;
      const body = { realm_id: w.realmId, team: 'idem-team', idempotency_key: key };
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          i % 2 ? start(key) : post(`${other.url}/v1/runs/new`, body, w.tokens.realm_member),
        ),
      );
      assert.equal(
        new Set(replies.map((r) => r.body.data?.run_id)).size,
        1,
        JSON.stringify(replies.map((r) => r.body)),
      );
      assert.equal(replies.filter((r) => r.status === 201).length, 1);
      assert.equal((await runsWithKey(key)).length, 1);
    } finally {
      await other.close();
    }
  });

  it('refuses a key that is empty or too long', async () => {
    for (const key of ['', 'x'.repeat(201)]) {
      const r = await start(key);
      assert.equal(r.status, 400);
      assert.equal(r.body.code, 'invalid_params');
    }
  });

  it('keeps keys per realm, and for 24 hours', async () => {
    const key = `r-${uniq()}`;
    const a = await start(key);
    const b = await start(key, w.otherRealmId, h.adminToken);
    assert.equal(b.status, 201);
    assert.notEqual(a.body.data.run_id, b.body.data.run_id);
    // A day later (session tokens have expired by then: the administrator's personal token calls).
    clock += 24 * 60 * 60 * 1000 + 1;
    const later = await start(key, w.realmId, h.adminToken);
    assert.equal(later.status, 201);
    assert.notEqual(later.body.data.run_id, a.body.data.run_id);
    assert.equal((await start(key, w.realmId, h.adminToken)).body.data.run_id, later.body.data.run_id);
  });
});
