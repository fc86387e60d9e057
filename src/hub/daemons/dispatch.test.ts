import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt, decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { ACTORS, type Actor, buildWorld, type World } from '../../../test/helpers/world.js';
import { DISPATCH_ALG, DISPATCH_ISSUER, loadDispatchKeys } from './dispatch.js';

describe('dispatch keys and daemons/issue_dispatch_token', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
  });
  after(() => h.close());

  it('is allowed to realm operators and above only', async () => {
    const allowed: Actor[] = ['realm_operator', 'realm_admin', 'org_admin', 'org_owner', 'site_admin'];
    const status: Partial<Record<Actor, number>> = {
      anonymous: 401,
      bad_token: 401,
      outsider: 403,
      org_member: 403,
      realm_member: 403,
      realm_token: 403,
    };
    for (const actor of ACTORS) {
      const r = await h.call('daemons/issue_dispatch_token', { daemon_id: w.daemonId }, w.tokens[actor]);
      assert.equal(r.status, allowed.includes(actor) ? 200 : status[actor], actor);
      if (!allowed.includes(actor)) assert.equal(r.body.ok, false, actor);
    }
    const unknown = await h.call('daemons/issue_dispatch_token', { daemon_id: 'nope' });
    assert.equal(unknown.status, 404);
    const bad = await h.call('daemons/issue_dispatch_token', {});
    assert.equal(bad.body.code, 'invalid_params');
  });

  it('signs an EdDSA JWT for the daemon that expires within 5 minutes', async () => {
    const before = Date.now();
    const r = await h.ok('daemons/issue_dispatch_token', { daemon_id: w.daemonId }, w.tokens.realm_operator);
    const { token, expires_at } = r.data;
    const header = decodeProtectedHeader(token);
    assert.equal(header.alg, 'EdDSA');
    assert.equal(header.kid, h.running.hub.tunnel.keys.kid);
    const claims = decodeJwt(token);
    assert.equal(claims.aud, w.daemonId);
    assert.equal(claims.iss, DISPATCH_ISSUER);
    assert.ok(claims.exp! * 1000 <= before + 5 * 60 * 1000 + 1000);
    assert.ok(claims.exp! > claims.iat!);
    assert.equal(expires_at, claims.exp! * 1000);
    const key = await importJWK(h.running.hub.tunnel.keys.publicJwk, DISPATCH_ALG);
    await jwtVerify(token, key, { audience: w.daemonId, issuer: DISPATCH_ISSUER });
    await assert.rejects(jwtVerify(token, key, { audience: 'another-daemon' }));
  });

  it('creates the key pair once, even when several hub processes start together', async () => {
    const db = h.running.hub.db;
    await db.deleteFrom('hub_keys').execute();
    const keys = await Promise.all(
      Array.from({ length: 5 }, () => loadDispatchKeys(db, Date.now, h.running.hub.cipher)),
    );
    assert.equal(new Set(keys.map((k) => k.kid)).size, 1);
    assert.equal((await db.selectFrom('hub_keys').select('id').execute()).length, 1);
  });
});
