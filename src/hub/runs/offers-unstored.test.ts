import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { fakeDaemon } from '../../../test/helpers/fake-daemon.js';
import type { TestHub } from '../../../test/helpers/hub.js';
import { hubWithTeam } from '../../../test/helpers/runs.js';
import { connectDaemon } from '../../../test/helpers/tunnel-client.js';
import type { World } from '../../../test/helpers/world.js';

/**
 * An offer to a daemon connected to this hub process leaves without an outbox row (src/hub/daemons/
 * commands.ts): the run's queue item is what a claim decides on. What must hold without the row: an
 * offer lost with its connection reaches the daemon when it connects again, and one meant for a
 * connection that another has replaced reaches the new one.
 */
describe('offers sent without an outbox row', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    // No re-dispatch pass: what is offered here is offered by the path under test, not by the pass.
    ({ h, w } = await hubWithTeam('solo', { config: { runRedispatchMs: 3_600_000 } }));
  });
  after(async () => {
    await h.close();
  });

  it('offers a run again to its daemon when it connects again, the offer lost with its connection', async () => {
    const hub = h.running.hub;
    let online = once(hub.tunnel.events, 'connected');
    const first = await connectDaemon(h.url, w.tokens.realm_token!);
    await online;
    const run = (await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' })).data;
    const offer = await first.next('command');
    assert.equal(offer.path, 'offer_job');
    const item = (offer.body as { queue_item_id: string }).queue_item_id;
    const stored = await hub.db
      .selectFrom('command_outbox')
      .select('tx_id')
      .where('path', '=', 'offer_job')
      .execute();
    assert.deepEqual(stored, [], 'the offer left without an outbox row');
    // The daemon goes away without claiming (as if the frame were lost with the connection).
    const offline = once(hub.tunnel.events, 'disconnected');
    await first.close();
    await offline;
    online = once(hub.tunnel.events, 'connected');
    const again = await fakeDaemon(h.url, w.tokens.realm_token!);
    try {
      await online;
      const offered = await again.waitFor(
        (c) => c.path === 'offer_job' && c.body.payload.run_id === run.run_id,
      );
      assert.equal(offered.body.queue_item_id, item);
    } finally {
      await again.close();
    }
  });

  it('stores an offer meant for a connection that another replaced, and delivers it on the new one', async () => {
    const hub = h.running.hub;
    const online = once(hub.tunnel.events, 'connected');
    const d = await fakeDaemon(h.url, w.tokens.realm_token!);
    try {
      await online;
      // Made while an older connection was the daemon's (sent before this one opened).
      const txId = hub.newId();
      const body = JSON.stringify({ queue_item_id: 'late-item', daemon_id: w.daemonId, tx_id: txId });
      hub.tunnel.sendNow(w.daemonId, [
        { tx_id: txId, path: 'offer_job', body, last_sent_at: 0, stored: false },
      ]);
      const got = await d.waitFor((c) => c.tx_id === txId);
      assert.equal(got.body.queue_item_id, 'late-item');
      const row = await hub.db
        .selectFrom('command_outbox')
        .select(['daemon_id', 'path', 'status'])
        .where('tx_id', '=', txId)
        .executeTakeFirstOrThrow();
      assert.equal(row.daemon_id, w.daemonId);
      assert.equal(row.path, 'offer_job');
    } finally {
      await d.close();
    }
  });
});
