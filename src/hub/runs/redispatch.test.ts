import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, afterEach, before, describe, it } from 'node:test';
import { TEST_DB } from '../../../test/helpers/db.js';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { allowOrgTeams, hubWithTeam, registerAgent, registerTeam } from '../../../test/helpers/runs.js';
import { connectDaemon, type TunnelClient } from '../../../test/helpers/tunnel-client.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import type { RunningHub } from '../server.js';
import type { OfferJobBody } from './dispatch.service.js';
import { redispatchRuns } from './redispatch.service.js';

describe('re-dispatch: runs that dispatch left waiting go back to it', () => {
  const OFFER_TIMEOUT_MS = 2_000;
  let h: TestHub;
  let w: World;
  let n = 0;
  const clients: TunnelClient[] = [];
  const hub = () => h.running.hub;
  before(async () => {
    ({ h, w } = await hubWithTeam('solo', {
      config: { offerTimeoutMs: OFFER_TIMEOUT_MS, runRedispatchMs: 50 },
    }));
    await h.ok('settings/set', { key: 'runs.lease_ms', value: '300' });
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) {
      if (c.ws.readyState !== c.ws.OPEN) continue;
      const offline = once(hub().tunnel.events, 'disconnected');
      await c.close();
      await offline;
    }
  });
  after(() => h.close());

  /** A realm of its own, with one daemon connected (a fake: the test answers its commands). */
  async function realmWithDaemon() {
    const realm = await h.ok('realms/new', { org_id: w.orgId, name: `r${++n}` });
    const dt = await h.ok('realms/create_daemon_token', { realm_id: realm.data.id, name: `d${n}` });
    await allowOrgTeams(h, w.orgId);
    const c = await connectDaemon(h.url, dt.data.token);
    clients.push(c);
    return {
      realmId: realm.data.id as string,
      daemonId: dt.data.daemon_id as string,
      token: dt.data.token,
      c,
    };
  }
  /** The next command must be `path`; it is acked and its body returned. */
  async function command<T>(c: TunnelClient, path: string): Promise<T> {
    const f = await c.next('command', 15_000);
    assert.equal(f.path, path, JSON.stringify(f));
    c.ack(f.tx_id);
    return f.body as T;
  }
  const claim = (queue_item_id: string, daemon_id: string, token: string) =>
    h.call('queue/claim', { queue_item_id, daemon_id }, token);
  const history = async (runId: string) =>
    (await h.ok('runs/get_by_id', { run_id: runId, with_history: true })).data.history as {
      type: string;
      error: string | null;
    }[];
  const item = (id: string) =>
    hub().db.selectFrom('queue_items').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('offers again a run nobody claimed, and a claimed run never started (new epoch: the late start is refused)', async () => {
    const { realmId, daemonId, token, c } = await realmWithDaemon();
    const runId = (await h.ok('runs/new', { realm_id: realmId, team: 'solo' })).data.run_id;
    const first = await command<OfferJobBody>(c, 'offer_job');
    // Nobody claims: after the offer timeout the run is offered afresh.
    const second = await command<OfferJobBody>(c, 'offer_job');
    assert.notEqual(second.queue_item_id, first.queue_item_id);
    assert.equal((await item(first.queue_item_id)).status, 'withdrawn');
    assert.equal((await claim(first.queue_item_id, daemonId, token)).body.data.claimed, false);
    const won = await claim(second.queue_item_id, daemonId, token);
    assert.equal(won.body.data.claimed, true);
    const epoch: number = won.body.data.run.lease_epoch;
    const exec = await command<{ run_id: string; lease_epoch: number }>(c, 'runs/execute');
    assert.deepEqual([exec.run_id, exec.lease_epoch], [runId, epoch]);
    // The daemon never reports `started`; its lease (300 ms) runs out and the run is offered again.
    const third = await command<OfferJobBody>(c, 'offer_job');
    assert.notEqual(third.queue_item_id, second.queue_item_id);
    const run = (await h.ok('runs/get_by_id', { run_id: runId })).data;
    assert.equal(run.state, 'offered');
    assert.equal(run.daemon_id, null, 'the claimer that never started it holds it no more');
    const late = await h.call('runs/report', { run_id: runId, lease_epoch: epoch, event: 'started' }, token);
    assert.equal(late.status, 409, JSON.stringify(late.body));
    assert.equal((await claim(second.queue_item_id, daemonId, token)).body.data.claimed, false);
    const requeued = (await history(runId)).filter((e) => e.type === 'run.queued' && e.error !== null);
    // (A slow machine may already have re-offered the third offer too.)
    assert.ok(requeued.length >= 2, JSON.stringify(requeued));
    assert.match(requeued[0]!.error!, /no daemon claimed the offer/);
    assert.match(requeued[1]!.error!, /did not start it before its lease expired/);
  });

  it('hands a claimed item to its claimer when the claim stopped halfway, or offers it again if the claimer left', async () => {
    const { realmId, daemonId, token, c } = await realmWithDaemon();
    const gone = await h.ok('realms/create_daemon_token', { realm_id: realmId, name: `gone${n}` });
    await allowOrgTeams(h, w.orgId);
    // As if the hub process answering queue/claim died between the item's claim and the run's.
    const halfClaim = async (claimer: string) => {
      const runId = (await h.ok('runs/new', { realm_id: realmId, team: 'solo' })).data.run_id;
      const offer = await command<OfferJobBody>(c, 'offer_job');
      await hub()
        .db.updateTable('queue_items')
        .set({ status: 'claimed', claimed_by: claimer, claimed_at: Date.now() - 10 * OFFER_TIMEOUT_MS })
        .where('id', '=', offer.queue_item_id)
        .execute();
      return { runId, offer };
    };
    const online = await halfClaim(daemonId);
    const exec = await command<{ run_id: string; lease_epoch: number }>(c, 'runs/execute');
    assert.equal(exec.run_id, online.runId);
    // The run is the claimer's: its start is accepted (and the run is no longer offered to anyone).
    const started = await h.call(
      'runs/report',
      { run_id: exec.run_id, lease_epoch: exec.lease_epoch, event: 'started' },
      token,
    );
    assert.equal(started.status, 200, JSON.stringify(started.body));
    assert.ok((await history(online.runId)).some((e) => e.type === 'run.claimed'));

    const offline = await halfClaim(gone.data.daemon_id);
    const again = await command<OfferJobBody>(c, 'offer_job');
    assert.equal(again.payload && (again.payload as { run_id: string }).run_id, offline.runId);
    assert.equal((await item(offline.offer.queue_item_id)).status, 'withdrawn');
  });

  it('dispatches a queued run that no dispatch picked up (safety net)', async () => {
    const { realmId, c } = await realmWithDaemon();
    const runId = (await h.ok('runs/new', { realm_id: realmId, team: 'solo' })).data.run_id;
    const offer = await command<OfferJobBody>(c, 'offer_job');
    // As if the process that queued it died before dispatching it.
    await hub()
      .db.updateTable('queue_items')
      .set({ status: 'withdrawn' })
      .where('id', '=', offer.queue_item_id)
      .execute();
    await hub()
      .db.updateTable('runs')
      .set({ state: 'queued', queue_item_id: null, updated_at: 0 })
      .where('run_id', '=', runId)
      .execute();
    const again = await command<OfferJobBody>(c, 'offer_job');
    assert.equal((again.payload as { run_id: string }).run_id, runId);
    assert.notEqual(again.queue_item_id, offer.queue_item_id);
  });
});

