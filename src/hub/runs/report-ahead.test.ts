import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { post, type TestHub } from '../../../test/helpers/hub.js';
import { countingQueries, historyTypes, hubWithTeam } from '../../../test/helpers/runs.js';
import {
  closeOnline,
  commandFor,
  onlineDaemon,
  type TunnelClient,
} from '../../../test/helpers/tunnel-client.js';
import type { World } from '../../../test/helpers/world.js';
import { isPostgres } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import { onCommandAck } from './daemon.service.js';
import { loadRun } from './runs.repo.js';

/**
 * On PostgreSQL a daemon's report of a run this process handed over, or last applied a report of, is
 * applied from the row as this process wrote it, without a read (daemon.service.ts, claimed-items.ts
 * `held`). What must hold, on both databases: a report applied so does what one applied after a read
 * does, and a row changed since by anyone else (a cancel, an end forced by a person) is never written
 * over: the report is applied again from a read, and refused when the run's true state refuses it.
 */
describe('reports applied from the row as written', () => {
  let h: TestHub;
  let w: World;
  let d: TunnelClient;
  const postgres = () => isPostgres(h.running.hub.db);
  before(async () => {
    ({ h, w } = await hubWithTeam('solo', { config: { runRedispatchMs: 3_600_000 } }));
    d = await onlineDaemon(h.running.hub, h.url, w.tokens.realm_token!);
  });
  after(async () => {
    await closeOnline(h.running.hub, d);
    await h.close();
  });

  /** What `takeHeld` gave each report of this process: a row means the report was applied ahead. */
  function watchHeld(): (RunsTable | undefined)[] {
    const taken: (RunsTable | undefined)[] = [];
    const claims = h.running.hub.claims;
    const take = claims.takeHeld.bind(claims);
    claims.takeHeld = (runId) => {
      const run = take(runId);
      taken.push(run);
      return run;
    };
    return taken;
  }

  const commandOf = (path: string, runId: string, ack = true) => commandFor(d, path, runId, ack);

  /** A run claimed by the daemon; `report` posts its reports with the lease epoch it won. */
  async function claimedRun() {
    const runId: string = (await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' })).data.run_id;
    const offer = await commandOf('offer_job', runId);
    const itemId = (offer.body as { queue_item_id: string }).queue_item_id;
    const won = await h.ok(
      'queue/claim',
      { queue_item_id: itemId, daemon_id: w.daemonId },
      w.tokens.realm_token,
    );
    await commandOf('runs/execute', runId);
    const epoch: number = won.data.run.lease_epoch;
    const report = (event: string, extra: Record<string, unknown> = {}) =>
      post(
        `${h.url}/v1/runs/report`,
        { run_id: runId, lease_epoch: epoch, event, ...extra },
        w.tokens.realm_token,
      );
    return { runId, report };
  }

  const historyOf = (runId: string) => historyTypes(h.running.hub, runId);

  it('applies each report of a run it handed over without reading the row, as a read would', async () => {
    const { runId, report } = await claimedRun();
    const taken = watchHeld();
    const readsOfRun = (q: { sql: string; parameters: readonly unknown[] }) =>
      /^select .* from "runs"/s.test(q.sql) && q.parameters.includes(runId);
    const reads = await countingQueries(h.running.hub, readsOfRun, async (count) => {
      for (const [event, extra] of [
        ['started', {}],
        ['phase.started', { phase: 'only', pid: 42 }],
        ['phase.completed', { phase: 'only', outputs: { answer: 42 } }],
        ['succeeded', { outputs: { summary: 'done' } }],
      ] as const) {
        const r = await report(event, extra);
        assert.equal(r.body?.ok, true, `${event}: ${JSON.stringify(r.body)}`);
      }
      return count();
    });
    if (postgres()) {
      assert.equal(taken.filter(Boolean).length, 4, 'each report was applied from the row as written');
      assert.equal(reads, 0, 'and read no row of the run');
    }
    assert.deepEqual(await historyOf(runId), [
      'run.queued',
      'run.offered',
      'run.claimed',
      'run.started',
      'phase.started',
      'phase.completed',
      'run.ended',
    ]);
    const run = (await loadRun(h.running.hub.db, runId))!;
    assert.equal(run.state, 'succeeded');
    assert.equal(run.current_pid, null);
    assert.equal(run.current_phase, 'only');
    assert.deepEqual(JSON.parse(run.outputs), { only: { answer: 42 }, summary: 'done' });
    assert.notEqual(run.completed_at, null);
  });

  it('sees a cancel requested since it last wrote the row: the end acknowledges it', async () => {
    const { runId, report } = await claimedRun();
    assert.equal((await report('started')).body?.ok, true);
    // Asked of this process, whose kept row does not know of it. The daemon ends the run before it
    // acknowledges the command: the end is the acknowledgement.
    await h.ok('runs/cancel', { run_id: runId, reason: 'enough' });
    await commandOf('runs/cancel', runId, false);
    const taken = watchHeld();
    const r = await report('cancelled');
    assert.equal(r.body?.ok, true, JSON.stringify(r.body));
    if (postgres()) assert.ok(taken[0], 'the report was tried from the row as written first');
    const types = await historyOf(runId);
    assert.deepEqual(types.slice(-3), ['run.cancel_requested', 'run.cancel_acknowledged', 'run.ended']);
    const run = (await loadRun(h.running.hub.db, runId))!;
    assert.equal(run.state, 'cancelled');
    assert.equal(run.control_tx_id, null, 'the cancel is no longer pending');
    assert.equal(run.pending_control, null);
  });

  it('a cancel acknowledged while the run ends is acknowledged once', async () => {
    for (let i = 0; i < 5; i++) {
      const { runId, report } = await claimedRun();
      assert.equal((await report('started')).body?.ok, true);
      await h.ok('runs/cancel', { run_id: runId, reason: 'enough' });
      const command = await commandOf('runs/cancel', runId, false);
      // The daemon's ack of the command and its report of the end race each other.
      const [, ended] = await Promise.all([
        onCommandAck(h.running.hub, command.tx_id, 'ok'),
        report('cancelled'),
      ]);
      assert.equal(ended.body?.ok, true, JSON.stringify(ended.body));
      assert.equal((await loadRun(h.running.hub.db, runId))?.control_tx_id, null);
      const acknowledged = (await historyOf(runId)).filter((t) => t === 'run.cancel_acknowledged');
      assert.equal(acknowledged.length, 1, `run ${i}: ${acknowledged.length} acknowledgements`);
    }
  });

  it('refuses a report that the run, moved since by another hand, refuses, with its true state', async () => {
    const { runId, report } = await claimedRun();
    assert.equal((await report('started')).body?.ok, true);
    // The lease lost, as the sweeper of any hub process would find it.
    await h.running.hub.db
      .updateTable('runs')
      .set({ state: 'lost', state_lost_at: Date.now() })
      .where('run_id', '=', runId)
      .execute();
    const r = await report('phase.started', { phase: 'only' });
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.equal(r.body?.code, 'conflict');
    assert.equal(r.body?.details?.state, 'lost', 'the state the run is in, not the one kept');
    assert.ok(!(await historyOf(runId)).includes('phase.started'), 'nothing of the report was written');
  });

  it('answers a repeated start from the row, not from what it kept', async () => {
    const { runId, report } = await claimedRun();
    assert.equal((await report('started')).body?.ok, true);
    await h.ok('runs/cancel', { run_id: runId, reason: 'enough' });
    await commandOf('runs/cancel', runId, false);
    // A retried `started` writes nothing: it is answered from a read.
    const again = await report('started');
    assert.equal(again.body?.ok, true, JSON.stringify(again.body));
    assert.equal(again.body?.data?.state, 'running');
    const run = (await loadRun(h.running.hub.db, runId))!;
    assert.notEqual(run.control_tx_id, null, 'the cancel is still pending');
    assert.equal((await report('cancelled')).body?.ok, true);
  });
});
