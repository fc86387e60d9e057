import { EventEmitter } from 'node:events';
import { CompiledQuery, type Insertable, type Kysely, type OperationNodeSource, sql } from 'kysely';
import type pg from 'pg';
import { isPostgres } from '../../db/index.js';
import { WITH_NEXT } from '../../db/pg-client.js';
import type { RunsTable } from '../../db/schema.js';
import { conflict } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { BusEventMap, BusHandlers, BusMessage, ClusterBus, NoticedCommand } from '../ports.js';

/**
 * The cluster bus: how hub processes sharing one database wake each other up. SQLite has one hub
 * process, so its bus is a no-op (`createLocalBus`); on PostgreSQL every process keeps one dedicated
 * connection (outside the pool) that LISTENs on two channels (`createPgBus`):
 *
 * - `svc_outbox`: payload = a daemon id, or JSON `{daemon_id, from, command}` (`outboxNotice`) when
 *   the command is small enough to travel in it. `enqueueCommand` sends it inside the transaction that
 *   writes the command (PostgreSQL delivers it at commit, never for a rolled-back command); the
 *   process holding that daemon's WebSocket sends the command from the notice, or delivers its
 *   pending commands from the outbox, at once.
 * - `svc_hub`: JSON `{from, type, …}` for the rest: realm ACL changes, "disconnect this daemon",
 *   "I wait for this command's ack" (`watch`) and that ack (`ack`), so an operation waiting on one
 *   process hears of an ack recorded by another. A process ignores its own messages.
 *
 * - `svc_runs`: payload = `<realm id> <run id> <what>`. A run's history or logs changed, in the
 *   writer's transaction (`writeAndNotifyRunChanged`, `notifyRunLogged`): `what` is the id of the
 *   transaction's first history entry of that run, or `log` when only its logs changed. The event
 *   streams of that run and realm read again at once, on every process (`runFeed`); a realm stream
 *   reads only for entries it has not read yet (src/hub/runs/realm-changes.ts).
 *
 * The channel names get `.<schema>` appended unless the schema is `public`, so deployments (and
 * test files) in different schemas of one database do not hear each other. A lost notification
 * costs latency only: the outbox scan resends unacknowledged commands, and after the LISTEN
 * connection comes back the bus asks for a full scan (`resync`).
 */

export const OUTBOX_CHANNEL = 'svc_outbox';
export const HUB_CHANNEL = 'svc_hub';
export const RUNS_CHANNEL = 'svc_runs';

/**
 * The largest notice that carries its command (PostgreSQL takes payloads under 8,000 bytes); a
 * larger command's notice names its daemon only.
 */
const NOTICE_MAX_BYTES = 7_000;

/**
 * The `svc_outbox` payload for a command written by process `from`: the command itself when it
 * fits, so that the process holding the daemon sends it without reading the outbox, and with it the
 * run an offer offers (`offered`) when that fits too.
 */
export function outboxNotice(
  daemonId: string,
  from: string,
  command: NoticedCommand,
  offered?: RunsTable,
): string {
  const fits = (text: string) => Buffer.byteLength(text) <= NOTICE_MAX_BYTES;
  if (offered) {
    const withRun = JSON.stringify({ daemon_id: daemonId, from, command: { ...command, offered } });
    if (fits(withRun)) return withRun;
  }
  const full = JSON.stringify({ daemon_id: daemonId, from, command });
  return fits(full) ? full : daemonId;
}

/**
 * What changed in a run (`runFeed`): the id of the first history entry a transaction wrote for it,
 * `LOGGED` when only its logs changed, or undefined when the notice does not say (a hub of an
 * earlier version wrote it).
 */
export type RunChange = string | typeof LOGGED | undefined;
/** A change of a run's logs only. */
export const LOGGED = 'log';

/**
 * Changes of runs in this process's database (`change`: realm id, run id, what changed), heard by
 * the event streams (src/hub/runs/runs.stream.ts). On SQLite the writer emits it itself; on
 * PostgreSQL it comes from `svc_runs` at commit, from whichever process wrote. A change of another
 * database in the same process (tests) only makes a stream read again and find nothing new.
 */
