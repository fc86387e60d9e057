import { type Kysely, sql } from 'kysely';
import { type DB, isPostgres } from '../../db/index.js';
import { oneOf, prepared } from '../../db/prepared.js';
import type { CommandOutboxTable, RunsTable } from '../../db/schema.js';
import { merged } from '../../shared/merged.js';
import type { AckFrame } from '../../shared/protocol.js';
import { insertRows, OUTBOX_CHANNEL, outboxNotice, writeThenNotify } from '../cluster/bus.js';
import type { CommandResult, NewCommand } from '../ports.js';

/**
 * The durable command outbox (SQL only). A command stays `pending` until its daemon acks it; the
 * tunnel sends pending commands on connect, on wake and from its periodic scan. An offer to a daemon
 * whose connection to this process is ready is the one command sent without a row (commands.ts).
 */

let lastSeq = 0;
/**
 * Delivery order of a new command: created_at in µs, made strictly increasing within the process
 * so that commands written in the same millisecond go out in the order they were written. (Across
 * hub processes, commands of the same millisecond have no defined order.)
 */
function nextSeq(now: number): number {
  lastSeq = Math.max(now * 1000, lastSeq + 1);
  return lastSeq;
}

/** A command as stored: what its frame carries. */
export type StoredCommand = Pick<CommandOutboxTable, 'tx_id' | 'path' | 'body'>;

/**
 * A command's body as its frame carries it: a plain-object body gets the `tx_id` too, since daemon
 * routes deduplicate on it.
 */
export function commandText(body: unknown, txId: string): string {
  const withTx =
    body !== null && typeof body === 'object' && !Array.isArray(body) ? merged(body, { tx_id: txId }) : body;
  return JSON.stringify(withTx ?? null);
}

function outboxRow(daemonId: string, command: StoredCommand, now: number, sentAt: number | undefined) {
  return {
    tx_id: command.tx_id,
    path: command.path,
    body: command.body,
    daemon_id: daemonId,
    status: 'pending',
    ack_status: null,
    reply: null,
    error: null,
    created_at: now,
    seq: nextSeq(now),
    last_sent_at: sentAt ?? null,
    acked_at: null,
    attempts: sentAt === undefined ? 0 : 1,
  } satisfies CommandOutboxTable;
}

/**
 * Stores commands that were to leave without an outbox row (an offer, commands.ts) but found their
 * daemon's connection replaced: the new connection's delivery sends them as any pending command.
 */
export async function storeCommands(
  db: Kysely<DB>,
  daemonId: string,
  commands: readonly StoredCommand[],
  now: number,
): Promise<void> {
  if (commands.length === 0) return;
  await insertRows(
    db,
    'command_outbox',
    commands.map((c) => outboxRow(daemonId, c, now, undefined)),
  ).execute();
}

/**
 * Writes a command for a daemon. Pass the caller's transaction as `db` so the command commits with
 * the change that caused it; after the commit, the tunnel sends it; `inTx` (commands.ts) does both.
 *
 * `sentAt`: the command goes straight to the daemon's connection on this process after the commit
 * (recorded as sent then, so neither a flush nor the scan sends it again before it is due). Else,
 * on PostgreSQL, the same transaction notifies `svc_outbox` (with the command, when it fits: see
 * bus.ts `outboxNotice`; `from` is the writing process), so that the hub process holding the
 * daemon's connection sends it when the transaction commits.
 */
