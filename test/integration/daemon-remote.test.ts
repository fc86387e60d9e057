import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { generateKeyPair, SignJWT } from 'jose';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { signDispatch } from '../../src/hub/daemons/dispatch.js';
import { mintToken } from '../../src/shared/tokens.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';
import { createNetns, type Netns } from './daemon-netns.js';

// Callers on another host, for real: the daemon listens on the host end of a veth pair and curl
// calls it from inside a network namespace.
const netns = await createNetns();
const skip = 'skip' in netns ? netns.skip : false;
after(async () => {
  if (!('skip' in netns)) await netns.cleanup();
});

/** The token with its last character changed (never to the same character). */
const mistype = (t: string) => `${t.slice(0, -1)}${t.endsWith('x') ? 'y' : 'x'}`;

describe('daemon remote callers, unconnected (network namespace)', { skip }, () => {
  const ns = netns as Netns;
  const home = daemonHome();
  let d: RunningDaemon;
  let base: string;
  before(async () => {
    d = await startTestDaemon(home.dir, { config: { host: ns.hostAddr } });
    base = `${d.url}/v1`;
  });
  after(async () => {
    await d?.close();
    home.cleanup();
  });

  it('refuses a remote caller with LOCAL_ONLY without a valid local token', async () => {
    const tokens = [undefined, 'garbage', mintToken('local'), mintToken('user'), 'a.b.c'];
    for (const token of tokens) {
      const r = await ns.post(
        `${base}/hug/poll_verdict`,
        { review_id: 'r' },
        token ? { authorization: `Bearer ${token}` } : {},
      );
      assert.equal(r.status, 403, String(token));
      assert.equal(r.body.ok, false);
      assert.equal(r.body.error.code, 'LOCAL_ONLY', String(token));
    }
  });

  it('accepts a remote caller holding a local token, which cannot mint more', async () => {
    const minted = await d.dispatch('tokens/create', {});
    assert.ok(minted.reply.ok);
    const { token } = minted.reply.data as { token: string };
    const auth = { authorization: `Bearer ${token}` };
    await d.dispatch('hug/deliver', {
      review_id: 'r1',
      message: { type: 't', role: 'reviewer', payload: { a: 1 } },
    });
    const listed = await ns.post(`${base}/workspaces/list`, {}, auth);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.data, { workspaces: [] });
    // It acts for nobody on this machine: an agent's review queue stays the agents'.
    const polled = await ns.post(`${base}/hug/poll_verdict`, { review_id: 'r1' }, auth);
    assert.equal(polled.status, 403);
    assert.equal(polled.body.error.code, 'FORBIDDEN');
    assert.equal((await d.dispatch('hug/poll_verdict', { review_id: 'r1' })).reply.ok, true);
    // The Host check only guards loopback callers.
    const otherHost = await ns.post(`${base}/workspaces/list`, {}, { ...auth, host: 'anything.example' });
    assert.equal(otherHost.status, 200);
    const more = await ns.post(`${base}/tokens/create`, {}, auth);
    assert.equal(more.status, 403);
    assert.equal(more.body.error.code, 'FORBIDDEN');
    const web = await ns.post(`${base}/workspaces/list`, {}, { ...auth, origin: 'https://x.example' });
    assert.equal(web.status, 403);
    assert.equal(web.body.error.code, 'WEB_REQUEST_REFUSED');
  });

  it('refuses an expired local token', async () => {
    const minted = await d.dispatch('tokens/create', { ttl_ms: 60_000 });
    const { token } = (minted.reply as { data: { token: string } }).data;
    await d.db
      .updateTable('local_tokens')
      .set({ expires_at: Date.now() - 1 })
      .execute();
    const r = await ns.post(
      `${base}/hug/poll_verdict`,
      { review_id: 'r' },
      { authorization: `Bearer ${token}` },
    );
    assert.equal(r.body.error.code, 'LOCAL_ONLY');
  });
});

