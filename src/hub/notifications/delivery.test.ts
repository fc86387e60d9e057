// biome-ignore-all lint/suspicious/noExplicitAny: test replies are inspected freely
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { sql } from 'kysely';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { addOrgUser, createOrgWithOwner, uniq } from '../../../test/helpers/world.js';
import { recordEvent, recordEvents } from '../events/events.js';
import { eventually, type Receiver, startReceiver } from './receiver.test-helper.js';
import { verifySignature } from './signing.js';

/**
 * Delivery end to end: real HTTP receivers on 127.0.0.1 (so the private-destination setting is on,
 * except in the SSRF tests), backoff of a few ms, the real worker of the test hub.
 */
describe('notification delivery', () => {
  let h: TestHub;
  let org: Awaited<ReturnType<typeof createOrgWithOwner>>;
  const receivers: Receiver[] = [];
  const receiver = async (plan: number[] = [], fallback = 200) => {
    const r = await startReceiver(plan, fallback);
    receivers.push(r);
    return r;
  };

  before(async () => {
    h = await startTestHub({
      config: {
        notifyPollMs: 10,
        notifyRetryBaseMs: 5,
        notifyRetryCapMs: 20,
        notifyTimeoutMs: 3_000,
        notifyMaxAttempts: 4,
        notifyDisableAfter: 3,
      },
    });
    org = await createOrgWithOwner(h, `notif-${uniq()}`);
  });
  beforeEach(async () => {
    await h.ok('settings/set', { key: 'notifications.allow_private_destinations', value: 'true' });
  });
  after(async () => {
    await h.close();
    for (const r of receivers) await r.close();
  });

  const newChannel = async (destinations: { type: string; webhook_url: string }[], scope: object = {}) =>
    (
      await h.ok('notification_channels/new', {
        org_id: org.orgId,
        name: `c-${uniq()}`,
        destinations,
        ...scope,
      })
    ).data as { id: string; secret: string };
  const deliveries = async (channelId: string) =>
    (await h.ok('notifications/list_deliveries', { channel_id: channelId })).data as any[];
  const settled = (channelId: string, n = 1) =>
    eventually(async () => {
      const d = await deliveries(channelId);
      return d.length >= n && d.every((x) => x.state !== 'pending') ? d : null;
    }, 'deliveries to settle');

  it('delivers invite.sent to a rule’s webhook, signed, with the envelope and an idempotency key', async () => {
    const r = await receiver();
    const ch = await newChannel([{ type: 'webhook', webhook_url: `${r.url}/hook` }]);
    assert.match(ch.secret, /^whsec_/);
    await h.ok('realms/new_notification_rule', {
      org_id: org.orgId,
      event: 'invite.sent',
      channel_ids: [ch.id],
    });
    const email = `x-${uniq()}@notif.test`;
    await h.ok('orgs/invite_member', { org_id: org.orgId, email, role: 'member' });

    const got = await r.next();
    assert.equal(got.path, '/hook');
    assert.equal(got.headers['content-type'], 'application/json');
    const ts = got.headers['x-svc-timestamp'] as string;
    assert.match(ts, /^\d{13}$/);
    assert.ok(Math.abs(Number(ts) - Date.now()) < 60_000);
    assert.ok(
      verifySignature(
        ch.secret,
        { timestamp: ts, signature: got.headers['x-svc-signature'] as string },
        got.body,
      ),
    );
    assert.ok(
      !verifySignature(
        'whsec_wrong',
        { timestamp: ts, signature: got.headers['x-svc-signature'] as string },
        got.body,
      ),
    );
    assert.match(got.headers['x-svc-signature'] as string, /^sha256=[0-9a-f]{64}$/);
    const body = JSON.parse(got.body);
    assert.deepEqual(Object.keys(body).sort(), [
      'data',
      'id',
      'occurred_at',
      'org_id',
      'realm_id',
      'subject_id',
      'type',
    ]);
    assert.equal(body.type, 'invite.sent');
    assert.equal(body.org_id, org.orgId);
    assert.equal(body.data.email, email);
    assert.equal(body.data.role, 'member');

    const [d] = await settled(ch.id);
    assert.equal(got.headers['idempotency-key'], d.id);
    assert.equal(d.state, 'succeeded');
    assert.equal(d.attempts, 1);
    assert.equal(d.last_status_code, 200);
    assert.equal(typeof d.last_latency_ms, 'number');
    assert.equal(d.last_error, null);
    assert.equal(d.event_type, 'invite.sent');
    assert.equal(d.destination.type, 'webhook');
  });

  it('retries with backoff: fails twice, then succeeds → one success logged after three attempts', async () => {
    const r = await receiver([500, 503]);
    const ch = await newChannel([{ type: 'webhook', webhook_url: r.url }]);
    const test = await h.ok('notification_channels/test', { id: ch.id });
    assert.equal(test.data.deliveries.length, 1);
    for (let i = 0; i < 3; i++) await r.next();
    const [d] = await settled(ch.id);
    assert.equal(d.state, 'succeeded');
    assert.equal(d.attempts, 3);
    assert.deepEqual(
      d.attempt_log.map((a: any) => [a.attempt, a.outcome, a.status_code]),
      [
        [1, 'retry', 500],
        [2, 'retry', 503],
        [3, 'success', 200],
      ],
    );
    assert.equal(d.attempt_log.filter((a: any) => a.outcome === 'success').length, 1);
    // Every attempt carries the same idempotency key and body, a fresh timestamp and signature.
    assert.equal(new Set(r.received.map((x) => x.headers['idempotency-key'])).size, 1);
    assert.equal(new Set(r.received.map((x) => x.body)).size, 1);
    for (const x of r.received) {
      assert.ok(
        verifySignature(
          ch.secret,
          {
            timestamp: x.headers['x-svc-timestamp'] as string,
            signature: x.headers['x-svc-signature'] as string,
          },
          x.body,
        ),
      );
    }
    assert.equal(JSON.parse(r.received[0]!.body).type, 'notification.test');
  });

  it('a hub restart in the middle of retries loses nothing', async () => {
    const r = await receiver([500, 500]);
    const ch = await newChannel([{ type: 'webhook', webhook_url: r.url }]);
    await h.ok('notification_channels/test', { id: ch.id });
    await r.next(); // first attempt failed
    await h.restart();
    await r.next();
    await r.next(); // the third attempt succeeds, on the new process
    const [d] = await settled(ch.id);
    assert.equal(d.state, 'succeeded');
    assert.ok(d.attempts >= 3);
    assert.equal(d.attempt_log.filter((a: any) => a.outcome === 'success').length, 1);
    assert.equal(r.received.filter((x) => x.headers['idempotency-key'] === d.id).length, d.attempts);
  });

  it('gives up after the maximum attempts and records the failure', async () => {
    const r = await receiver([], 500);
    const ch = await newChannel([{ type: 'webhook', webhook_url: r.url }]);
    await h.ok('notification_channels/test', { id: ch.id });
    const [d] = await settled(ch.id);
    assert.equal(d.state, 'failed');
    assert.equal(d.attempts, 4);
    assert.match(d.last_error, /gave up after 4 attempts/);
    assert.equal(r.received.length, 4);
  });

  it('refuses loopback destinations without the setting, on the resolved address (SSRF)', async () => {
    await h.ok('settings/remove', { key: 'notifications.allow_private_destinations' });
    const r = await receiver();
    for (const url of [
      `${r.url}/x`,
      `http://localhost:${r.port}/y`,
      `http://[::ffff:127.0.0.1]:${r.port}/z`,
    ]) {
      const ch = await newChannel([{ type: 'webhook', webhook_url: url }]);
      const t = await h.ok('notification_channels/test', { id: ch.id, wait: true });
      const [d] = t.data.deliveries;
      assert.equal(d.state, 'failed', url);
      assert.equal(d.attempts, 1);
      assert.match(
        d.last_error,
        /destination refused: .*(loopback|private).*notifications\.allow_private_destinations/,
      );
      assert.equal(d.attempt_log[0].outcome, 'permanent');
    }
    assert.equal(r.received.length, 0);
    // With the setting, the same destination is reached.
    await h.ok('settings/set', { key: 'notifications.allow_private_destinations', value: 'true' });
    const ch = await newChannel([{ type: 'webhook', webhook_url: `http://localhost:${r.port}/ok` }]);
    const t = await h.ok('notification_channels/test', { id: ch.id, wait: true });
    assert.equal(t.data.deliveries[0].state, 'succeeded');
    assert.equal(r.received.length, 1);
  });

  it('disables a channel after repeated permanent failures, with the reason in lock_reason', async () => {
    const r = await receiver([], 404);
    const ch = await newChannel([{ type: 'webhook', webhook_url: r.url }]);
    for (let i = 0; i < 3; i++) {
      const t = await h.ok('notification_channels/test', { id: ch.id, wait: true });
      assert.equal(t.data.deliveries[0].state, 'failed');
      assert.equal(t.data.deliveries[0].attempts, 1); // a 404 is not retried
    }
    const [c] = (await h.ok('notification_channels/list', { org_id: org.orgId })).data.filter(
      (x: any) => x.id === ch.id,
    );
    assert.equal(c.enabled, false);
    assert.match(
      c.lock_reason,
      /disabled automatically after 3 consecutive failed deliveries; last: HTTP 404/,
    );
    assert.equal(c.locked, false);
    // A disabled channel gets no deliveries from rules.
    await h.ok('realms/new_notification_rule', {
      org_id: org.orgId,
      event: 'invite.accepted',
      channel_ids: [ch.id],
    });
    await addOrgUser(h, org.orgId, `y-${uniq()}@notif.test`, 'member');
    assert.equal((await deliveries(ch.id)).length, 3);
    // Turning it on again clears the reason.
    const on = await h.ok('notification_channels/update', { id: ch.id, enabled: true });
    assert.equal(on.data.enabled, true);
    assert.equal(on.data.lock_reason, null);
  });

  /**
   * The worker records a failed attempt (its delivery's row, then its channel's) while `remove`
   * deletes the channel: on PostgreSQL the two must wait for each other, not deadlock.
   */
  async function removeWhileRecording(
    channelId: string,
    remove: () => Promise<{ status: number; body: any }>,
  ) {
    const hub = h.running.hub;
    const now = Date.now();
    const deliveryId = `d-${uniq()}`;
    await hub.db
      .insertInto('notification_deliveries')
      .values({
        id: deliveryId,
        channel_id: channelId,
        event_id: `e-${uniq()}`,
        event_type: 'notification.test',
        kind: 'test',
        destination_index: 0,
        destination_type: 'webhook',
        url: 'http://127.0.0.1:9/gone',
        body: '{}',
        state: 'failed',
        attempts: 1,
        next_attempt_at: now,
        created_at: now,
        updated_at: now,
      })
      .execute();
    let removal: Promise<{ status: number; body: any }> | undefined;
    await hub.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('notification_deliveries')
        .set({ updated_at: now + 1 })
        .where('id', '=', deliveryId)
        .execute();
      removal = remove();
      // Read on another connection: within a transaction PostgreSQL shows pg_stat_activity as it was
      // at the transaction's first look, so a removal that arrives later would never show.
      await eventually(async () => {
        const waiting = await hub.db
          .selectFrom('pg_stat_activity' as any)
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('datname' as any, '=', sql`current_database()`)
          .where('wait_event_type' as any, '=', 'Lock')
          // The removal's statement, not the delivery worker's (it may wait on the same row).
          .where('query' as any, 'like', 'delete from "notification_deliveries"%')
          .executeTakeFirstOrThrow();
        return Number(waiting.n) > 0 || null;
      }, 'the removal to wait for the delivery');
      await trx
        .updateTable('notification_channels')
        .set({ consecutive_failures: sql`consecutive_failures + 1` })
        .where('id', '=', channelId)
        .execute();
    });
    const r = await removal!;
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data.removed, true);
    const left = await hub.db
      .selectFrom('notification_deliveries')
      .select('id')
      .where('channel_id', '=', channelId)
      .execute();
    assert.deepEqual(left, []);
  }

  it('removing a channel, or its realm, while the worker records an attempt waits for it', async (t) => {
    if (h.running.hub.dialect !== 'postgres') return t.skip('row locks that can deadlock are PostgreSQL’s');
    const ch = await newChannel([{ type: 'webhook', webhook_url: 'http://127.0.0.1:9/gone' }]);
    await removeWhileRecording(ch.id, () => h.call('notification_channels/remove', { id: ch.id }));
    const realm = (await h.ok('realms/new', { org_id: org.orgId, name: `r-${uniq()}` })).data.id;
    const inRealm = await newChannel([{ type: 'webhook', webhook_url: 'http://127.0.0.1:9/gone' }], {
      org_id: undefined,
      realm_id: realm,
    });
    await removeWhileRecording(inRealm.id, () => h.call('realms/remove', { id: realm }));
  });

  it('sends Slack and Discord payloads in the shape each service expects', async () => {
    const r = await receiver();
    const ch = await newChannel([
      { type: 'slack', webhook_url: `${r.url}/slack` },
      { type: 'discord', webhook_url: `${r.url}/discord` },
    ]);
    const t = await h.ok('notification_channels/test', { id: ch.id, wait: true });
    assert.deepEqual(
      t.data.deliveries.map((d: any) => d.state),
      ['succeeded', 'succeeded'],
    );
    const slack = JSON.parse(r.received.find((x) => x.path === '/slack')!.body);
    assert.equal(typeof slack.text, 'string');
    assert.match(slack.text, /Test notification/);
    assert.ok(Array.isArray(slack.blocks) && slack.blocks.every((b: any) => typeof b.type === 'string'));
    const discord = JSON.parse(r.received.find((x) => x.path === '/discord')!.body);
    assert.equal(typeof discord.content, 'string');
    assert.ok(discord.content.length <= 2000);
    assert.ok(Array.isArray(discord.embeds) && discord.embeds.length === 1);
    assert.equal(discord.embeds[0].title, 'notification.test');
    assert.deepEqual(discord.allowed_mentions, { parse: [] });
  });

  it('the system rule delivers invite.sent once its channel has a destination', async () => {
    const o = await createOrgWithOwner(h, `sys-${uniq()}`);
    const rules = (await h.ok('realms/list_notification_rules', { org_id: o.orgId }, o.owner.token)).data;
    assert.equal(rules.length, 1);
    assert.equal(rules[0].event, 'invite.sent');
    assert.equal(rules[0].locked, true);
    assert.equal(rules[0].system_key, 'invite.sent');
    const [sys] = (await h.ok('notification_channels/list', { org_id: o.orgId }, o.owner.token)).data;
    assert.deepEqual(rules[0].channel_ids, [sys.id]);
    assert.equal(sys.locked, true);
    assert.equal(sys.system_key, 'invite.sent');
    assert.equal(sys.rule_count, 1);
    assert.deepEqual(sys.destinations, []);
    assert.match(sys.lock_reason, /system channel/);
    const r = await receiver();
    await h.ok(
      'notification_channels/update',
      { id: sys.id, destinations: [{ type: 'webhook', webhook_url: r.url }] },
      o.owner.token,
    );
    const secret = (await h.ok('notification_channels/rotate_secret', { id: sys.id }, o.owner.token)).data
      .secret;
    await h.ok(
      'orgs/invite_member',
      { org_id: o.orgId, email: `z-${uniq()}@notif.test`, role: 'admin' },
      o.owner.token,
    );
    const got = await r.next();
    assert.equal(JSON.parse(got.body).type, 'invite.sent');
    assert.ok(
      verifySignature(
        secret,
        {
          timestamp: got.headers['x-svc-timestamp'] as string,
          signature: got.headers['x-svc-signature'] as string,
        },
        got.body,
      ),
    );
  });

  it('rules match by kind, realm and filter; an event’s channel_ids add channels (runs’ notify_channels)', async () => {
    const hub = h.running.hub;
    const count = async (id: string) =>
      Number(
        (
          await hub.db
            .selectFrom('notification_deliveries')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('channel_id', '=', id)
            .executeTakeFirstOrThrow()
        ).n,
      );
    await h.ok('settings/remove', { key: 'notifications.allow_private_destinations' }); // nothing is sent
    const url = 'https://hooks.example.com/x';
    const failed = await newChannel([{ type: 'webhook', webhook_url: url }]);
    const team = await newChannel([{ type: 'webhook', webhook_url: url }]);
    const otherRealm = await newChannel([{ type: 'webhook', webhook_url: url }]);
    const named = await newChannel([{ type: 'slack', webhook_url: url }]);
    const realm2 = (await h.ok('realms/new', { org_id: org.orgId, name: `r-${uniq()}` })).data.id;
    await h.ok('realms/new_notification_rule', {
      realm_id: org.defaultRealmId,
      event: 'run.ended',
      channel_ids: [failed.id],
      filter: { state: 'failed' },
    });
    await h.ok('realms/new_notification_rule', {
      org_id: org.orgId,
      event: 'run.ended',
      channel_ids: [team.id],
      filter: { team_id: 'team-1' },
    });
    await h.ok('realms/new_notification_rule', {
      realm_id: realm2,
      event: 'run.ended',
      channel_ids: [otherRealm.id],
    });
    const emit = (payload: Record<string, unknown>) =>
      hub.db.transaction().execute((trx) =>
        recordEvent(trx, hub, {
          type: 'run.ended',
          org_id: org.orgId,
          realm_id: org.defaultRealmId,
          subject_id: 'run-1',
          payload,
        }),
      );
    await emit({ team_id: 'team-1', state: 'failed' });
    await emit({ team_id: 'team-2', state: 'succeeded', channel_ids: [named.id] });
    assert.equal(await count(failed.id), 1);
    assert.equal(await count(team.id), 1);
    assert.equal(await count(otherRealm.id), 0);
    assert.equal(await count(named.id), 1);
    const [d] = await hub.db
      .selectFrom('notification_deliveries')
      .selectAll()
      .where('channel_id', '=', named.id)
      .execute();
    const body = JSON.parse(d!.body);
    assert.match(body.text, /Run run-1 ended: succeeded/);
  });

  it('events are kept in `events` only when they caused a delivery, which points at them', async () => {
    const hub = h.running.hub;
    await h.ok('settings/remove', { key: 'notifications.allow_private_destinations' }); // nothing is sent
    const ch = await newChannel([{ type: 'webhook', webhook_url: 'https://hooks.example.com/y' }]);
    await h.ok('realms/new_notification_rule', {
      realm_id: org.defaultRealmId,
      event: 'run.lost',
      channel_ids: [ch.id],
    });
    const subject = `run-${uniq()}`;
    const event = (type: string) => ({
      type,
      org_id: org.orgId,
      realm_id: org.defaultRealmId,
      subject_id: subject,
      payload: { state: 'lost' },
    });
    await hub.db
      .transaction()
      .execute((trx) =>
        recordEvents(trx, hub, [event('run.lost'), event('run.started'), event('daemon.connected')]),
      );
    const kept = await hub.db
      .selectFrom('events')
      .select(['id', 'type'])
      .where('subject_id', '=', subject)
      .execute();
    assert.deepEqual(
      kept.map((e) => e.type),
      ['run.lost'],
    );
    const [d] = await hub.db
      .selectFrom('notification_deliveries')
      .select('event_id')
      .where('channel_id', '=', ch.id)
      .execute();
    assert.equal(d?.event_id, kept[0]!.id);
  });
});
