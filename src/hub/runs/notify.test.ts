import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { registerAgent, registerTeam } from '../../../test/helpers/runs.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import { addHistory } from './history.repo.js';

describe("a run's notify_channels", () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
  });
  after(() => h.close());

  it('receive the run events that need a person (run.ended, run.lost, review.requested), not every move', async () => {
    const channel = await h.ok('notification_channels/new', {
      realm_id: w.realmId,
      name: 'this run only',
      destinations: [{ type: 'webhook', webhook_url: 'https://hooks.example.test/run' }],
    });
    const hub = h.running.hub;
    await registerAgent(h, w.orgId, 'noop', 'noop.js');
    await registerTeam(h, w.orgId, 'solo', [{ name: 'only', agent: 'noop' }]);
    // No daemon is connected: the run stays queued, which is all this test needs.
    const created = await h.ok('runs/new', {
      realm_id: w.realmId,
      team: 'solo',
      notify_channels: [channel.data.id],
    });
    const run = await hub.db
      .selectFrom('runs')
      .selectAll()
      .where('run_id', '=', created.data.run_id)
      .executeTakeFirstOrThrow();
    for (const type of ['run.started', 'phase.started', 'run.ended']) {
      await hub.db.transaction().execute((trx) => addHistory(trx, hub, run, 'succeeded', { type }));
    }
    const deliveries = await hub.db
      .selectFrom('notification_deliveries')
      .select(['event_type', 'body'])
      .where('channel_id', '=', channel.data.id)
      .execute();
    assert.deepEqual(
      deliveries.map((d) => d.event_type),
      ['run.ended'],
    );
    const body = JSON.parse(deliveries[0]!.body);
    assert.equal(body.subject_id, run.run_id);
    assert.equal(JSON.stringify(body).includes('channel_ids'), false);
  });
});