export const runFeed = new EventEmitter<{ change: [realmId: string, runId: string, what: RunChange] }>();
runFeed.setMaxListeners(0);

/** A run that changed in a transaction: `entry_id`, its first new history entry; null: its logs. */
export interface ChangedRun {
  realm_id: string;
  run_id: string;
  entry_id: string | null;
}

/** Emits a `svc_runs` payload on `runFeed` (one that names no realm or run is ignored). */
function emitChange(payload: string): void {
  const [realmId, runId, what] = payload.split(' ');
  if (realmId && runId) runFeed.emit('change', realmId, runId, what || undefined);
}

/**
 * The channel's name for the connection's schema (SQL, evaluated by PostgreSQL), of a base name given
 * as SQL: a quoted literal, or a column of the query.
 */
function channelOf(base: string): string {
  return `left(case when coalesce(current_schema(), 'public') = 'public' then ${base} else ${base} || '.' || current_schema() end, 63)`;
}
const channelExpr = (base: string) => channelOf(`'${base}'`);

/**
 * Tells the event streams of these runs and their realms, on every hub process, that their logs
 * changed. Call it in the transaction of the change. On PostgreSQL the notifications leave at
 * commit. On SQLite (one process) they are emitted once the transaction has committed (`send`).
 */
export async function notifyRunLogged(
  // biome-ignore lint/suspicious/noExplicitAny: works for any schema
  db: Kysely<any>,
  runs: readonly { realm_id: string; run_id: string }[],
): Promise<void> {
  await writeThenNotify(db, [], runNotices(runs.map((r) => ({ ...r, entry_id: null }))));
}

/** `writes`, then the notices of the runs whose history (or logs) they change (see `writeThenNotify`). */
export async function writeAndNotifyRunChanged(
  // biome-ignore lint/suspicious/noExplicitAny: works for any schema
  db: Kysely<any>,
  writes: readonly Write[],
  runs: readonly ChangedRun[],
): Promise<void> {
  await writeThenNotify(db, writes, runNotices(runs));
}

/** A write built but not yet run (an insert…), that nothing in its transaction reads back. */
export type Write = OperationNodeSource & {
  execute(): Promise<unknown>;
  /**
   * PostgreSQL: the write's SQL, its parameters numbered from `$first`, made without building a
   * query (`insertRows`); null when it writes nothing.
   */
  pgText?(first: number): { text: string; parameters: unknown[] } | null;
};

/**
 * An insert of whole rows into a table that no cache watches (src/db/watch-writes.ts), as a `Write`
 * for the hot tables (history, events, commands). On SQLite each row is one statement whose SQL is
 * made once per table and columns: no query building, and better-sqlite3 reuses the prepared
 * statement; a column left undefined is written as null. On PostgreSQL it is one multi-row insert,
 * its text made from the rows (`pgText`: building and compiling it with Kysely, for every kept write
 * of every transaction, was a twentieth of the hub's CPU on a run's way); a column left undefined
 * takes its default, as in Kysely's multi-row insert. Every row has the same columns, in the same order.
 */
export function insertRows<D, T extends keyof D & string>(
  db: Kysely<D>,
  table: T,
  rows: readonly Insertable<D[T]>[],
): Write {
  const builder = () => db.insertInto(table).values(rows as never);
  return {
    toOperationNode: () => builder().toOperationNode(),
    pgText(first) {
      if (rows.length === 0) return null;
      const columns = Object.keys(rows[0]!);
      const parameters: unknown[] = [];
      const tuples = rows.map((row) => {
        const values = row as Record<string, unknown>;
        const slots = columns.map((c) => {
          const v = values[c];
          if (v === undefined) return 'default';
          parameters.push(v);
          return `$${first + parameters.length - 1}`;
        });
        return `(${slots.join(', ')})`;
      });
      return { text: `${insertHead(table, columns)} values ${tuples.join(', ')}`, parameters };
    },
    async execute() {
      if (rows.length === 0) return;
      if (isPostgres(db)) return builder().execute();
      const columns = Object.keys(rows[0]!);
      const text = insertSql(table, columns);
      for (const row of rows) {
        const values = row as Record<string, unknown>;
        await db.executeQuery(
          CompiledQuery.raw(
            text,
            columns.map((c) => values[c] ?? null),
          ),
        );
      }
    },
  };
}