describe('re-dispatch with two hub processes passing at once', () => {
  let h: TestHub;
  let second: RunningHub | null = null;
  let w: World;
  before(async () => {
    // Timers effectively off: the test runs both passes itself, at the same moment.
    const config = { runRedispatchMs: 3_600_000, offerTimeoutMs: 1_000 };
    h = await startTestHub({ config });
    if (TEST_DB === 'postgres') {
      second = await h.startAnother({ config });
    }
    w = await buildWorld(h);
    await registerAgent(h, w.orgId, 'noop', 'noop.js');
    await registerTeam(h, w.orgId, 'solo', [{ name: 'only', agent: 'noop' }]);
  });
  after(async () => {
    await second?.close();
    await h?.close();
  });

  it('moves each waiting run back exactly once', async () => {
    const db = h.running.hub.db;
    const unclaimed: string[] = [];
    const unstarted: string[] = [];
    // No daemon is online in the realm: the runs stay queued, and the test puts them where a dead
    // process or daemon would have left them.
    for (let i = 0; i < 20; i++) {
      const runId: string = (await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' })).data.run_id;
      const itemId = h.running.hub.newId();
      const old = Date.now() - 60_000;
      await db
        .insertInto('queue_items')
        .values({
          id: itemId,
          realm_id: w.realmId,
          kind: 'run',
          payload: JSON.stringify({ run_id: runId }),
          status: i % 2 === 0 ? 'offered' : 'claimed',
          claimed_by: i % 2 === 0 ? null : w.daemonId,
          claimed_at: i % 2 === 0 ? null : old,
          created_at: old,
        })
        .execute();
      await db
        .updateTable('runs')
        .set(
          i % 2 === 0
            ? { state: 'offered', queue_item_id: itemId }
            : {
                state: 'assigned',
                queue_item_id: itemId,
                daemon_id: w.daemonId,
                lease_epoch: 1,
                lease_expires_at: old,
              },
        )
        .where('run_id', '=', runId)
        .execute();
      (i % 2 === 0 ? unclaimed : unstarted).push(runId);
    }
    const other = second?.hub ?? h.running.hub;
    const [a, b] = await Promise.all([redispatchRuns(h.running.hub), redispatchRuns(other)]);
    assert.equal(a.requeued + b.requeued, 20);
    const rows = await db
      .selectFrom('runs')
      .select(['run_id', 'state', 'daemon_id', 'lease_epoch'])
      .where('run_id', 'in', [...unclaimed, ...unstarted])
      .execute();
    for (const r of rows) {
      assert.equal(r.state, 'queued', r.run_id);
      assert.equal(r.daemon_id, null);
      assert.equal(r.lease_epoch, unstarted.includes(r.run_id) ? 2 : 0, r.run_id);
    }
    const moves = await db
      .selectFrom('run_history')
      .select('run_id')
      .where('run_id', 'in', [...unclaimed, ...unstarted])
      .where('type', '=', 'run.queued')
      .where('error', 'is not', null)
      .execute();
    assert.equal(moves.length, 20);
    assert.equal(new Set(moves.map((m) => m.run_id)).size, 20);
  });
});
