import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { SettingsTable } from '../../db/schema.js';
import type { Setting } from '../../shared/api/daemons.js';

/** The reserved daemon_id of a deployment-wide setting. */
export const GLOBAL = '__global__';

/** Setting as the API shows it (the row's columns are exactly the spec's fields). */
export const settingOut = (s: SettingsTable): Setting => ({
  daemon_id: s.daemon_id,
  key: s.key,
  value: s.value,
  updated_at: s.updated_at,
});

export async function findSetting(db: Kysely<DB>, key: string): Promise<SettingsTable | undefined> {
  return db
    .selectFrom('settings')
    .selectAll()
    .where('daemon_id', '=', GLOBAL)
    .where('key', '=', key)
    .executeTakeFirst();
}

/**
 * The value of a deployment-wide setting, or null when it is not set. For other features:
 * `mesh.enabled_adapters`, `notifications.allow_private_destinations`, `runs.lease_ms`…
 */
export async function getSetting(hub: { db: Kysely<DB> }, key: string): Promise<string | null> {
  return (await findSetting(hub.db, key))?.value ?? null;
}

export async function putSetting(db: Kysely<DB>, row: SettingsTable): Promise<void> {
  await db
    .insertInto('settings')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['daemon_id', 'key']).doUpdateSet({ value: row.value, updated_at: row.updated_at }),
    )
    .execute();
}

export async function deleteSetting(db: Kysely<DB>, key: string): Promise<boolean> {
  const res = await db
    .deleteFrom('settings')
    .where('daemon_id', '=', GLOBAL)
    .where('key', '=', key)
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

export async function listSettings(db: Kysely<DB>, after: string | null, limit: number) {
  let q = db.selectFrom('settings').selectAll().where('daemon_id', '=', GLOBAL);
  if (after !== null) q = q.where('key', '>', after);
  return q.orderBy('key').limit(limit).execute();
}
