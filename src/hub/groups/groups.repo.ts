import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { GroupsTable } from '../../db/schema.js';
import type { Group } from '../../shared/api/access.js';

export async function findGroup(db: Kysely<DB>, groupId: string): Promise<GroupsTable | undefined> {
  return db.selectFrom('groups').selectAll().where('id', '=', groupId).executeTakeFirst();
}

/** The members of some groups (user id and handle), keyed by group id, ordered by handle. */
export async function membersOf(
  db: Kysely<DB>,
  groupIds: string[],
): Promise<Map<string, { user_id: string; handle: string }[]>> {
  const out = new Map<string, { user_id: string; handle: string }[]>(groupIds.map((g) => [g, []]));
  if (groupIds.length === 0) return out;
  const rows = await db
    .selectFrom('group_members as gm')
    .innerJoin('users as u', 'u.id', 'gm.user_id')
    .select(['gm.group_id', 'u.id as user_id', 'u.handle'])
    .where('gm.group_id', 'in', groupIds)
    .orderBy('u.handle')
    .execute();
  for (const r of rows) out.get(r.group_id)?.push({ user_id: r.user_id, handle: r.handle });
  return out;
}

/** Group as the API shows it. */
export const groupOut = (g: GroupsTable, members: { user_id: string; handle: string }[]): Group => ({
  id: g.id,
  org_id: g.org_id,
  name: g.name,
  created_at: g.created_at,
  members,
});
