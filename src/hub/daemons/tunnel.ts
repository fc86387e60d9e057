import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { AppError, HUB_STATUS } from '../../shared/errors.js';
import { SERVICE_RESTART } from '../../shared/protocol.js';
import { createLocalBus } from '../cluster/bus.js';
import { errorBody } from '../http/errors.js';
import { BODY_LIMIT } from '../http/limits.js';
import type { BusHandlers, ClusterBus, CommandResult, Tunnel, TunnelEventMap } from '../ports.js';
import {
  type Conn,
  canSendNow,
  flush,
  noticedSent,
  openConnection,
  pushRealmAcl,
  sendNoticed,
  sendNow,
  type TunnelDeps,
  TunnelSocket,
  type TunnelState,
  waitingOnOpen,
} from './connection.js';
import { loadDispatchKeys } from './dispatch.js';
import { commandResult, daemonsWithDueCommands, loadCommand } from './outbox.repo.js';
import { createPresence } from './presence.js';
import { authenticateUpgrade, CONNECT_PATH, rejectUpgrade } from './upgrade.js';

const CLOSE_GRACE_MS = 1_000;

/**
 * Creates this process's tunnel (loading or creating the dispatch key pair) and starts listening on
 * the cluster bus (`cluster.bus`, local by default). No timers yet.
 */
/**
 * A peer hanging up mid-handshake is not our fault. Declared out here: a closure made in the upgrade
 * handler would keep its request (headers and all) alive as long as the socket.
 */
const ignoreError = () => {};

