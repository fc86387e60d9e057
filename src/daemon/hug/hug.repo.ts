import type { Kysely } from 'kysely';
import type { DaemonDB } from '../db/schema.js';

export interface HugMessage {
  type: string;
  role: string;
  payload: Record<string, unknown>;
}

export interface PendingReviewMessage extends HugMessage {
  created_at: number;
}

/** A message as the runner reads it: with whether the hub sent it. */
export interface ReceivedReviewMessage extends PendingReviewMessage {
  fromHub: boolean;
}

export async function enqueueHugMessage(
  db: Kysely<DaemonDB>,
  reviewId: string,
  message: HugMessage,
  now: number,
  fromHub: boolean,
): Promise<void> {
  await db
    .insertInto('hug_messages')
    .values({
      review_id: reviewId,
      type: message.type,
      role: message.role,
      payload: JSON.stringify(message.payload),
      created_at: now,
      from_hub: fromHub ? 1 : 0,
    })
    .execute();
}

/** Every waiting message of a review, oldest first, removed. Run it inside a transaction. */
export async function takeHugMessages(
  db: Kysely<DaemonDB>,
  reviewId: string,
): Promise<ReceivedReviewMessage[]> {
  const rows = await db
    .selectFrom('hug_messages')
    .selectAll()
    .where('review_id', '=', reviewId)
    .orderBy('id')
    .execute();
  if (rows.length === 0) return [];
  await db
    .deleteFrom('hug_messages')
    .where('review_id', '=', reviewId)
    .where('id', '<=', rows[rows.length - 1]!.id)
    .execute();
  return rows.map((r) => ({
    type: r.type,
    role: r.role,
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    created_at: r.created_at,
    fromHub: r.from_hub === 1,
  }));
}