export async function enqueueCommand(
  db: Kysely<DB>,
  ids: { newId: () => string; now: () => number },
  daemonId: string,
  path: string,
  body: unknown,
  opts: { sentAt?: number; from?: string; offered?: RunsTable | undefined } = {},
): Promise<NewCommand> {
  const txId = ids.newId();
  const now = ids.now();
  const text = commandText(body, txId);
  const insert = insertRows(db, 'command_outbox', [
    outboxRow(daemonId, { tx_id: txId, path, body: text }, now, opts.sentAt),
  ]);
  // PostgreSQL: wakes the hub process holding the daemon's connection, at commit (src/hub/cluster/bus.ts).
  const notice = () =>
    opts.from === undefined || !isPostgres(db)
      ? daemonId
      : outboxNotice(daemonId, opts.from, { tx_id: txId, path, body: text, written_at: now }, opts.offered);
  const wake = opts.sentAt === undefined ? [{ channel: OUTBOX_CHANNEL, payload: notice() }] : [];
  await writeThenNotify(db, [insert], wake);
  return { tx_id: txId, path, body: text, last_sent_at: opts.sentAt ?? null, stored: true };
}

/**
 * Takes the pending commands of a daemon to send now: at most `limit` of those last sent before
 * `sentBefore` (or never), oldest first, each with a delivery attempt counted (`last_sent_at` = `now`)
 * in the same statement, before its frame leaves (see connection.ts deliver). The tunnel passes
 * max(connection opened, now − resend interval): "not sent on this connection, or sent too long ago".
 */
export async function takePendingCommands(
  db: Kysely<DB>,
  daemonId: string,
  sentBefore: number,
  limit: number,
  now: number,
): Promise<StoredCommand[]> {
  const rows = await takePending(db, daemonId, sentBefore, limit, now);
  return rows.sort((a, b) => Number(a.seq) - Number(b.seq));
}

/** Commands due to be sent: pending, and never sent or last sent before `sentBefore`. */
const dueCommands = (db: Kysely<DB>, sentBefore: number) =>
  db
    .selectFrom('command_outbox')
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('last_sent_at', 'is', null), eb('last_sent_at', '<', sentBefore)]));

/**
 * Which of `daemonIds` have commands due to be sent, in one statement compiled once: for the tunnels
 * that open together, and the tunnel's safety net over every connected daemon.
 */
export async function daemonsWithDueCommands(
  db: Kysely<DB>,
  daemonIds: readonly string[],
  sentBefore: number,
): Promise<Set<string>> {
  if (daemonIds.length === 0) return new Set();
  const rows = await dueAmong(db, [...daemonIds], sentBefore);
  return new Set(rows.map((r) => r.daemon_id));
}

const dueAmong = prepared((db: Kysely<DB>, daemonIds: string[], sentBefore: number) =>
  dueCommands(db, sentBefore)
    .select('daemon_id')
    .distinct()
    .where(oneOf(db, 'daemon_id', daemonIds)),
);

/**
 * Run at each delivery: compiled once. A delivery starts when something waits (a wake after a
 * write, a tunnel that opens with commands waiting, the scan), so it seldom takes nothing.
 */
const takePending = prepared(
  (db: Kysely<DB>, daemonId: string, sentBefore: number, limit: number, now: number) =>
    db
      .updateTable('command_outbox')
      .set((eb) => ({ last_sent_at: now, attempts: eb('attempts', '+', 1) }))
      .where(
        'tx_id',
        'in',
        dueCommands(db, sentBefore)
          .select('tx_id')
          .where('daemon_id', '=', daemonId)
          .orderBy('seq')
          .limit(limit),
      )
      .returning(['tx_id', 'path', 'body', 'seq']),
);

/**
 * Records commands sent from their notices (connection.ts `sendNoticed`) as sent at `at`, unless a
 * delivery recorded them meanwhile: one statement for those sent together.
 */
export const recordNoticedSent = prepared((db: Kysely<DB>, txIds: string[], at: number) =>
  db
    .updateTable('command_outbox')
    .set((eb) => ({ last_sent_at: at, attempts: eb('attempts', '+', 1) }))
    .where(oneOf(db, 'tx_id', txIds))
    .where('status', '=', 'pending')
    .where('last_sent_at', 'is', null),
);

/**
 * Records acks, in one statement however many arrive together. For each, the acked command's path
 * when it was the first ack (null: a repeated ack, an ack repeated in the same batch, or a tx_id that
 * is not that daemon's, changes nothing).
 */
