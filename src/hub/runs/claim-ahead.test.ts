import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { post, type TestHub } from '../../../test/helpers/hub.js';
import { historyTypes, hubWithTeam } from '../../../test/helpers/runs.js';
import { commandFor, onlineDaemon, type TunnelClient } from '../../../test/helpers/tunnel-client.js';
import type { World } from '../../../test/helpers/world.js';
import { isPostgres } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import type { Hub } from '../context.js';
import { executeBody } from './dispatch.service.js';
import { loadRun } from './runs.repo.js';
import { leaseMsOf } from './settings.js';

/**
 * On PostgreSQL the first claim of a run offered through a hub process is made ahead of its answer
 * (dispatch.service.ts `claimAhead`): the claim, the run's hand-over and its `runs/execute` leave in
 * one round trip, built from the run as offered. What must hold: the daemon gets what a claim decided
 * after reading the run would have sent it, and a claim made with a run that moved, or that lost, is
 * decided again as any claim, with nothing handed over twice. With two hub processes the offer's
 * notice carries the run to the process that passes it on.
 */
describe('claims made ahead of their answer', () => {
  let h: TestHub;
  let w: World;
  let other: { hub: Hub; url: string; close(): Promise<void> } | undefined;
  const postgres = () => isPostgres(h.running.hub.db);
  before(async () => {
    // No re-dispatch pass: every offer here comes from the path under test.
    ({ h, w } = await hubWithTeam('solo', { config: { runRedispatchMs: 3_600_000 } }));
  });
  after(async () => {
    await other?.close();
    await h.close();
  });

  /** Records what `takeOffered` gave each claim of this process: a run means the claim was made ahead. */
  function watchTaken(hub: Hub): (RunsTable | undefined)[] {
    const taken: (RunsTable | undefined)[] = [];
    const take = hub.claims.takeOffered.bind(hub.claims);
    hub.claims.takeOffered = (itemId) => {
      const run = take(itemId);
      taken.push(run);
      return run;
    };
    return taken;
  }

  const connected = (hub: Hub, url: string) => onlineDaemon(hub, url, w.tokens.realm_token!);

  /** A new run, and the item of the offer `client` got for it. */
  async function offered(client: TunnelClient): Promise<{ runId: string; itemId: string }> {
    const runId: string = (await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' })).data.run_id;
    const offer = await commandOf(client, 'offer_job', runId);
    return { runId, itemId: (offer.body as { queue_item_id: string }).queue_item_id };
  }

  /** The next command at `path` for the run (acked, as the daemon would), past the others. */
  const commandOf = (client: TunnelClient, path: string, runId: string) => commandFor(client, path, runId);

  const claim = (url: string, itemId: string) =>
    post(`${url}/v1/queue/claim`, { queue_item_id: itemId, daemon_id: w.daemonId }, w.tokens.realm_token);

  const historyOf = (runId: string) => historyTypes(h.running.hub, runId);

  async function executeCommands(runId: string): Promise<{ body: string }[]> {
    const rows = await h.running.hub.db
      .selectFrom('command_outbox')
      .select(['body'])
      .where('path', '=', 'runs/execute')
      .execute();
    return rows.filter((r) => (JSON.parse(r.body) as { run_id: string }).run_id === runId);
  }

  /** The `runs/execute` body a claim decided after reading the run sends, for the run as it is now. */
  async function bodyAfterReading(hub: Hub, runId: string): Promise<unknown> {
    const run = await loadRun(hub.db, runId);
    return executeBody(hub.db, hub, run!, await leaseMsOf(hub));
  }

  /**
   * The daemon got `runs/execute` for the run as a claim after reading it would send it, and the run
   * was handed over once: one `run.claimed` entry, one command. Answers the command's body.
   */
  async function handedOverOnce(hub: Hub, client: TunnelClient, runId: string) {
    const execute = await commandOf(client, 'runs/execute', runId);
    const { tx_id: _, ...body } = execute.body as { tx_id: string; lease_epoch: number };
    assert.deepEqual(body, await bodyAfterReading(hub, runId));
    assert.deepEqual(await historyOf(runId), ['run.queued', 'run.offered', 'run.claimed']);
    assert.equal((await executeCommands(runId)).length, 1);
    return body;
  }

  it('hands the run over with the runs/execute a claim after reading the run sends', async () => {
    const hub = h.running.hub;
    const taken = watchTaken(hub);
    const client = await connected(hub, h.url);
    try {
      const { runId, itemId } = await offered(client);
      const won = await claim(h.url, itemId);
      assert.equal(won.status, 200);
      assert.deepEqual(won.body.data, {
        claimed: true,
        queue_item_id: itemId,
        run: { run_id: runId, lease_epoch: 1 },
      });
      await handedOverOnce(hub, client, runId);
      // Made ahead on PostgreSQL, with the run as offered; SQLite has no round trip to spare.
      assert.equal(taken.length, postgres() ? 1 : 0);
      if (postgres()) assert.equal(taken[0]?.run_id, runId);
    } finally {
      await client.close();
    }
  });

  it('decides a claim again when the run it was made with moved meanwhile', async () => {
    const hub = h.running.hub;
    const taken = watchTaken(hub);
    const client = await connected(hub, h.url);
    try {
      const { runId, itemId } = await offered(client);
      // The run is still offered with this item, but not at the epoch this process saw it offered at.
      await hub.db
        .updateTable('runs')
        .set((eb) => ({ lease_epoch: eb('lease_epoch', '+', 1) }))
        .where('run_id', '=', runId)
        .execute();
      const won = await claim(h.url, itemId);
      assert.deepEqual(won.body.data.run, { run_id: runId, lease_epoch: 2 });
      assert.equal((await handedOverOnce(hub, client, runId)).lease_epoch, 2);
      if (postgres()) assert.equal(taken[0]?.lease_epoch, 0, 'the claim was made ahead with the old epoch');
    } finally {
      await client.close();
    }
  });

  it('answers a claim made ahead that lost as lost, and hands nothing over', async () => {
    const hub = h.running.hub;
    const taken = watchTaken(hub);
    const rival = (await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'rival' })).data;
    const client = await connected(hub, h.url);
    try {
      const { runId, itemId } = await offered(client);
      // Another hub process's daemon won the item meanwhile.
      await hub.db
        .updateTable('queue_items')
        .set({ status: 'claimed', claimed_by: rival.daemon_id, claimed_at: Date.now() })
        .where('id', '=', itemId)
        .execute();
      const lost = await claim(h.url, itemId);
      assert.equal(lost.status, 200);
      assert.deepEqual(lost.body.data, { claimed: false, queue_item_id: itemId });
      assert.deepEqual(await historyOf(runId), ['run.queued', 'run.offered']);
      assert.deepEqual(await executeCommands(runId), []);
      const run = await loadRun(hub.db, runId);
      assert.equal(run?.state, 'offered');
      assert.equal(run?.lease_epoch, 0);
      if (postgres()) assert.equal(taken[0]?.run_id, runId);
    } finally {
      await client.close();
    }
  });

  /** A run started through the first process and offered through `other`, claimed there, handed over once. */
  async function claimedThroughOther(inputs: Record<string, unknown>) {
    if (!other) other = await h.startAnother({ config: { runRedispatchMs: 3_600_000 } });
    const hub = other.hub;
    const taken = watchTaken(hub);
    const carried: string[] = [];
    const offered = hub.claims.offered.bind(hub.claims);
    hub.claims.offered = (run) => {
      carried.push(run.run_id);
      offered(run);
    };
    const client = await connected(hub, other.url);
    try {
      const runId: string = (await h.ok('runs/new', { realm_id: w.realmId, team: 'solo', inputs })).data
        .run_id;
      const offer = await commandOf(client, 'offer_job', runId);
      const itemId = (offer.body as { queue_item_id: string }).queue_item_id;
      const won = await claim(other.url, itemId);
      assert.deepEqual(won.body.data.run, { run_id: runId, lease_epoch: 1 });
      await handedOverOnce(hub, client, runId);
      return { carried: carried.includes(runId), ahead: taken[0]?.run_id === runId };
    } finally {
      hub.claims.offered = offered;
      await client.close();
    }
  }

  it('passes on an offer another process wrote with the run its notice carried, and the claim holds', async (t) => {
    if (!postgres()) return t.skip('one hub process on SQLite');
    const { carried } = await claimedThroughOther({ n: 1 });
    assert.equal(carried, true, "the offer's notice carried its run");
  });

  it('claims as any other an offer whose notice had no room for its run', async (t) => {
    if (!postgres()) return t.skip('one hub process on SQLite');
    const { carried, ahead } = await claimedThroughOther({ text: 'x'.repeat(8_000) });
    assert.equal(carried, false, 'the run was too large for the notice');
    assert.equal(ahead, false);
  });
});