export async function createTunnel(
  deps: TunnelDeps,
  cluster: { bus?: ClusterBus; instanceId?: string } = {},
): Promise<Tunnel> {
  const keys = await loadDispatchKeys(deps.db, deps.now, deps.cipher);
  const bus = cluster.bus ?? createLocalBus();
  const instanceId = cluster.instanceId ?? deps.newId();
  const events = new EventEmitter<TunnelEventMap>();
  events.setMaxListeners(0);
  const conns = new Map<string, Conn>();
  const inflight = new Set<Promise<unknown>>();
  const waiters = new Map<string, Set<(r: CommandResult | Error) => void>>();
  const timers: NodeJS.Timeout[] = [];
  let closing: Promise<void> | null = null;
  let wss: WebSocketServer | null = null;

  const state: TunnelState = {
    deps,
    keys,
    instanceId,
    conns,
    events,
    track(p: Promise<unknown>, what: string) {
      const q = p.catch((err) => deps.log.error({ err }, `${what} failed`));
      inflight.add(q);
      void q.finally(() => inflight.delete(q));
    },
    calls: null,
    acks: [],
    recordingAcks: false,
    ackWindow: null,
    awaited: (txId) => waiters.has(txId) || watched.has(txId),
    presence: createPresence(deps, instanceId),
    aclReads: new Map(),
    waitingOnOpen: waitingOnOpen(deps),
    sentRecords: noticedSent(deps),
  };

  /**
   * Commands a waitForAck on another process is waiting for (tx_id → forget after): their ack is
   * published on the bus. Only these: most commands have no waiter, and their acks stay local.
   */
  const watched = new Map<string, number>();
  const WATCH_TTL_MS = 10 * 60_000;
  const publishAck = (txId: string) => state.track(bus.publish({ type: 'ack', tx_id: txId }), 'ack publish');

  events.on('ack', ({ path: _path, ...result }) => {
    if (watched.delete(result.tx_id)) publishAck(result.tx_id);
    const set = waiters.get(result.tx_id);
    if (!set) return;
    waiters.delete(result.tx_id);
    // The command's result, as a waiter on another process reads it from the outbox.
    for (const w of set) w(result);
  });

  /** Another process waits for this command's ack: publish it when it comes, or now if it came. */
  async function watch(txId: string) {
    const at = deps.now();
    if (watched.size > 1_000) for (const [k, until] of watched) if (until < at) watched.delete(k);
    watched.set(txId, at + WATCH_TTL_MS);
    const row = await loadCommand(deps.db, txId);
    if (row && commandResult(row) && watched.delete(txId)) publishAck(txId);
  }

  /** An ack recorded by another process: settle this process's waiters from the stored row. */
  async function ackedElsewhere(txId: string) {
    if (!waiters.has(txId)) return;
    const row = await loadCommand(deps.db, txId);
    const r = row ? commandResult(row) : null;
    const set = r ? waiters.get(txId) : undefined;
    if (!r || !set) return;
    waiters.delete(txId);
    for (const w of set) w(r);
  }

  /** Pushes the ACL to the daemons connected to this process only. */
  async function pushLocalAcl(scope: { realmId?: string; orgId?: string }) {
    const realms = new Set<string>();
    for (const c of conns.values()) {
      if (scope.realmId !== undefined && c.realmId !== scope.realmId) continue;
      if (scope.orgId !== undefined && c.orgId !== scope.orgId) continue;
      realms.add(c.realmId);
    }
    await Promise.all([...realms].map((r) => pushRealmAcl(state, r)));
  }

  const busHandlers: BusHandlers = {
    wake: (daemonId, command) => tunnel.wake(daemonId, command),
    message(msg) {
      if (msg.type === 'ack') state.track(ackedElsewhere(msg.tx_id), 'remote ack');
      else if (msg.type === 'watch') state.track(watch(msg.tx_id), 'remote wait');
      else if (msg.type === 'disconnect') conns.get(msg.daemon_id)?.ws.close(4001, msg.reason.slice(0, 120));
      else if (msg.type === 'acl') {
        const scope = {
          ...(msg.realm_id ? { realmId: msg.realm_id } : {}),
          ...(msg.org_id ? { orgId: msg.org_id } : {}),
        };
        state.track(pushLocalAcl(scope), 'remote ACL push');
      }
    },
    // Notifications may have been missed while the bus was down: every ACL, then every due command.
    resync() {
      if (closing) return;
      state.track(
        (async () => {
          await pushLocalAcl({});
          await scan();
        })(),
        'resync after the bus reconnected',
      );
    },
  };

  function heartbeat() {
    for (const conn of conns.values()) {
      if (!conn.alive) {
        deps.log.info({ daemon_id: conn.daemonId }, 'daemon missed a heartbeat; dropping its connection');
        conn.ws.terminate();
        continue;
      }
      conn.alive = false;
      conn.ws.ping();
    }
  }

  /** The safety net: connected daemons with commands never sent or not sent recently. */
  async function scan() {
    const ready = [...conns.values()].filter((c) => c.ready && !c.closed && !c.flushing);
    for (let i = 0; i < ready.length; i += 500) {
      const chunk = ready.slice(i, i + 500).map((c) => c.daemonId);
      const due = await daemonsWithDueCommands(deps.db, chunk, deps.now() - deps.config.outboxResendMs);
      for (const daemonId of due) {
        const conn = conns.get(daemonId);
        if (conn) flush(state, conn);
      }
    }
  }

  async function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    socket.on('error', ignoreError);
    if (new URL(req.url ?? '/', 'http://hub').pathname !== CONNECT_PATH) {
      return rejectUpgrade(socket, 'not_found', `no WebSocket endpoint at ${req.url}`);
    }
    const auth = await authenticateUpgrade(deps, req.headers.authorization);
    if ('error' in auth) return rejectUpgrade(socket, auth.error.code, auth.error.message);
    if (closing || !wss) return rejectUpgrade(socket, 'internal_error', 'the hub is shutting down');
    if (socket.destroyed) return;
    // Held until the hello is ready (connection.ts `greet`), which then leaves with the 101 in one
    // write. A refused handshake's reply is flushed by its `end()`.
    socket.cork();
    wss.handleUpgrade(req, socket, head, (ws) => {
      const at = deps.now();
      openConnection(state, {
        id: deps.newId(),
        ws: ws as TunnelSocket,
        daemonId: auth.daemon.id,
        realmId: auth.realmId,
        orgId: auth.orgId,
        authorization: req.headers.authorization ?? '',
        socket: req.socket,
        openedAt: at,
        alive: true,
        lastTouchAt: at,
        ready: false,
        closed: false,
        aclStale: false,
        opening: null,
        flushing: null,
        dirty: false,
      });
    });
  }

  const tunnel: Tunnel = {
    keys,
    instanceId,
    bus,
    events,
    isConnected: (daemonId) => conns.get(daemonId)?.ready === true,
    wake(daemonId, command) {
      const conn = conns.get(daemonId);
      if (!conn) return;
      // Its claim will come here: made ahead with the run the notice carried (src/hub/runs/claimed-items.ts).
      if (command?.offered) deps.claims.offered(command.offered);
      if (command) sendNoticed(state, conn, command);
      else flush(state, conn);
    },
    canSendNow: (daemonId) => canSendNow(conns.get(daemonId)),
    sendNow(daemonId, commands) {
      const conn = conns.get(daemonId);
      if (conn) state.track(sendNow(state, conn, commands), 'command send');
    },
    async pushAcl(scope) {
      await Promise.all([
        pushLocalAcl(scope),
        bus.publish({
          type: 'acl',
          ...(scope.realmId !== undefined ? { realm_id: scope.realmId } : {}),
          ...(scope.orgId !== undefined ? { org_id: scope.orgId } : {}),
        }),
      ]);
    },
    disconnect(daemonId, reason) {
      const conn = conns.get(daemonId);
      if (conn) conn.ws.close(4001, reason.slice(0, 120));
      else
        state.track(bus.publish({ type: 'disconnect', daemon_id: daemonId, reason }), 'disconnect publish');
    },
    disconnectAll(reason) {
      for (const c of conns.values()) c.ws.close(SERVICE_RESTART, reason.slice(0, 120));
    },
    waitForAck(txId, timeoutMs = 30_000) {
      return new Promise<CommandResult>((resolve, reject) => {
        const set = waiters.get(txId) ?? new Set();
        waiters.set(txId, set);
        const done = (r: CommandResult | Error) => {
          clearTimeout(timer);
          set.delete(done);
          if (set.size === 0 && waiters.get(txId) === set) waiters.delete(txId);
          if (r instanceof Error) reject(r);
          else resolve(r);
        };
        const timer = setTimeout(
          () => done(new Error(`no ack for ${txId} within ${timeoutMs} ms`)),
          timeoutMs,
        );
        set.add(done);
        // Registered first, then checked: an ack between the two is not missed.
        loadCommand(deps.db, txId).then(
          (row) => {
            if (!row) return done(new Error(`unknown command ${txId}`));
            const r = commandResult(row);
            if (r) return done(r);
            // The daemon may be connected to another process (now or by the time it acks).
            if (bus.kind !== 'local') {
              state.track(bus.publish({ type: 'watch', tx_id: txId }), 'wait publish');
            }
          },
          (err: Error) => done(err),
        );
      });
    },
    attach(app, calls) {
      state.calls = calls;
      wss = new WebSocketServer({ noServer: true, maxPayload: BODY_LIMIT, WebSocket: TunnelSocket });
      // A plain GET (no Upgrade header) reaches Fastify: answer it in the hub's error shapes.
      app.get(CONNECT_PATH, async (req, reply) => {
        const auth = await authenticateUpgrade(deps, req.headers.authorization);
        const { code, message } =
          'error' in auth ? auth.error : { code: 'bad_request' as const, message: 'use a WebSocket upgrade' };
        return reply.status(HUB_STATUS[code]).send(errorBody(new AppError(code, message)));
      });
      app.server.on('upgrade', (req, socket, head) => {
        const p = onUpgrade(req, socket, head).catch((err) => {
          deps.log.error({ err }, 'tunnel upgrade failed');
          rejectUpgrade(socket, 'internal_error', 'internal error');
        });
        state.track(p, 'tunnel upgrade');
      });
      // Before Fastify closes the server: open WebSockets would keep server.close() waiting. New
      // connections are refused from the start of it (Fastify's own close of the server, after the
      // tunnels', then finds it closed): a daemon that dials while thousands of tunnels close is
      // told at once, instead of waiting in the listen backlog to be reset when the server closes.
      app.addHook('preClose', () => {
        app.server.close(() => {});
        return tunnel.close();
      });
      timers.push(setInterval(heartbeat, deps.config.tunnelPingMs));
      timers.push(setInterval(() => state.track(scan(), 'outbox scan'), deps.config.outboxScanMs));
      for (const t of timers) t.unref();
    },
    close() {
      closing ??= (async () => {
        for (const t of timers) clearInterval(t);
        const open = [...conns.values()];
        await Promise.all(
          open.map(
            (c) =>
              new Promise<void>((resolve) => {
                if (c.ws.readyState === c.ws.CLOSED) return resolve();
                const timer = setTimeout(() => c.ws.terminate(), CLOSE_GRACE_MS);
                c.ws.once('close', () => {
                  clearTimeout(timer);
                  resolve();
                });
                // 1012: daemons come back within seconds of the restart (their backoff's short ceiling).
                c.ws.close(SERVICE_RESTART, 'hub stopping');
              }),
          ),
        );
        // Bookkeeping started by the closes (offline, events) and anything else in flight.
        while (inflight.size > 0) await Promise.all([...inflight]);
        for (const set of waiters.values()) for (const w of set) w(new Error('the tunnel is closed'));
        await new Promise<void>((resolve) => (wss ? wss.close(() => resolve()) : resolve()));
        await bus.close();
      })();
      return closing;
    },
  };
  await bus.start(busHandlers);
  return tunnel;
}