export async function markAcked(
  db: Kysely<DB>,
  acks: readonly { daemonId: string; ack: AckFrame }[],
  now: number,
): Promise<(string | null)[]> {
  const key = (txId: string, daemonId: string) => `${daemonId} ${txId}`;
  const firstOf = new Map<string, number>();
  acks.forEach(({ daemonId, ack }, i) => {
    if (!firstOf.has(key(ack.tx_id, daemonId))) firstOf.set(key(ack.tx_id, daemonId), i);
  });
  const rows: AckRow[] = [...firstOf.values()].map((i) => {
    const { daemonId, ack } = acks[i]!;
    return {
      tx_id: ack.tx_id,
      daemon_id: daemonId,
      ack_status: ack.status,
      reply: ack.status === 'ok' ? JSON.stringify(ack.reply ?? null) : null,
      error: ack.status === 'error' ? JSON.stringify(ack.error ?? null) : null,
    };
  });
  const acked = new Map(
    (await ackAll(db, JSON.stringify(rows), now)).map((r) => [key(r.tx_id, r.daemon_id), r.path]),
  );
  return acks.map(({ daemonId, ack }, i) =>
    firstOf.get(key(ack.tx_id, daemonId)) === i ? (acked.get(key(ack.tx_id, daemonId)) ?? null) : null,
  );
}

/** One ack as `markAcked` writes it. */
interface AckRow {
  tx_id: string;
  daemon_id: string;
  ack_status: AckFrame['status'];
  reply: string | null;
  error: string | null;
}

/** The rows of a JSON array of `AckRow`s, as a table named `a` (each database has its own way). */
function ackRowsOf(db: Kysely<DB>, json: string) {
  return (
    isPostgres(db)
      ? sql<AckRow>`(select * from json_to_recordset(cast(${json} as json))
          as x(tx_id text, daemon_id text, ack_status text, reply text, error text))`
      : sql<AckRow>`(select json_extract(value, '$.tx_id') as tx_id, json_extract(value, '$.daemon_id') as daemon_id,
          json_extract(value, '$.ack_status') as ack_status, json_extract(value, '$.reply') as reply,
          json_extract(value, '$.error') as error from json_each(${json}))`
  ).as('a');
}

/**
 * Marks the pending commands named by `json` (an array of `AckRow`) acked, in one statement: each ack
 * finds its command by primary key. On SQLite the `+` keeps the planner off the index on `status`,
 * which it would otherwise prefer, reading every pending command for each ack.
 */
export const ackAllQuery = (db: Kysely<DB>, json: string, now: number) =>
  db
    .updateTable('command_outbox')
    .from(ackRowsOf(db, json))
    .set((eb) => ({
      status: 'acked',
      ack_status: eb.ref('a.ack_status'),
      reply: eb.ref('a.reply'),
      error: eb.ref('a.error'),
      acked_at: now,
    }))
    .whereRef('command_outbox.tx_id', '=', 'a.tx_id')
    .whereRef('command_outbox.daemon_id', '=', 'a.daemon_id')
    .where(
      isPostgres(db) ? sql.ref('command_outbox.status') : sql`+${sql.ref('command_outbox.status')}`,
      '=',
      'pending',
    )
    .returning(['command_outbox.tx_id', 'command_outbox.daemon_id', 'command_outbox.path']);
const ackAll = prepared(ackAllQuery);

export function loadCommand(db: Kysely<DB>, txId: string): Promise<CommandOutboxTable | undefined> {
  return db.selectFrom('command_outbox').selectAll().where('tx_id', '=', txId).executeTakeFirst();
}

/** What an acked command came back with. */
export function commandResult(row: CommandOutboxTable): CommandResult | null {
  if (row.status !== 'acked' || row.ack_status === null) return null;
  return {
    tx_id: row.tx_id,
    daemon_id: row.daemon_id,
    status: row.ack_status,
    reply: row.reply === null ? null : JSON.parse(row.reply),
    error: row.error === null ? null : JSON.parse(row.error),
  };
}
