import { type Kysely, type QueryCreator, sql } from 'kysely';
import { type DB, isPostgres, updateOne } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import type { Write } from '../cluster/bus.js';
import { RUN_COLUMNS } from './run-read.repo.js';
import { assignOfferedRun, runOfQueueItem } from './runs.repo.js';

/**
 * The work queue of offered runs (SQL): an item is offered to the eligible daemons of a realm
 * (`offer_job`), and the first `queue/claim` wins it: one conditional UPDATE decides, on both
 * databases.
 */

export const RUN_ITEM_KIND = 'run';

export type QueueItemStatus = 'offered' | 'claimed' | 'withdrawn';

/**
 * A new item, offered. The write, to run in the caller's transaction with the writes nothing reads
 * back (bus.ts `writeThenNotify`): nothing reads an item before the offers that name it are sent.
 */
export function newQueueItem(
  db: Kysely<DB>,
  item: { id: string; realm_id: string; payload: unknown; created_at: number },
): Write {
  return db.insertInto('queue_items').values({
    ...item,
    kind: RUN_ITEM_KIND,
    payload: JSON.stringify(item.payload),
    status: 'offered',
    claimed_by: null,
    claimed_at: null,
  });
}

/**
 * The daemon wins the item if it is still offered in its realm; a loss answers null. A win answers
 * the item's run (none if it has gone). On PostgreSQL the same statement also assigns the run to the
 * daemon (runs.repo.ts `assignOfferedRun`, with `assign`) if it is still offered with this item, and
 * answers it as moved (`assigned`), or nothing when it was not; on SQLite, where a statement costs no
 * round trip, the run as it is now, for the caller to move.
 */
export async function claimQueueItem(
  db: Kysely<DB>,
  itemId: string,
  daemon: { id: string; realm_id: string },
  now: number,
  assign: { lease_expires_at: number },
): Promise<{ run: RunsTable | undefined; assigned: boolean } | null> {
  // The states it looks for are constants of the statement, not parameters: PostgreSQL then plans
  // the prepared claim once (a generic plan as good as one made for each call) instead of each time.
  const claim = (q: QueryCreator<DB>) =>
    q
      .updateTable('queue_items')
      .set({ status: 'claimed', claimed_by: daemon.id, claimed_at: now })
      .where('id', '=', itemId)
      .where('realm_id', '=', daemon.realm_id)
      .where('status', '=', sql.lit('offered'));
  if (!isPostgres(db)) {
    if (!(await updateOne(claim(db)))) return null;
    return { run: await runOfQueueItem(db, itemId), assigned: false };
  }
  const won = await db
    .with('c', (q) => claim(q).returning('id'))
    .with('a', () =>
      // `c` is this statement's claim: the run moves only when it won.
      assignOfferedRun(db, itemId, daemon.id, { ...assign, updated_at: now }).where(
        sql<boolean>`exists (select 1 from c)`,
      ),
    )
    .selectFrom('c')
    .leftJoin('a', (j) => j.onTrue())
    .select(RUN_COLUMNS.map((c) => `a.${c}` as const))
    .select('c.id as claimed_item')
    .executeTakeFirst();
  if (!won) return null;
  const { claimed_item: _, ...run } = won;
  return run.run_id === null
    ? { run: undefined, assigned: false }
    : { run: run as RunsTable, assigned: true };
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
