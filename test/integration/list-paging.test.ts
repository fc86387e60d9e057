import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { buildWorld, uniq, type World } from '../helpers/world.js';

/**
 * Every list answers {ok, data, next_cursor}, takes limit (default 50, max 500) and cursor, and
 * walking it page by page with limit 1 yields exactly the records of one big page, in order.
 */
describe('list paging', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    for (let i = 0; i < 3; i++) {
      await h.ok('tokens/create', { name: `p${i}` });
      await h.ok('groups/new', { org_id: w.orgId, name: `page-${uniq()}` });
      await h.ok('settings/set', { key: `paging.${i}`, value: String(i) });
      await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: `d${i}` });
    }
  });
  after(() => h.close());

  const lists: [string, () => Record<string, unknown>, (x: Record<string, unknown>) => string][] = [
    ['tokens/list', () => ({}), (x) => String(x.id)],
    ['orgs/list', () => ({}), (x) => String(x.id)],
    ['orgs/list_members', () => ({ org_id: w.orgId }), (x) => String((x.user as { id: string }).id)],
    ['groups/list', () => ({ org_id: w.orgId }), (x) => String(x.id)],
    ['realms/list', () => ({ org_id: w.orgId }), (x) => String(x.id)],
    ['realms/list_members', () => ({ realm_id: w.realmId }), (x) => `${x.member_type}:${x.member_id}`],
    ['daemons/list', () => ({ realm_id: w.realmId }), (x) => String(x.id)],
    ['settings/list', () => ({}), (x) => String(x.key)],
  ];

  for (const [opName, filter, key] of lists) {
    it(`${opName} pages with limit and cursor`, async () => {
      const whole = await h.call(opName, { ...filter(), limit: 500 });
      assert.equal(whole.status, 200);
      assert.deepEqual(Object.keys(whole.body).sort(), ['data', 'next_cursor', 'ok']);
      assert.equal(whole.body.next_cursor, null);
      const all = (whole.body.data as Record<string, unknown>[]).map(key);
      assert.ok(all.length >= 2, `${opName}: ${all.length} records`);
      const walked: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: { data: Record<string, unknown>[]; next_cursor: string | null } = await h.ok(opName, {
          ...filter(),
          limit: 1,
          ...(cursor ? { cursor } : {}),
        });
        assert.ok(page.data.length <= 1);
        walked.push(...page.data.map(key));
        cursor = page.next_cursor;
        assert.ok(++pages <= all.length + 1, 'paging does not end');
      } while (cursor);
      assert.deepEqual(walked, all);
      const bad = await h.call(opName, { ...filter(), cursor: 'bm90IGEgY3Vyc29y' });
      assert.equal(bad.body.code, 'invalid_params');
      assert.equal(bad.body.details.issues[0].field, 'cursor');
    });
  }
});
