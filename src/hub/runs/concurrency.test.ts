import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestHub } from '../../../test/helpers/hub.js';
import { hubWithTeam } from '../../../test/helpers/runs.js';
import { connectDaemon, type TunnelClient } from '../../../test/helpers/tunnel-client.js';
import type { World } from '../../../test/helpers/world.js';
import { admitAllWaiting } from './admission.service.js';
import { sweepLeases } from './daemon.service.js';
import { redispatchRuns } from './redispatch.service.js';

/**
 * Slots free from the runs' own states: a run that is lost frees its slot at once, and a run that
 * ended without the step after its commit (its hub process died) frees it at the next re-dispatch
 * pass. The daemon here is a bare tunnel client that never claims: an offered run holds its slot.
 */
describe('concurrency slots', () => {
  let h: TestHub;
  let w: World;
  let daemon: TunnelClient;
  before(async () => {
    // Timers effectively off: the test drives the sweeper and the re-dispatch pass itself.
    ({ h, w } = await hubWithTeam('solo', { config: { runSweepMs: 3_600_000, runRedispatchMs: 3_600_000 } }));
    daemon = await connectDaemon(h.url, w.tokens.realm_token!);
  });
  after(async () => {
    await daemon?.close();
    await h?.close();
  });

  const start = async (key = 'slots', more: Record<string, unknown> = {}) =>
    (
      await h.ok('runs/new', {
        realm_id: w.realmId,
        team: 'solo',
        concurrency_key: key,
        concurrency_limit: 1,
        ...more,
      })
    ).data;
  /** As if the daemon had taken the run and then stopped renewing its lease. */
  const heldThenSilent = (runIds: string[], more: { run_deadline_at?: number } = {}) =>
    h.running.hub.db
      .updateTable('runs')
      .set({
        state: 'running',
        daemon_id: w.daemonId,
        lease_epoch: 1,
        lease_expires_at: Date.now() - 1,
        ...more,
      })
      .where('run_id', 'in', runIds)
      .execute();
  const state = async (id: string) => (await h.ok('runs/get_by_id', { run_id: id })).data;

  it('a lost run frees its slot for the next waiting run at once', async () => {
    const a = await start();
    assert.equal((await state(a.run_id)).state, 'offered');
    const b = await start();
    assert.equal(b.state, 'queued');
    assert.deepEqual(b.waiting_for, { key: 'concurrency_key', value: 'slots', limit: 1, running: 1 });
    await heldThenSilent([a.run_id]);
    assert.equal(await sweepLeases(h.running.hub), 1);
    assert.equal((await state(a.run_id)).state, 'lost');
    const next = await state(b.run_id);
    assert.equal(next.state, 'offered');
    assert.equal(next.waiting_for, null);
  });

  it('the re-dispatch pass admits a waiting run whose slot freed without the step after commit', async () => {
    const held = (
      await h.running.hub.db
        .selectFrom('runs')
        .select('run_id')
        .where('state', '=', 'offered')
        .where('concurrency', 'is not', null)
        .execute()
    ).map((r) => r.run_id);
    assert.equal(held.length, 1);
    const c = await start();
    assert.equal(c.state, 'queued');
    // The holder ends behind the lifecycle's back, as when its hub process died after the commit.
    await h.running.hub.db
      .updateTable('runs')
      .set({ state: 'failed' })
      .where('run_id', '=', held[0]!)
      .execute();
    assert.equal((await state(c.run_id)).state, 'queued');
    const pass = await redispatchRuns(h.running.hub);
    assert.equal(pass.admitted, 1);
    assert.equal((await state(c.run_id)).state, 'offered');
  });

  it('a run past its deadline whose lease expires is terminated for run_timeout, and frees its slot', async () => {
    const a = await start('deadline', { timeout_ms: 60_000 });
    const b = await start('deadline');
    assert.equal(b.state, 'queued');
    // Its deadline passed and its daemon went silent before the deadline pass could cancel it.
    await heldThenSilent([a.run_id], { run_deadline_at: Date.now() - 1 });
    assert.equal(await sweepLeases(h.running.hub), 1);
    const ended = (await h.ok('runs/get_by_id', { run_id: a.run_id, with_history: true })).data;
    assert.equal(ended.state, 'terminated');
    assert.equal(ended.error, 'run_timeout');
    assert.equal(ended.force_terminate.terminated_reason, 'run_timeout');
    assert.ok(!ended.history.some((e: { type: string }) => e.type === 'run.lost'), 'not lost on the way');
    assert.equal((await state(b.run_id)).state, 'offered');
  });

  it('the re-dispatch pass admits the waiting runs of every group, page after page', async () => {
    // Twelve full groups, walked five at a time: three pages.
    const holders: string[] = [];
    const waiters: string[] = [];
    for (let i = 0; i < 12; i++) {
      holders.push((await start(`page-${i}`)).run_id);
      const w = await start(`page-${i}`);
      assert.equal(w.state, 'queued');
      waiters.push(w.run_id);
    }
    assert.equal(await admitAllWaiting(h.running.hub, 5), 0, 'full groups admit nothing');
    // Every holder ends behind the lifecycle's back: only the periodic pass can free their slots.
    await h.running.hub.db
      .updateTable('runs')
      .set({ state: 'failed' })
      .where('run_id', 'in', holders)
      .execute();
    assert.equal(await admitAllWaiting(h.running.hub, 5), 12);
    for (const id of waiters) assert.equal((await state(id)).state, 'offered');
    assert.equal(await admitAllWaiting(h.running.hub, 5), 0, 'full again');
  });

  it('an ended run leaves its groups; resumed, it joins them again and waits for a slot', async () => {
    const rows = async (id: string) =>
      (await h.running.hub.db.selectFrom('run_groups').select('group_key').where('run_id', '=', id).execute())
        .length;
    const a = await start('resume');
    const b = await start('resume');
    assert.equal(b.state, 'queued');
    await h.ok('runs/cancel', { run_id: a.run_id });
    assert.equal(await rows(a.run_id), 0, 'its groups name only runs that have not ended');
    assert.equal((await state(b.run_id)).state, 'offered');
    const resumed = (await h.ok('runs/resume', { run_id: a.run_id })).data;
    assert.equal(resumed.state, 'queued');
    assert.deepEqual(resumed.waiting_for, { key: 'concurrency_key', value: 'resume', limit: 1, running: 1 });
    await h.ok('runs/cancel', { run_id: b.run_id });
    assert.equal((await state(a.run_id)).state, 'offered');
    // It holds the slot as any run of the group does.
    const c = await start('resume');
    assert.deepEqual(c.waiting_for, { key: 'concurrency_key', value: 'resume', limit: 1, running: 1 });
  });
});
