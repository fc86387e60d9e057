import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { daemonDatabaseForSuite, executeBody } from '../../../test/helpers/daemon-db.js';
import { fakeHubApi } from '../../../test/helpers/fake-hub-api.js';
import { createLogger } from '../../shared/logger.js';
import { enqueueHugMessage } from '../hug/hug.repo.js';
import { HugInbox } from '../hug/inbox.js';
import { ActiveRun } from './active-run.js';
import { listActiveRuns, saveActiveRun } from './active-runs.repo.js';
import { RunHubCaller } from './hub-caller.js';
import { awaitVerdict, requestReview } from './review-wait.js';

const log = createLogger('test', 'silent');

describe('a run waiting for a review verdict', () => {
  const database = daemonDatabaseForSuite();

  /**
   * A run with a hub that takes logs and answers `reviews/request` with review `rv_<run>`, after
   * queueing `verdict` for it when one is given (a verdict can arrive before the answer).
   */
  function waiting(runId: string, verdict?: Record<string, unknown>) {
    const hub = fakeHubApi(async (op) => {
      if (op !== 'reviews/request') return {};
      if (verdict) await deliver(`rv_${runId}`, 'verdict', verdict);
      return { id: `rv_${runId}`, round: 1 };
    });
    const caller = new RunHubCaller({ hub, closing: () => false });
    const inbox = new HugInbox();
    const run = new ActiveRun(runId, 4, 30_000, 10, { caller, log, now: () => 42 });
    const deps = { db: database.db(), caller, inbox, closing: () => false };
    const deliver = async (
      reviewId: string,
      type: string,
      payload: Record<string, unknown>,
      fromHub = true,
    ) => {
      await enqueueHugMessage(database.db(), reviewId, { type, role: 'reviewer', payload }, 1, fromHub);
      inbox.notify(reviewId);
    };
    const lines = async () => {
      await run.logs.flush();
      return hub
        .callsOf('runs/append_logs')
        .flatMap((b) => (b.lines as { text: string }[]).map((l) => l.text));
    };
    return { hub, run, deps, deliver, lines };
  }

  it('acts only on the hub’s messages: a local verdict is noted and ignored, comments are logged', async () => {
    const w = waiting('r1');
    await w.deliver('rv_a', 'verdict', { action: 'approve', run_continues: true }, false);
    await w.deliver('rv_a', 'comment', { actor: 'ann', comment: 'looks close' });
    const verdict = awaitVerdict(w.deps, w.run, 'build', 'rv_a', 1, null);
    await w.deliver('rv_a', 'verdict', {
      action: 'request_changes',
      actor: 'ann',
      comment: 'add tests',
      round: 1,
      run_continues: true,
    });
    assert.deepEqual(await verdict, {
      action: 'request_changes',
      comment: 'add tests',
      actor: 'ann',
      review_id: 'rv_a',
      round: 1,
      run_continues: true,
    });
    assert.deepEqual(await w.lines(), [
      'ignored a review verdict that did not come from the hub',
      'review comment by ann: looks close',
      'review request_changes by ann: add tests',
    ]);
  });

  it('takes a verdict the run’s history has, once the queue is drained', async () => {
    const w = waiting('r2');
    await w.deliver('rv_b', 'comment', { comment: 'first' });
    const known = {
      action: 'approve' as const,
      comment: 'fine',
      actor: null,
      review_id: 'rv_b',
      round: 2,
      run_continues: true,
    };
    assert.deepEqual(await awaitVerdict(w.deps, w.run, 'build', 'rv_b', 2, known), known);
    assert.deepEqual(await w.lines(), [
      'review comment: first',
      "review approve (read from the run's history): fine",
    ]);
  });

  it('ends the wait without a verdict when the run is cancelled', async () => {
    const w = waiting('r3');
    const verdict = awaitVerdict(w.deps, w.run, 'build', 'rv_c', 1, null);
    w.run.cancel(null);
    assert.equal(await verdict, null);
  });

  it('ends the wait without a verdict while the daemon is stopping', async () => {
    const w = waiting('r4');
    assert.equal(
      await awaitVerdict({ ...w.deps, closing: () => true }, w.run, 'build', 'rv_d', 1, null),
      null,
    );
  });

  it('asks the hub for a review with the phase’s summary and outputs, and notes the wait for a restart', async () => {
    const w = waiting('r5', { action: 'approve', run_continues: true });
    await saveActiveRun(database.db(), executeBody('r5', 4, { name: 'build', review: true }), 1);
    const verdict = await requestReview(w.deps, w.run, 'build', { plan: { a: 1 } }, { summary: 'built it' });
    assert.equal(verdict?.action, 'approve');
    assert.deepEqual(w.hub.callsOf('reviews/request'), [
      {
        run_id: 'r5',
        lease_epoch: 4,
        phase: 'build',
        summary: 'built it',
        kind: 'phase',
        outputs: { summary: 'built it' },
      },
    ]);
    const row = (await listActiveRuns(database.db())).find((x) => x.run_id === 'r5');
    assert.equal(row?.review_id, 'rv_r5');
    assert.deepEqual(JSON.parse(row!.review_state!), {
      outputs: { plan: { a: 1 } },
      phase_outputs: { summary: 'built it' },
      round: 1,
    });
    assert.deepEqual(await w.lines(), [
      'waiting for a review of phase build (review rv_r5, round 1)',
      'review approve',
    ]);
  });
});