/** `insert into "table" ("a", "b")`, made once per table and columns. */
const insertHeads = new Map<string, string>();
function insertHead(table: string, columns: readonly string[]): string {
  const key = `${table}(${columns.join(',')})`;
  let text = insertHeads.get(key);
  if (!text) {
    const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;
    text = `insert into ${quote(table)} (${columns.map(quote).join(', ')})`;
    insertHeads.set(key, text);
  }
  return text;
}

/** `insert into "table" ("a", "b") values (?, ?)` (SQLite), made once per table and columns. */
const insertSqlCache = new Map<string, string>();
function insertSql(table: string, columns: readonly string[]): string {
  const key = `${table}(${columns.join(',')})`;
  let text = insertSqlCache.get(key);
  if (!text) {
    text = `${insertHead(table, columns)} values (${columns.map(() => '?').join(', ')})`;
    insertSqlCache.set(key, text);
  }
  return text;
}

/** A notification on one of the bus's channels (its base name: OUTBOX_CHANNEL or RUNS_CHANNEL). */
interface Notice {
  channel: string;
  payload: string;
}

/**
 * One `svc_runs` notice per run: it names the first of the run's new history entries (ids sort in
 * the order they were made), or `LOGGED` when none.
 */
function runNotices(runs: readonly ChangedRun[]): Notice[] {
  const first = new Map<string, string | null>();
  for (const r of runs) {
    const key = `${r.realm_id} ${r.run_id}`;
    const had = first.get(key);
    if (had === undefined) first.set(key, r.entry_id);
    else if (r.entry_id !== null && (had === null || r.entry_id < had)) first.set(key, r.entry_id);
  }
  return [...first].map(([key, entry]) => ({ channel: RUNS_CHANNEL, payload: `${key} ${entry ?? LOGGED}` }));
}

/** The notices a transaction kept, those of one run merged into one (`runNotices`). */
function mergedNotices(notices: readonly Notice[]): readonly Notice[] {
  const runs = notices.filter((n) => n.channel === RUNS_CHANNEL);
  if (runs.length < 2) return notices;
  const merged = runNotices(
    runs.map((n) => {
      const [realm_id = '', run_id = '', what] = n.payload.split(' ');
      return { realm_id, run_id, entry_id: what === LOGGED || !what ? null : what };
    }),
  );
  return [...notices.filter((n) => n.channel !== RUNS_CHANNEL), ...merged];
}

/** Writes and notices kept until the end of their transaction (PostgreSQL), by transaction. */
const kept = new WeakMap<object, { writes: Write[]; notices: Notice[] }>();

/**
 * From now on, `writeThenNotify` in this transaction keeps its writes and notices until
 * `flushWrites`, which the transaction calls before it commits (src/hub/daemons/commands.ts, `inTx`).
 * PostgreSQL only: there they all go in one statement, which leaves with the transaction's `commit`
 * (src/db/pg-client.ts `WITH_NEXT`): one round trip for the writes and the commit instead of one
 * each. On SQLite, where a statement costs no round trip, nothing is kept. Guarded writes such a
 * transaction makes with `expectOne` leave with its next statement.
 */
// biome-ignore lint/suspicious/noExplicitAny: works for any schema
export function keepWrites(trx: Kysely<any>): void {
  if (isPostgres(trx)) kept.set(trx, { writes: [], notices: [] });
}

/** Sends what `keepWrites` kept in this transaction. */
// biome-ignore lint/suspicious/noExplicitAny: works for any schema
export async function flushWrites(trx: Kysely<any>): Promise<void> {
  const k = kept.get(trx);
  if (!k) return;
  kept.delete(trx);
  await send(trx, k.writes, mergedNotices(k.notices), WITH_NEXT);
}

/**
 * Runs `writes`, then sends `notices`; in a transaction that keeps its writes (`keepWrites`), at its
 * end. On PostgreSQL that is one statement: the writes become data-modifying CTEs, which PostgreSQL
 * always runs, and the notices its query (they leave at commit). On SQLite the writes run one by one
 * and the notices of runs are emitted in this process (`runFeed`).
 */
