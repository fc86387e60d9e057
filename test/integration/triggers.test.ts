import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { signBody } from '../../src/hub/notifications/signing.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { registerTeam } from '../helpers/runs.js';
import { buildWorld, notifiedOf, type World } from '../helpers/world.js';

/** Incoming webhooks (CONTRACT.md §10): signed deliveries start runs; anything else starts nothing. */
describe('triggers', () => {
  let h: TestHub;
  let w: World;
  let trigger: { id: string; url: string; secret: string };
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    await h.ok('agents/register', {
      org_id: w.orgId,
      manifest: { name: 'hooked', version: '1.0.0', agent_type: 'exec', command: ['true'] },
    });
    await registerTeam(h, w.orgId, 'hook-team', [{ name: 'p', agent: 'hooked' }]);
    const made = await h.call(
      'triggers/new',
      { realm_id: w.realmId, name: 'github push', team: 'hook-team', inputs: { repo: 'svc' } },
      w.tokens.realm_operator,
    );
    assert.equal(made.status, 201, JSON.stringify(made.body));
    trigger = made.body.data;
  });
  after(() => h.close());

  const hookUrl = () => `${h.url}/v1/hooks/${trigger.id}`;
  const deliver = async (
    body: string,
    opts: { secret?: string; ts?: number; sig?: string | null; key?: string; url?: string } = {},
  ) => {
    const ts = opts.ts ?? Date.now();
    const sig = opts.sig === undefined ? signBody(opts.secret ?? trigger.secret, ts, body) : opts.sig;
    const res = await fetch(opts.url ?? hookUrl(), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-svc-timestamp': String(ts),
        ...(sig === null ? {} : { 'x-svc-signature': sig }),
        ...(opts.key ? { 'idempotency-key': opts.key } : {}),
      },
      body,
    });
    // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected freely
    return { status: res.status, body: (await res.json()) as any };
  };
  const runCount = async () =>
    Number(
      (
        await h.running.hub.db
          .selectFrom('runs')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('external_id', '=', `trigger:${trigger.id}`)
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('shows its URL and never its secret again', async () => {
    assert.match(trigger.secret, /^whsec_/);
    assert.equal(trigger.url.endsWith(`/v1/hooks/${trigger.id}`), true);
    const got = await h.ok('triggers/get', { id: trigger.id }, w.tokens.realm_member);
    assert.equal(got.data.secret, undefined);
    assert.equal(JSON.stringify(got.data).includes(trigger.secret), false);
    const list = await h.ok('triggers/list', { realm_id: w.realmId }, w.tokens.realm_member);
    assert.equal(JSON.stringify(list).includes(trigger.secret), false);
    // At rest it is sealed under the secrets key, like channel secrets.
    const stored = await h.running.hub.db
      .selectFrom('triggers')
      .select('secret')
      .where('id', '=', trigger.id)
      .executeTakeFirstOrThrow();
    assert.notEqual(stored.secret, trigger.secret);
    assert.equal(h.running.hub.cipher.reveal(stored.secret), trigger.secret);
  });

  it('a good signature starts a run with the payload as inputs.event, and trigger.received', async () => {
    const { channelId } = await notifiedOf(h, w.realmId, ['trigger.received']);
    const body = JSON.stringify({ ref: 'refs/heads/main', commits: [1, 2] });
    const r = await deliver(body);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const run = await h.ok('runs/get_by_id', { run_id: r.body.data.run_id, with_history: true });
    assert.deepEqual(run.data.inputs, { repo: 'svc', event: { ref: 'refs/heads/main', commits: [1, 2] } });
    assert.deepEqual(run.data.history[0].actor, { type: 'trigger', trigger_id: trigger.id });
    const got = await h.ok('triggers/get', { id: trigger.id });
    assert.equal(got.data.recent_deliveries[0].outcome, 'started');
    assert.equal(got.data.recent_deliveries[0].run_id, r.body.data.run_id);
    const notified = await h.running.hub.db
      .selectFrom('notification_deliveries')
      .select('event_type')
      .where('channel_id', '=', channelId)
      .execute();
    assert.deepEqual(notified, [{ event_type: 'trigger.received' }]);
    await h.ok('notification_channels/remove', { id: channelId });
  });

  it('bad, missing and stale signatures, and unknown triggers, answer 401 and start nothing', async () => {
    const before = await runCount();
    const body = JSON.stringify({ n: 1 });
    const cases = [
      await deliver(body, { secret: 'whsec_wrong' }),
      await deliver(body, { sig: null }),
      await deliver(body, { sig: 'sha256=00' }),
      await deliver(`${body} `, { sig: signBody(trigger.secret, Date.now(), body) }),
      await deliver(body, { ts: Date.now() - 5 * 60_000 - 5_000 }),
      await deliver(body, { ts: Date.now() + 5 * 60_000 + 5_000 }),
      await deliver(body, { url: `${h.url}/v1/hooks/00000000-0000-7000-8000-000000000000` }),
    ];
    for (const r of cases) {
      assert.equal(r.status, 401, JSON.stringify(r.body));
      assert.equal(r.body.error.code, 'unauthorized');
    }
    assert.equal(await runCount(), before);
    const got = await h.ok('triggers/get', { id: trigger.id });
    assert.equal(got.data.recent_deliveries[0].outcome, 'refused');
    assert.equal(got.data.recent_deliveries[0].http_status, 401);
  });

  it('a replayed delivery, or a repeated Idempotency-Key, answers the first run (200)', async () => {
    const body = JSON.stringify({ id: 'evt-1' });
    const ts = Date.now();
    const first = await deliver(body, { ts });
    const replay = await deliver(body, { ts });
    assert.equal(first.status, 201);
    assert.equal(replay.status, 200);
    assert.equal(replay.body.data.run_id, first.body.data.run_id);
    const a = await deliver(JSON.stringify({ id: 'evt-2' }), { key: 'delivery-42' });
    const b = await deliver(JSON.stringify({ id: 'evt-2', retry: true }), { key: 'delivery-42' });
    assert.equal(a.status, 201);
    assert.equal(b.status, 200);
    assert.equal(b.body.data.run_id, a.body.data.run_id);
  });

  it('refuses bodies that are not JSON or over 1 MB, starting nothing', async () => {
    const before = await runCount();
    const notJson = await deliver('not json');
    assert.equal(notJson.status, 400);
    assert.equal(notJson.body.code, 'bad_request');
    const big = await deliver(JSON.stringify({ pad: 'x'.repeat(1024 * 1024) }));
    assert.equal(big.status, 400);
    assert.match(big.body.error, /1 MB/);
    assert.equal(await runCount(), before);
  });

  it('rotating the secret makes the old one fail at once', async () => {
    const rotated = await h.ok('triggers/rotate_secret', { id: trigger.id }, w.tokens.realm_operator);
    assert.notEqual(rotated.data.secret, trigger.secret);
    const old = await deliver(JSON.stringify({ after: 'rotate' }));
    assert.equal(old.status, 401);
    const fresh = await deliver(JSON.stringify({ after: 'rotate' }), { secret: rotated.data.secret });
    assert.equal(fresh.status, 201);
    trigger.secret = rotated.data.secret;
  });

  it('changes and removes a trigger; a removed trigger answers 401', async () => {
    const up = await h.ok('triggers/update', { id: trigger.id, name: 'renamed', inputs: { repo: 'x' } });
    assert.equal(up.data.name, 'renamed');
    assert.deepEqual(await h.ok('triggers/remove', { id: trigger.id }), { ok: true, removed: true });
    const r = await deliver(JSON.stringify({}));
    assert.equal(r.status, 401);
    assert.deepEqual(await h.ok('triggers/remove', { id: trigger.id }), { ok: true, removed: false });
  });
});
