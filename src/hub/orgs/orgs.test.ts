import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, createOrgWithOwner, type World } from '../../../test/helpers/world.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('organizations', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
  });
  after(() => h.close());

  it('orgs/new answers exactly the spec shape with ISO timestamps and an invitation code', async () => {
    const r = await h.call('orgs/new', {
      slug: 'globex',
      owner: { email: 'Hank@Globex.test', display_name: 'Hank' },
    });
    assert.equal(r.status, 200);
    const { org, owner_invite } = r.body.data;
    assert.equal(r.body.ok, true);
    assert.equal(org.slug, 'globex');
    assert.equal(org.display_name, 'globex');
    assert.equal(org.status, 'waiting_for_owner');
    assert.equal(org.owner.email, 'hank@globex.test');
    assert.equal(org.owner.status, 'invited');
    assert.equal(typeof org.owner.user_id, 'string');
    assert.match(org.created_at, ISO);
    assert.equal(org.reactivated, false);
    assert.equal(owner_invite.role, 'owner');
    assert.equal(owner_invite.status, 'pending');
    assert.match(owner_invite.expires_at, ISO);
    assert.equal(owner_invite.email_sent, false);
    assert.match(owner_invite.code, /^svc_inv_/);

    const acc = await h.ok(
      'invites/accept',
      { code: owner_invite.code, password: 'long enough pw', handle: 'hank' },
      null,
    );
    assert.match(acc.data.token, /^svc_tok_/);
    assert.equal(acc.data.user.handle, 'hank');
    assert.equal(acc.data.user.status, 'active');
    assert.equal(typeof acc.data.expires_at, 'number');
    const got = await h.ok('orgs/get', { id: org.id }, acc.data.token);
    assert.equal(got.data.status, 'active');
    assert.equal(got.data.owner.status, 'active');
    assert.equal(typeof got.data.created_at, 'number');
    // The owner is an explicit admin of the default realm.
    const realms = await h.ok('realms/list', { org_id: org.id }, acc.data.token);
    assert.deepEqual(
      realms.data.map((x: { name: string }) => x.name),
      ['default'],
    );
    const members = await h.ok('realms/list_members', { realm_id: realms.data[0].id }, acc.data.token);
    assert.deepEqual(
      members.data.map((m: { member_id: string; role: string }) => [m.member_id, m.role]),
      [[acc.data.user.id, 'admin']],
    );
    // The invitation is single-use.
    const again = await h.call(
      'invites/accept',
      { code: owner_invite.code, password: 'long enough pw' },
      null,
    );
    assert.equal(again.status, 409);
    assert.deepEqual(Object.keys(again.body).sort(), ['code', 'error', 'ok']);
    assert.equal(again.body.code, 'conflict');
  });

  it('orgs/new for an existing user by user_id, and refuses a taken slug and unknown users', async () => {
    const r = await h.ok('orgs/new', {
      slug: 'initech',
      owner: { user_id: w.users.org_member!.id },
      display_name: 'Initech',
    });
    assert.equal(r.data.org.display_name, 'Initech');
    assert.equal(r.data.org.owner.user_id, w.users.org_member!.id);
    assert.equal(r.data.org.owner.status, 'invited');
    // An existing account accepts with its own password.
    const wrong = await h.call('invites/accept', { code: r.data.owner_invite.code, password: 'nope' }, null);
    assert.equal(wrong.status, 401);
    const acc = await h.ok(
      'invites/accept',
      { code: r.data.owner_invite.code, password: 'correct horse battery' },
      null,
    );
    assert.equal(acc.data.user.id, w.users.org_member!.id);

    const taken = await h.call('orgs/new', { slug: 'initech', owner: { email: 'x@y.test' } });
    assert.equal(taken.status, 409);
    assert.equal(taken.body.code, 'conflict');
    const unknown = await h.call('orgs/new', { slug: 'nobody', owner: { user_id: 'no-such-user' } });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'not_found');
  });

  it('orgs/new refuses bad input with invalid_params and field issues', async () => {
    const cases: [unknown, string][] = [
      [{}, 'slug'],
      [{ slug: '', owner: { email: 'a@b.test' } }, 'slug'],
      [{ slug: 'Bad Slug', owner: { email: 'a@b.test' } }, 'slug'],
      [{ slug: 'ok' }, 'owner'],
      [{ slug: 'ok', owner: { email: 'not-an-email' } }, 'owner'],
      [{ slug: 'ok', owner: {} }, 'owner'],
      [{ slug: 'ok', owner: { email: 'a@b.test' }, reactivate: 'yes' }, 'reactivate'],
      [{ slug: 5, owner: { email: 'a@b.test' } }, 'slug'],
    ];
    for (const [body, field] of cases) {
      const r = await h.call('orgs/new', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.code, 'invalid_params');
      assert.ok(
        r.body.details.issues.some((i: { field: string }) => i.field.startsWith(field)),
        `${JSON.stringify(body)} → ${JSON.stringify(r.body.details.issues)}`,
      );
    }
  });

  it('orgs/delete is soft and orgs/new with reactivate restores the org', async () => {
    const o = await createOrgWithOwner(h, 'umbrella');
    const del = await h.ok('orgs/delete', { id: o.orgId }, o.owner.token);
    assert.equal(del.data.deleted, true);
    assert.equal((await h.call('orgs/get', { id: o.orgId })).status, 404);
    const refused = await h.call('orgs/new', { slug: 'umbrella', owner: { email: 'z@z.test' } });
    assert.equal(refused.status, 409);
    const back = await h.ok('orgs/new', { slug: 'umbrella', owner: { email: 'z@z.test' }, reactivate: true });
    assert.equal(back.data.org.reactivated, true);
    assert.equal(back.data.org.id, o.orgId);
    assert.equal(back.data.org.status, 'active');
    assert.equal(back.data.owner_invite.status, 'accepted');
    assert.equal((await h.ok('orgs/get', { id: o.orgId }, o.owner.token)).data.slug, 'umbrella');
  });

  it('invites/accept refuses unknown and expired codes and short passwords', async () => {
    const unknown = await h.call(
      'invites/accept',
      { code: 'svc_inv_nope', password: 'long enough pw' },
      null,
    );
    assert.equal(unknown.status, 404);
    const inv = await h.ok('orgs/invite_member', {
      org_id: w.orgId,
      email: 'short@acme.test',
      role: 'member',
    });
    const short = await h.call('invites/accept', { code: inv.data.code, password: 'short' }, null);
    assert.equal(short.status, 400);
    assert.equal(short.body.code, 'invalid_params');
    await h.running.hub.db
      .updateTable('invites')
      .set({ expires_at: 1 })
      .where('email', '=', 'short@acme.test')
      .execute();
    const expired = await h.call('invites/accept', { code: inv.data.code, password: 'long enough pw' }, null);
    assert.equal(expired.status, 409);
    assert.match(expired.body.error, /expired/);
  });

  it('members: list, set role, remove; the owner is protected', async () => {
    const t = w.tokens.org_owner!;
    const list = await h.ok('orgs/list_members', { org_id: w.orgId }, t);
    const roles = Object.fromEntries(
      list.data.map((m: { user: { id: string }; role: string }) => [m.user.id, m.role]),
    );
    assert.equal(roles[w.users.org_owner!.id], 'owner');
    assert.equal(roles[w.users.org_admin!.id], 'admin');
    assert.equal(roles[w.users.org_member!.id], 'member');
    const memberEmail = list.data.find((m: { user: { id: string } }) => m.user.id === w.users.org_member!.id)
      .user.email;
    const dup = await h.call(
      'orgs/invite_member',
      { org_id: w.orgId, email: memberEmail, role: 'member' },
      t,
    );
    assert.equal(dup.status, 409);
    const ownerRole = await h.call(
      'orgs/set_member_role',
      { org_id: w.orgId, user_id: w.users.org_owner!.id, role: 'member' },
      t,
    );
    assert.equal(ownerRole.status, 409);
    const removeOwner = await h.call(
      'orgs/remove_member',
      { org_id: w.orgId, user_id: w.users.org_owner!.id },
      t,
    );
    assert.equal(removeOwner.status, 409);
    const nobody = await h.call('orgs/remove_member', { org_id: w.orgId, user_id: 'nobody' }, t);
    assert.equal(nobody.status, 404);
    const badRole = await h.call(
      'orgs/set_member_role',
      { org_id: w.orgId, user_id: w.users.org_member!.id, role: 'owner' },
      t,
    );
    assert.equal(badRole.body.code, 'invalid_params');
  });

  it('orgs/list shows members their orgs and the site administrator every org, with cursor paging', async () => {
    const mine = await h.ok('orgs/list', {}, w.tokens.org_owner);
    assert.deepEqual(
      mine.data.map((o: { id: string }) => o.id),
      [w.orgId],
    );
    const all: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { id: string }[]; next_cursor: string | null } = await h.ok('orgs/list', {
        limit: 1,
        ...(cursor ? { cursor } : {}),
      });
      all.push(...page.data.map((o) => o.id));
      cursor = page.next_cursor;
    } while (cursor);
    assert.ok(all.length >= 3);
    assert.equal(new Set(all).size, all.length);
    const bad = await h.call('orgs/list', { cursor: 'garbage' });
    assert.equal(bad.body.code, 'invalid_params');
  });
});
