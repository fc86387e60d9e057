import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { TEST_DB } from '../../../test/helpers/db.js';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { connectDaemon } from '../../../test/helpers/tunnel-client.js';
import { buildWorld, KEEPS_REFUSED_CHANNELS, notifiedOf, type World } from '../../../test/helpers/world.js';
import type { Hub } from '../context.js';
import type { RunningHub } from '../server.js';
import { reapStaleInstances } from './presence.js';

/** Waits for a condition on the database (no event exists for another process's write). */
async function until(what: string, cond: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('hub presence: the daemons of a hub process that died go offline', () => {
  let h: TestHub;
  let w: World;
  let second: RunningHub | null = null;
  const hub = () => h.running.hub;
  /** The other process's view (PostgreSQL), or this one again (SQLite has one process). */
  const other = (): Hub => second?.hub ?? hub();

  before(async () => {
    h = await startTestHub({
      config: { instanceHeartbeatMs: 50, instanceStaleMs: 1_000, ...KEEPS_REFUSED_CHANNELS },
    });
    if (TEST_DB === 'postgres') {
      // Its timers are off: the test drives its pass.
      second = await h.startAnother({
        config: { instanceHeartbeatMs: 3_600_000, instanceStaleMs: 1_000, ...KEEPS_REFUSED_CHANNELS },
      });
    }
    w = await buildWorld(h);
    // Events are written when they cause a delivery: a rule sends the realm's disconnections to a
    // channel, which the hub refuses to call (a private address).
    await notifiedOf(h, w.realmId, ['daemon.disconnected']);
  });
  after(async () => {
    await second?.close();
    await h?.close();
  });

  /** A hub process that stopped without a word, holding `daemonIds` (`fresh`: not yet stale). */
  async function deadInstance(daemonIds: string[], fresh = false): Promise<string> {
    const id = hub().newId();
    const long = fresh ? Date.now() : Date.now() - 60_000;
    await hub()
      .db.insertInto('hub_instances')
      .values({ id, host: 'gone', pid: 1, started_at: long, heartbeat_at: long })
      .execute();
    for (const d of daemonIds) {
      await hub()
        .db.updateTable('daemons')
        .set({ status: 'online', connection_id: `conn-${d}`, hub_instance_id: id })
        .where('id', '=', d)
        .execute();
    }
    return id;
  }
  const disconnectedEvents = async (daemonId: string) =>
    hub()
      .db.selectFrom('events')
      .select('payload')
      .where('type', '=', 'daemon.disconnected')
      .where('subject_id', '=', daemonId)
      .execute();
  const statusOf = async (daemonId: string) =>
    (
      await hub()
        .db.selectFrom('daemons')
        .select('status')
        .where('id', '=', daemonId)
        .executeTakeFirstOrThrow()
    ).status;

  it('marks them offline once (daemon.disconnected), keeps a daemon that reconnected elsewhere', async () => {
    const a = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'held-a' });
    const b = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'held-b' });
    const dead = await deadInstance([a.data.daemon_id, b.data.daemon_id], true);
    // b reconnects to a live process before anyone noticed; then the dead process's heartbeat ages.
    const c = await connectDaemon(h.url, b.data.token);
    await hub().db.updateTable('hub_instances').set({ heartbeat_at: 1 }).where('id', '=', dead).execute();
    try {
      await until('the dead process is gone', async () => {
        const row = await hub()
          .db.selectFrom('hub_instances')
          .select('id')
          .where('id', '=', dead)
          .executeTakeFirst();
        return row === undefined && (await statusOf(a.data.daemon_id)) === 'offline';
      });
      const events = await disconnectedEvents(a.data.daemon_id);
      assert.equal(events.length, 1);
      assert.deepEqual(JSON.parse(events[0]!.payload), {
        daemon_id: a.data.daemon_id,
        connection_id: `conn-${a.data.daemon_id}`,
        hub_instance_id: dead,
        reason: 'hub_instance_lost',
      });
      assert.equal(await statusOf(b.data.daemon_id), 'online');
      assert.deepEqual(await disconnectedEvents(b.data.daemon_id), []);
      // Nothing left to do for anyone.
      assert.equal(await reapStaleInstances(other()), 0);
      assert.equal((await disconnectedEvents(a.data.daemon_id)).length, 1);
    } finally {
      const offline = once(hub().tunnel.events, 'disconnected');
      await c.close();
      await offline;
    }
  });

  it('acts once when two processes run the pass at the same moment', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      ids.push(
        (await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: `twice-${i}` })).data
          .daemon_id,
      );
    }
    const deadA = await deadInstance(ids.slice(0, 5));
    const deadB = await deadInstance(ids.slice(5));
    // Also a daemon whose process row vanished without its daemons being marked (an orphan).
    const orphan = (await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'orphan' })).data
      .daemon_id;
    await hub()
      .db.updateTable('daemons')
      .set({ status: 'online', connection_id: 'x', hub_instance_id: hub().newId() })
      .where('id', '=', orphan)
      .execute();
    const [x, y] = await Promise.all([reapStaleInstances(hub()), reapStaleInstances(other())]);
    // The background pass of `h` may have taken some of them first: count what happened overall.
    assert.ok(x + y <= 11);
    for (const d of [...ids, orphan]) {
      assert.equal(await statusOf(d), 'offline', d);
      assert.equal((await disconnectedEvents(d)).length, 1, d);
    }
    const left = await hub()
      .db.selectFrom('hub_instances')
      .select('id')
      .where('id', 'in', [deadA, deadB])
      .execute();
    assert.deepEqual(left, []);
  });

  it('a live process presumed dead registers again and drops its connections', async () => {
    const c = await connectDaemon(h.url, w.tokens.realm_token!);
    const closed = once(c.ws, 'close');
    // What another process's pass does when this one's heartbeat looks stale.
    await hub().db.deleteFrom('hub_instances').where('id', '=', hub().tunnel.instanceId).execute();
    const [code] = (await closed) as [number];
    assert.equal(code, 1012);
    const row = await hub()
      .db.selectFrom('hub_instances')
      .select('id')
      .where('id', '=', hub().tunnel.instanceId)
      .executeTakeFirst();
    assert.ok(row, 'registered again');
  });
});
