import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { offerItem } from '../../../test/helpers/offers.js';
import { connectDaemon } from '../../../test/helpers/tunnel-client.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import type { CommandResult } from '../ports.js';

describe('queue/claim and offers', () => {
  let h: TestHub;
  let w: World;
  let second: { daemon_id: string; token: string };
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    second = (await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'second' })).data;
  });
  after(() => h.close());

  const claim = (queue_item_id: string, daemon_id: string, token: string | null) =>
    h.call('queue/claim', { queue_item_id, daemon_id }, token);

  it('offers an item to every connected daemon of the realm; the first claim wins', async () => {
    const a = await connectDaemon(h.url, w.tokens.realm_token!);
    const b = await connectDaemon(h.url, second.token);
    try {
      const offer = await offerItem(h.running.hub, w.realmId, { team_id: 't1' });
      assert.equal(offer.offers.length, 2);
      const [ca, cb] = await Promise.all([a.next('command'), b.next('command')]);
      for (const [c, d] of [
        [ca, w.daemonId],
        [cb, second.daemon_id],
      ] as const) {
        assert.equal(c.path, 'offer_job');
        assert.deepEqual(c.body, {
          queue_item_id: offer.queue_item_id,
          daemon_id: d,
          kind: 'run',
          payload: { team_id: 't1' },
          tx_id: c.tx_id,
        });
      }
      const first = await claim(offer.queue_item_id, w.daemonId, w.tokens.realm_token);
      assert.equal(first.status, 200);
      assert.deepEqual(first.body, { ok: true, data: { claimed: true, queue_item_id: offer.queue_item_id } });
      const lost = await claim(offer.queue_item_id, second.daemon_id, second.token);
      assert.deepEqual(lost.body, { ok: true, data: { claimed: false, queue_item_id: offer.queue_item_id } });
      // A retried claim by the winner still wins.
      const retry = await claim(offer.queue_item_id, w.daemonId, w.tokens.realm_token);
      assert.equal(retry.body.data.claimed, true);
      const row = await h.running.hub.db
        .selectFrom('queue_items')
        .selectAll()
        .where('id', '=', offer.queue_item_id)
        .executeTakeFirstOrThrow();
      assert.equal(row.status, 'claimed');
      assert.equal(row.claimed_by, w.daemonId);
      assert.equal(typeof row.claimed_at, 'number');
      // Offers to daemons connected to this process leave without an outbox row; their acks are told.
      const told = new Map<string, unknown>();
      const allTold = new Promise<void>((resolve) => {
        const onAck = (r: CommandResult) => {
          told.set(r.tx_id, r.reply);
          if (told.has(ca.tx_id) && told.has(cb.tx_id)) {
            h.running.hub.tunnel.events.off('ack', onAck);
            resolve();
          }
        };
        h.running.hub.tunnel.events.on('ack', onAck);
      });
      a.ack(ca.tx_id, { reply: { claimed: true, daemon_id: w.daemonId } });
      b.ack(cb.tx_id, { reply: { claimed: false, daemon_id: second.daemon_id } });
      await allTold;
      assert.deepEqual(told.get(ca.tx_id), { claimed: true, daemon_id: w.daemonId });
      const stored = await h.running.hub.db
        .selectFrom('command_outbox')
        .select('tx_id')
        .where('tx_id', 'in', [ca.tx_id, cb.tx_id])
        .execute();
      assert.deepEqual(stored, []);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('refuses a claim for another daemon, by a user, unknown or foreign items, and bad params', async () => {
    const { queue_item_id } = await offerItem(h.running.hub, w.realmId, {});
    const other = await claim(queue_item_id, second.daemon_id, w.tokens.realm_token);
    assert.equal(other.status, 403);
    assert.equal(other.body.error.code, 'forbidden');
    for (const token of [w.tokens.realm_admin, w.tokens.site_admin]) {
      const user = await claim(queue_item_id, w.daemonId, token);
      assert.equal(user.status, 403);
      assert.equal(user.body.error.code, 'forbidden');
    }
    assert.equal((await claim(queue_item_id, w.daemonId, null)).status, 401);
    const unknown = await claim('00000000-0000-7000-8000-000000000000', w.daemonId, w.tokens.realm_token);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'not_found');
    const foreign = await offerItem(h.running.hub, w.otherRealmId, {});
    assert.equal(foreign.offers.length, 0);
    const cross = await claim(foreign.queue_item_id, w.daemonId, w.tokens.realm_token);
    assert.equal(cross.status, 404);
    const bad = await h.call('queue/claim', { queue_item_id: '' }, w.tokens.realm_token);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'invalid_params');
    assert.deepEqual(
      bad.body.details.issues.map((i: { field: string }) => i.field),
      ['queue_item_id', 'daemon_id'],
    );
    // Nothing above claimed the item.
    assert.equal((await claim(queue_item_id, w.daemonId, w.tokens.realm_token)).body.data.claimed, true);
  });

  it('20 daemons racing for 100 items over HTTP: every item claimed exactly once', async () => {
    const daemons = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: `racer-${i}` }).then((r) => r.data),
      ),
    );
    const items: string[] = [];
    for (let i = 0; i < 100; i++)
      items.push((await offerItem(h.running.hub, w.realmId, { i })).queue_item_id);
    const wins = new Map<string, string[]>();
    await Promise.all(
      daemons.map(async (d: { daemon_id: string; token: string }, k: number) => {
        // Each daemon walks the items from a different starting point, so the races spread out.
        for (let j = 0; j < items.length; j++) {
          const item = items[(j + k * 5) % items.length]!;
          const r = await claim(item, d.daemon_id, d.token);
          assert.equal(r.status, 200, JSON.stringify(r.body));
          if (r.body.data.claimed) wins.set(item, [...(wins.get(item) ?? []), d.daemon_id]);
        }
      }),
    );
    assert.equal(wins.size, 100);
    for (const [item, winners] of wins) assert.equal(winners.length, 1, item);
    const rows = await h.running.hub.db
      .selectFrom('queue_items')
      .select(['id', 'status', 'claimed_by'])
      .where('id', 'in', items)
      .execute();
    for (const r of rows) {
      assert.equal(r.status, 'claimed');
      assert.equal(r.claimed_by, wins.get(r.id)![0]);
    }
  });
});