describe('daemon remote callers, connected to a hub (network namespace)', { skip }, () => {
  const ns = netns as Netns;
  const home = daemonHome();
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  let base: string;
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const poll = (headers: Record<string, string> = {}) => ns.post(`${base}/teams/list`, {}, headers);
  before(async () => {
    // A hand-chosen admin token (no checksum): the daemon asks the hub about it like any svc_tok_.
    h = await startTestHub({ adminToken: 'svc_tok_chosen-by-the-operator-0001' });
    w = await buildWorld(h);
    d = await startTestDaemon(home.dir, {
      config: { host: ns.hostAddr, hubUrls: [h.url], realmToken: w.tokens.realm_token! },
    });
    await whenConnected(d);
    base = `${d.url}/v1`;
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
  });

  it('refuses a caller with no token or one that does not verify with UNAUTHORIZED', async () => {
    const minted = await d.dispatch('tokens/create', {});
    const localToken = (minted.reply as { data: { token: string } }).data.token;
    const cases: [string, Record<string, string>][] = [
      ['no token', {}],
      ['not bearer', { authorization: 'Basic abc' }],
      ['garbage', bearer('garbage')],
      ['unknown user token', bearer(mintToken('user'))],
      ['mistyped user token', bearer(mistype(w.tokens.realm_member!))],
      ['realm token', bearer(w.tokens.realm_token!)],
      ['local token while connected', bearer(localToken)],
      ['not a JWT', bearer('a.b.c')],
    ];
    for (const [name, headers] of cases) {
      const r = await poll(headers);
      assert.equal(r.status, 401, name);
      assert.equal(r.body.error.code, 'UNAUTHORIZED', name);
    }
  });

  it('accepts a dispatch token the hub issued for this daemon, and no other', async () => {
    const issued = await h.ok(
      'daemons/issue_dispatch_token',
      { daemon_id: w.daemonId },
      w.tokens.realm_operator,
    );
    const ok = await poll(bearer(issued.data.token));
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body, { ok: true, data: { teams: [] } });
    const claimed = await ns.post(`${base}/offer_job`, { queue_item_id: 'nope' }, bearer(issued.data.token));
    assert.equal(claimed.body.error.code, 'CLAIM_FAILED', 'a remote caller reaches the route');
    const mint = await ns.post(`${base}/tokens/create`, {}, bearer(issued.data.token));
    assert.equal(mint.status, 403);
    assert.equal(mint.body.error.code, 'FORBIDDEN');

    const other = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'other' });
    const forOther = await h.ok(
      'daemons/issue_dispatch_token',
      { daemon_id: other.data.daemon_id },
      w.tokens.realm_operator,
    );
    const keys = h.running.hub.tunnel.keys;
    const expired = await signDispatch(keys, w.daemonId, Date.now() - 10 * 60_000, 60_000);
    const pair = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const forged = await new SignJWT({ svc_holder: 'hub' })
      .setProtectedHeader({ alg: 'EdDSA' })
      .setAudience(w.daemonId)
      .setSubject(w.daemonId)
      .setExpirationTime('2m')
      .sign(pair.privateKey);
    const noExp = await new SignJWT({ svc_holder: 'hub' })
      .setProtectedHeader({ alg: 'EdDSA' })
      .setAudience(w.daemonId)
      .setSubject(w.daemonId)
      .sign(keys.privateKey);
    // Signed by the hub's key, but naming no holder: it carries no authority.
    const noHolder = await new SignJWT({})
      .setProtectedHeader({ alg: 'EdDSA' })
      .setAudience(w.daemonId)
      .setSubject(w.daemonId)
      .setExpirationTime('2m')
      .sign(keys.privateKey);
    for (const [name, token] of [
      ['wrong audience', forOther.data.token],
      ['expired', expired.token],
      ['signed by another key', forged],
      ['no exp', noExp],
      ['no holder', noHolder],
    ] as const) {
      const r = await poll(bearer(token));
      assert.equal(r.status, 401, name);
      assert.equal(r.body.error.code, 'UNAUTHORIZED', name);
    }
  });

  it('accepts a personal token of a realm member and refuses others with FORBIDDEN, following ACL changes', async () => {
    // Site administrators and org owners and admins count as members of every realm.
    for (const who of ['realm_member', 'realm_admin', 'org_admin', 'org_owner', 'site_admin'] as const) {
      const r = await poll(bearer(w.tokens[who]!));
      assert.equal(r.status, 200, who);
    }
    for (const who of ['org_member', 'outsider'] as const) {
      const r = await poll(bearer(w.tokens[who]!));
      assert.equal(r.status, 403, who);
      assert.equal(r.body.error.code, 'FORBIDDEN', who);
    }
    // The hub pushes the new ACL over the tunnel; the daemon applies it at once.
    const pushed = once(d.link!, 'acl');
    await h.ok('realms/add_member', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: w.users.org_member!.id,
      role: 'member',
    });
    await pushed;
    assert.equal((await poll(bearer(w.tokens.org_member!))).status, 200);
  });
});
