import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { TEST_DB } from '../../../test/helpers/db.js';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';

/** Realm and organization secrets (CONTRACT.md §12): set, list, remove; values never answered. */
describe('secrets/set, secrets/list, secrets/remove', () => {
  let h: TestHub;
  let w: World;
  const VALUE = 'sk-very-secret-7f3a9c1e55d2b8';
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
  });
  after(() => h.close());

  it('sets, replaces, lists (names only) and removes secrets of a realm and of its organization', async () => {
    const set = await h.ok('secrets/set', { realm_id: w.realmId, name: 'API_KEY', value: VALUE });
    assert.equal(set.data.name, 'API_KEY');
    assert.equal(set.data.realm_id, w.realmId);
    await h.ok('secrets/set', { realm_id: w.realmId, name: 'API_KEY', value: `${VALUE}-2` });
    await h.ok('secrets/set', { realm_id: w.realmId, name: 'B_TOKEN', value: VALUE });
    await h.ok('secrets/set', { org_id: w.orgId, name: 'API_KEY', value: VALUE });
    const realm = await h.ok('secrets/list', { realm_id: w.realmId, limit: 1 });
    assert.deepEqual(
      realm.data.map((s: { name: string }) => s.name),
      ['API_KEY'],
    );
    assert.ok(realm.next_cursor);
    const next = await h.ok('secrets/list', { realm_id: w.realmId, cursor: realm.next_cursor });
    assert.deepEqual(
      next.data.map((s: { name: string }) => s.name),
      ['B_TOKEN'],
    );
    const org = await h.ok('secrets/list', { org_id: w.orgId });
    assert.equal(org.data.length, 1);
    assert.equal(org.data[0].realm_id, null);
    for (const reply of [set, realm, next, org]) {
      assert.ok(!JSON.stringify(reply).includes('sk-very-secret'), 'a reply carries a value');
      for (const s of reply.data.length ? reply.data : [reply.data]) {
        assert.ok(typeof s.updated_at === 'number' && typeof s.updated_by === 'string');
        assert.equal('value' in s, false);
      }
    }
    assert.deepEqual(await h.ok('secrets/remove', { realm_id: w.realmId, name: 'B_TOKEN' }), {
      ok: true,
      removed: true,
    });
    assert.equal((await h.ok('secrets/remove', { realm_id: w.realmId, name: 'B_TOKEN' })).removed, false);
  });

  it('answers invalid_params for a bad name, an empty or oversized value, and zero or two scopes', async () => {
    const bad = [
      { realm_id: w.realmId, name: 'lower', value: 'v' },
      { realm_id: w.realmId, name: '1ABC', value: 'v' },
      { realm_id: w.realmId, name: 'A'.repeat(65), value: 'v' },
      { realm_id: w.realmId, name: 'OK', value: '' },
      { realm_id: w.realmId, name: 'OK', value: 'x'.repeat(64 * 1024 + 1) },
      { name: 'OK', value: 'v' },
      { realm_id: w.realmId, org_id: w.orgId, name: 'OK', value: 'v' },
      { realm_id: w.realmId, name: 'OK', value: 5 },
    ];
    for (const body of bad) {
      const r = await h.call('secrets/set', body);
      assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
      assert.equal(r.body.code, 'invalid_params');
    }
    assert.equal((await h.call('secrets/set', { realm_id: 'nope', name: 'OK', value: 'v' })).status, 404);
    assert.equal((await h.call('secrets/list', { realm_id: w.realmId, cursor: '!!' })).status, 400);
  });

  it('keeps no value in clear in the database file (SQLite, WAL included)', {
    skip: TEST_DB !== 'sqlite',
  }, async () => {
    const marker = 'PLAINTEXT-MARKER-4b1d0c7e9a';
    await h.ok('secrets/set', { realm_id: w.realmId, name: 'MARKED', value: marker });
    await h.ok('secrets/set', { org_id: w.orgId, name: 'MARKED', value: marker });
    const file = h.database.url;
    let seen = 0;
    for (const f of [file, `${file}-wal`]) {
      if (!existsSync(f)) continue;
      const bytes = readFileSync(f);
      seen += bytes.length;
      assert.equal(bytes.includes(marker), false, `${f} holds the value in clear`);
      assert.equal(bytes.includes(Buffer.from(marker).toString('base64')), false);
    }
    assert.ok(seen > 0);
  });
});
