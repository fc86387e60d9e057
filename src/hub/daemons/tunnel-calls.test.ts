import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { CompiledQuery } from 'kysely';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { connectDaemon, type TunnelClient } from '../../../test/helpers/tunnel-client.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import type { CallFrame } from '../../shared/protocol.js';
import { sendCommand } from './commands.js';
import { ackAllQuery, loadCommand } from './outbox.repo.js';

describe('hub operations called over the tunnel, and commands sent at commit', () => {
  let h: TestHub;
  let w: World;
  let d: TunnelClient;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    d = await connectDaemon(h.url, w.tokens.realm_token!);
  });
  after(async () => {
    const offline = once(h.running.hub.tunnel.events, 'disconnected');
    await d.close();
    await offline;
    await h.close();
  });

  let n = 0;
  /** One call frame; its reply frame. */
  async function call(op: string, body: unknown) {
    const frame: CallFrame = { type: 'call', id: `c${++n}`, op, body };
    d.ws.send(JSON.stringify(frame));
    const reply = await d.next('reply');
    assert.equal(reply.id, frame.id);
    return { status: reply.status, body: reply.body };
  }

  it('the hello says the hub serves calls', () => {
    assert.deepEqual(d.hello.features, ['calls']);
  });

  it('answers with the status and body POST /v1/<op> gives the same token: success and every refusal', async () => {
    const cases: [string, unknown][] = [
      ['auth/whoami', {}],
      ['queue/claim', { queue_item_id: 'nope', daemon_id: w.daemonId }],
      ['queue/claim', { queue_item_id: 7 }],
      ['queue/claim', { queue_item_id: 'x', daemon_id: 'someone-else' }],
      ['orgs/new', { slug: 'not-for-daemons', owner: { email: 'a@b.test' } }],
      ['no/such_op', {}],
      ['runs/report', null],
    ];
    for (const [op, body] of cases) {
      const viaTunnel = await call(op, body);
      const viaHttp = await h.call(op, body, w.tokens.realm_token);
      assert.deepEqual(viaTunnel, { status: viaHttp.status, body: viaHttp.body }, op);
    }
    const me = await call('auth/whoami', {});
    assert.equal((me.body as { data: { daemon: { id: string } } }).data.daemon.id, w.daemonId);
  });

  it('a command for a daemon connected here is recorded as sent once and arrives without a delivery pass', async () => {
    const txId = await sendCommand(h.running.hub, w.daemonId, 'teams/install', { n: 1 });
    const frame = await d.next('command');
    assert.equal(frame.tx_id, txId);
    const row = await loadCommand(h.running.hub.db, txId);
    assert.equal(row?.attempts, 1);
    assert.ok(row?.last_sent_at !== null);
    d.ack(txId);
    await h.running.hub.tunnel.waitForAck(txId);
  });

  it('acks that arrive together are all recorded, a repeated one changes nothing', async () => {
    const hub = h.running.hub;
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await sendCommand(hub, w.daemonId, 'teams/install', { i }));
    for (const id of ids) assert.equal((await d.next('command')).tx_id, id);
    const acked = Promise.all(ids.map((id) => hub.tunnel.waitForAck(id)));
    for (const id of ids) d.ack(id, { reply: { n: id } });
    d.ack(ids[0]!, { reply: { n: 'again' } });
    const results = await acked;
    assert.deepEqual(
      results.map((r) => r.reply),
      ids.map((id) => ({ n: id })),
    );
    const first = await loadCommand(hub.db, ids[0]!);
    assert.equal(first?.reply, JSON.stringify({ n: ids[0] }));
  });

  it('an ack finds its command by its id, not by reading every pending command', async (t) => {
    const hub = h.running.hub;
    if (hub.dialect !== 'sqlite') return t.skip('a query plan of SQLite');
    const compiled = ackAllQuery(hub.db, '[]', 0).compile();
    const plan = await hub.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]),
    );
    const details = plan.rows.map((r) => r.detail);
    assert.match(details[0]!, /SCAN json_each/, details.join(' | '));
    assert.match(
      details[1]!,
      /SEARCH command_outbox USING INDEX sqlite_autoindex_command_outbox_1 \(tx_id=\?\)/,
    );
  });
});

describe('acks recorded together: the window, and what ends it', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    // A window far longer than any test: an ack recorded within it was recorded by what ends it.
    h = await startTestHub({ config: { ackWindowMs: 600_000 } });
    w = await buildWorld(h);
  });
  after(async () => {
    await h.close();
  });

  it('an ack that an operation waits for is recorded at once, with those that came before it', async () => {
    const hub = h.running.hub;
    const d = await connectDaemon(h.url, w.tokens.realm_token!);
    try {
      const unwatched = await sendCommand(hub, w.daemonId, 'teams/install', { n: 1 });
      const watched = await sendCommand(hub, w.daemonId, 'teams/install', { n: 2 });
      assert.equal((await d.next('command')).tx_id, unwatched);
      assert.equal((await d.next('command')).tx_id, watched);
      const answer = hub.tunnel.waitForAck(watched);
      d.ack(unwatched, { reply: { n: 1 } });
      d.ack(watched, { reply: { n: 2 } });
      assert.deepEqual((await answer).reply, { n: 2 });
      assert.equal((await loadCommand(hub.db, unwatched))?.status, 'acked');
    } finally {
      const offline = once(hub.tunnel.events, 'disconnected');
      await d.close();
      await offline;
    }
  });

  it('a closing connection records its acks before its daemon goes offline', async () => {
    const hub = h.running.hub;
    const d = await connectDaemon(h.url, w.tokens.realm_token!);
    const txId = await sendCommand(hub, w.daemonId, 'teams/install', { n: 3 });
    assert.equal((await d.next('command')).tx_id, txId);
    d.ack(txId);
    const offline = once(hub.tunnel.events, 'disconnected');
    await d.close();
    await offline;
    assert.equal((await loadCommand(hub.db, txId))?.status, 'acked');
    // The daemon dials again: what it acked is not sent to it again.
    const again = await connectDaemon(h.url, w.tokens.realm_token!);
    try {
      const next = await sendCommand(hub, w.daemonId, 'teams/install', { n: 4 });
      assert.equal((await again.next('command')).tx_id, next);
      again.ack(next);
    } finally {
      const gone = once(hub.tunnel.events, 'disconnected');
      await again.close();
      await gone;
    }
  });
});
