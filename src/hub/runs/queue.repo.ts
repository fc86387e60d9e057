import { type Kysely, type QueryCreator, sql } from 'kysely';
import { type DB, isPostgres, updateOne } from '../../db/index.js';
import { preparedQuery } from '../../db/prepared.js';
import type { RunsTable } from '../../db/schema.js';
import { together } from '../../db/together.js';
import { merged } from '../../shared/merged.js';
import { insertRows, type Write } from '../cluster/bus.js';
import { RUN_COLUMNS } from './run-read.repo.js';
import { assignOfferedRun } from './runs.repo.js';

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
  const row = merged(item, {
    kind: RUN_ITEM_KIND,
    payload: JSON.stringify(item.payload),
    status: 'offered' as const,
    claimed_by: null,
    claimed_at: null,
  });
  return insertRows(db, 'queue_items', [row]);
}

/** One daemon's claim of an item, for `claimQueueItems`. */
export interface ItemClaim {
  itemId: string;
  daemon: { id: string; realm_id: string };
  /** The lease the run gets if the claim wins. */
  lease_expires_at: number;
}

/**
 * The run of a claimed item: as the claim's statements moved it (`assigned`), none when it had moved
 * on, or as re-dispatch read it (not `assigned`, for the caller to move).
 */
export interface ClaimedItem {
  run: RunsTable | undefined;
  assigned: boolean;
}

/**
 * Each daemon wins its item if the item is still offered in the daemon's realm; a loss answers null.
 * A win also assigns the item's run to the daemon (runs.repo.ts `assignOfferedRun`, with the claim's
 * lease) if it is still offered with this item, and answers it as moved, or no run when it was not.
 * On PostgreSQL the claim and the move are one statement, and the claims leave together, in one
 * round trip (src/db/together.ts); on SQLite, where a statement costs no round trip, the move is the
 * statement after a claim that won. Claims run in the order given.
 */
export async function claimQueueItems(
  db: Kysely<DB>,
  claims: readonly ItemClaim[],
  now: number,
): Promise<(ClaimedItem | null)[]> {
  const won = (run: RunsTable | undefined): ClaimedItem => ({ run, assigned: run !== undefined });
  if (isPostgres(db)) {
    const rows = await together(
      db,
      claims.map((c) =>
        claimAndAssign(db, c.itemId, c.daemon.id, c.daemon.realm_id, c.lease_expires_at, now),
      ),
    );
    return rows.map(([row]) => {
      if (!row) return null;
      const { claimed_item: _, ...run } = row as RunsTable & { claimed_item: string };
      return won(run.run_id === null ? undefined : run);
    });
  }
  const out: (ClaimedItem | null)[] = [];
  for (const c of claims) {
    const claimed = await claimOnly(db, c.itemId, c.daemon.id, c.daemon.realm_id, now).execute();
    if (claimed.length === 0) {
      out.push(null);
      continue;
    }
    const [run] = await assignRun(db, c.itemId, c.daemon.id, c.lease_expires_at, now).execute();
    out.push(won(run));
  }
  return out;
}

/**
 * The claim's conditional update. The states it looks for are constants of the statement, not
 * parameters: PostgreSQL then plans the prepared claim once (a generic plan as good as one made for
 * each call) instead of each time. Every statement of a claim is compiled once (src/db/prepared.ts).
 */
const claim = (q: QueryCreator<DB>, itemId: string, daemonId: string, realmId: string, now: number) =>
  q
    .updateTable('queue_items')
    .set({ status: 'claimed', claimed_by: daemonId, claimed_at: now })
    .where('id', '=', itemId)
    .where('realm_id', '=', realmId)
    .where('status', '=', sql.lit('offered'))
    .returning('id');

/** SQLite: the claim alone; it answers the item when it won. */
const claimOnly = preparedQuery(
  (db: Kysely<DB>, itemId: string, daemonId: string, realmId: string, now: number) =>
    claim(db, itemId, daemonId, realmId, now),
);

/** SQLite: the move of a claim's run, made when the claim won. */
const assignRun = preparedQuery(
  (db: Kysely<DB>, itemId: string, daemonId: string, leaseExpiresAt: number, now: number) =>
    assignOfferedRun(db, itemId, daemonId, { lease_expires_at: leaseExpiresAt, updated_at: now }),
);

/** PostgreSQL: the claim, and the move of its run only when it won, in one statement. */
const claimAndAssign = preparedQuery(
  (db: Kysely<DB>, itemId: string, daemonId: string, realmId: string, leaseExpiresAt: number, now: number) =>
    db
      .with('c', (q) => claim(q, itemId, daemonId, realmId, now))
      .with('a', () =>
        // `c` is this statement's claim: the run moves only when it won.
        assignOfferedRun(db, itemId, daemonId, { lease_expires_at: leaseExpiresAt, updated_at: now }).where(
          sql<boolean>`exists (select 1 from c)`,
        ),
      )
      .selectFrom('c')
      .leftJoin('a', (j) => j.onTrue())
      .select(RUN_COLUMNS.map((col) => `a.${col}` as const))
      .select('c.id as claimed_item'),
);

/**
 * PostgreSQL: a claim made ahead of its answer (dispatch.service.ts `claimAhead`), as one statement
 * that checks itself: the claim, and the move of its run if it won and the run is still at the lease
 * epoch `epoch` (as this process saw it offered); `svc_expect` raises with `message` unless the run
 * moved, so that a claim that lost refuses its transaction. Sent with the statements after it
 * (bus.ts `keepCheck`), it costs no round trip of its own.
 */
export const claimAheadCheck = preparedQuery(
  (
    db: Kysely<DB>,
    itemId: string,
    daemonId: string,
    realmId: string,
    leaseExpiresAt: number,
    now: number,
    epoch: number,
    message: string,
  ) =>
    db
      .with('c', (q) => claim(q, itemId, daemonId, realmId, now))
      .with('a', () =>
        assignOfferedRun(db, itemId, daemonId, { lease_expires_at: leaseExpiresAt, updated_at: now })
          .where('lease_epoch', '=', epoch)
          .where(sql<boolean>`exists (select 1 from c)`),
      )
      .selectFrom('a')
      .select(sql<boolean>`svc_expect(count(*) = 1, ${message})`.as('ok')),
);

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
