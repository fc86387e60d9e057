import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TEST_DB } from '../../../test/helpers/db.js';
import type { TestHub } from '../../../test/helpers/hub.js';
import { hubWithTeam } from '../../../test/helpers/runs.js';
import type { World } from '../../../test/helpers/world.js';
import type { RunningHub } from '../server.js';
import { sweepLeases } from './daemon.service.js';

// Several hub processes share one database only on PostgreSQL; SQLite is one process by design.
describe('lease sweeper with two hub processes on one database', {
  skip: TEST_DB !== 'postgres' && 'PostgreSQL only',
}, () => {
  let h: TestHub;
  let second: RunningHub;
  let w: World;
  before(async () => {
    // Timers effectively off: the test drives both sweepers itself, at the same moment.
    const config = { runSweepMs: 3_600_000 };
    ({ h, w } = await hubWithTeam('solo', { config }));
    second = await h.startAnother({ config });
  });
  after(async () => {
    await second?.close();
    await h?.close();
  });

  it('moves each expired run to lost exactly once when both sweep at once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      ids.push((await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' })).data.run_id);
    }
    // As if a daemon had taken them and then stopped renewing their leases.
    await h.running.hub.db
      .updateTable('runs')
      .set({ state: 'running', daemon_id: w.daemonId, lease_epoch: 1, lease_expires_at: Date.now() - 1 })
      .where('run_id', 'in', ids)
      .execute();
    const [a, b] = await Promise.all([sweepLeases(h.running.hub), sweepLeases(second.hub)]);
    assert.equal(a + b, ids.length);
    const runs = await h.running.hub.db
      .selectFrom('runs')
      .select(['state', 'state_lost_at'])
      .where('run_id', 'in', ids)
      .execute();
    assert.ok(runs.every((r) => r.state === 'lost' && r.state_lost_at !== null));
    const lost = await h.running.hub.db
      .selectFrom('run_history')
      .select('run_id')
      .where('run_id', 'in', ids)
      .where('type', '=', 'run.lost')
      .execute();
    assert.equal(lost.length, ids.length);
    assert.equal(new Set(lost.map((r) => r.run_id)).size, ids.length);
  });
});
