import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { type DB, migrate, openDatabase } from '../../src/db/index.js';
import { insertRows, OUTBOX_CHANNEL, outboxNotice, writeThenNotify } from '../../src/hub/cluster/bus.js';
import { sendCommand } from '../../src/hub/daemons/commands.js';
import { loadCommand } from '../../src/hub/daemons/outbox.repo.js';
import type { RunningHub } from '../../src/hub/server.js';
import { PG_URL, TEST_DB, testDatabase } from '../helpers/db.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { connectDaemon, type TunnelClient } from '../helpers/tunnel-client.js';
import { until } from '../helpers/until.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * Scale-out: several hub processes on one PostgreSQL database wake each other through LISTEN/NOTIFY.
 * Both processes scan their outbox only every 60 s, so anything that arrives within seconds got
 * there through the bus.
 */
describe('two hub processes on one database: the cluster bus', {
  skip: TEST_DB !== 'postgres' && 'PostgreSQL only: SQLite has one hub process, woken in-process',
}, () => {
  // A command sent from its notice is recorded as sent 2 s after, unless acked: the tests' acks
  // come well within that, however slow the machine.
  const SLOW_SCAN = { outboxScanMs: 60_000, outboxResendMs: 60_000, outboxSentRecordMs: 2_000 };
  let h: TestHub;
  let second: RunningHub;
  let w: World;
  const clients: TunnelClient[] = [];
  const A = () => h.running.hub;
  const B = () => second.hub;
  /** A daemon connected to process B, as far as B's database rows tell. */
  const connectToB = async (token = w.tokens.realm_token!) => {
    const c = await connectDaemon(second.url, token);
    clients.push(c);
    return c;
  };

  /** A pending `hug/deliver` command's outbox row, for this world's daemon. */
  const pendingRow = (txId: string, body: string, lastSentAt: number | null) => ({
    tx_id: txId,
    daemon_id: w.daemonId,
    path: 'hug/deliver',
    body,
    status: 'pending' as const,
    ack_status: null,
    reply: null,
    error: null,
    created_at: Date.now(),
    seq: Date.now() * 1000,
    last_sent_at: lastSentAt,
    acked_at: null,
    attempts: 0,
  });

  before(async () => {
    h = await startTestHub({ config: SLOW_SCAN });
    second = await h.startAnother({ config: SLOW_SCAN });
    w = await buildWorld(h);
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) {
      if (c.ws.readyState !== c.ws.OPEN) continue;
      const offline = once(B().tunnel.events, 'disconnected');
      await c.close();
      await offline;
    }
  });
  after(async () => {
    await second?.close();
    await h?.close();
  });

  it('delivers a command written by process A to a daemon on process B at once, acked once, seen by A', async () => {
    const c = await connectToB();
    assert.equal(A().tunnel.isConnected(w.daemonId), false);
    assert.equal(B().tunnel.isConnected(w.daemonId), true);
    const t0 = Date.now();
    const txId = await sendCommand(A(), w.daemonId, 'hug/deliver', { review_id: 'x', message: { n: 1 } });
    const cmd = await c.next('command', 10_000);
    const elapsed = Date.now() - t0;
    assert.equal(cmd.tx_id, txId);
    assert.ok(elapsed < 5_000, `arrived after ${elapsed} ms: the 60 s scan cannot explain it`);
    // The waiter is on A, the ack arrives on B.
    const acked = A().tunnel.waitForAck(txId, 10_000);
    c.ack(txId, { reply: { delivered: true } });
    assert.deepEqual((await acked).reply, { delivered: true });
    const row = await loadCommand(A().db, txId);
    assert.equal(row?.status, 'acked');
    assert.equal(row?.attempts, 1, 'sent once: only the process holding the daemon sends');
  });

  it('sends a command from the notice that carried it, without reading the outbox on B', async () => {
    const c = await connectToB();
    // The connection's first command signs its dispatch token (through the outbox); the next ones
    // travel in their notices.
    const first = await sendCommand(A(), w.daemonId, 'hug/deliver', { review_id: 'm', message: {} });
    assert.equal((await c.next('command', 5_000)).tx_id, first);
    c.ack(first);
    const txId = A().newId();
    const body = JSON.stringify({ review_id: 'n', message: { n: 2 }, tx_id: txId });
    const command = { tx_id: txId, path: 'hug/deliver', body, written_at: Date.now() };
    // Written by A as enqueueCommand writes it, but as if sent a moment ago: a delivery from B's
    // outbox would leave it until its resend is due, so only the notice can bring it at once.
    await A()
      .db.transaction()
      .execute((trx) =>
        writeThenNotify(
          trx,
          [
            insertRows(trx as Kysely<DB>, 'command_outbox', [
              pendingRow(txId, command.body, Date.now() + 60_000),
            ]),
          ],
          [{ channel: OUTBOX_CHANNEL, payload: outboxNotice(w.daemonId, A().tunnel.instanceId, command) }],
        ),
      );
    const cmd = await c.next('command', 5_000);
    assert.equal(cmd.tx_id, txId);
    assert.deepEqual(cmd.body, { review_id: 'n', message: { n: 2 }, tx_id: txId });
    c.ack(txId);
  });

  it('records the commands sent together from their notices as sent, each once', async () => {
    const c = await connectToB();
    // The connection's first command signs its dispatch token (through the outbox); the next ones
    // travel in their notices, and are recorded as sent after their frames leave.
    const first = await sendCommand(A(), w.daemonId, 'hug/deliver', { review_id: 'r0', message: {} });
    assert.equal((await c.next('command', 5_000)).tx_id, first);
    c.ack(first);
    const txIds = await Promise.all(
      [1, 2, 3, 4, 5].map((n) =>
        sendCommand(A(), w.daemonId, 'hug/deliver', { review_id: `r${n}`, message: {} }),
      ),
    );
    const got = new Set<string>();
    while (got.size < txIds.length) got.add((await c.next('command', 5_000)).tx_id);
    assert.deepEqual([...got].sort(), [...txIds].sort());
    const rows = await until('every command recorded as sent', async () => {
      const all = await Promise.all(txIds.map((t) => loadCommand(A().db, t)));
      return all.every((r) => r?.last_sent_at !== null) && all;
    });
    for (const r of rows) {
      assert.equal(r?.attempts, 1, 'recorded once');
      assert.equal(r?.status, 'pending');
    }
    for (const t of txIds) c.ack(t);
  });

  it('a command sent from its notice and acked at once is not recorded as sent: its ack is its one write', async () => {
    const c = await connectToB();
    // The connection's first command signs its dispatch token (through the outbox). B sends from a
    // notice only once that delivery is over: until then a command goes through the outbox too,
    // whose delivery records it as sent as it takes it.
    const fromItsNotice = () =>
      until('B sending from notices', async () => B().tunnel.canSendNow(w.daemonId));
    const first = await sendCommand(A(), w.daemonId, 'hug/deliver', { review_id: 'a0', message: {} });
    assert.equal((await c.next('command', 5_000)).tx_id, first);
    c.ack(first);
    await fromItsNotice();
    const acked = await sendCommand(A(), w.daemonId, 'hug/deliver', { review_id: 'a1', message: {} });
    assert.equal((await c.next('command', 5_000)).tx_id, acked);
    c.ack(acked);
    await until('the ack recorded', async () => (await loadCommand(A().db, acked))?.status === 'acked');
    // Sent after it and never acked: once this one is recorded as sent, the acked one's record
    // would have been made too, had it been due.
    await fromItsNotice();
    const unacked = await sendCommand(A(), w.daemonId, 'hug/deliver', { review_id: 'a2', message: {} });
    try {
      assert.equal((await c.next('command', 5_000)).tx_id, unacked);
      await until('the unacked command recorded as sent', async () => {
        return (await loadCommand(A().db, unacked))?.last_sent_at !== null;
      });
      const row = await loadCommand(A().db, acked);
      assert.equal(row?.status, 'acked');
      assert.equal(row?.last_sent_at, null);
      assert.equal(row?.attempts, 0);
    } finally {
      c.ack(unacked);
    }
  });

  it('a command too large for a notice goes through the outbox, recorded as sent once', async () => {
    const c = await connectToB();
    const big = 'x'.repeat(20_000);
    const txId = await sendCommand(A(), w.daemonId, 'hug/deliver', { review_id: 'big', message: { big } });
    const cmd = await c.next('command', 5_000);
    assert.equal(cmd.tx_id, txId);
    assert.equal((cmd.body as { message: { big: string } }).message.big.length, 20_000);
    c.ack(txId);
    const row = await loadCommand(A().db, txId);
    assert.equal(row?.attempts, 1);
  });

  it('answers an operation on A that waits for the ack of a daemon on B (workspaces/register)', async () => {
    const home = daemonHome();
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-cluster-ws-'));
    const dt = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'ws-daemon' });
    let d: RunningDaemon | undefined;
    try {
      d = await startTestDaemon(home.dir, { config: { hubUrls: [second.url], realmToken: dt.data.token } });
      await whenConnected(d);
      const t0 = Date.now();
      const r = await h.call('workspaces/register', { daemon_id: dt.data.daemon_id, path: dir, name: 'ws' });
      assert.equal(r.body.ok, true, JSON.stringify(r.body));
      assert.ok(Date.now() - t0 < 5_000, 'confirmed through the bus, not after a scan');
    } finally {
      await d?.close();
      home.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('pushes ACL changes made on A to the daemons connected to B, once', async () => {
    const c = await connectToB();
    const member = w.users.org_member!;
    await h.ok('realms/add_member', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: member.id,
      role: 'operator',
    });
    const acl = (await c.next('acl', 5_000)).acl;
    assert.deepEqual(
      acl.find((e) => e.user_id === member.id),
      { user_id: member.id, handle: member.handle, role: 'operator' },
    );
    await h.ok('realms/remove_member', { realm_id: w.realmId, member_type: 'user', member_id: member.id });
    const after = (await c.next('acl', 5_000)).acl;
    assert.equal(
      after.find((e) => e.user_id === member.id),
      undefined,
    );
    // Exactly one frame per change: the next frame is the command below, not a repeated ACL.
    const txId = await sendCommand(A(), w.daemonId, 'hug/deliver', { review_id: 'y', message: {} });
    assert.equal((await c.next('command', 5_000)).tx_id, txId);
    c.ack(txId);
  });

  it('after its LISTEN connection is cut, B reconnects and delivers what it may have missed', async () => {
    const c = await connectToB();
    // A command written without a notification (as a lost NOTIFY would leave it).
    const txId = A().newId();
    await A()
      .db.insertInto('command_outbox')
      .values(pendingRow(txId, JSON.stringify({ review_id: 'z', message: {}, tx_id: txId }), null))
      .execute();
    const down = once(B().tunnel.bus.events, 'disconnected');
    const up = once(B().tunnel.bus.events, 'connected');
    const killed = await sql<{ ok: boolean }>`select pg_terminate_backend(pid) as ok from pg_stat_activity
      where application_name = ${`svc-hub-listen ${B().tunnel.instanceId}`.slice(0, 63)}`.execute(A().db);
    assert.deepEqual(
      killed.rows.map((r) => r.ok),
      [true],
    );
    await down;
    await up;
    assert.equal(B().tunnel.bus.listening, true);
    // Whatever may have changed meanwhile: the ACL again (nothing else sends it now) and every due
    // command. (The connect's own delivery may have sent the command first: order is not fixed.)
    const frames = [await c.nextAny(10_000), await c.nextAny(10_000)];
    assert.deepEqual(frames.map((f) => f.type).sort(), ['acl', 'command']);
    const cmd = frames.find((f) => f.type === 'command');
    assert.equal(cmd?.type === 'command' && cmd.tx_id, txId);
    c.ack(txId);
    // And the bus works again.
    const tx2 = await sendCommand(A(), w.daemonId, 'hug/deliver', { review_id: 'z2', message: {} });
    assert.equal((await c.next('command', 5_000)).tx_id, tx2);
    c.ack(tx2);
  });

  it('closes the connection on B of a daemon removed through A', async () => {
    const dt = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'doomed' });
    const c = await connectToB(dt.data.token);
    const closed = once(c.ws, 'close');
    await h.ok('daemons/remove', { id: dt.data.daemon_id });
    const [code] = (await closed) as [number];
    assert.equal(code, 4001);
  });
});

describe('migrations started by several processes at once', {
  skip: TEST_DB !== 'postgres' && 'PostgreSQL only',
}, () => {
  it('apply once (Kysely holds a PostgreSQL advisory lock around them)', async () => {
    const tdb = testDatabase();
    const dbs = await Promise.all(
      [1, 2, 3].map(() => openDatabase({ url: PG_URL, ...(tdb.schema ? { schema: tdb.schema } : {}) })),
    );
    try {
      await Promise.all(dbs.map((d) => migrate(d.db)));
      const rows = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(
        dbs[0]!.db,
      );
      const names = rows.rows.map((r) => r.name);
      assert.equal(new Set(names).size, names.length);
      assert.ok(names.includes('0008_cluster'));
    } finally {
      for (const d of dbs) await d.close();
      await tdb.cleanup();
    }
  });
});
