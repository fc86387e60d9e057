import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { until } from '../../../test/helpers/until.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import { recordEvent } from '../events/events.js';
import type { RunningHub } from '../server.js';
import { createRulesCache, RULES_CACHE_MS } from './rules-cache.js';

/** A bound for a loaded machine, not the promise (that is RULES_CACHE_MS). */
const APPLIED_WITHIN_MS = 10 * RULES_CACHE_MS;

describe('notification rules cache', () => {
  let h: TestHub;
  let w: World;
  let channelId: string;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    const channel = await h.ok('notification_channels/new', {
      realm_id: w.realmId,
      name: 'ops',
      destinations: [{ type: 'webhook', webhook_url: 'https://hooks.example.test/ops' }],
    });
    channelId = channel.data.id;
  });
  after(() => h.close());

  /** Records a run.ended event through `on`, and answers how many deliveries it made for the channel. */
  const deliveriesOfOneEvent = async (on: RunningHub, state = 'failed'): Promise<number> => {
    const before = await countDeliveries();
    await recordEvent(on.hub.db, on.hub, {
      type: 'run.ended',
      org_id: w.orgId,
      realm_id: w.realmId,
      subject_id: 'run-1',
      payload: { run_id: 'run-1', team_id: 'team-1', state },
    });
    return (await countDeliveries()) - before;
  };
  const countDeliveries = async () =>
    (
      await h.running.hub.db
        .selectFrom('notification_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('channel_id', '=', channelId)
        .executeTakeFirstOrThrow()
    ).n;

  it('a rule added or removed through this process applies to its very next event', async () => {
    assert.equal(await deliveriesOfOneEvent(h.running), 0); // caches "no rule"
    const rule = await h.ok('realms/new_notification_rule', {
      realm_id: w.realmId,
      event: 'run.ended',
      channel_ids: [channelId],
      filter: { state: 'failed' },
    });
    assert.equal(await deliveriesOfOneEvent(h.running), 1);
    assert.equal(await deliveriesOfOneEvent(h.running, 'succeeded'), 0, 'the state filter still applies');
    await h.ok('realms/remove_notification_rules', { id: rule.data.id });
    assert.equal(await deliveriesOfOneEvent(h.running), 0);
  });

  it("another hub process's new rule applies within a second", async () => {
    // SQLite has one hub process: a second hub on the same file, with its own caches, stands for it.
    const other = await h.startAnother();
    try {
      assert.equal(await deliveriesOfOneEvent(other), 0); // the other process caches "no rule"
      const rule = await h.ok('realms/new_notification_rule', {
        realm_id: w.realmId,
        event: 'run.ended',
        channel_ids: [channelId],
      });
      await until(
        'the other process applies the new rule',
        async () => (await deliveriesOfOneEvent(other)) === 1,
        APPLIED_WITHIN_MS,
      );
      await h.ok('realms/remove_notification_rules', { id: rule.data.id });
    } finally {
      await other.close();
    }
  });

  it("keeps an organization's rules for its time to live, and reads again after it", async () => {
    let now = 0;
    const cache = createRulesCache(1_000, () => now);
    const db = h.running.hub.db;
    // The organization's system rules aside (invite.sent to its owners).
    const reviews = async () =>
      (await cache.rulesOf(db, w.orgId)).filter((r) => r.event === 'review.requested');
    assert.deepEqual(await reviews(), []);
    const rule = await h.ok('realms/new_notification_rule', {
      realm_id: w.realmId,
      event: 'review.requested',
      channel_ids: [channelId],
      filter: { team_id: 'team-1' },
    });
    // Written through a handle without this cache's plugin: only the time to live ends the entry.
    now += 999;
    assert.deepEqual(await reviews(), []);
    now += 1;
    assert.deepEqual(await reviews(), [
      {
        event: 'review.requested',
        realm_id: w.realmId,
        filter_team_id: 'team-1',
        filter_state: null,
        channel_ids: [channelId],
      },
    ]);
    // Through a handle with it, the write clears the entry at once.
    await db
      .withPlugin(cache.watch)
      .deleteFrom('notification_rules')
      .where('id', '=', rule.data.id)
      .execute();
    assert.deepEqual(await reviews(), []);
  });

  it("reads rules in use again through the hub's handle, in the background, before they run out", async () => {
    let now = 0;
    const db = h.running.hub.db;
    const cache = createRulesCache(
      1_000,
      () => now,
      () => db,
    );
    const states = async () =>
      (await cache.rulesOf(db, w.orgId)).filter((r) => r.event === 'run.lost').map((r) => r.filter_state);
    assert.deepEqual(await states(), []);
    // Written through the hub's handle, which carries the hub's own cache's plugin, not this one's.
    const rule = await h.ok('realms/new_notification_rule', {
      realm_id: w.realmId,
      event: 'run.lost',
      channel_ids: [channelId],
      filter: { state: 'lost' },
    });
    try {
      now = 600;
      // Asked past half its time: answered at once, as kept, and read again after.
      assert.deepEqual(await states(), []);
      await until(
        'the renewal read the new rule',
        async () => (await states()).length === 1,
        APPLIED_WITHIN_MS,
      );
      assert.ok(now < 1_000, 'renewed before the kept answer ran out');
    } finally {
      await h.ok('realms/remove_notification_rules', { id: rule.data.id });
    }
  });

  it('does not keep what a read found when the cache was cleared while it ran', async () => {
    let now = 0;
    const db = h.running.hub.db;
    const cache = createRulesCache(1_000, () => now);
    const expired = async () =>
      (await cache.rulesOf(db, w.orgId)).filter((r) => r.event === 'run.resumed').length;
    const reading = expired();
    cache.clear();
    assert.equal(await reading, 0);
    const rule = await h.ok('realms/new_notification_rule', {
      realm_id: w.realmId,
      event: 'run.resumed',
      channel_ids: [channelId],
    });
    try {
      // The read before the clear was not kept: this one reads the new rule, within the time to live.
      now = 10;
      assert.equal(await expired(), 1);
    } finally {
      await h.ok('realms/remove_notification_rules', { id: rule.data.id });
    }
  });
});
