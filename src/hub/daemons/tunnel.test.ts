import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import { importJWK, jwtVerify } from 'jose';
import { sql } from 'kysely';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import {
  connectDaemon,
  refusedUpgrade,
  type TunnelClient,
  tunnelUrl,
} from '../../../test/helpers/tunnel-client.js';
import {
  buildWorld,
  createOrgWithOwner,
  KEEPS_REFUSED_CHANNELS,
  notifiedOf,
  type World,
} from '../../../test/helpers/world.js';
import { CommandFrame, HelloFrame, SERVICE_RESTART } from '../../shared/protocol.js';
import { mintToken } from '../../shared/tokens.js';
import { aclChanged } from './acl.js';
import { sendCommand } from './commands.js';
import { markConnected, markDisconnected } from './daemons.repo.js';
import { DISPATCH_ALG, DISPATCH_ISSUER } from './dispatch.js';
import { enqueueCommand, loadCommand, markAcked } from './outbox.repo.js';

describe('daemon tunnel', () => {
  let h: TestHub;
  let w: World;
  const clients: TunnelClient[] = [];
  const connect = async (token = w.tokens.realm_token!) => {
    const c = await connectDaemon(h.url, token);
    clients.push(c);
    return c;
  };
  const hub = () => h.running.hub;
  /** Closes a client and waits until the hub has marked its daemon offline. */
  const disconnect = async (c: TunnelClient) => {
    const offline = once(hub().tunnel.events, 'disconnected');
    await c.close();
    await offline;
  };

  before(async () => {
    h = await startTestHub({ config: { outboxScanMs: 50, ...KEEPS_REFUSED_CHANNELS } });
    w = await buildWorld(h);
  });
  afterEach(async () => {
    // Leave no connection, and no offline bookkeeping in flight, to the next test.
    for (const c of clients.splice(0)) {
      if (c.ws.readyState === c.ws.OPEN) await disconnect(c);
      else await c.close();
    }
  });
  after(() => h.close());

  it('refuses the upgrade with 401 without a token or with a bad or revoked one, 403 for a user token', async () => {
    const none = await refusedUpgrade(h.url, {});
    assert.equal(none.status, 401);
    assert.deepEqual(none.body, {
      ok: false,
      error: { code: 'unauthorized', message: 'a realm token is required' },
    });
    for (const bad of ['svc_dt_nope', mintToken('daemon'), 'Basic x']) {
      const r = await refusedUpgrade(h.url, {
        authorization: bad.startsWith('Basic') ? bad : `Bearer ${bad}`,
      });
      assert.equal(r.status, 401, bad);
      assert.equal(r.body.error.code, 'unauthorized');
    }
    const user = await refusedUpgrade(h.url, { authorization: `Bearer ${w.tokens.realm_admin}` });
    assert.equal(user.status, 403);
    assert.equal(user.body.error.code, 'forbidden');

    const extra = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'soon-gone' });
    const c = await connect(extra.data.token);
    const closed = once(c.ws, 'close');
    await h.ok('daemons/remove', { id: extra.data.daemon_id });
    assert.equal((await closed)[0], 4001);
    const revoked = await refusedUpgrade(h.url, { authorization: `Bearer ${extra.data.token}` });
    assert.equal(revoked.status, 401);

    // A plain GET without an Upgrade header answers in the hub's error shapes.
    const plain = (token?: string) =>
      fetch(`${h.url}/v1/daemons/connect`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    assert.equal((await plain()).status, 401);
    assert.equal((await plain(w.tokens.realm_member!)).status, 403);
    const daemonGet = await plain(w.tokens.realm_token!);
    assert.equal(daemonGet.status, 400);
    assert.equal(((await daemonGet.json()) as { code: string }).code, 'bad_request');
    // Another path on the upgrade route is not found.
    const other = await refusedUpgrade(h.url, {}, '/v1/nope');
    assert.equal(other.status, 404);
  });

  it('refuses a realm token whose organization was deleted since it last connected (403)', async () => {
    const org = await createOrgWithOwner(h, 'soon-deleted');
    const dt = await h.ok(
      'realms/create_daemon_token',
      { realm_id: org.defaultRealmId, name: 'orphan' },
      org.owner.token,
    );
    const c = await connect(dt.data.token);
    await disconnect(c);
    await h.ok('orgs/delete', { id: org.orgId }, org.owner.token);
    const r = await refusedUpgrade(h.url, { authorization: `Bearer ${dt.data.token}` });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, {
      ok: false,
      error: { code: 'forbidden', message: "the daemon's organization is deleted" },
    });
  });

  it("drops a daemon's connection when its realm is removed", async () => {
    const realm = await h.ok('realms/new', { org_id: w.orgId, name: 'short-lived' });
    const dt = await h.ok('realms/create_daemon_token', { realm_id: realm.data.id, name: 'gone' });
    const c = await connect(dt.data.token);
    const closed = once(c.ws, 'close');
    await h.ok('realms/remove', { id: realm.data.id });
    assert.equal((await closed)[0], 4001);
  });

  it('greets with the daemon id, realm id, a public dispatch key and the realm ACL', async () => {
    const c = await connect();
    assert.equal(HelloFrame.safeParse(c.hello).success, true);
    assert.equal(c.hello.type, 'hello');
    assert.equal(c.hello.daemon_id, w.daemonId);
    assert.equal(c.hello.realm_id, w.realmId);
    const jwk = c.hello.dispatch_key;
    assert.equal(jwk.kty, 'OKP');
    assert.equal(jwk.crv, 'Ed25519');
    assert.equal(jwk.alg, DISPATCH_ALG);
    assert.equal(jwk.d, undefined, 'never the private part');
    const issued = await h.ok(
      'daemons/issue_dispatch_token',
      { daemon_id: w.daemonId },
      w.tokens.realm_operator,
    );
    const key = await importJWK(jwk, DISPATCH_ALG);
    const { payload } = await jwtVerify(issued.data.token, key, {
      audience: w.daemonId,
      issuer: DISPATCH_ISSUER,
    });
    assert.equal(payload.aud, w.daemonId);
    // Issued to a person: it names them, and carries none of the hub's authority.
    assert.equal(payload.sub, w.users.realm_operator!.id);
    assert.equal(payload.svc_holder, 'user');

    const byId = Object.fromEntries(c.hello.acl.map((e) => [e.user_id, e]));
    const expect = {
      realm_member: 'member',
      realm_operator: 'operator',
      realm_admin: 'admin',
      org_admin: 'admin',
      org_owner: 'admin',
      // Site administrators count as members of every realm (CONTRACT.md §3).
      site_admin: 'admin',
    } as const;
    assert.equal(c.hello.acl.length, Object.keys(expect).length);
    for (const [actor, role] of Object.entries(expect)) {
      const u = w.users[actor as keyof typeof expect]!;
      assert.deepEqual(byId[u.id], { user_id: u.id, handle: u.handle, role }, actor);
    }
    for (const actor of ['org_member', 'outsider'] as const) {
      assert.equal(byId[w.users[actor]!.id], undefined, actor);
    }
  });

  it('sends the upgrade reply and the hello in one write, once the daemon is recorded online', async () => {
    // A raw client: the first bytes it reads hold the 101 and the whole hello frame.
    const { hostname, port } = new URL(h.url);
    const socket = net.connect(Number(port), hostname);
    await once(socket, 'connect');
    socket.write(
      'GET /v1/daemons/connect HTTP/1.1\r\n' +
        `Host: ${hostname}:${port}\r\n` +
        'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n` +
        `Authorization: Bearer ${w.tokens.realm_token}\r\n\r\n`,
    );
    const [first] = (await once(socket, 'data')) as [Buffer];
    socket.destroy();
    const text = first.toString('latin1');
    assert.match(text, /^HTTP\/1\.1 101 /);
    const frame = first.subarray(text.indexOf('\r\n\r\n') + 4);
    assert.ok(frame.length > 4, 'the hello came with the 101');
    // One unmasked text frame; a 16-bit length (the hello is over 125 bytes).
    assert.equal(frame[0], 0x81);
    assert.equal(frame[1], 126);
    const length = frame.readUInt16BE(2);
    assert.equal(frame.length, 4 + length);
    const hello = JSON.parse(frame.subarray(4).toString('utf8'));
    assert.equal(hello.type, 'hello');
    assert.equal(hello.daemon_id, w.daemonId);
    assert.equal(
      (await hub().db.selectFrom('daemons').select('status').where('id', '=', w.daemonId).executeTakeFirst())
        ?.status,
      'online',
    );
    await once(hub().tunnel.events, 'disconnected');
  });

  it('pushes the ACL when realm members, groups or org members change', async () => {
    const c = await connect();
    const member = w.users.org_member!;
    await h.ok('realms/add_member', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: member.id,
      role: 'operator',
    });
    let acl = (await c.next('acl')).acl;
    assert.deepEqual(
      acl.find((e) => e.user_id === member.id),
      { user_id: member.id, handle: member.handle, role: 'operator' },
    );
    await h.ok('realms/set_member_role', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: member.id,
      role: 'member',
    });
    acl = (await c.next('acl')).acl;
    assert.equal(acl.find((e) => e.user_id === member.id)?.role, 'member');

    // Through a group: the highest of the direct and group roles counts.
    const db = hub().db;
    const groupId = hub().newId();
    await db
      .insertInto('groups')
      .values({ id: groupId, org_id: w.orgId, name: 'ops', created_at: 1 })
      .execute();
    await db
      .insertInto('group_members')
      .values({ group_id: groupId, user_id: member.id, created_at: 1 })
      .execute();
    await db
      .insertInto('realm_members')
      .values({ realm_id: w.realmId, member_type: 'group', member_id: groupId, role: 'admin', created_at: 1 })
      .execute();
    await aclChanged(hub(), { orgId: w.orgId });
    acl = (await c.next('acl')).acl;
    assert.equal(acl.find((e) => e.user_id === member.id)?.role, 'admin');
    await db.deleteFrom('realm_members').where('member_id', '=', groupId).execute();

    await h.ok('realms/remove_member', { realm_id: w.realmId, member_type: 'user', member_id: member.id });
    acl = (await c.next('acl')).acl;
    assert.equal(
      acl.find((e) => e.user_id === member.id),
      undefined,
    );
    // An org admin demoted to member loses the implied realm admin role.
    await h.ok('orgs/set_member_role', { org_id: w.orgId, user_id: w.users.org_admin!.id, role: 'member' });
    acl = (await c.next('acl')).acl;
    assert.equal(
      acl.find((e) => e.user_id === w.users.org_admin!.id),
      undefined,
    );
    await h.ok('orgs/set_member_role', { org_id: w.orgId, user_id: w.users.org_admin!.id, role: 'admin' });
    acl = (await c.next('acl')).acl;
    assert.equal(acl.find((e) => e.user_id === w.users.org_admin!.id)?.role, 'admin');
  });

  it('delivers a command with a fresh dispatch token and records the ack once', async () => {
    const c = await connect();
    const txId = await sendCommand(hub(), w.daemonId, 'hug/deliver', {
      review_id: 'r1',
      message: { type: 'x' },
    });
    const cmd = await c.next('command');
    assert.equal(CommandFrame.safeParse(cmd).success, true);
    assert.equal(cmd.tx_id, txId);
    assert.equal(cmd.path, 'hug/deliver');
    // Sent right after the transaction that wrote it: its first send.
    assert.equal(cmd.first, true);
    assert.deepEqual(cmd.body, { review_id: 'r1', message: { type: 'x' }, tx_id: txId });
    const { payload } = await jwtVerify(cmd.token, await importJWK(c.hello.dispatch_key, DISPATCH_ALG), {
      audience: w.daemonId,
      issuer: DISPATCH_ISSUER,
    });
    assert.ok(payload.exp! - payload.iat! <= 300);

    const acked = hub().tunnel.waitForAck(txId);
    c.ack(txId, { reply: { delivered: true } });
    assert.deepEqual(await acked, {
      tx_id: txId,
      daemon_id: w.daemonId,
      status: 'ok',
      reply: { delivered: true },
      error: null,
    });
    const row = await loadCommand(hub().db, txId);
    assert.equal(row?.status, 'acked');
    assert.equal(row?.ack_status, 'ok');
    assert.equal(row?.attempts, 1);
    // A repeated ack changes nothing; waiting on an acked command answers at once.
    c.ack(txId, { status: 'error', error: { code: 'X', message: 'late' } });
    const tx2 = await sendCommand(hub(), w.daemonId, 'runs/cancel', { run_id: 'r' });
    assert.equal((await c.next('command')).tx_id, tx2);
    const failed = hub().tunnel.waitForAck(tx2);
    c.ack(tx2, { status: 'error', error: { code: 'PAYLOAD_INVALID', message: 'bad' } });
    assert.deepEqual((await failed).error, { code: 'PAYLOAD_INVALID', message: 'bad' });
    assert.deepEqual(await hub().tunnel.waitForAck(txId), await acked);
    assert.equal((await loadCommand(hub().db, txId))?.acked_at, row?.acked_at);
    // Garbage frames are ignored, the connection stays up.
    c.ws.send('not json');
    c.ws.send(JSON.stringify({ type: 'nope' }));
    const tx3 = await sendCommand(hub(), w.daemonId, 'teams/install', {});
    assert.equal((await c.next('command')).tx_id, tx3);
    c.ack(tx3);
    await hub().tunnel.waitForAck(tx3);
  });

  it('records acks that arrive together in one statement: the first ack of each command counts', async () => {
    const db = hub().db;
    const a = (await enqueueCommand(db, hub(), w.daemonId, 'teams/install', { n: 1 })).tx_id;
    const b = (await enqueueCommand(db, hub(), w.daemonId, 'runs/cancel', { n: 2 })).tx_id;
    const now = hub().now();
    const firsts = await markAcked(
      db,
      [
        { daemonId: w.daemonId, ack: { type: 'ack', tx_id: a, status: 'ok', reply: { n: 1 } } },
        {
          daemonId: w.daemonId,
          ack: { type: 'ack', tx_id: a, status: 'error', error: { code: 'X', message: 'again' } },
        },
        { daemonId: 'another-daemon', ack: { type: 'ack', tx_id: b, status: 'ok' } },
        {
          daemonId: w.daemonId,
          ack: { type: 'ack', tx_id: b, status: 'error', error: { code: 'E', message: 'no' } },
        },
        { daemonId: w.daemonId, ack: { type: 'ack', tx_id: 'unknown', status: 'ok' } },
      ],
      now,
    );
    assert.deepEqual(firsts, ['teams/install', null, null, 'runs/cancel', null]);
    const rowA = await loadCommand(db, a);
    assert.deepEqual(
      [rowA?.status, rowA?.ack_status, rowA?.reply, rowA?.error, rowA?.acked_at],
      ['acked', 'ok', '{"n":1}', null, now],
    );
    const rowB = await loadCommand(db, b);
    assert.deepEqual(
      [rowB?.status, rowB?.ack_status, rowB?.reply, rowB?.error],
      ['acked', 'error', null, '{"code":"E","message":"no"}'],
    );
    // A later ack of an acked command changes nothing.
    assert.deepEqual(
      await markAcked(db, [{ daemonId: w.daemonId, ack: { type: 'ack', tx_id: a, status: 'ok' } }], now + 1),
      [null],
    );
    assert.equal((await loadCommand(db, a))?.acked_at, now);
  });

  it('sends commands written while the daemon was away on connect, oldest first, and again after a reconnect', async () => {
    const db = hub().db;
    const a = (await enqueueCommand(db, hub(), w.daemonId, 'teams/install', { n: 1 })).tx_id;
    const b = (await enqueueCommand(db, hub(), w.daemonId, 'teams/install', { n: 2 })).tx_id;
    const c1 = await connect();
    // Delivered, not sent by the transaction that wrote them: never marked as a first send.
    const delivered = [await c1.next('command'), await c1.next('command')];
    assert.deepEqual(
      delivered.map((f) => [f.tx_id, f.first]),
      [
        [a, undefined],
        [b, undefined],
      ],
    );
    c1.ack(a);
    await hub().tunnel.waitForAck(a);
    await disconnect(c1);
    const c2 = await connect();
    const again = await c2.next('command');
    assert.equal(again.tx_id, b);
    assert.equal(again.first, undefined);
    c2.ack(b);
    await hub().tunnel.waitForAck(b);
    // A command written by another hub process (no wake here) is picked up by the scan.
    const viaScan = (await enqueueCommand(db, hub(), w.daemonId, 'teams/install', { n: 3 })).tx_id;
    assert.equal((await c2.next('command')).tx_id, viaScan);
    c2.ack(viaScan);
    await hub().tunnel.waitForAck(viaScan);
  });

  it('a newer connection of the same daemon replaces the older one', async () => {
    const c1 = await connect();
    const replaced = once(c1.ws, 'close');
    const c2 = await connect();
    assert.equal((await replaced)[0], 4000);
    const d = await h.ok('daemons/get', { id: w.daemonId });
    assert.equal(d.data.status, 'online');
    const tx = await sendCommand(hub(), w.daemonId, 'teams/install', {});
    assert.equal((await c2.next('command')).tx_id, tx);
    c2.ack(tx);
    await hub().tunnel.waitForAck(tx);
  });

  /**
   * Rules that send the realm's daemon.connected and daemon.disconnected events to a channel, for the
   * length of `body`: an event is written to `events` only when it causes a delivery.
   */
  const withPresenceRules = async (body: () => Promise<void>) => {
    const { channelId, ruleIds } = await notifiedOf(h, w.realmId, [
      'daemon.connected',
      'daemon.disconnected',
    ]);
    try {
      await body();
    } finally {
      for (const id of ruleIds) await h.ok('realms/remove_notification_rules', { id });
      await h.ok('notification_channels/remove', { id: channelId });
    }
  };
  /** The events recorded for these daemons, with how many deliveries point at each. */
  const presenceEvents = async (daemonIds: string[]) =>
    hub()
      .db.selectFrom('events as e')
      .leftJoin('notification_deliveries as d', 'd.event_id', 'e.id')
      .select(['e.id', 'e.type', 'e.realm_id', 'e.org_id', 'e.payload', 'e.created_at'])
      .select((eb) => eb.fn.count<number | string>('d.id').as('deliveries'))
      .where('e.subject_id', 'in', daemonIds)
      .groupBy(['e.id', 'e.type', 'e.realm_id', 'e.org_id', 'e.payload', 'e.created_at'])
      .orderBy('e.created_at')
      .orderBy('e.id')
      .execute();

  it('tracks online/offline, last_seen_at and daemon.connected/disconnected events', async () => {
    await withPresenceRules(async () => {
      const t0 = Date.now();
      // Only this connection's events: an earlier test's close may still be recording its own.
      const events = async () =>
        (await presenceEvents([w.daemonId]))
          .filter((e) => JSON.parse(e.payload).connection_id === connectionId)
          .map((e) => ({
            type: e.type,
            realm_id: e.realm_id,
            org_id: e.org_id,
            deliveries: Number(e.deliveries),
          }));
      const connected = once(hub().tunnel.events, 'connected');
      const c = await connect();
      const connectionId = ((await connected)[0] as { connection_id: string }).connection_id;
      const on = await h.ok('daemons/get', { id: w.daemonId });
      assert.equal(on.data.status, 'online');
      assert.ok(on.data.last_seen_at >= t0);
      assert.equal(hub().tunnel.isConnected(w.daemonId), true);
      await disconnect(c);
      const off = await h.ok('daemons/get', { id: w.daemonId });
      assert.equal(off.data.status, 'offline');
      assert.ok(off.data.last_seen_at >= on.data.last_seen_at);
      assert.equal(hub().tunnel.isConnected(w.daemonId), false);
      assert.deepEqual(await events(), [
        { type: 'daemon.connected', realm_id: w.realmId, org_id: w.orgId, deliveries: 1 },
        { type: 'daemon.disconnected', realm_id: w.realmId, org_id: w.orgId, deliveries: 1 },
      ]);
    });
  });

  it('writes no event row for a connection no rule notifies anyone of', async () => {
    const connected = once(hub().tunnel.events, 'connected');
    const c = await connect();
    const connectionId = ((await connected)[0] as { connection_id: string }).connection_id;
    await disconnect(c);
    const mine = (await presenceEvents([w.daemonId])).filter(
      (e) => JSON.parse(e.payload).connection_id === connectionId,
    );
    assert.deepEqual(mine, []);
    // The daemon's row is the record of its presence.
    const d = await h.ok('daemons/get', { id: w.daemonId });
    assert.equal(d.data.status, 'offline');
  });

  it('many daemons connecting and leaving at once are each online, greeted and offline, with their events', async () => {
    await withPresenceRules(async () => {
      const n = 40;
      const made = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: `crowd-${i}` }),
        ),
      );
      const ids = made.map((m) => m.data.daemon_id as string);
      const crowd = await Promise.all(made.map((m) => connectDaemon(h.url, m.data.token)));
      const hellos = crowd.map((c) => c.hello);
      assert.deepEqual(
        hellos.map((x) => x.daemon_id),
        ids,
      );
      // Every hello carries the realm's ACL (read once for the connections greeted together).
      for (const x of hellos) assert.deepEqual(x.acl, hellos[0]!.acl);
      assert.ok(hellos[0]!.acl.length > 0);
      const status = async () =>
        (await hub().db.selectFrom('daemons').select(['id', 'status']).where('id', 'in', ids).execute()).map(
          (d) => d.status,
        );
      assert.deepEqual(await status(), Array(n).fill('online'));

      const gone = new Set<string>();
      const allOffline = new Promise<void>((resolve) => {
        const seen = (e: { daemon_id: string }) => {
          if (ids.includes(e.daemon_id)) gone.add(e.daemon_id);
          if (gone.size === n) {
            hub().tunnel.events.off('disconnected', seen);
            resolve();
          }
        };
        hub().tunnel.events.on('disconnected', seen);
      });
      await Promise.all(crowd.map((c) => c.close()));
      await allOffline;
      assert.deepEqual(await status(), Array(n).fill('offline'));
      const events = await presenceEvents(ids);
      const count = (type: string) => events.filter((e) => e.type === type).length;
      assert.deepEqual([count('daemon.connected'), count('daemon.disconnected')], [n, n]);
      assert.ok(events.every((e) => Number(e.deliveries) === 1));
    });
  });

  it('redelivers unacked commands after the hub process is replaced, with the same dispatch key', async () => {
    const c1 = await connect();
    const key = c1.hello.dispatch_key;
    const tx = await sendCommand(hub(), w.daemonId, 'runs/execute', { run_id: 'r9' });
    assert.equal((await c1.next('command')).tx_id, tx);
    const closed = once(c1.ws, 'close');
    await h.restart();
    assert.equal((await closed)[0], SERVICE_RESTART, 'a stopping hub says it is restarting');
    const off = await h.ok('daemons/get', { id: w.daemonId });
    assert.equal(off.data.status, 'offline');

    const c2 = await connect();
    assert.deepEqual(c2.hello.dispatch_key, key);
    const again = await c2.next('command');
    assert.equal(again.tx_id, tx);
    assert.deepEqual(again.body, { run_id: 'r9', tx_id: tx });
    c2.ack(again.tx_id, { reply: { started: true } });
    assert.equal((await hub().tunnel.waitForAck(tx)).status, 'ok');
    assert.equal((await loadCommand(hub().db, tx))?.attempts, 2);
  });

  it('a stopping hub refuses new connections at once, while its tunnels are still closing', async () => {
    const stopping = await startTestHub();
    const world = await buildWorld(stopping);
    const c = await connectDaemon(stopping.url, world.tokens.realm_token!);
    // This daemon reads nothing more, so it never answers the close frame: the hub keeps its tunnel
    // for the grace period, then cuts it.
    c.ws.pause();
    let disconnected = false;
    stopping.running.hub.tunnel.events.once('disconnected', () => {
      disconnected = true;
    });
    const server = stopping.running.app.server;
    const port = Number(new URL(stopping.url).port);
    const closed = stopping.close();
    while (server.listening) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(disconnected, false, 'the tunnel is still open when the hub stops listening');
    const dialled = await new Promise<Error | null>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(null);
      });
      s.once('error', resolve);
    });
    assert.equal((dialled as NodeJS.ErrnoException | null)?.code, 'ECONNREFUSED');
    await closed;
    assert.equal(disconnected, true);
    c.ws.terminate();
  });

  it('tunnels opening together each get what waited for them and what was written while they opened, without the scan', async () => {
    // A hub whose safety-net scan never runs here: only the opening and the wakes deliver.
    const quiet = await startTestHub({ config: { outboxScanMs: 600_000 } });
    try {
      const world = await buildWorld(quiet);
      const made = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          quiet.ok('realms/create_daemon_token', { realm_id: world.realmId, name: `opening-${i}` }),
        ),
      );
      const ids = made.map((m) => m.data.daemon_id as string);
      const qhub = quiet.running.hub;
      const written = new Map<string, string[]>(ids.map((id) => [id, []]));
      // Half of them have a command waiting before they connect.
      for (const id of ids.slice(0, 8)) {
        written.get(id)!.push((await enqueueCommand(qhub.db, qhub, id, 'teams/install', {})).tx_id);
      }
      // While they connect, each gets a command at every turn until its hello has arrived, and one
      // more after it: some land while its tunnel is being greeted.
      const greeted = new Set<string>();
      const connecting = made.map((m, i) =>
        connectDaemon(quiet.url, m.data.token).then((c) => {
          greeted.add(ids[i]!);
          return c;
        }),
      );
      let all: TunnelClient[] = [];
      let settled = false;
      const done = Promise.all(connecting)
        .then((cs) => {
          all = cs;
        })
        .finally(() => {
          settled = true;
        });
      while (!settled) {
        await Promise.all(
          ids
            .filter((id) => !greeted.has(id))
            .map(async (id) => written.get(id)!.push(await sendCommand(qhub, id, 'teams/install', {}))),
        );
        await new Promise((r) => setImmediate(r));
      }
      await done;
      try {
        for (const id of ids) written.get(id)!.push(await sendCommand(qhub, id, 'teams/install', {}));
        await Promise.all(
          all.map(async (c, i) => {
            const want = new Set(written.get(ids[i]!)!);
            const got = new Set<string>();
            while (got.size < want.size) {
              const cmd = await c.next('command', 5_000);
              assert.ok(want.has(cmd.tx_id), `${cmd.tx_id} was not written for ${ids[i]}`);
              got.add(cmd.tx_id);
            }
          }),
        );
      } finally {
        await Promise.all(all.map((c) => c.close()));
      }
    } finally {
      await quiet.close();
    }
  });

  it('marks the daemons of a group online in one statement, the later of two connections of one daemon winning', async () => {
    const other = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'group-mark' });
    const db = hub().db;
    await db.transaction().execute((trx) =>
      markConnected(
        trx,
        [
          { daemonId: w.daemonId, connectionId: 'conn-older' },
          { daemonId: other.data.daemon_id, connectionId: 'conn-other' },
          { daemonId: w.daemonId, connectionId: 'conn-newer' },
        ],
        1_234,
        // This running process: another's, with no row in hub_instances, would be an orphan that
        // the stale-instance pass marks offline under the test's feet.
        hub().tunnel.instanceId,
      ),
    );
    const rows = await db
      .selectFrom('daemons')
      .select(['id', 'status', 'connection_id', 'hub_instance_id', 'last_seen_at'])
      .where('id', 'in', [w.daemonId, other.data.daemon_id])
      .orderBy('id')
      .execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    assert.deepEqual(
      { ...byId.get(w.daemonId), last_seen_at: Number(byId.get(w.daemonId)!.last_seen_at) },
      {
        id: w.daemonId,
        status: 'online',
        connection_id: 'conn-newer',
        hub_instance_id: hub().tunnel.instanceId,
        last_seen_at: 1_234,
      },
    );
    assert.equal(byId.get(other.data.daemon_id)!.connection_id, 'conn-other');
    assert.equal(byId.get(other.data.daemon_id)!.status, 'online');
    // Left as a daemon with no tunnel would be.
    await db
      .updateTable('daemons')
      .set({ status: 'offline', connection_id: null, hub_instance_id: null })
      .where('id', 'in', [w.daemonId, other.data.daemon_id])
      .execute();
  });

  it('marks a group offline in one statement, each daemon only through the connection it is on', async () => {
    const [a, b, c] = await Promise.all(
      ['off-a', 'off-b', 'off-c'].map(async (name) => {
        const t = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name });
        return t.data.daemon_id as string;
      }),
    );
    const db = hub().db;
    const on = (id: string, connection: string) =>
      db
        .updateTable('daemons')
        // This running process, as above: not an orphan for the stale-instance pass.
        .set({ status: 'online', connection_id: connection, hub_instance_id: hub().tunnel.instanceId })
        .where('id', '=', id)
        .execute();
    await on(a!, 'a-current');
    await on(b!, 'b-newer');
    await on(c!, 'c-current');
    const marked = await db.transaction().execute((trx) =>
      markDisconnected(
        trx,
        [
          { daemonId: a!, connectionId: 'a-current' },
          // Replaced by a newer connection: stays online.
          { daemonId: b!, connectionId: 'b-older' },
          // Twice in the group: its older connection first, then the one it is on.
          { daemonId: c!, connectionId: 'c-older' },
          { daemonId: c!, connectionId: 'c-current' },
        ],
        5_678,
      ),
    );
    assert.deepEqual(marked, [true, false, false, true]);
    const rows = await db
      .selectFrom('daemons')
      .select(['id', 'status', 'connection_id', 'hub_instance_id', 'last_seen_at'])
      .where('id', 'in', [a!, b!, c!])
      .execute();
    const byId = new Map(rows.map((r) => [r.id, { ...r, last_seen_at: Number(r.last_seen_at) }]));
    for (const id of [a!, c!]) {
      assert.deepEqual(byId.get(id), {
        id,
        status: 'offline',
        connection_id: null,
        hub_instance_id: null,
        last_seen_at: 5_678,
      });
    }
    assert.equal(byId.get(b!)!.status, 'online');
    assert.equal(byId.get(b!)!.connection_id, 'b-newer');
    await db
      .updateTable('daemons')
      .set({ status: 'offline', connection_id: null, hub_instance_id: null })
      .where('id', '=', b!)
      .execute();
  });
});