export async function writeThenNotify(
  // biome-ignore lint/suspicious/noExplicitAny: works for any schema
  db: Kysely<any>,
  writes: readonly Write[],
  notices: readonly Notice[],
): Promise<void> {
  const k = kept.get(db);
  if (!k) return send(db, writes, notices);
  k.writes.push(...writes);
  k.notices.push(...notices);
  // A transaction that writes a great deal (a sweep over hundreds of runs) makes what it kept into
  // statements of a bounded size, well under PostgreSQL's limit of parameters per statement; they all
  // leave with the commit.
  if (k.writes.length >= MAX_KEPT_WRITES) {
    await send(db, k.writes.splice(0), mergedNotices(k.notices.splice(0)), WITH_NEXT);
  }
}

/**
 * A guarded write's statement, with a `returning` clause (its rows are the rows it changed), to a
 * table no cache watches (src/db/watch-writes.ts): kept, it is sent as text, past the plugins.
 */
export interface GuardedWrite {
  compile(): CompiledQuery;
  execute(): Promise<unknown[]>;
}

/** The SQLSTATE `svc_expect` raises (migration 0021): an expected row was not there. */
const EXPECTED_ROW_MISSING = 'SV409';

/**
 * A guarded write that must change exactly one row, or the whole transaction is refused with
 * `conflict(message)`. In a transaction that keeps its writes (PostgreSQL) nobody waits for it: it
 * leaves with the transaction's next statement (src/db/pg-client.ts `WITH_NEXT`) as a statement
 * that counts the rows it changed and raises when they are not one (`svc_expect`), so the
 * transaction fails there and `refusedWrite` makes that failure the conflict. Elsewhere it runs at
 * once. Either way nothing that follows it in the transaction sees the row otherwise than written.
 */
export async function expectOne(
  // biome-ignore lint/suspicious/noExplicitAny: works for any schema
  db: Kysely<any>,
  write: GuardedWrite,
  message: string,
): Promise<void> {
  if (kept.has(db)) {
    const { sql: text, parameters } = write.compile();
    await keepCheck(
      db,
      CompiledQuery.raw(
        `with "expected" as (${text}) select svc_expect(count(*) = 1, $${parameters.length + 1}) as ok from "expected"`,
        [...parameters, message],
      ),
    );
    return;
  }
  if ((await write.execute()).length !== 1) throw conflict(message);
}

/**
 * A statement that checks its own outcome with `svc_expect` (it raises, and the transaction is
 * refused with its conflict, when the check fails), sent with the next statement of a transaction
 * that keeps its writes (PostgreSQL, `keepWrites`). Nobody waits for it, which is the point: a step
 * whose outcome only decides whether the transaction commits costs no round trip of its own.
 */
export async function keepCheck(
  // biome-ignore lint/suspicious/noExplicitAny: works for any schema
  db: Kysely<any>,
  check: CompiledQuery,
): Promise<void> {
  if (!kept.has(db)) throw new Error('a kept check needs a transaction that keeps its writes');
  await db.executeQuery(CompiledQuery.raw(`${WITH_NEXT}${check.sql}`, [...check.parameters]));
}

/** Rethrows a transaction's failure: an `expectOne` whose row was not there as its conflict, the rest as is. */
export function refusedWrite(err: unknown): never {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e?.code === EXPECTED_ROW_MISSING && typeof e.message === 'string') throw conflict(e.message);
  throw err;
}

/**
 * Kept writes sent together at most: each has from a few parameters to a thousand (a group of 100 new
 * runs), and PostgreSQL takes at most 65,535 per statement.
 */
const MAX_KEPT_WRITES = 16;

/** Tells this process's event streams of the runs that changed (SQLite: one process). */
function emitChanges(changes: readonly Notice[]): void {
  for (const n of changes) emitChange(n.payload);
}

