import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import { hashSecret } from '../../shared/tokens.js';

describe('authentication and tokens', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
  });
  after(() => h.close());

  it('whoami answers the user for a user token and the daemon for a realm token', async () => {
    const me = await h.ok('auth/whoami', {}, w.tokens.org_member);
    assert.equal(me.data.daemon, null);
    assert.deepEqual(Object.keys(me.data.user).sort(), [
      'created_at',
      'display_name',
      'email',
      'handle',
      'id',
      'is_site_admin',
      'status',
    ]);
    assert.equal(me.data.user.is_site_admin, false);
    const d = await h.ok('auth/whoami', {}, w.tokens.realm_token);
    assert.equal(d.data.user, null);
    assert.equal(d.data.daemon.id, w.daemonId);
    assert.equal(d.data.daemon.realm_id, w.realmId);
    const admin = await h.ok('auth/whoami', {}, h.adminToken);
    assert.equal(admin.data.user.handle, 'admin');
    assert.equal(admin.data.user.is_site_admin, true);
  });

  it('sign_in issues an expiring session token; sign_out revokes it', async () => {
    const email = (await h.ok('auth/whoami', {}, w.tokens.org_member)).data.user.email;
    const bad = await h.call('auth/sign_in', { email, password: 'wrong password' }, null);
    assert.equal(bad.status, 401);
    assert.deepEqual(bad.body, {
      ok: false,
      error: { code: 'unauthorized', message: 'invalid e-mail or password' },
    });
    const unknown = await h.call('auth/sign_in', { email: 'ghost@nowhere.test', password: 'x' }, null);
    assert.equal(unknown.status, 401);
    const s = await h.ok(
      'auth/sign_in',
      { email: email.toUpperCase(), password: 'correct horse battery' },
      null,
    );
    assert.match(s.data.token, /^svc_tok_/);
    assert.ok(s.data.expires_at > Date.now());
    assert.equal(s.data.user.email, email);
    const out = await h.ok('auth/sign_out', {}, s.data.token);
    assert.deepEqual(out.data, { revoked: true, kind: 'session' });
    assert.equal((await h.call('auth/whoami', {}, s.data.token)).status, 401);
    const missing = await h.call('auth/sign_in', { email }, null);
    assert.equal(missing.body.code, 'invalid_params');
    assert.equal(missing.body.details.issues[0].field, 'password');
  });

  it('sign_out ends session tokens only: a personal access token keeps working', async () => {
    const pat = await h.ok('tokens/create', { name: 'laptop' }, h.adminToken);
    const out = await h.ok('auth/sign_out', {}, pat.data.token);
    assert.deepEqual(out.data, { revoked: false, kind: 'personal' });
    assert.equal((await h.call('auth/whoami', {}, pat.data.token)).status, 200);
    const admin = await h.ok('auth/sign_out', {}, h.adminToken);
    assert.deepEqual(admin.data, { revoked: false, kind: 'admin' });
    assert.equal((await h.call('auth/whoami', {}, h.adminToken)).status, 200);
  });

  it('a token created with a session token expires no later than that session', async () => {
    const email = (await h.ok('auth/whoami', {}, w.tokens.org_admin)).data.user.email;
    const s = await h.ok('auth/sign_in', { email, password: 'correct horse battery' }, null);
    const session = s.data.token as string;
    const forever = await h.ok('tokens/create', { name: 'no expiry asked' }, session);
    assert.equal(forever.data.expires_at, s.data.expires_at);
    const month = await h.ok('tokens/create', { name: 'a month', expires_in_days: 30 }, session);
    assert.equal(month.data.expires_at, s.data.expires_at);
    // A token made with a derived token is capped the same way.
    const derived = await h.ok('tokens/create', { name: 'derived' }, forever.data.token);
    assert.equal(derived.data.expires_at, s.data.expires_at);
    // The stored expiry is what authentication enforces.
    const stored = await h.running.hub.db
      .selectFrom('tokens')
      .select('expires_at')
      .where('id', '=', forever.data.id)
      .executeTakeFirstOrThrow();
    assert.equal(stored.expires_at, s.data.expires_at);
    // Re-entering the password lets a token outlive the session; a wrong one is refused.
    const longer = await h.ok(
      'tokens/create',
      { name: 'ci', expires_in_days: 30, password: 'correct horse battery' },
      session,
    );
    assert.ok(longer.data.expires_at > s.data.expires_at + 29 * 86400_000);
    const unlimited = await h.ok(
      'tokens/create',
      { name: 'ci2', password: 'correct horse battery' },
      session,
    );
    assert.equal(unlimited.data.expires_at, null);
    const wrong = await h.call('tokens/create', { name: 'x', password: 'not my password' }, session);
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.code, 'invalid_params');
    assert.equal(wrong.body.details.issues[0].field, 'password');
    // A non-expiring personal token creates tokens with the expiry asked for.
    const week = await h.ok('tokens/create', { name: 'week', expires_in_days: 7 }, h.adminToken);
    assert.ok(week.data.expires_at > Date.now() + 6 * 86400_000);
  });

  it('an expired session token is refused', async () => {
    const email = (await h.ok('auth/whoami', {}, w.tokens.realm_member)).data.user.email;
    const s = await h.ok('auth/sign_in', { email, password: 'correct horse battery' }, null);
    await h.running.hub.db
      .updateTable('tokens')
      .set({ expires_at: Date.now() - 1 })
      .where('token_hash', '=', hashSecret(s.data.token))
      .execute();
    assert.equal((await h.call('auth/whoami', {}, s.data.token)).status, 401);
  });

  it('tokens: created once with the secret, stored hashed, listed without it, revoked', async () => {
    const t = w.tokens.realm_operator;
    // With the password re-entered, a token created with a session may outlive it.
    const c = await h.ok(
      'tokens/create',
      { name: 'ci', expires_in_days: 30, password: 'correct horse battery' },
      t,
    );
    assert.match(c.data.token, /^svc_tok_/);
    assert.equal(c.data.name, 'ci');
    assert.ok(c.data.expires_at > Date.now() + 29 * 86400_000);
    const stored = await h.running.hub.db
      .selectFrom('tokens')
      .selectAll()
      .where('id', '=', c.data.id)
      .executeTakeFirstOrThrow();
    assert.equal(stored.token_hash, hashSecret(c.data.token));
    assert.ok(!JSON.stringify(stored).includes(c.data.token));
    assert.equal((await h.ok('auth/whoami', {}, c.data.token)).data.user.id, w.users.realm_operator!.id);
    const list = await h.ok('tokens/list', {}, t);
    const mine = list.data.find((x: { id: string }) => x.id === c.data.id);
    assert.ok(mine);
    assert.equal(mine.token, undefined);
    assert.ok(!JSON.stringify(list).includes(c.data.token));
    // Someone else cannot revoke it; the owner can, once.
    assert.equal((await h.call('tokens/revoke', { id: c.data.id }, w.tokens.realm_admin)).status, 404);
    await h.ok('tokens/revoke', { id: c.data.id }, t);
    assert.equal((await h.call('tokens/revoke', { id: c.data.id }, t)).status, 404);
    assert.equal((await h.call('auth/whoami', {}, c.data.token)).status, 401);
    for (const body of [
      {},
      { name: '' },
      { name: 'x', expires_in_days: 0 },
      { name: 'x', expires_in_days: 'soon' },
    ]) {
      const r = await h.call('tokens/create', body, t);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.code, 'invalid_params');
    }
  });

  it('a realm token cannot call user operations', async () => {
    const r = await h.call('tokens/create', { name: 'x' }, w.tokens.realm_token);
    assert.equal(r.status, 403);
    assert.equal(r.body.error.code, 'forbidden');
  });

  it('a daemon token stops working when its daemon is removed', async () => {
    const dt = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'temp' });
    assert.match(dt.data.token, /^svc_dt_/);
    await h.ok('auth/whoami', {}, dt.data.token);
    await h.ok('daemons/remove', { id: dt.data.daemon_id });
    assert.equal((await h.call('auth/whoami', {}, dt.data.token)).status, 401);
  });
});
