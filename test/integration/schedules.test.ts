import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningHub } from '../../src/hub/server.js';
import { TEST_DB } from '../helpers/db.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { registerTeam } from '../helpers/runs.js';
import { until } from '../helpers/until.js';
import { buildWorld, notifiedOf, type World } from '../helpers/world.js';

/**
 * Schedules (CONTRACT.md §10) on one database, with no daemon: runs stay queued, so the overlap
 * policy `cancel_previous` makes every slot start a run of its own (the previous one is cancelled
 * at once), and `skip` records the slots it skips. Counts are read from the slots and runs.
 */
describe('schedules', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    await h.ok('agents/register', {
      org_id: w.orgId,
      manifest: { name: 'tick', version: '1.0.0', agent_type: 'exec', command: ['true'] },
    });
    await registerTeam(h, w.orgId, 'tick-team', [{ name: 'p', agent: 'tick' }]);
  });
  after(() => h.close());

  const slots = (scheduleId: string) =>
    h.running.hub.db
      .selectFrom('schedule_slots')
      .selectAll()
      .where('schedule_id', '=', scheduleId)
      .orderBy('slot_at')
      .execute();
  const runsOf = (scheduleId: string) =>
    h.running.hub.db
      .selectFrom('runs')
      .select(['run_id', 'external_id', 'state'])
      .where('external_id', 'like', `schedule:${scheduleId}:%`)
      .execute();
  const everySecond = async (overlap: string) =>
    (await h.ok('schedules/new', { realm_id: w.realmId, team: 'tick-team', cron: '* * * * * *', overlap }))
      .data;
  /** Slot times one second apart with no gap and no repeat. */
  const assertEverySecond = (times: number[]) => {
    for (let i = 1; i < times.length; i++)
      assert.equal(times[i]! - times[i - 1]!, 1000, `slots ${times.join(',')}`);
  };

  it('makes, shows, lists, changes and removes a schedule; refuses bad expressions and zones', async () => {
    const made = await h.call(
      'schedules/new',
      {
        realm_id: w.realmId,
        team: 'tick-team',
        cron: '0 9 * * 1-5',
        timezone: 'Europe/Berlin',
        inputs: { a: 1 },
      },
      w.tokens.realm_operator,
    );
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const s = made.body.data;
    for (const f of [
      'id',
      'realm_id',
      'team_id',
      'agent_id',
      'workspace_id',
      'inputs',
      'run_name',
      'cron',
      'timezone',
      'overlap',
      'catch_up',
      'enabled',
      'next_fire_at',
      'last_fired_at',
      'last_run_id',
      'created_at',
      'updated_at',
    ]) {
      assert.ok(f in s, `missing ${f}`);
    }
    assert.equal(s.overlap, 'skip');
    assert.equal(s.catch_up, 'none');
    assert.equal(s.enabled, true);
    assert.ok(s.next_fire_at > Date.now());
    const when = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Berlin',
      hour: '2-digit',
      minute: '2-digit',
      weekday: 'short',
    }).format(new Date(s.next_fire_at));
    assert.match(when, /^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
    const got = await h.ok('schedules/get', { id: s.id }, w.tokens.realm_member);
    assert.deepEqual(got.data, s);
    const list = await h.ok('schedules/list', { realm_id: w.realmId }, w.tokens.realm_member);
    assert.ok(list.data.some((x: { id: string }) => x.id === s.id));
    const off = await h.ok('schedules/update', { id: s.id, enabled: false });
    assert.equal(off.data.enabled, false);
    assert.equal(off.data.next_fire_at, null);
    const on = await h.ok('schedules/update', { id: s.id, enabled: true, cron: '*/5 * * * * *' });
    assert.ok(on.data.next_fire_at - Date.now() <= 5000);
    for (const bad of [
      { cron: '* * *' },
      { cron: '* * * * * * *' },
      { cron: '99 * * * *' },
      { cron: '* * * * *', timezone: 'Mars/Olympus' },
      { cron: '* * * * *', overlap: 'sometimes' },
      { cron: '* * * * *', catch_up: 'maybe' },
    ]) {
      const r = await h.call('schedules/new', { realm_id: w.realmId, team: 'tick-team', ...bad });
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.equal(r.body.code, 'invalid_params', JSON.stringify(r.body));
    }
    const noTeam = await h.call('schedules/new', { realm_id: w.realmId, team: 'nope', cron: '* * * * *' });
    assert.equal(noTeam.status, 404);
    assert.deepEqual(await h.ok('schedules/remove', { id: s.id }), { ok: true, removed: true });
    assert.deepEqual(await h.ok('schedules/remove', { id: s.id }), { ok: true, removed: false });
    assert.equal((await h.call('schedules/get', { id: s.id })).status, 404);
  });

  it('schedule.fired is an event kind a notification rule can use', async () => {
    const { channelId } = await notifiedOf(h, w.realmId, ['schedule.fired']);
    const s = (await h.ok('schedules/new', { realm_id: w.realmId, team: 'tick-team', cron: '0 0 1 1 *' }))
      .data;
    const run = (await h.ok('schedules/trigger', { id: s.id })).data;
    const deliveries = await h.running.hub.db
      .selectFrom('notification_deliveries')
      .select(['event_type', 'body'])
      .where('channel_id', '=', channelId)
      .execute();
    assert.equal(deliveries.length, 1);
    assert.equal(deliveries[0]!.event_type, 'schedule.fired');
    assert.equal(deliveries[0]!.body.includes(run.run_id), true);
    await h.ok('schedules/remove', { id: s.id });
    await h.ok('notification_channels/remove', { id: channelId });
  });

  it('schedules/trigger starts one run now, with the schedule as its actor', async () => {
    const s = (
      await h.ok('schedules/new', {
        realm_id: w.realmId,
        team: 'tick-team',
        cron: '0 0 1 1 *',
        inputs: { x: 'y' },
      })
    ).data;
    const r = await h.call('schedules/trigger', { id: s.id }, w.tokens.realm_operator);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(r.body.data.inputs, { x: 'y' });
    assert.match(r.body.data.external_id, new RegExp(`^schedule:${s.id}:\\d+$`));
    const run = await h.ok('runs/get_by_id', { run_id: r.body.data.run_id, with_history: true });
    assert.deepEqual(run.data.history[0].actor, { type: 'schedule', schedule_id: s.id });
    const after = await h.ok('schedules/get', { id: s.id });
    assert.equal(after.data.last_run_id, r.body.data.run_id);
    await h.ok('schedules/remove', { id: s.id });
  });

  it('a 6-field schedule every second fires once a second, each time once', async () => {
    const n = 5;
    const s = await everySecond('cancel_previous');
    await until('five fired seconds', async () => (await slots(s.id)).length >= n && true, 20_000);
    await h.ok('schedules/update', { id: s.id, enabled: false });
    const fired = await slots(s.id);
    assertEverySecond(fired.map((x) => x.slot_at));
    assert.ok(fired.every((x) => x.status === 'started' && x.run_id));
    const runs = await runsOf(s.id);
    assert.equal(runs.length, fired.length);
    assert.deepEqual(
      runs.map((r) => r.external_id).sort(),
      fired.map((x) => `schedule:${s.id}:${x.slot_at}`).sort(),
    );
    // Each run replaced the one before: only the last may still be queued.
    assert.ok(runs.filter((r) => r.state === 'queued').length <= 1);
  });

  it('a schedule made through this process keeps its first time, however long the scheduler sleeps', async () => {
    const lazy = await startTestHub({ config: { scheduleMaxSleepMs: 600_000 } });
    try {
      const lw = await buildWorld(lazy);
      await lazy.ok('agents/register', {
        org_id: lw.orgId,
        manifest: { name: 'tick', version: '1.0.0', agent_type: 'exec', command: ['true'] },
      });
      await registerTeam(lazy, lw.orgId, 'tick-team', [{ name: 'p', agent: 'tick' }]);
      const s = (
        await lazy.ok('schedules/new', { realm_id: lw.realmId, team: 'tick-team', cron: '* * * * * *' })
      ).data;
      const firstTime = s.next_fire_at as number;
      const fired = () =>
        lazy.running.hub.db
          .selectFrom('schedule_slots')
          .selectAll()
          .where('schedule_id', '=', s.id)
          .execute();
      // Asleep with nothing to do, the scheduler would wake again in ten minutes.
      await until('its first time fired', async () => (await fired()).length >= 1 && true, 10_000);
      assert.equal(Math.min(...(await fired()).map((x) => x.slot_at)), firstTime);
      await lazy.ok('schedules/update', { id: s.id, enabled: false });
    } finally {
      await lazy.close();
    }
  });

  it('overlap skip: while a run is going, the times are recorded as skipped', async () => {
    const s = (await h.ok('schedules/new', { realm_id: w.realmId, team: 'tick-team', cron: '* * * * * *' }))
      .data;
    await until('three slots', async () => (await slots(s.id)).length >= 3 && true, 20_000);
    await h.ok('schedules/update', { id: s.id, enabled: false });
    const fired = await slots(s.id);
    assertEverySecond(fired.map((x) => x.slot_at));
    assert.equal(fired[0]!.status, 'started');
    assert.ok(fired.slice(1).every((x) => x.status === 'skipped' && x.run_id === null));
    assert.equal((await runsOf(s.id)).length, 1);
  });

  it('two hub processes on one database start each time once (30 times)', {
    skip: TEST_DB !== 'postgres' && 'PostgreSQL only: SQLite has one hub process',
    timeout: 120_000,
  }, async () => {
    const other: RunningHub = await h.startAnother();
    try {
      const s = await everySecond('cancel_previous');
      await until('30 fired seconds', async () => (await slots(s.id)).length >= 30 && true, 90_000);
      await h.ok('schedules/update', { id: s.id, enabled: false });
      const fired = await slots(s.id);
      assertEverySecond(fired.map((x) => x.slot_at));
      const runs = await runsOf(s.id);
      assert.equal(runs.length, fired.length);
      assert.equal(new Set(runs.map((r) => r.external_id)).size, runs.length);
    } finally {
      await other.close();
    }
  });
});
