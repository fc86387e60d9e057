import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { daemonDatabaseForSuite, executeBody } from '../../../test/helpers/daemon-db.js';
import {
  clearReviewWait,
  forgetActiveRun,
  leaseEpochOf,
  listActiveRuns,
  notePhase,
  noteReviewWait,
  removeActiveRun,
  saveActiveRun,
} from './active-runs.repo.js';

describe('the active runs of a daemon', () => {
  const database = daemonDatabaseForSuite();
  const rowOf = async (runId: string) =>
    (await listActiveRuns(database.db())).find((r) => r.run_id === runId);

  it('notes an executed run with its body, and a newer epoch replaces it', async () => {
    const db = database.db();
    await saveActiveRun(db, executeBody('r1', 1), 100);
    await noteReviewWait(db, 'r1', 1, 'rv1', { outputs: {}, phase_outputs: {}, round: 1 });
    await saveActiveRun(db, executeBody('r1', 2), 200);
    const row = await rowOf('r1');
    assert.equal(row?.lease_epoch, 2);
    assert.equal(row?.started_at, 100);
    assert.equal(row?.phase, 'build');
    assert.equal(row?.review_id, null);
    assert.deepEqual(JSON.parse(row!.body!), executeBody('r1', 2));
    assert.equal(await leaseEpochOf(db, 'r1'), 2);
    assert.equal(await leaseEpochOf(db, 'nope'), null);
  });

  it('stores the body without its secrets: they stay in memory only', async () => {
    const db = database.db();
    const body = { ...executeBody('rs', 1), secrets: { API_KEY: 'never-on-disk-8d1f' } };
    await saveActiveRun(db, body, 100);
    const row = await rowOf('rs');
    assert.ok(!row!.body!.includes('never-on-disk-8d1f'));
    assert.deepEqual(JSON.parse(row!.body!), executeBody('rs', 1));
  });

  it('notes and clears a review wait only under the run’s epoch', async () => {
    const db = database.db();
    await saveActiveRun(db, executeBody('r2', 5), 100);
    const state = { outputs: { plan: { a: 1 } }, phase_outputs: { summary: 's' }, round: null };
    await noteReviewWait(db, 'r2', 4, 'stale', state);
    assert.equal((await rowOf('r2'))?.review_state, null);
    await noteReviewWait(db, 'r2', 5, null, state);
    assert.equal(
      (await rowOf('r2'))?.review_state,
      '{"outputs":{"plan":{"a":1}},"phase_outputs":{"summary":"s"},"round":null}',
    );
    await noteReviewWait(db, 'r2', 5, 'rv9', { ...state, round: 2 });
    assert.equal((await rowOf('r2'))?.review_id, 'rv9');
    await clearReviewWait(db, 'r2', 4);
    assert.equal((await rowOf('r2'))?.review_id, 'rv9');
    await clearReviewWait(db, 'r2', 5);
    const row = await rowOf('r2');
    assert.equal(row?.review_id, null);
    assert.equal(row?.review_state, null);
  });

  it('notes the phase a run is at', async () => {
    await saveActiveRun(database.db(), executeBody('r3', 1), 100);
    await notePhase(database.db(), 'r3', 'ship');
    assert.equal((await rowOf('r3'))?.phase, 'ship');
  });

  it('removes a run that ended under its epoch, not one executed again under a newer one', async () => {
    const db = database.db();
    await saveActiveRun(db, executeBody('r4', 2), 100);
    await removeActiveRun(db, 'r4', 1);
    assert.ok(await rowOf('r4'));
    await removeActiveRun(db, 'r4', 2);
    assert.equal(await rowOf('r4'), undefined);
    await saveActiveRun(db, executeBody('r5', 7), 100);
    await forgetActiveRun(db, 'r5');
    assert.equal(await rowOf('r5'), undefined);
  });
});
