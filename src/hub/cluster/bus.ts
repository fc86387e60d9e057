import { EventEmitter } from 'node:events';
import { type Kysely, PostgresAdapter, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from '../../shared/logger.js';
import type { BusEventMap, BusHandlers, BusMessage, ClusterBus } from '../ports.js';

/**
 * The cluster bus: how hub processes sharing one database wake each other up. SQLite has one hub
 * process, so its bus is a no-op (`createLocalBus`); on PostgreSQL every process keeps one dedicated
 * connection (outside the pool) that LISTENs on two channels (`createPgBus`):
 *
 * - `svc_outbox`: payload = a daemon id. `enqueueCommand` sends it inside the transaction that writes
 *   the command (PostgreSQL delivers it at commit, never for a rolled-back command); the process
 *   holding that daemon's WebSocket delivers its pending commands at once.
 * - `svc_hub`: JSON `{from, type, …}` for the rest: realm ACL changes, "disconnect this daemon",
 *   "I wait for this command's ack" (`watch`) and that ack (`ack`), so an operation waiting on one
 *   process hears of an ack recorded by another. A process ignores its own messages.
 *
 * Both channel names get `.<schema>` appended unless the schema is `public`, so deployments (and
 * test files) in different schemas of one database do not hear each other. A lost notification
 * costs latency only: the outbox scan resends unacknowledged commands, and after the LISTEN
 * connection comes back the bus asks for a full scan (`resync`).
 */

export const OUTBOX_CHANNEL = 'svc_outbox';
export const HUB_CHANNEL = 'svc_hub';

/** The channel's name for the connection's schema (SQL, evaluated by PostgreSQL). */
function channelExpr(base: string): string {
  return `left(case when coalesce(current_schema(), 'public') = 'public' then '${base}' else '${base}.' || current_schema() end, 63)`;
}

// biome-ignore lint/suspicious/noExplicitAny: works for any schema
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * Wakes the process holding the daemon's connection (PostgreSQL; nothing on SQLite). Call it in the
 * transaction that writes the command: the notification leaves at commit.
 */
// biome-ignore lint/suspicious/noExplicitAny: works for any schema
export async function notifyOutbox(db: Kysely<any>, daemonId: string): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`select pg_notify(${sql.raw(channelExpr(OUTBOX_CHANNEL))}, ${daemonId})`.execute(db);
}

/** The bus of a single hub process (SQLite): everything is already in this process. */
export function createLocalBus(): ClusterBus {
  return {
    kind: 'local',
    listening: true,
    events: new EventEmitter<BusEventMap>(),
    start: async () => {},
    publish: async () => {},
    close: async () => {},
  };
}

export interface PgBusOptions {
  /** The pool, for publishing. */
  // biome-ignore lint/suspicious/noExplicitAny: works for any schema
  db: Kysely<any>;
  /** Connection settings of the dedicated LISTEN connection (same database and schema). */
  client: pg.ClientConfig;
  /** This process; its own control messages are ignored. */
  instanceId: string;
  log: Logger;
  /** The LISTEN connection is checked (`select 1`) this often; a failed check reconnects. */
  pingMs: number;
  /** Reconnect delays: full jitter in [0, min(cap, base · 2^attempt)). */
  backoff?: { baseMs: number; capMs: number };
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

export function createPgBus(o: PgBusOptions): ClusterBus {
  const events = new EventEmitter<BusEventMap>();
  const backoff = o.backoff ?? { baseMs: 100, capMs: 10_000 };
  let handlers: BusHandlers | null = null;
  let current: { client: pg.Client; drop(err: Error | null): void } | null = null;
  let channels = { outbox: '', hub: '' };
  let closed = false;
  let attempt = 0;
  let retry: NodeJS.Timeout | null = null;
  let ping: NodeJS.Timeout | null = null;
  let connecting: Promise<void> | null = null;

  function onNotification(n: pg.Notification) {
    if (!handlers || !n.payload) return;
    if (n.channel === channels.outbox) return handlers.wake(n.payload);
    if (n.channel !== channels.hub) return;
    let parsed: { from?: unknown } & Partial<BusMessage>;
    try {
      parsed = JSON.parse(n.payload);
    } catch {
      o.log.warn({ payload: n.payload }, 'cluster bus: a message that is not JSON; ignored');
      return;
    }
    if (parsed.from === o.instanceId) return;
    const { from: _from, ...msg } = parsed;
    handlers.message(msg as BusMessage);
  }

  async function connect(): Promise<void> {
    const client = new pg.Client({
      ...o.client,
      // Shows in pg_stat_activity: which hub process this LISTEN connection belongs to.
      application_name: `svc-hub-listen ${o.instanceId}`.slice(0, 63),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      query_timeout: 10_000,
    });
    let dead = false;
    const drop = (err: Error | null) => {
      if (dead) return;
      dead = true;
      const wasUp = current?.client === client;
      if (wasUp) current = null;
      client.end().catch(() => {});
      if (!wasUp) return;
      if (!closed) o.log.warn({ err }, 'cluster bus: the LISTEN connection dropped; reconnecting');
      events.emit('disconnected');
      schedule();
    };
    client.on('error', (err) => drop(err));
    client.on('end', () => drop(null));
    client.on('notification', onNotification);
    try {
      await client.connect();
      const { rows } = await client.query<{ outbox: string; hub: string }>(
        `select ${channelExpr(OUTBOX_CHANNEL)} as outbox, ${channelExpr(HUB_CHANNEL)} as hub`,
      );
      channels = rows[0]!;
      await client.query(`LISTEN ${quoteIdent(channels.outbox)}`);
      await client.query(`LISTEN ${quoteIdent(channels.hub)}`);
    } catch (err) {
      drop(err as Error);
      throw err;
    }
    if (closed || dead) {
      drop(null);
      return;
    }
    current = { client, drop };
    attempt = 0;
    o.log.debug({ channels }, 'cluster bus: listening');
    events.emit('connected');
    handlers?.resync();
  }

  function schedule() {
    if (closed || retry || connecting) return;
    const ceiling = Math.min(backoff.capMs, backoff.baseMs * 2 ** Math.min(attempt++, 30));
    retry = setTimeout(
      () => {
        retry = null;
        connecting = connect()
          .catch((err) => o.log.warn({ err }, 'cluster bus: could not reconnect the LISTEN connection'))
          .finally(() => {
            connecting = null;
            if (!current) schedule();
          });
      },
      Math.floor(Math.random() * ceiling),
    );
    retry.unref();
  }

  return {
    kind: 'postgres',
    get listening() {
      return current !== null;
    },
    events,
    async start(h) {
      handlers = h;
      try {
        await connect();
      } catch (err) {
        throw new Error(`could not open the PostgreSQL LISTEN connection: ${(err as Error).message}`);
      }
      ping = setInterval(() => {
        const c = current;
        if (!c) return;
        c.client.query('select 1').catch((err: Error) => c.drop(err));
      }, o.pingMs);
      ping.unref();
    },
    async publish(msg) {
      const payload = JSON.stringify({ from: o.instanceId, ...msg });
      await sql`select pg_notify(${sql.raw(channelExpr(HUB_CHANNEL))}, ${payload})`.execute(o.db);
    },
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      if (ping) clearInterval(ping);
      retry = null;
      ping = null;
      await connecting;
      const c = current;
      current = null;
      if (c) await c.client.end().catch(() => {});
    },
  };
}
