import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import { getSetting } from './settings.repo.js';

describe('settings', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
  });
  after(() => h.close());

  it('set, get_by_key, list and remove answer exactly the spec shapes', async () => {
    const before = Date.now();
    const set = await h.call('settings/set', { key: 'runs.lease_ms', value: '45000' });
    assert.equal(set.status, 200);
    assert.deepEqual(Object.keys(set.body).sort(), ['data', 'ok']);
    assert.deepEqual(Object.keys(set.body.data).sort(), ['daemon_id', 'key', 'updated_at', 'value']);
    assert.equal(set.body.data.daemon_id, '__global__');
    assert.equal(set.body.data.key, 'runs.lease_ms');
    assert.equal(set.body.data.value, '45000');
    assert.ok(set.body.data.updated_at >= before);

    const got = await h.call('settings/get_by_key', { key: 'runs.lease_ms' });
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, { ok: true, setting: set.body.data });
    // Setting again overwrites.
    const again = await h.ok('settings/set', { key: 'runs.lease_ms', value: '60000' });
    assert.equal(again.data.value, '60000');
    assert.equal((await h.ok('settings/get_by_key', { key: 'runs.lease_ms' })).setting.value, '60000');
    assert.equal(await getSetting(h.running.hub, 'runs.lease_ms'), '60000');
    assert.equal(await getSetting(h.running.hub, 'nothing.here'), null);

    const missing = await h.call('settings/get_by_key', { key: 'nothing.here' });
    assert.deepEqual(missing.body, { ok: true, setting: null });

    const removed = await h.call('settings/remove', { key: 'runs.lease_ms' });
    assert.equal(removed.status, 200);
    assert.deepEqual(removed.body, { ok: true, removed: true });
    assert.deepEqual((await h.call('settings/remove', { key: 'runs.lease_ms' })).body, {
      ok: true,
      removed: false,
    });
    assert.deepEqual((await h.call('settings/get_by_key', { key: 'runs.lease_ms' })).body, {
      ok: true,
      setting: null,
    });
  });

  it('an empty value is a value, distinct from an unset key', async () => {
    await h.ok('settings/set', { key: 'empty.value', value: '' });
    assert.equal((await h.ok('settings/get_by_key', { key: 'empty.value' })).setting.value, '');
    assert.equal(await getSetting(h.running.hub, 'empty.value'), '');
  });

  it('settings/list pages by key', async () => {
    const keys = ['list.a', 'list.b', 'list.c', 'list.d', 'list.e'];
    for (const key of [...keys].reverse()) await h.ok('settings/set', { key, value: key.toUpperCase() });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { key: string; daemon_id: string }[]; next_cursor: string | null } = await h.ok(
        'settings/list',
        { limit: 2, ...(cursor ? { cursor } : {}) },
      );
      assert.ok(page.data.length <= 2);
      for (const s of page.data) assert.equal(s.daemon_id, '__global__');
      seen.push(...page.data.map((s) => s.key));
      cursor = page.next_cursor;
    } while (cursor);
    assert.deepEqual(
      seen.filter((k) => k.startsWith('list.')),
      keys,
    );
    assert.deepEqual([...seen].sort(), seen);
    const all = await h.ok('settings/list', {});
    assert.equal(all.next_cursor, null);
    assert.ok(all.data.length >= keys.length);
  });

  it('a realm token may read a setting and do nothing else; other users may do nothing', async () => {
    await h.ok('settings/set', { key: 'mesh.enabled_adapters', value: 'tailscale' });
    const rt = w.tokens.realm_token!;
    const read = await h.call('settings/get_by_key', { key: 'mesh.enabled_adapters' }, rt);
    assert.equal(read.status, 200);
    assert.equal(read.body.setting.value, 'tailscale');
    for (const [opName, body] of [
      ['settings/set', { key: 'x', value: 'y' }],
      ['settings/remove', { key: 'mesh.enabled_adapters' }],
      ['settings/list', {}],
    ] as const) {
      const r = await h.call(opName, body, rt);
      assert.equal(r.status, 403, opName);
      assert.deepEqual(Object.keys(r.body.error).sort(), ['code', 'message']);
    }
    for (const t of [w.tokens.org_owner, w.tokens.org_member]) {
      assert.equal((await h.call('settings/get_by_key', { key: 'mesh.enabled_adapters' }, t)).status, 403);
    }
    assert.equal((await h.call('settings/get_by_key', { key: 'mesh.enabled_adapters' }, null)).status, 401);
  });

  it('refuses bad keys and values with invalid_params and field issues', async () => {
    const cases: [string, unknown, string][] = [
      ['settings/set', {}, 'key'],
      ['settings/set', { key: 'a' }, 'value'],
      ['settings/set', { key: 'a', value: 5 }, 'value'],
      ['settings/set', { key: 'a', value: null }, 'value'],
      ['settings/set', { key: 'a', value: 'x'.repeat(64 * 1024 + 1) }, 'value'],
      ['settings/set', { key: '', value: 'x' }, 'key'],
      ['settings/set', { key: 'Upper.Case', value: 'x' }, 'key'],
      ['settings/set', { key: '.dot', value: 'x' }, 'key'],
      ['settings/set', { key: 'has space', value: 'x' }, 'key'],
      ['settings/set', { key: 'k'.repeat(201), value: 'x' }, 'key'],
      ['settings/get_by_key', {}, 'key'],
      ['settings/get_by_key', { key: 7 }, 'key'],
      ['settings/get_by_key', { key: '' }, 'key'],
      ['settings/remove', {}, 'key'],
      ['settings/remove', { key: ['a'] }, 'key'],
      ['settings/list', { limit: -1 }, 'limit'],
      ['settings/list', { cursor: 'not a cursor!' }, 'cursor'],
    ];
    for (const [opName, body, field] of cases) {
      const r = await h.call(opName, body);
      assert.equal(r.status, 400, `${opName} ${JSON.stringify(body).slice(0, 80)}`);
      assert.equal(r.body.code, 'invalid_params');
      assert.ok(
        r.body.details.issues.some((i: { field: string; message: string }) => i.field === field && i.message),
        `${opName} → ${JSON.stringify(r.body.details.issues)}`,
      );
    }
  });
});
