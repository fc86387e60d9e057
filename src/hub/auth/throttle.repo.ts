import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { SignInFailuresTable } from '../../db/schema.js';

export async function insertFailures(db: Kysely<DB>, rows: SignInFailuresTable[]): Promise<void> {
  await db.insertInto('sign_in_failures').values(rows).execute();
}

/** The newest failures of `key` after `since`, newest first, at most `max`. */
export function recentFailures(db: Kysely<DB>, key: string, since: number, max: number) {
  return db
    .selectFrom('sign_in_failures')
    .select(['id', 'at'])
    .where('key', '=', key)
    .where('at', '>', since)
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(max)
    .execute();
}

export async function deleteFailures(db: Kysely<DB>, ids: string[]): Promise<void> {
  if (ids.length) await db.deleteFrom('sign_in_failures').where('id', 'in', ids).execute();
}

export async function clearKey(db: Kysely<DB>, key: string): Promise<void> {
  await db.deleteFrom('sign_in_failures').where('key', '=', key).execute();
}

/** Rows outside every window are of no use; each failure prunes them (indexed on `at`). */
export async function pruneFailures(db: Kysely<DB>, before: number): Promise<void> {
  await db.deleteFrom('sign_in_failures').where('at', '<=', before).execute();
}
