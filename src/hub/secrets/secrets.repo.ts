import type { Kysely } from 'kysely';
import { type DB, updateOne } from '../../db/index.js';
import type { SecretsTable } from '../../db/schema.js';

/** A text column holding sealed values, and its table's key column. */
export interface SealedColumn {
  table: 'secrets' | 'hub_keys' | 'notification_channels' | 'triggers';
  key: 'id';
  column: 'value' | 'private_jwk' | 'secret';
}

// The three tables differ in column names only: one query shape, typed loosely here.
type Loose = Kysely<Record<string, Record<string, string>>>;

/** Rows whose value does not start with `prefix` (plain, or sealed under another key), by key. */
export async function sealedNotCurrent(
  db: Kysely<DB>,
  col: SealedColumn,
  prefix: string,
  after: string,
  limit: number,
): Promise<{ key: string; value: string }[]> {
  const rows = await (db as unknown as Loose)
    .selectFrom(col.table)
    .select([`${col.key} as key`, `${col.column} as value`])
    .where(col.column, 'not like', `${prefix}%`)
    .where(col.key, '>', after)
    .orderBy(col.key)
    .limit(limit)
    .execute();
  return rows as { key: string; value: string }[];
}

/** Replaces a value only when it is still `was`. True when it did. */
export function updateSealed(
  db: Kysely<DB>,
  col: SealedColumn,
  key: string,
  was: string,
  value: string,
): Promise<boolean> {
  return updateOne(
    (db as unknown as Loose)
      .updateTable(col.table)
      .set({ [col.column]: value })
      .where(col.key, '=', key)
      .where(col.column, '=', was),
  );
}

// ── Realm and organization secrets ────────────────────────────────────────────────────────────

/** Sets a secret (insert, or replace the value of the same name in the same scope). */
export async function putSecret(db: Kysely<DB>, row: SecretsTable): Promise<void> {
  await db
    .insertInto('secrets')
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(['scope_id', 'name'])
        .doUpdateSet({ value: row.value, updated_at: row.updated_at, updated_by: row.updated_by }),
    )
    .execute();
}

export async function deleteSecret(db: Kysely<DB>, scopeId: string, name: string): Promise<boolean> {
  const res = await db
    .deleteFrom('secrets')
    .where('scope_id', '=', scopeId)
    .where('name', '=', name)
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** A scope's secrets without their values, by name. */
export function listSecretNames(db: Kysely<DB>, scopeId: string, after: string | null, limit: number) {
  let q = db
    .selectFrom('secrets')
    .select(['name', 'realm_id', 'org_id', 'created_at', 'updated_at', 'updated_by'])
    .where('scope_id', '=', scopeId);
  if (after !== null) q = q.where('name', '>', after);
  return q.orderBy('name').limit(limit).execute();
}

/** The sealed values of `names` in a realm and in its organization (the caller picks the realm's first). */
export function sealedSecretsFor(
  db: Kysely<DB>,
  scope: { realmId: string; orgId: string },
  names: readonly string[],
): Promise<Pick<SecretsTable, 'name' | 'realm_id' | 'value'>[]> {
  if (names.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('secrets')
    .select(['name', 'realm_id', 'value'])
    .where('scope_id', 'in', [scope.realmId, scope.orgId])
    .where('org_id', '=', scope.orgId)
    .where('name', 'in', [...names])
    .execute();
}
