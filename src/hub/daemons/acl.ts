import { type Kysely, sql } from 'kysely';
import type { DB } from '../../db/index.js';
import { prepared } from '../../db/prepared.js';
import type { RealmRole } from '../../shared/permissions.js';
import { effectiveRealmRole } from '../../shared/permissions.js';
import type { AclEntry } from '../../shared/protocol.js';
import type { Hub } from '../context.js';

/**
 * Called after any change that may change who belongs to a realm (realm members, org members,
 * group members). Pushes the new ACL to the connected daemons of the affected realms.
 * `orgId` means every realm of that organization. Never throws: the change is already committed,
 * and a daemon that misses a push gets the full ACL again in the hello frame of its next connection.
 */
export async function aclChanged(hub: Hub, scope: { realmId?: string; orgId?: string }): Promise<void> {
  try {
    await hub.tunnel.pushAcl(scope);
  } catch (err) {
    hub.log.error({ err, scope }, 'could not push the realm ACL to daemons');
  }
}

/**
 * The realm's ACL: every user with an effective role in it (the same rule as
 * access.service.realmRoleOf): site administrators and org owners and admins as `admin`; otherwise
 * the highest role held directly or through a group, and only while the user is still a member of
 * the org. One query.
 */
export async function realmAcl(db: Kysely<DB>, realmId: string): Promise<AclEntry[]> {
  const rows = await aclRows(db, realmId);
  const best = new Map<string, AclEntry>();
  for (const r of rows) {
    const prev = best.get(r.user_id);
    const role = effectiveRealmRole(null, prev ? [prev.role, r.role] : [r.role])!;
    best.set(r.user_id, { user_id: r.user_id, handle: r.handle, role });
  }
  return [...best.values()].sort((a, b) => a.handle.localeCompare(b.handle));
}

/** Read at every daemon's hello (once for those greeted together) and every push: compiled once. */
const aclRows = prepared((db: Kysely<DB>, realmId: string) => {
  const orgAdmins = db
    .selectFrom('realms as r')
    .innerJoin('org_members as om', 'om.org_id', 'r.org_id')
    .select(['om.user_id as user_id', sql<RealmRole>`'admin'`.as('role')])
    .where('r.id', '=', realmId)
    .where('om.role', 'in', ['owner', 'admin']);
  const direct = db
    .selectFrom('realm_members as rm')
    .innerJoin('realms as r', 'r.id', 'rm.realm_id')
    .innerJoin('org_members as om', (j) =>
      j.onRef('om.org_id', '=', 'r.org_id').onRef('om.user_id', '=', 'rm.member_id'),
    )
    .select(['om.user_id as user_id', 'rm.role as role'])
    .where('rm.realm_id', '=', realmId)
    .where('rm.member_type', '=', 'user');
  const viaGroups = db
    .selectFrom('realm_members as rm')
    .innerJoin('realms as r', 'r.id', 'rm.realm_id')
    .innerJoin('group_members as gm', 'gm.group_id', 'rm.member_id')
    .innerJoin('org_members as om', (j) =>
      j.onRef('om.org_id', '=', 'r.org_id').onRef('om.user_id', '=', 'gm.user_id'),
    )
    .select(['om.user_id as user_id', 'rm.role as role'])
    .where('rm.realm_id', '=', realmId)
    .where('rm.member_type', '=', 'group');
  const siteAdmins = db
    .selectFrom('users as su')
    .select(['su.id as user_id', sql<RealmRole>`'admin'`.as('role')])
    .where('su.is_site_admin', '=', 1);
  return (
    db
      .selectFrom(orgAdmins.unionAll(direct).unionAll(viaGroups).unionAll(siteAdmins).as('x'))
      .innerJoin('users as u', 'u.id', 'x.user_id')
      .select(['x.user_id', 'u.handle', 'x.role'])
      // A deleted organization's realms have no ACL.
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('realms as r')
            .innerJoin('orgs as o', 'o.id', 'r.org_id')
            .select('r.id')
            .where('r.id', '=', realmId)
            .where('o.deleted_at', 'is', null),
        ),
      )
  );
});
