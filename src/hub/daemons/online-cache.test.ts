import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestHub } from '../../../test/helpers/hub.js';
import { hubWithTeam } from '../../../test/helpers/runs.js';
import type { World } from '../../../test/helpers/world.js';
import { createOnlineCache } from './online-cache.js';

describe("cache of daemons' status", () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    ({ h, w } = await hubWithTeam('build'));
  });
  after(() => h.close());

  type DaemonChange = { status?: 'online' | 'offline'; last_seen_at?: number; revoked_at?: number | null };
  const setDaemon = (change: DaemonChange, db = h.running.hub.db) =>
    db.updateTable('daemons').set(change).where('id', '=', w.daemonId).execute();
  const setStatus = (status: 'online' | 'offline', db = h.running.hub.db) => setDaemon({ status }, db);

  it("keeps the database's answer for its time to live, and reads again after it", async () => {
    let now = 0;
    const cache = createOnlineCache(1_000, () => now);
    const db = h.running.hub.db;
    await setStatus('offline');
    assert.equal(await cache.isOnline(db, w.daemonId), false);
    // Written through the hub's handle, which carries the hub's own cache's plugin, not this one's:
    // as another hub process's write would be.
    await setStatus('online');
    now += 999;
    assert.equal(await cache.isOnline(db, w.daemonId), false);
    now += 1;
    assert.equal(await cache.isOnline(db, w.daemonId), true);
    // Through a handle with its plugin, a write of the status clears it at once; other columns do not.
    await setDaemon({ last_seen_at: 1 }, db.withPlugin(cache.watch));
    assert.equal(cache.size(), 1);
    await setStatus('offline', db.withPlugin(cache.watch));
    assert.equal(cache.size(), 0);
    assert.equal(await cache.isOnline(db, w.daemonId), false);
    // A removed daemon is not online, whatever its last status.
    await setStatus('online');
    await setDaemon({ revoked_at: 1 }, db.withPlugin(cache.watch));
    assert.equal(await cache.isOnline(db, w.daemonId), false);
    await setDaemon({ revoked_at: null });
  });

  it('does not keep what a read found when the cache was cleared while it ran', async () => {
    const cache = createOnlineCache();
    const reading = cache.isOnline(h.running.hub.db, w.daemonId);
    cache.clear();
    await reading;
    assert.equal(cache.size(), 0);
    await cache.isOnline(h.running.hub.db, w.daemonId);
    assert.equal(cache.size(), 1);
  });

  it("shows a run's daemon status from the cache, and force_terminate reads the database", async () => {
    await setStatus('offline');
    const run = await h.ok('runs/new', { realm_id: w.realmId, team: 'build' });
    const runId: string = run.data.run_id;
    // A run held by the daemon, whose tunnel is on no process: its status comes from the database.
    await h.running.hub.db
      .updateTable('runs')
      .set({ state: 'running', daemon_id: w.daemonId, lease_expires_at: Date.now() + 60_000 })
      .where('run_id', '=', runId)
      .execute();
    // The list shows the daemon's status in the run's force_terminate (its trigger or blocker).
    const shown = async (): Promise<string> => {
      const r = (await h.ok('runs/list', { realm_id: w.realmId })).data.find(
        (x: { run_id: string }) => x.run_id === runId,
      );
      return r.force_terminate.trigger ?? r.force_terminate.blocker;
    };
    const OFFLINE = 'daemon_offline';
    const ONLINE = 'daemon_online_use_cancel';
    assert.equal(await shown(), OFFLINE);
    // Marked online without the hub's handle (another process's write): the list may show the old
    // answer for up to a second, force_terminate does not act on it.
    await setStatus('online', h.running.hub.db.withoutPlugins());
    const refused = await h.call('runs/force_terminate', { run_id: runId, reason: 'stuck' });
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.details.blocker, 'daemon_online_use_cancel');
    // Through this process's handle the cache is cleared at once.
    await setStatus('offline');
    assert.equal(await shown(), OFFLINE);
    await setStatus('online');
    assert.equal(await shown(), ONLINE);
    await setStatus('offline');
  });
});
