import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import { preparedQuery } from '../../db/prepared.js';
import type { RunsTable } from '../../db/schema.js';
import { insertRows, type Write } from '../cluster/bus.js';
import { loadRun } from './run-read.repo.js';

/** Starting runs (SQL): the numbers of default run names, and idempotency keys. */

/**
 * The statement that takes `count` numbers of default run names for this team (or agent) in the
 * realm, in the caller's transaction (one row per realm and subject; concurrent runs get distinct
 * numbers); its row gives the first (`firstRunNumber`).
 */
export const takeRunNumbers = preparedQuery(
  (db: Kysely<DB>, realmId: string, subjectId: string, count: number) =>
    db
      .insertInto('run_numbers')
      .values({ realm_id: realmId, subject_id: subjectId, last: count })
      .onConflict((oc) =>
        oc
          .columns(['realm_id', 'subject_id'])
          .doUpdateSet((eb) => ({ last: eb('run_numbers.last', '+', eb.ref('excluded.last')) })),
      )
      .returning('last'),
);

/** The first of the `count` numbers `takeRunNumbers` took, from its row. */
export function firstRunNumber(row: { last: number | string | bigint }, count: number): number {
  return Number(row.last) - count + 1;
}

/** Idempotent starts (CONTRACT.md §10): a key is kept this long. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The run first started with `key` in the realm, if the key is still kept. A key older than
 * IDEMPOTENCY_TTL_MS is released (deleted only as it was read, so a concurrent new start wins once).
 */
export async function runOfIdempotencyKey(
  db: Kysely<DB>,
  realmId: string,
  key: string,
  now: number,
): Promise<RunsTable | undefined> {
  const k = await db
    .selectFrom('run_idempotency_keys')
    .selectAll()
    .where('realm_id', '=', realmId)
    .where('key', '=', key)
    .executeTakeFirst();
  if (!k) return undefined;
  if (k.created_at < now - IDEMPOTENCY_TTL_MS) {
    await db
      .deleteFrom('run_idempotency_keys')
      .where('realm_id', '=', realmId)
      .where('key', '=', key)
      .where('created_at', '=', k.created_at)
      .execute();
    return undefined;
  }
  return loadRun(db, k.run_id);
}

/**
 * Binds `key` to the run, written in the run's own transaction: a concurrent repeat fails on the
 * primary key. The write, to run at once or with the writes kept for the commit.
 */
export function idempotencyKeyWrite(
  db: Kysely<DB>,
  row: { realm_id: string; key: string; run_id: string; created_at: number },
): Write {
  return insertRows(db, 'run_idempotency_keys', [row]);
}
