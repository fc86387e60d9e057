import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, uniq, type World } from '../../../test/helpers/world.js';

describe('groups', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
  });
  after(() => h.close());

  it('new, add_member, list, remove_member and remove, with their reply shapes', async () => {
    const owner = w.tokens.org_owner!;
    const created = await h.call('groups/new', { org_id: w.orgId, name: 'Reviewers' }, owner);
    assert.equal(created.status, 201);
    const g = created.body.data;
    assert.deepEqual(Object.keys(g).sort(), ['created_at', 'id', 'members', 'name', 'org_id']);
    assert.equal(g.name, 'Reviewers');
    assert.equal(g.org_id, w.orgId);
    assert.equal(typeof g.created_at, 'number');
    assert.deepEqual(g.members, []);

    const added = await h.call(
      'groups/add_member',
      { group_id: g.id, user_id: w.users.org_member!.id },
      owner,
    );
    assert.equal(added.status, 201);
    assert.equal(added.body.data.group_id, g.id);
    assert.equal(added.body.data.user_id, w.users.org_member!.id);
    await h.ok(
      'groups/add_member',
      { group_id: g.id, user_id: w.users.realm_member!.id },
      w.tokens.org_admin,
    );

    const list = await h.ok('groups/list', { org_id: w.orgId }, w.tokens.org_member);
    assert.equal(list.next_cursor, null);
    const mine = list.data.find((x: { id: string }) => x.id === g.id);
    assert.deepEqual(
      mine.members.map((m: { user_id: string }) => m.user_id).sort(),
      [w.users.org_member!.id, w.users.realm_member!.id].sort(),
    );
    assert.equal(typeof mine.members[0].handle, 'string');

    const removed = await h.ok(
      'groups/remove_member',
      { group_id: g.id, user_id: w.users.org_member!.id },
      owner,
    );
    assert.deepEqual(removed.data, { group_id: g.id, user_id: w.users.org_member!.id, removed: true });
    const gone = await h.ok('groups/remove', { id: g.id }, owner);
    assert.deepEqual(gone.data, { id: g.id, removed: true });
    const after = await h.ok('groups/list', { org_id: w.orgId }, owner);
    assert.ok(!after.data.some((x: { id: string }) => x.id === g.id));
    const twice = await h.call('groups/remove', { id: g.id }, owner);
    assert.equal(twice.status, 404);
    assert.deepEqual(twice.body, { ok: false, error: { code: 'not_found', message: 'group not found' } });
  });

  it('refuses a duplicate name, a duplicate member, a non-member and a missing membership', async () => {
    const name = `dup-${uniq()}`;
    const g = (await h.ok('groups/new', { org_id: w.orgId, name })).data;
    const dup = await h.call('groups/new', { org_id: w.orgId, name });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.code, 'conflict');
    assert.equal(typeof dup.body.error, 'string');
    // The same name in another organization is fine.
    const other = await h.ok('orgs/list', {}, w.tokens.outsider);
    await h.ok('groups/new', { org_id: other.data[0].id, name }, w.tokens.outsider);

    await h.ok('groups/add_member', { group_id: g.id, user_id: w.users.org_admin!.id });
    const again = await h.call('groups/add_member', { group_id: g.id, user_id: w.users.org_admin!.id });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'conflict');
    // A user of another organization, and a user that does not exist, are not organization members.
    for (const userId of [w.users.outsider!.id, 'no-such-user']) {
      const r = await h.call('groups/add_member', { group_id: g.id, user_id: userId });
      assert.equal(r.status, 404, userId);
      assert.equal(r.body.error.code, 'not_found');
    }
    const notMember = await h.call('groups/remove_member', {
      group_id: g.id,
      user_id: w.users.org_member!.id,
    });
    assert.equal(notMember.status, 404);
    assert.equal(notMember.body.error.code, 'not_found');
    for (const [opName, body] of [
      ['groups/add_member', { group_id: 'no-such-group', user_id: w.users.org_member!.id }],
      ['groups/remove_member', { group_id: 'no-such-group', user_id: w.users.org_member!.id }],
      ['groups/remove', { id: 'no-such-group' }],
      ['groups/new', { org_id: 'no-such-org', name: 'x' }],
      ['groups/list', { org_id: 'no-such-org' }],
    ] as const) {
      const r = await h.call(opName, body);
      assert.equal(r.status, 404, opName);
      assert.equal(r.body.error.code, 'not_found', opName);
    }
  });

  it('gives a user a realm role through a group, and takes it away with the membership', async () => {
    const t = w.tokens.org_member!;
    const uid = w.users.org_member!.id;
    const before = await h.call('realms/get', { id: w.otherRealmId }, t);
    assert.equal(before.status, 403);
    const g = (await h.ok('groups/new', { org_id: w.orgId, name: `ops-${uniq()}` })).data;
    await h.ok('groups/add_member', { group_id: g.id, user_id: uid });
    await h.ok('realms/add_member', {
      realm_id: w.otherRealmId,
      member_type: 'group',
      member_id: g.id,
      role: 'operator',
    });
    const got = await h.ok('realms/get', { id: w.otherRealmId }, t);
    assert.equal(got.data.my_role, 'operator');
    const listed = await h.ok('realms/list', { org_id: w.orgId }, t);
    assert.ok(listed.data.some((r: { id: string }) => r.id === w.otherRealmId));
    // Operator, not admin: managing the realm's daemons is refused.
    const denied = await h.call('realms/create_daemon_token', { realm_id: w.otherRealmId, name: 'd' }, t);
    assert.equal(denied.status, 403);

    await h.ok('groups/remove_member', { group_id: g.id, user_id: uid });
    assert.equal((await h.call('realms/get', { id: w.otherRealmId }, t)).status, 403);

    // Removing the group removes its realm memberships.
    await h.ok('groups/add_member', { group_id: g.id, user_id: uid });
    assert.equal((await h.call('realms/get', { id: w.otherRealmId }, t)).status, 200);
    await h.ok('groups/remove', { id: g.id });
    assert.equal((await h.call('realms/get', { id: w.otherRealmId }, t)).status, 403);
    const members = await h.ok('realms/list_members', { realm_id: w.otherRealmId });
    assert.ok(!members.data.some((m: { member_id: string }) => m.member_id === g.id));
  });

  it('groups/remove refuses to remove the last admin of a realm', async () => {
    const realm = (await h.ok('realms/new', { org_id: w.orgId, name: `solo-${uniq()}` })).data;
    const g = (await h.ok('groups/new', { org_id: w.orgId, name: `admins-${uniq()}` })).data;
    await h.ok('realms/add_member', {
      realm_id: realm.id,
      member_type: 'group',
      member_id: g.id,
      role: 'admin',
    });
    const refused = await h.call('groups/remove', { id: g.id });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'conflict');
    await h.ok('realms/add_member', {
      realm_id: realm.id,
      member_type: 'user',
      member_id: w.users.org_member!.id,
      role: 'admin',
    });
    await h.ok('groups/remove', { id: g.id });
  });

  it('groups/list pages with limit and cursor', async () => {
    const org = (await h.ok('orgs/list', {}, w.tokens.outsider)).data[0].id as string;
    const names = ['a', 'b', 'c'].map((n) => `${n}-${uniq()}`);
    for (const name of names) await h.ok('groups/new', { org_id: org, name }, w.tokens.outsider);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { name: string }[]; next_cursor: string | null } = await h.ok(
        'groups/list',
        { org_id: org, limit: 2, ...(cursor ? { cursor } : {}) },
        w.tokens.outsider,
      );
      assert.ok(page.data.length <= 2);
      seen.push(...page.data.map((g) => g.name));
      cursor = page.next_cursor;
    } while (cursor);
    for (const n of names) assert.ok(seen.includes(n), n);
    assert.equal(new Set(seen).size, seen.length);
  });

  it('refuses bad input with invalid_params and field issues', async () => {
    const cases: [string, unknown, string][] = [
      ['groups/new', {}, 'org_id'],
      ['groups/new', { org_id: w.orgId }, 'name'],
      ['groups/new', { org_id: w.orgId, name: '' }, 'name'],
      ['groups/new', { org_id: w.orgId, name: '   ' }, 'name'],
      ['groups/new', { org_id: w.orgId, name: 5 }, 'name'],
      ['groups/new', { org_id: '', name: 'x' }, 'org_id'],
      ['groups/list', {}, 'org_id'],
      ['groups/list', { org_id: w.orgId, limit: 0 }, 'limit'],
      ['groups/list', { org_id: w.orgId, limit: 501 }, 'limit'],
      ['groups/list', { org_id: w.orgId, limit: '5' }, 'limit'],
      ['groups/list', { org_id: w.orgId, cursor: 'garbage' }, 'cursor'],
      ['groups/add_member', { group_id: 'x' }, 'user_id'],
      ['groups/add_member', { user_id: 'x' }, 'group_id'],
      ['groups/add_member', { group_id: 1, user_id: 'x' }, 'group_id'],
      ['groups/remove_member', { group_id: 'x', user_id: '' }, 'user_id'],
      ['groups/remove', {}, 'id'],
      ['groups/remove', { id: null }, 'id'],
    ];
    for (const [opName, body, field] of cases) {
      const r = await h.call(opName, body);
      assert.equal(r.status, 400, `${opName} ${JSON.stringify(body)}`);
      assert.equal(r.body.code, 'invalid_params');
      assert.ok(
        r.body.details.issues.some((i: { field: string; message: string }) => i.field === field && i.message),
        `${opName} ${JSON.stringify(body)} → ${JSON.stringify(r.body.details.issues)}`,
      );
    }
  });
});
