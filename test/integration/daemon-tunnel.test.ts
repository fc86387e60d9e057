import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { route } from '../../src/daemon/router.js';
import { daemonRoutes } from '../../src/daemon/routes.js';
import { sendCommand } from '../../src/hub/daemons/commands.js';
import type { CommandResult } from '../../src/hub/ports.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { offerItem } from '../helpers/offers.js';
import { until } from '../helpers/until.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, freePort, refusingUrl, startTestDaemon, whenConnected } from './daemon-harness.js';

const message = (n: number) => ({ type: 'comment', role: 'reviewer', payload: { comment: `c${n}` } });
const comments = (r: { reply: { ok: boolean; data?: unknown } }) =>
  ((r.reply as { data: { entries: { payload: { comment: string } }[] } }).data.entries ?? []).map(
    (e) => e.payload.comment,
  );

describe('daemon ↔ hub tunnel', () => {
  let h: TestHub;
  let w: World;
  let hubPort: number;
  const home = daemonHome();
  let d: RunningDaemon;
  // A route that waits until the test lets it finish: holds a command between receipt and ack.
  let gate: { entered: () => void; release: Promise<void> } | null = null;
  let gateRuns = 0;
  const gated = route({
    path: 'test/gated',
    summary: 'waits for the test',
    input: z.object({ n: z.number() }),
    transactional: false,
    async handler(_ctx, input) {
      gateRuns++;
      if (gate) {
        gate.entered();
        await gate.release;
      }
      return { n: input.n };
    },
  });
  // Offers that wait for the test before they claim (offersHeld), or go on as the daemon's own do.
  let offersHeld: Promise<void> | null = null;
  let offersWaiting = 0;
  const realOffer = daemonRoutes.find((r) => r.path === 'offer_job')!;
  const heldOffer = route({
    ...realOffer,
    async handler(ctx, input) {
      if (offersHeld) {
        offersWaiting++;
        await offersHeld;
      }
      return realOffer.handler(ctx, input);
    },
  });
  const start = async (urls?: string[]) =>
    startTestDaemon(home.dir, {
      routes: [...daemonRoutes.filter((r) => r !== realOffer), heldOffer, gated],
      access: { [gated.path]: { who: 'read' } },
      config: { hubUrls: urls ?? [h.url], realmToken: w.tokens.realm_token! },
    });

  before(async () => {
    // A fixed port, so the daemon finds the hub again after a restart.
    hubPort = await freePort();
    h = await startTestHub({ port: hubPort });
    w = await buildWorld(h);
  });
  after(async () => {
    await d?.close();
    await h.close();
    home.cleanup();
  });

  it('connects (failing over from a dead hub URL), gets its id and keeps it', async () => {
    const dead = await refusingUrl();
    try {
      d = await start([dead.url, h.url]);
      const [{ url: failedUrl }] = await once(d.link!, 'connect-failed');
      assert.equal(failedUrl, dead.url);
    } finally {
      await dead.close();
    }
    await whenConnected(d);
    assert.equal(d.link!.currentUrl, h.url);
    assert.equal(d.daemonId(), w.daemonId);
    assert.equal(d.connected(), true);
    assert.equal(d.identity.realmId, w.realmId);
    assert.ok(d.identity.acl?.some((e) => e.user_id === w.users.realm_member!.id));
    const stored = await d.db.selectFrom('state').select(['key', 'value']).execute();
    assert.equal(stored.find((s) => s.key === 'daemon_id')?.value, w.daemonId);
    assert.ok(stored.find((s) => s.key === 'dispatch_key'));
    const got = await h.ok('daemons/get', { id: w.daemonId });
    assert.equal(got.data.status, 'online');
  });

  it('runs hub commands through the router and acks them: ok, NOT_FOUND, PAYLOAD_INVALID', async () => {
    const hub = h.running.hub;
    const okTx = await sendCommand(hub, w.daemonId, 'hug/deliver', { review_id: 'rv1', message: message(1) });
    const ok = await hub.tunnel.waitForAck(okTx);
    assert.equal(ok.status, 'ok');
    assert.deepEqual(ok.reply, { review_id: 'rv1', queued: true });
    assert.deepEqual(comments(await d.dispatch('hug/poll_verdict', { review_id: 'rv1' })), ['c1']);

    const unknown = await hub.tunnel.waitForAck(await sendCommand(hub, w.daemonId, 'runs/nope', {}));
    assert.equal(unknown.status, 'error');
    assert.equal(unknown.error?.code, 'NOT_FOUND');
    const invalid = await hub.tunnel.waitForAck(
      await sendCommand(hub, w.daemonId, 'hug/deliver', { review_id: '', message: {} }),
    );
    assert.equal(invalid.status, 'error');
    assert.equal(invalid.error?.code, 'PAYLOAD_INVALID');
    assert.ok(Array.isArray(invalid.error?.details));
  });

  it('does not run a redelivered tx_id twice', async () => {
    const hub = h.running.hub;
    const acked = once(d.link!, 'command-acked');
    const txId = await sendCommand(hub, w.daemonId, 'hug/deliver', { review_id: 'rv2', message: message(2) });
    await hub.tunnel.waitForAck(txId);
    assert.equal((await acked)[0].replayed, false);
    // As if the hub had lost the ack: the command is pending again and sent again.
    await hub.db
      .updateTable('command_outbox')
      .set({ status: 'pending', ack_status: null, reply: null, acked_at: null, last_sent_at: null })
      .where('tx_id', '=', txId)
      .execute();
    const replay = once(d.link!, 'command-acked');
    hub.tunnel.wake(w.daemonId);
    const [event] = await replay;
    assert.equal(event.tx_id, txId);
    assert.equal(event.replayed, true);
    assert.deepEqual(comments(await d.dispatch('hug/poll_verdict', { review_id: 'rv2' })), ['c2']);
  });

  it("reads its tx_id store for a command's first send only when this process has seen the tx_id", async () => {
    const hub = h.running.hub;
    const runs = gateRuns;
    const resend = (txId: string, n: number) =>
      hub.tunnel.sendNow(w.daemonId, [
        {
          tx_id: txId,
          path: 'test/gated',
          body: JSON.stringify({ n, tx_id: txId }),
          last_sent_at: hub.now(),
          stored: true,
        },
      ]);
    // A first send that arrives after a redelivery of the same command (the hub stalled between its
    // commit and the send): this process answered the tx_id already, and answers it again unrun.
    const txId = await sendCommand(hub, w.daemonId, 'test/gated', { n: 1 });
    await hub.tunnel.waitForAck(txId);
    assert.equal(gateRuns, runs + 1);
    const replay = once(d.link!, 'command-acked');
    resend(txId, 1);
    const [replayed] = await replay;
    assert.deepEqual([replayed.tx_id, replayed.replayed, gateRuns], [txId, true, runs + 1]);
    // A first send of a tx_id this process never saw is not looked up: a reply stored under it (which
    // no earlier daemon process can have stored for a first send) does not answer it.
    const unseen = 'first-send-of-an-unseen-tx-id';
    await d.db
      .insertInto('tx_replies')
      .values({ tx_id: unseen, path: 'test/gated', status: 'ok', reply: '{"n":0}', created_at: Date.now() })
      .execute();
    const ran = once(d.link!, 'command-acked');
    resend(unseen, 2);
    const [first] = await ran;
    assert.deepEqual([first.tx_id, first.replayed, gateRuns], [unseen, false, runs + 2]);
  });

  it('runs other commands while every offer slot waits on its claim', async () => {
    const hub = h.running.hub;
    let release!: () => void;
    offersHeld = new Promise<void>((r) => (release = r));
    offersWaiting = 0;
    // Offers leave without an outbox row: their acks are told as events, not recorded.
    const told = new Map<string, CommandResult>();
    let offers: string[] = [];
    let allTold!: () => void;
    const everyOfferTold = new Promise<void>((resolve) => (allTold = resolve));
    const onAck = (r: CommandResult) => {
      told.set(r.tx_id, r);
      if (offers.length > 0 && offers.every((tx) => told.has(tx))) allTold();
    };
    hub.tunnel.events.on('ack', onAck);
    try {
      // More offers than the daemon runs at once (8): all of its offer slots wait, and some offers queue.
      offers = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          sendCommand(hub, w.daemonId, 'offer_job', {
            queue_item_id: `held-${i}`,
            daemon_id: w.daemonId,
            kind: 'run',
            payload: {},
          }),
        ),
      );
      await until('every offer slot is taken', async () => offersWaiting === 8);
      // A command of another kind is run and acked meanwhile, not queued behind them.
      const txId = await sendCommand(hub, w.daemonId, 'hug/deliver', {
        review_id: 'rv-lane',
        message: message(9),
      });
      assert.equal((await hub.tunnel.waitForAck(txId)).status, 'ok');
      assert.equal(offersWaiting, 8);
      release();
      // The held offers then claim (items the hub does not know: refused) and are all acked.
      await everyOfferTold;
      assert.ok(offers.every((tx) => told.get(tx)!.daemon_id === w.daemonId));
      assert.equal(offersWaiting, 10);
    } finally {
      hub.tunnel.events.off('ack', onAck);
      offersHeld = null;
      release();
    }
  });

  it('gets commands sent while it was down once it is back, and their first replies after a hub restart', async () => {
    const hub = () => h.running.hub;
    await d.close();
    const queued = [];
    for (let i = 0; i < 3; i++) {
      queued.push(
        await sendCommand(hub(), w.daemonId, 'hug/deliver', { review_id: 'rv3', message: message(i) }),
      );
    }
    d = await start();
    const acks = await Promise.all(queued.map((tx) => hub().tunnel.waitForAck(tx)));
    assert.ok(acks.every((a) => a.status === 'ok'));
    assert.deepEqual(comments(await d.dispatch('hug/poll_verdict', { review_id: 'rv3' })), [
      'c0',
      'c1',
      'c2',
    ]);

    // A command is running on the daemon when the hub goes away: its ack is lost with the
    // connection. The restarted hub redelivers it and gets the stored first reply.
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    gate = { entered, release: new Promise<void>((r) => (release = r)) };
    const runsBefore = gateRuns;
    const txId = await sendCommand(hub(), w.daemonId, 'test/gated', { n: 7 });
    await inHandler;
    const down = once(d.link!, 'disconnected');
    await h.restart();
    await down;
    release();
    gate = null;
    const result = await hub().tunnel.waitForAck(txId);
    assert.equal(result.status, 'ok');
    assert.deepEqual(result.reply, { n: 7 });
    assert.equal(gateRuns, runsBefore + 1, 'the command ran once');
    await whenConnected(d);
    const row = await hub()
      .db.selectFrom('command_outbox')
      .selectAll()
      .where('tx_id', '=', txId)
      .executeTakeFirstOrThrow();
    assert.ok(row.attempts >= 2, 'it was sent again after the restart');
  });

  it('lets exactly one of 20 connected daemons claim each of 200 offered items', {
    timeout: 600_000,
  }, async () => {
    const hub = () => h.running.hub;
    const n = 20;
    const items = 200;
    const crowd: { d: RunningDaemon; id: string; home: ReturnType<typeof daemonHome> }[] = [];
    try {
      for (let i = 0; i < n; i++) {
        const t = await h.ok('realms/create_daemon_token', { realm_id: w.otherRealmId, name: `racer-${i}` });
        const x = daemonHome();
        const dd = await startTestDaemon(x.dir, { config: { hubUrls: [h.url], realmToken: t.data.token } });
        crowd.push({ d: dd, id: t.data.daemon_id, home: x });
      }
      await Promise.all(crowd.map((c) => whenConnected(c.d)));
      // Acks are collected from the hub's events (one listener, not 10,000 waiters).
      const acks = new Map<string, CommandResult>();
      let expected: Set<string> | null = null;
      let allAcked!: () => void;
      const done = new Promise<void>((resolve) => (allAcked = resolve));
      const check = () => {
        if (expected && [...expected].every((tx) => acks.has(tx))) allAcked();
      };
      const onAck = (r: CommandResult) => {
        acks.set(r.tx_id, r);
        if (expected && acks.size >= expected.size) check();
      };
      hub().tunnel.events.on('ack', onAck);
      const offers = [];
      try {
        for (let i = 0; i < items; i++)
          offers.push(await offerItem(hub(), w.otherRealmId, { team_id: `t${i}` }));
        assert.ok(offers.every((o) => o.offers.length === n));
        expected = new Set(offers.flatMap((o) => o.offers.map((x) => x.tx_id)));
        check();
        await done;
      } finally {
        hub().tunnel.events.off('ack', onAck);
      }
      const results = [...expected].map((tx) => acks.get(tx)!);
      assert.ok(
        results.every((r) => r.status === 'ok'),
        JSON.stringify(results.find((r) => r.status !== 'ok')),
      );
      const itemOf = new Map(offers.flatMap((o) => o.offers.map((x) => [x.tx_id, o.queue_item_id] as const)));
      const winners = new Map<string, string[]>();
      for (const o of offers) winners.set(o.queue_item_id, []);
      for (const r of results) {
        const reply = r.reply as { claimed: boolean; daemon_id: string };
        assert.equal(reply.daemon_id, r.daemon_id);
        if (!reply.claimed) continue;
        winners.get(itemOf.get(r.tx_id)!)!.push(r.daemon_id);
      }
      const rows = await hub()
        .db.selectFrom('queue_items')
        .select(['id', 'status', 'claimed_by'])
        .where('realm_id', '=', w.otherRealmId)
        .execute();
      assert.equal(rows.length, items);
      for (const row of rows) {
        assert.equal(row.status, 'claimed', `item ${row.id} left unclaimed`);
        assert.deepEqual(winners.get(row.id), [row.claimed_by], `item ${row.id}: one winner, the hub's`);
      }
      // Every daemon raced for every item: all but the winner were told they lost it. (Who wins is
      // whoever's claim reaches the hub first; one fast daemon may win them all.)
      const lost = results.filter((r) => !(r.reply as { claimed: boolean }).claimed).length;
      assert.equal(lost, items * (n - 1));
    } finally {
      await Promise.all(crowd.map((c) => c.d.close()));
      for (const c of crowd) c.home.cleanup();
    }
  });
});
