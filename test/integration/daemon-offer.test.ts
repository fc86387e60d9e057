import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { mintToken } from '../../src/shared/tokens.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { offerItem } from '../helpers/offers.js';
import { buildWorld, type World } from '../helpers/world.js';
import { call, daemonHome, refusingUrl, startTestDaemon, whenConnected } from './daemon-harness.js';

describe('offer_job without a usable hub', () => {
  const homes = [daemonHome(), daemonHome()];
  let bare: RunningDaemon;
  let unreachable: RunningDaemon;
  let deadHub: Awaited<ReturnType<typeof refusingUrl>>;
  before(async () => {
    bare = await startTestDaemon(homes[0]!.dir);
    deadHub = await refusingUrl();
    unreachable = await startTestDaemon(homes[1]!.dir, {
      config: { hubUrls: [deadHub.url], realmToken: mintToken('daemon') },
    });
  });
  after(async () => {
    await bare.close();
    await unreachable.close();
    await deadHub.close();
    for (const h of homes) h.cleanup();
  });

  it('answers DAEMON_ID_UNKNOWN when no daemon_id is sent and the daemon has none', async () => {
    for (const d of [bare, unreachable]) {
      const r = await call(d.url, 'offer_job', {
        queue_item_id: 'q1',
        kind: 'run',
        payload: { team_id: 't' },
      });
      assert.equal(r.status, 503);
      assert.equal(r.body.ok, false);
      assert.equal(r.body.error.code, 'DAEMON_ID_UNKNOWN');
    }
  });

  it('answers HUB_CREDENTIALS_MISSING when the daemon has no hub and realm token', async () => {
    const r = await call(bare.url, 'offer_job', { queue_item_id: 'q1', daemon_id: 'd1', extra: true });
    assert.equal(r.status, 503);
    assert.equal(r.body.error.code, 'HUB_CREDENTIALS_MISSING');
  });

  it('answers INTERNAL_ERROR when the hub cannot be reached', async () => {
    const r = await call(unreachable.url, 'offer_job', { queue_item_id: 'q1', daemon_id: 'd1' });
    assert.equal(r.status, 500);
    assert.equal(r.body.error.code, 'INTERNAL_ERROR');
    assert.equal(r.body.error.details, undefined);
  });
});

describe('offer_job against a real hub', () => {
  let h: TestHub;
  let w: World;
  const homes = [daemonHome(), daemonHome()];
  let a: RunningDaemon;
  let b: RunningDaemon;
  let bId: string;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    const second = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'second' });
    bId = second.data.daemon_id;
    a = await startTestDaemon(homes[0]!.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
    });
    b = await startTestDaemon(homes[1]!.dir, { config: { hubUrls: [h.url], realmToken: second.data.token } });
    await Promise.all([whenConnected(a), whenConnected(b)]);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await h.close();
    for (const x of homes) x.cleanup();
  });

  it('claims an item with its own id by default; the first claim wins, the other gets claimed: false', async () => {
    // No daemon is offered this item: both are told about it over HTTP only.
    const hub = h.running.hub;
    const item = await hub.db
      .insertInto('queue_items')
      .values({
        id: hub.newId(),
        realm_id: w.realmId,
        kind: 'run',
        payload: '{}',
        status: 'offered',
        claimed_by: null,
        claimed_at: null,
        created_at: hub.now(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const won = await call(a.url, 'offer_job', {
      queue_item_id: item.id,
      kind: 'run',
      payload: { team_id: 'x' },
    });
    assert.equal(won.status, 200);
    assert.deepEqual(won.body, { ok: true, data: { claimed: true, daemon_id: w.daemonId } });
    const lost = await call(b.url, 'offer_job', { queue_item_id: item.id });
    assert.equal(lost.status, 200);
    assert.deepEqual(lost.body, { ok: true, data: { claimed: false, daemon_id: bId } });
    const retried = await call(a.url, 'offer_job', { queue_item_id: item.id, daemon_id: w.daemonId });
    assert.equal(retried.body.data.claimed, true);
  });

  it('answers CLAIM_FAILED when the hub refuses the claim', async () => {
    const unknown = await call(a.url, 'offer_job', { queue_item_id: 'no-such-item' });
    assert.equal(unknown.status, 502);
    assert.equal(unknown.body.error.code, 'CLAIM_FAILED');
    assert.equal(unknown.body.error.details.hub_code, 'not_found');
    const { queue_item_id } = await offerItem(h.running.hub, w.otherRealmId, {});
    const otherRealm = await call(a.url, 'offer_job', { queue_item_id });
    assert.equal(otherRealm.body.error.code, 'CLAIM_FAILED');
    const forSomeoneElse = await call(a.url, 'offer_job', { queue_item_id, daemon_id: bId });
    assert.equal(forSomeoneElse.status, 502);
    assert.equal(forSomeoneElse.body.error.details.hub_code, 'forbidden');
  });

  it('answers a repeated tx_id with the first claim reply without claiming again', async () => {
    const first = await call(a.url, 'offer_job', { queue_item_id: 'no-such-item', tx_id: 'offer-tx-1' });
    assert.equal(first.body.error.code, 'CLAIM_FAILED');
    const again = await call(a.url, 'offer_job', { queue_item_id: 'no-such-item', tx_id: 'offer-tx-1' });
    assert.deepEqual(again, first);
  });
});
