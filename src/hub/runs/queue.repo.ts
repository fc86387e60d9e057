import type { Kysely } from 'kysely';
import { type DB, updateOne } from '../../db/index.js';

/**
 * The work queue of offered runs (SQL): an item is offered to the eligible daemons of a realm
 * (`offer_job`), and the first `queue/claim` wins it: one conditional UPDATE decides, on both
 * databases.
 */

export const RUN_ITEM_KIND = 'run';

export type QueueItemStatus = 'offered' | 'claimed' | 'withdrawn';

export async function insertQueueItem(
  db: Kysely<DB>,
  item: { id: string; realm_id: string; payload: unknown; created_at: number },
): Promise<void> {
  await db
    .insertInto('queue_items')
    .values({
      ...item,
      kind: RUN_ITEM_KIND,
      payload: JSON.stringify(item.payload),
      status: 'offered',
      claimed_by: null,
      claimed_at: null,
    })
    .execute();
}

/** The daemon wins the item if it is still offered in its realm. */
export function claimQueueItem(
  db: Kysely<DB>,
  itemId: string,
  daemon: { id: string; realm_id: string },
  now: number,
) {
  return updateOne(
    db
      .updateTable('queue_items')
      .set({ status: 'claimed', claimed_by: daemon.id, claimed_at: now })
      .where('id', '=', itemId)
      .where('realm_id', '=', daemon.realm_id)
      .where('status', '=', 'offered'),
  );
}

export function loadQueueItem(db: Kysely<DB>, itemId: string) {
  return db
    .selectFrom('queue_items')
    .select(['id', 'realm_id', 'status', 'claimed_by'])
    .where('id', '=', itemId)
    .executeTakeFirst();
}

/** Takes an item off the market (nobody may win it any more), if it is still in `from`. */
export function withdrawQueueItem(db: Kysely<DB>, itemId: string, from?: QueueItemStatus) {
  return updateOne(
    db
      .updateTable('queue_items')
      .set({ status: 'withdrawn' })
      .where('id', '=', itemId)
      .$if(from !== undefined, (q) => q.where('status', '=', from!)),
  );
}
