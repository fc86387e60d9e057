import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { RealmMembersTable, RealmsTable } from '../../db/schema.js';
import type { Realm } from '../../shared/api/access.js';

export async function insertRealm(db: Kysely<DB>, row: RealmsTable): Promise<RealmsTable> {
  await db.insertInto('realms').values(row).execute();
  return row;
}

/** Adds a member or changes its role (one row per realm, member type and id). */
export async function upsertRealmMember(db: Kysely<DB>, row: RealmMembersTable): Promise<void> {
  await db
    .insertInto('realm_members')
    .values(row)
    .onConflict((oc) => oc.columns(['realm_id', 'member_type', 'member_id']).doUpdateSet({ role: row.role }))
    .execute();
}

export const realmOut = (r: RealmsTable): Realm => ({
  id: r.id,
  org_id: r.org_id,
  name: r.name,
  created_at: r.created_at,
});
