import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, registerAgent, registerTeam } from '../helpers/runs.js';
import { until } from '../helpers/until.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * Overlap policies with a real daemon and an agent that outlasts the interval: a schedule every
 * second starts an agent that works for 2.5 s. skip: the times while it works are skipped; queue:
 * they wait and start one after another; cancel_previous: each time cancels the run before it.
 */
describe('schedule overlap policies (hub + daemon + agent processes)', () => {
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  const home = daemonHome();
  const agents = agentDir();
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    d = await startTestDaemon(home.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
      runner: { killGraceMs: 300, logFlushMs: 50 },
    });
    await whenConnected(d);
    await registerAgent(h, w.orgId, 'slow', agents.write('slow', 'setTimeout(() => {}, 2500);'));
    await registerTeam(h, w.orgId, 'slow-team', [{ name: 'work', agent: 'slow' }]);
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
  });

  const db = () => h.running.hub.db;
  const slotsOf = (id: string) =>
    db().selectFrom('schedule_slots').selectAll().where('schedule_id', '=', id).orderBy('slot_at').execute();
  const runsOf = (id: string) =>
    db()
      .selectFrom('runs')
      .select(['run_id', 'state', 'created_at', 'completed_at', 'external_id'])
      .where('external_id', 'like', `schedule:${id}:%`)
      .orderBy('created_at')
      .execute();
  const ended = (states: string[]) => (r: { state: string }) => states.includes(r.state);
  /** No run of the schedule started before the one before it had ended. */
  const assertOneAtATime = (runs: { created_at: number; completed_at: number | null }[]) => {
    for (let i = 1; i < runs.length; i++) {
      const prev = runs[i - 1]!;
      assert.ok(prev.completed_at !== null && prev.completed_at <= runs[i]!.created_at, JSON.stringify(runs));
    }
  };

  it('skip, queue and cancel_previous', { timeout: 90_000 }, async () => {
    const make = async (overlap: string) =>
      (await h.ok('schedules/new', { realm_id: w.realmId, team: 'slow-team', cron: '* * * * * *', overlap }))
        .data.id as string;
    const skip = await make('skip');
    const queue = await make('queue');
    const cancel = await make('cancel_previous');
    await until(
      'two finished runs of each schedule',
      async () => {
        const s = (await runsOf(skip)).filter(ended(['succeeded'])).length;
        const q = (await runsOf(queue)).filter(ended(['succeeded'])).length;
        const c = (await runsOf(cancel)).filter(ended(['cancelled'])).length;
        return s >= 2 && q >= 2 && c >= 2;
      },
      60_000,
    );
    for (const id of [skip, queue, cancel]) await h.ok('schedules/update', { id, enabled: false });

    // skip: times while a run works were recorded as skipped; runs never overlapped.
    const skipSlots = await slotsOf(skip);
    assert.ok(
      skipSlots.some((s) => s.status === 'skipped'),
      JSON.stringify(skipSlots),
    );
    assertOneAtATime((await runsOf(skip)).filter(ended(['succeeded'])));

    // queue: times waited, then started one after another, each after the previous run ended.
    const queueSlots = await slotsOf(queue);
    const queueRuns = await runsOf(queue);
    assert.ok(queueSlots.every((s) => s.status !== 'skipped'));
    assertOneAtATime(queueRuns.filter(ended(['succeeded'])));
    const late = queueSlots.filter((s) => s.status === 'started' && s.updated_at - s.slot_at > 1000);
    assert.ok(late.length >= 1, `a waiting time started late: ${JSON.stringify(queueSlots)}`);
    // In order: no time started before an older one still waiting.
    const startedAt = queueSlots.filter((s) => s.status === 'started').map((s) => s.updated_at);
    assert.deepEqual(
      startedAt,
      [...startedAt].sort((a, b) => a - b),
      JSON.stringify(queueSlots),
    );
    const oldestWaiting = queueSlots.find((s) => s.status === 'waiting')?.slot_at ?? Number.POSITIVE_INFINITY;
    assert.ok(
      queueSlots.every((s) => s.status !== 'started' || s.slot_at < oldestWaiting),
      JSON.stringify(queueSlots),
    );

    // cancel_previous: each time cancelled the run before it.
    const cancelRuns = await runsOf(cancel);
    assert.ok(cancelRuns.filter(ended(['cancelled'])).length >= 2, JSON.stringify(cancelRuns));
    assert.equal(cancelRuns.filter(ended(['succeeded'])).length <= 1, true, JSON.stringify(cancelRuns));
  });
});
