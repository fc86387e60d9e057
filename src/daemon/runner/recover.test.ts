import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { daemonDatabaseForSuite, executeBody } from '../../../test/helpers/daemon-db.js';
import { fakeHubApi } from '../../../test/helpers/fake-hub-api.js';
import { createLogger } from '../../shared/logger.js';
import type { ExecuteRunBody } from '../../shared/protocol.js';
import { HubRefusedError, HubUnreachableError } from '../hub-api.js';
import { forgetActiveRun, listActiveRuns, noteReviewWait, saveActiveRun } from './active-runs.repo.js';
import { RunHubCaller } from './hub-caller.js';
import { recoverRuns } from './recover.js';
import type { ReviewWait } from './review-wait.js';

const log = createLogger('test', 'silent');
const INTERRUPTED = 'the daemon restarted while the run was running; its agent process was stopped';

describe('runs a previous process of the daemon left', () => {
  const database = daemonDatabaseForSuite();

  /** Recovers with a hub that answers each run by `answer`; answers what was reported and launched. */
  async function recover(
    answer: (op: string, runId: string) => unknown,
    opts: { running?: string[]; closing?: boolean } = {},
  ) {
    const hub = fakeHubApi((op, body) => answer(op, body.run_id as string));
    const launched: { body: ExecuteRunBody; resume: ReviewWait }[] = [];
    const reported = await recoverRuns({
      db: database.db(),
      caller: new RunHubCaller({ hub, closing: () => false }),
      log,
      closing: () => opts.closing ?? false,
      isRunning: (runId) => (opts.running ?? []).includes(runId),
      launch: (body, resume) => launched.push({ body, resume }),
    });
    const rows = (await listActiveRuns(database.db())).map((r) => r.run_id).sort();
    return { reported, reports: hub.callsOf('runs/report'), launched, rows };
  }

  const clear = async () => {
    for (const row of await listActiveRuns(database.db())) await forgetActiveRun(database.db(), row.run_id);
  };

  it('reports each failed at its phase and forgets it, but for a run executing here', async () => {
    await clear();
    await saveActiveRun(database.db(), executeBody('r1', 2), 1);
    await saveActiveRun(database.db(), { ...executeBody('r2', 1), start_phase: null }, 1);
    await saveActiveRun(database.db(), executeBody('r3', 1), 1);
    const r = await recover(() => ({}), { running: ['r3'] });
    assert.equal(r.reported, 2);
    assert.deepEqual(r.reports, [
      { run_id: 'r1', lease_epoch: 2, event: 'failed', phase: 'build', error: INTERRUPTED },
      // A run that starts at its beginning is noted at its first phase.
      { run_id: 'r2', lease_epoch: 1, event: 'failed', phase: 'build', error: INTERRUPTED },
    ]);
    assert.deepEqual(r.rows, ['r3']);
  });

  it('forgets a run whose report the hub refused, keeps one it could not reach the hub for', async () => {
    await clear();
    await saveActiveRun(database.db(), executeBody('stale', 1), 1);
    await saveActiveRun(database.db(), executeBody('later', 1), 1);
    const r = await recover((_op, runId) => {
      if (runId === 'stale') throw new HubRefusedError(409, 'conflict', 'stale');
      throw new HubUnreachableError('hub unreachable');
    });
    assert.equal(r.reported, 0);
    assert.deepEqual(r.rows, ['later']);
  });

  it('waits again for the review a run waited for, while the hub still runs it', async () => {
    await clear();
    await saveActiveRun(database.db(), executeBody('rv', 4, { name: 'build', review: true }), 1);
    const state = { outputs: { plan: { a: 1 } }, phase_outputs: { summary: 's' }, round: 2 };
    await noteReviewWait(database.db(), 'rv', 4, 'rv_1', state);
    const r = await recover((op) =>
      op === 'runs/get_by_id' ? { state: 'awaiting_input', history: [] } : {},
    );
    assert.equal(r.reported, 0);
    assert.deepEqual(r.reports, []);
    assert.deepEqual(r.rows, ['rv']);
    assert.equal(r.launched.length, 1);
    assert.equal(r.launched[0]!.body.run_id, 'rv');
    assert.deepEqual(r.launched[0]!.resume, {
      phase: 'build',
      reviewId: 'rv_1',
      round: 2,
      known: null,
      outputs: { plan: { a: 1 } },
      phaseOutputs: { summary: 's' },
    });
  });

  it('fails a run that waited for a review when its agents need secrets (kept in memory only), saying so', async () => {
    await clear();
    const body = executeBody('rs', 3, { name: 'build', review: true, agent_id: 'a1' });
    body.agents = {
      a1: {
        name: 'a',
        version: '1',
        agent_type: 'exec',
        command: ['true'],
        env: {},
        timeout_ms: 1000,
        secrets: ['K'],
      },
    };
    await saveActiveRun(database.db(), body, 1);
    await noteReviewWait(database.db(), 'rs', 3, 'rv_1', { outputs: {}, phase_outputs: {}, round: 1 });
    const r = await recover((op) =>
      op === 'runs/get_by_id' ? { state: 'awaiting_input', history: [] } : {},
    );
    assert.deepEqual(r.launched, []);
    assert.equal(r.reports.length, 1);
    assert.match(String(r.reports[0]!.error), /secrets are kept in memory only.*runs\/resume/);
    assert.deepEqual(r.rows, []);
  });

  it('reports a run that waited for a review failed when the hub ended it or does not know it', async () => {
    await clear();
    for (const id of ['ended', 'unknown']) {
      await saveActiveRun(database.db(), executeBody(id, 1), 1);
      await noteReviewWait(database.db(), id, 1, 'rv_1', { outputs: {}, phase_outputs: {}, round: 1 });
    }
    const r = await recover((op, runId) => {
      if (op !== 'runs/get_by_id') return {};
      if (runId === 'unknown') throw new HubRefusedError(404, 'not_found', 'no such run');
      return { state: 'failed', history: [] };
    });
    assert.equal(r.reported, 2);
    assert.deepEqual(r.launched, []);
    assert.deepEqual(r.rows, []);
  });

  it('keeps a run that waited for a review when the hub cannot be reached, and fails it when stopping', async () => {
    await clear();
    await saveActiveRun(database.db(), executeBody('rv', 1), 1);
    await noteReviewWait(database.db(), 'rv', 1, 'rv_1', { outputs: {}, phase_outputs: {}, round: 1 });
    const away = await recover(() => {
      throw new HubUnreachableError('hub unreachable');
    });
    assert.deepEqual([away.reported, away.rows, away.launched.length], [0, ['rv'], 0]);
    const stopping = await recover(() => ({}), { closing: true });
    assert.deepEqual(
      stopping.reports.map((b) => b.event),
      ['failed'],
    );
    assert.deepEqual(stopping.rows, []);
  });
});
