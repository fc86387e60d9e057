import type { Kysely } from 'kysely';
import { type DB, updateOne } from '../../db/index.js';
import type { CommandOutboxTable } from '../../db/schema.js';
import type { AckFrame } from '../../shared/protocol.js';
import { notifyOutbox } from '../cluster/bus.js';
import type { CommandResult } from '../ports.js';

/**
 * The durable command outbox (SQL only). A command stays `pending` until its daemon acks it; the
 * tunnel sends pending commands on connect, on wake and from its periodic scan.
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

/**
 * Writes a command for a daemon and returns its `tx_id`. Pass the caller's transaction as `db` so
 * the command commits with the change that caused it; after the commit, call
 * `hub.tunnel.wake(daemonId)`; `inTx` (commands.ts) does both.
 * On PostgreSQL the same transaction also notifies `svc_outbox`, so a daemon connected to another
 * hub process gets the command when the transaction commits.
 * A plain-object body gets the `tx_id` too, since daemon routes deduplicate on it.
 */
export async function enqueueCommand(
  db: Kysely<DB>,
  ids: { newId: () => string; now: () => number },
  daemonId: string,
  path: string,
  body: unknown,
): Promise<string> {
  const txId = ids.newId();
  const now = ids.now();
  const withTx =
    body !== null && typeof body === 'object' && !Array.isArray(body) ? { ...body, tx_id: txId } : body;
  await db
    .insertInto('command_outbox')
    .values({
      tx_id: txId,
      daemon_id: daemonId,
      path,
      body: JSON.stringify(withTx ?? null),
      status: 'pending',
      ack_status: null,
      reply: null,
      error: null,
      created_at: now,
      seq: nextSeq(now),
      last_sent_at: null,
      acked_at: null,
      attempts: 0,
    })
    .execute();
  // PostgreSQL: wakes the hub process holding the daemon's connection, at commit (src/hub/cluster/bus.ts).
  await notifyOutbox(db, daemonId);
  return txId;
}

/**
 * Pending commands of a daemon last sent before `sentBefore` (or never), oldest first.
 * The tunnel passes max(connection opened, now − resend interval): "not sent on this connection,
 * or sent too long ago".
 */
export function pendingCommands(
  db: Kysely<DB>,
  daemonId: string,
  sentBefore: number,
  limit: number,
): Promise<Pick<CommandOutboxTable, 'tx_id' | 'path' | 'body'>[]> {
  return db
    .selectFrom('command_outbox')
    .select(['tx_id', 'path', 'body'])
    .where('daemon_id', '=', daemonId)
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('last_sent_at', 'is', null), eb('last_sent_at', '<', sentBefore)]))
    .orderBy('seq')
    .limit(limit)
    .execute();
}

/** Counts a delivery attempt; written before the frames are sent (see connection.ts deliver). */
export async function markSent(db: Kysely<DB>, txIds: string[], now: number): Promise<void> {
  if (txIds.length === 0) return;
  await db
    .updateTable('command_outbox')
    .set((eb) => ({ last_sent_at: now, attempts: eb('attempts', '+', 1) }))
    .where('tx_id', 'in', txIds)
    .execute();
}

/** Records an ack. True when it was the first one (a repeated ack changes nothing). */
export async function markAcked(
  db: Kysely<DB>,
  daemonId: string,
  ack: AckFrame,
  now: number,
): Promise<boolean> {
  return updateOne(
    db
      .updateTable('command_outbox')
      .set({
        status: 'acked',
        ack_status: ack.status,
        reply: ack.status === 'ok' ? JSON.stringify(ack.reply ?? null) : null,
        error: ack.status === 'error' ? JSON.stringify(ack.error ?? null) : null,
        acked_at: now,
      })
      .where('tx_id', '=', ack.tx_id)
      .where('daemon_id', '=', daemonId)
      .where('status', '=', 'pending'),
  );
}

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
