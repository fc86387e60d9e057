import type { OrgsTable, RealmsTable } from '../../db/schema.js';
import { AppError, forbidden, notFound } from '../../shared/errors.js';
import type { Hub } from '../context.js';
import type { Actor, DaemonActor, UserActor } from './actor.js';
import {
  effectiveRealmRole,
  type OrgPermission,
  type OrgRole,
  orgAllows,
  type RealmPermission,
  type RealmRole,
  realmAllows,
} from './permissions.js';

export function requireUser(actor: Actor | null): UserActor {
  if (!actor) throw new AppError('unauthorized', 'authentication required');
  if (actor.kind !== 'user') throw forbidden('a realm token cannot call this operation');
  return actor;
}

/** A daemon-side call: only a realm token may make it (a user token is forbidden). */
export function requireDaemon(actor: Actor | null): DaemonActor {
  if (!actor) throw new AppError('unauthorized', 'authentication required');
  if (actor.kind !== 'daemon') throw forbidden('only a realm token (svc_dt_…) may call this operation');
  return actor;
}

/**
 * For operations open to anonymous callers that act for a person (sign in, accept an invitation):
 * a realm token is valid but not allowed (CONTRACT.md §9).
 */
export function refuseRealmToken(actor: Actor | null): void {
  if (actor?.kind === 'daemon') throw forbidden('a realm token cannot call this operation');
}

export function requireSiteAdmin(actor: Actor | null): UserActor {
  const user = requireUser(actor);
  if (user.user.is_site_admin !== 1) throw forbidden('only a site administrator may do this');
  return user;
}

export async function loadOrg(hub: Hub, orgId: string): Promise<OrgsTable> {
  const org = await hub.db
    .selectFrom('orgs')
    .selectAll()
    .where('id', '=', orgId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!org) throw notFound('organization');
  return org;
}

export async function orgRoleOf(hub: Hub, userId: string, orgId: string): Promise<OrgRole | null> {
  const row = await hub.db
    .selectFrom('org_members')
    .select('role')
    .where('org_id', '=', orgId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row?.role ?? null;
}

/** Loads the org and checks the caller holds `permission` in it (site administrators always do). */
export async function requireOrg(
  hub: Hub,
  actor: Actor | null,
  orgId: string,
  permission: OrgPermission,
): Promise<{ org: OrgsTable; actor: UserActor; role: OrgRole | null }> {
  const user = requireUser(actor);
  const org = await loadOrg(hub, orgId);
  if (user.user.is_site_admin === 1) return { org, actor: user, role: 'owner' };
  const role = await orgRoleOf(hub, user.user.id, org.id);
  if (!orgAllows(role, permission)) throw forbidden(`requires ${permission} in this organization`);
  return { org, actor: user, role };
}

export async function loadRealm(hub: Hub, realmId: string): Promise<RealmsTable & { org: OrgsTable }> {
  const realm = await hub.db.selectFrom('realms').selectAll().where('id', '=', realmId).executeTakeFirst();
  if (!realm) throw notFound('realm');
  const org = await hub.db
    .selectFrom('orgs')
    .selectAll()
    .where('id', '=', realm.org_id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!org) throw notFound('realm');
  return { ...realm, org };
}

/** A user's effective role in a realm (see permissions.effectiveRealmRole). */
export async function realmRoleOf(
  hub: Hub,
  userId: string,
  realm: { id: string; org_id: string },
): Promise<RealmRole | null> {
  const orgRole = await orgRoleOf(hub, userId, realm.org_id);
  if (orgRole === 'owner' || orgRole === 'admin') return 'admin';
  const direct = hub.db
    .selectFrom('realm_members')
    .select('role')
    .where('realm_id', '=', realm.id)
    .where('member_type', '=', 'user')
    .where('member_id', '=', userId);
  const viaGroups = hub.db
    .selectFrom('realm_members as rm')
    .innerJoin('group_members as gm', 'gm.group_id', 'rm.member_id')
    .select('rm.role')
    .where('rm.realm_id', '=', realm.id)
    .where('rm.member_type', '=', 'group')
    .where('gm.user_id', '=', userId);
  const rows = await direct.unionAll(viaGroups).execute();
  // Realm roles only count for members of the org (a removed org member loses them).
  if (orgRole === null && rows.length > 0) return null;
  return effectiveRealmRole(
    orgRole,
    rows.map((r) => r.role),
  );
}

/** Loads the realm and checks the caller holds `permission` in it. */
export async function requireRealm(
  hub: Hub,
  actor: Actor | null,
  realmId: string,
  permission: RealmPermission,
): Promise<{ realm: RealmsTable & { org: OrgsTable }; actor: UserActor; role: RealmRole }> {
  const user = requireUser(actor);
  const realm = await loadRealm(hub, realmId);
  if (user.user.is_site_admin === 1) return { realm, actor: user, role: 'admin' };
  const role = await realmRoleOf(hub, user.user.id, realm);
  if (!realmAllows(role, permission)) throw forbidden(`requires ${permission} in this realm`);
  return { realm, actor: user, role: role! };
}
