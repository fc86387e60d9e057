import type { Kysely } from 'kysely';
import { prepared } from '../db/prepared.js';
import type { DaemonDB } from './db/schema.js';
import { DaemonError, type DaemonErrorBody } from './errors.js';

/** A stored first reply: the data of a success or the error of a failure. */
export type StoredReply = { ok: true; data: unknown } | { ok: false; error: DaemonError };

/** Read and written for every command the hub sends: statements compiled once. */
const findReply = prepared((db: Kysely<DaemonDB>, txId: string) =>
  db.selectFrom('tx_replies').select(['status', 'reply']).where('tx_id', '=', txId),
);
const insertReply = prepared(
  (db: Kysely<DaemonDB>, txId: string, path: string, status: string, reply: string, now: number) =>
    db
      .insertInto('tx_replies')
      .values({ tx_id: txId, path, status: status as 'ok' | 'error', reply, created_at: now })
      .onConflict((oc) => oc.column('tx_id').doNothing()),
);

export async function findTxReply(db: Kysely<DaemonDB>, txId: string): Promise<StoredReply | null> {
  const [row] = await findReply(db, txId);
  if (!row) return null;
  const reply = JSON.parse(row.reply) as unknown;
  return row.status === 'ok'
    ? { ok: true, data: reply }
    : { ok: false, error: DaemonError.fromBody(reply as DaemonErrorBody) };
}

/** Stores the first reply for `txId`; a reply already stored wins (insert or ignore). */
export async function saveTxReply(
  db: Kysely<DaemonDB>,
  txId: string,
  path: string,
  reply: StoredReply,
  now: number,
): Promise<void> {
  const text = JSON.stringify(reply.ok ? (reply.data ?? null) : reply.error.toBody());
  await insertReply(db, txId, path, reply.ok ? 'ok' : 'error', text, now);
}

/** Forgets replies older than `before` (the hub never redelivers a command that old). */
export async function pruneTxReplies(db: Kysely<DaemonDB>, before: number): Promise<number> {
  const r = await db.deleteFrom('tx_replies').where('created_at', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows);
}
