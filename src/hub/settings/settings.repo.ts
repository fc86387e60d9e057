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
 * Settings read on hot paths (`runs.lease_ms` for every dispatch) are cached per database handle
 * for at most CACHE_MS: a change made through this process is seen at once (put and delete clear the
 * entry), one made through another hub process within CACHE_MS.
 */
const CACHE_MS = 1_000;
const cache = new WeakMap<object, Map<string, { value: string | null; until: number }>>();

/** One cache per database: a transaction shares its database's adapter. */
function cacheOf(db: Kysely<DB>) {
  const key = db.getExecutor().adapter;
  const found = cache.get(key);
  if (found) return found;
  const made = new Map<string, { value: string | null; until: number }>();
  cache.set(key, made);
  return made;
}

/**
 * The value of a deployment-wide setting, or null when it is not set. For other features:
 * `mesh.enabled_adapters`, `notifications.allow_private_destinations`, `runs.lease_ms`…
 */
export async function getSetting(hub: { db: Kysely<DB> }, key: string): Promise<string | null> {
  const c = cacheOf(hub.db);
  const now = Date.now();
  const hit = c.get(key);
  if (hit && hit.until > now) return hit.value;
  const value = (await findSetting(hub.db, key))?.value ?? null;
  c.set(key, { value, until: now + CACHE_MS });
  return value;
}

export async function putSetting(db: Kysely<DB>, row: SettingsTable): Promise<void> {
  await db
    .insertInto('settings')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['daemon_id', 'key']).doUpdateSet({ value: row.value, updated_at: row.updated_at }),
    )
    .execute();
  cacheOf(db).delete(row.key);
}

export async function deleteSetting(db: Kysely<DB>, key: string): Promise<boolean> {
  const res = await db
    .deleteFrom('settings')
    .where('daemon_id', '=', GLOBAL)
    .where('key', '=', key)
    .executeTakeFirst();
  cacheOf(db).delete(key);
  return Number(res.numDeletedRows) > 0;
}

export async function listSettings(db: Kysely<DB>, after: string | null, limit: number) {
  let q = db.selectFrom('settings').selectAll().where('daemon_id', '=', GLOBAL);
  if (after !== null) q = q.where('key', '>', after);
  return q.orderBy('key').limit(limit).execute();
}