/** Runs `writes` then sends `notices`; on PostgreSQL as one statement, which starts with `prefix`. */
async function send(
  // biome-ignore lint/suspicious/noExplicitAny: works for any schema
  db: Kysely<any>,
  writes: readonly Write[],
  notices: readonly Notice[],
  prefix = '',
): Promise<void> {
  if (!isPostgres(db)) {
    for (const w of writes) await w.execute();
    const changes = notices.filter((n) => n.channel === RUNS_CHANNEL);
    // Told once this turn is over: by then the transaction has committed and what it sends (an
    // offer, the request's reply) has left, so the streams' reads do not come before them.
    if (changes.length > 0) setImmediate(emitChanges, changes);
    return;
  }
  if (writes.length === 0 && notices.length === 0) return;
  if (writes.every((w) => w.pgText)) {
    // One statement made as text: no query building (`insertRows`).
    const parameters: unknown[] = [];
    const ctes: string[] = [];
    for (const w of writes) {
      const part = w.pgText!(parameters.length + 1);
      if (!part) continue;
      ctes.push(`"w${ctes.length}" as (${part.text})`);
      parameters.push(...part.parameters);
    }
    let query = 'select 1';
    if (notices.length > 0) {
      const n = parameters.length;
      query = `select pg_notify(${channelOf('n.c')}, n.p) from unnest($${n + 1}::text[], $${n + 2}::text[]) as n(c, p)`;
      parameters.push(
        notices.map((x) => x.channel),
        notices.map((x) => x.payload),
      );
    }
    const text = ctes.length > 0 ? `with ${ctes.join(', ')} ${query}` : query;
    await db.executeQuery(CompiledQuery.raw(prefix + text, parameters));
    return;
  }
  const ctes = writes.map((w, i) => sql`${sql.id(`w${i}`)} as (${w})`);
  const channels = notices.map((n) => n.channel);
  const payloads = notices.map((n) => n.payload);
  const query = notices.length
    ? sql`select pg_notify(${sql.raw(channelOf('n.c'))}, n.p) from unnest(${channels}::text[], ${payloads}::text[]) as n(c, p)`
    : sql`select 1`;
  const compiled = (ctes.length ? sql`with ${sql.join(ctes)} ${query}` : query).compile(db);
  await db.executeQuery(
    prefix ? CompiledQuery.raw(prefix + compiled.sql, [...compiled.parameters]) : compiled,
  );
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
  let channels = { outbox: '', hub: '', runs: '' };
  let closed = false;
  let attempt = 0;
  let retry: NodeJS.Timeout | null = null;
  let ping: NodeJS.Timeout | null = null;
  let connecting: Promise<void> | null = null;

  function onNotification(n: pg.Notification) {
    if (!handlers || !n.payload) return;
    if (n.channel === channels.outbox) {
      if (!n.payload.startsWith('{')) return handlers.wake(n.payload);
      try {
        const notice = JSON.parse(n.payload) as { daemon_id: string; from: string; command: NoticedCommand };
        // Written here: sent here already, or left to this process's delivery.
        return notice.from === o.instanceId
          ? handlers.wake(notice.daemon_id)
          : handlers.wake(notice.daemon_id, notice.command);
      } catch {
        o.log.warn(
          { payload: n.payload.slice(0, 200) },
          'cluster bus: an outbox notice that is not JSON; ignored',
        );
        return;
      }
    }
    if (n.channel === channels.runs) {
      // Told once this turn is over, as on SQLite (`send`): the commit's own reply may be read in
      // the same turn as its notice, and what the commit sends (an offer, the request's reply)
      // should leave before the streams' reads.
      setImmediate(emitChange, n.payload);
      return;
    }
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
    const { default: pg } = await import('pg');
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
      const { rows } = await client.query<{ outbox: string; hub: string; runs: string }>(
        `select ${channelExpr(OUTBOX_CHANNEL)} as outbox, ${channelExpr(HUB_CHANNEL)} as hub, ${channelExpr(RUNS_CHANNEL)} as runs`,
      );
      channels = rows[0]!;
      await client.query(`LISTEN ${quoteIdent(channels.outbox)}`);
      await client.query(`LISTEN ${quoteIdent(channels.hub)}`);
      await client.query(`LISTEN ${quoteIdent(channels.runs)}`);
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