describe('daemon tunnel heartbeat', () => {
  let h: TestHub;
  before(async () => {
    h = await startTestHub({ config: { tunnelPingMs: 50 } });
  });
  after(() => h.close());

  it('drops a peer that stops answering pings and marks it offline', async () => {
    const org = await createOrgWithOwner(h, 'beat');
    const dt = await h.ok('realms/create_daemon_token', { realm_id: org.defaultRealmId, name: 'mute' });
    const { WebSocket } = await import('ws');
    const offline = once(h.running.hub.tunnel.events, 'disconnected');
    const ws = new WebSocket(tunnelUrl(h.url), {
      headers: { authorization: `Bearer ${dt.data.token}` },
      autoPong: false,
    });
    const closed = once(ws, 'close');
    await closed;
    const [ev] = await offline;
    assert.equal(ev.daemon_id, dt.data.daemon_id);
    const d = await h.ok('daemons/get', { id: dt.data.daemon_id });
    assert.equal(d.data.status, 'offline');
  });
});

describe('daemon tunnel, when the hub cannot record a connection', () => {
  let h: TestHub;
  before(async () => {
    h = await startTestHub();
  });
  after(() => h.close());

  it('closes it with 1011 instead of leaving the daemon waiting for a hello', async () => {
    const org = await createOrgWithOwner(h, 'broken');
    const dt = await h.ok('realms/create_daemon_token', { realm_id: org.defaultRealmId, name: 'stranded' });
    // A rule sends the realm's daemon.connected events to a channel, and the event can no longer be
    // written: the presence transaction fails.
    await notifiedOf(h, org.defaultRealmId, ['daemon.connected']);
    await sql`drop table events${sql.raw(h.running.hub.dialect === 'postgres' ? ' cascade' : '')}`.execute(
      h.running.hub.db,
    );
    const { WebSocket } = await import('ws');
    const ws = new WebSocket(tunnelUrl(h.url), { headers: { authorization: `Bearer ${dt.data.token}` } });
    const messages: string[] = [];
    ws.on('message', (m) => messages.push(m.toString()));
    const [code] = await once(ws, 'close');
    assert.equal(code, 1011);
    assert.deepEqual(messages, [], 'no hello');
  });
});
