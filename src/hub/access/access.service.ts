import { sql } from 'kysely';
import type { OrgsTable } from '../../db/schema.js';
import { AppError, forbidden, notFound } from '../../shared/errors.js';
import {
  effectiveRealmRole,
  type OrgPermission,
  type OrgRole,
  orgAllows,
  type RealmPermission,
  type RealmRole,
  realmAllows,
} from '../../shared/permissions.js';
import type { Hub } from '../context.js';
import type { RealmWithOrg } from './access-cache.js';
import type { Actor, DaemonActor, UserActor } from './actor.js';

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
  return hub.access.orgRole(userId, orgId, async () => {
    const row = await hub.db
      .selectFrom('org_members')
      .select('role')
      .where('org_id', '=', orgId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row?.role ?? null;
  });
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

/** The realm and its (not deleted) organization, in one query. */
export async function loadRealm(hub: Pick<Hub, 'db' | 'access'>, realmId: string): Promise<RealmWithOrg> {
  return hub.access.realm(realmId, () => readRealm(hub, realmId));
}

async function readRealm(hub: Pick<Hub, 'db'>, realmId: string): Promise<RealmWithOrg> {
  const row = await hub.db
    .selectFrom('realms')
    .innerJoin('orgs', 'orgs.id', 'realms.org_id')
    .select([
      'realms.id',
      'realms.org_id',
      'realms.name',
      'realms.created_at',
      'orgs.slug as o_slug',
      'orgs.display_name as o_display_name',
      'orgs.status as o_status',
      'orgs.owner_user_id as o_owner_user_id',
      'orgs.created_at as o_created_at',
      'orgs.updated_at as o_updated_at',
    ])
    .where('realms.id', '=', realmId)
    .where('orgs.deleted_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw notFound('realm');
  return {
    id: row.id,
    org_id: row.org_id,
    name: row.name,
    created_at: row.created_at,
    org: {
      id: row.org_id,
      slug: row.o_slug,
      display_name: row.o_display_name,
      status: row.o_status,
      owner_user_id: row.o_owner_user_id,
      created_at: row.o_created_at,
      updated_at: row.o_updated_at,
      deleted_at: null,
    },
  };
}

/** A user's effective role in a realm (see permissions.effectiveRealmRole). */
export async function realmRoleOf(
  hub: Hub,
  userId: string,
  realm: { id: string; org_id: string },
): Promise<RealmRole | null> {
  return hub.access.realmRole(userId, realm.id, () => realmRoleQuery(hub, userId, realm));
}

async function realmRoleQuery(
  hub: Hub,
  userId: string,
  realm: { id: string; org_id: string },
): Promise<RealmRole | null> {
  // One round trip: the org role (source 'org') and the realm roles held directly or through groups.
  const org = hub.db
    .selectFrom('org_members')
    .select((eb) => [sql<string>`'org'`.as('source'), eb.ref('role').$castTo<string>().as('role')])
    .where('org_id', '=', realm.org_id)
    .where('user_id', '=', userId);
  const direct = hub.db
    .selectFrom('realm_members')
    .select((eb) => [sql<string>`'realm'`.as('source'), eb.ref('role').$castTo<string>().as('role')])
    .where('realm_id', '=', realm.id)
    .where('member_type', '=', 'user')
    .where('member_id', '=', userId);
  const viaGroups = hub.db
    .selectFrom('realm_members as rm')
    .innerJoin('group_members as gm', 'gm.group_id', 'rm.member_id')
    .select((eb) => [sql<string>`'realm'`.as('source'), eb.ref('rm.role').$castTo<string>().as('role')])
    .where('rm.realm_id', '=', realm.id)
    .where('rm.member_type', '=', 'group')
    .where('gm.user_id', '=', userId);
  const rows = await org.unionAll(direct).unionAll(viaGroups).execute();
  const orgRole = (rows.find((r) => r.source === 'org')?.role ?? null) as OrgRole | null;
  // Realm roles only count for members of the org (a removed org member loses them).
  if (orgRole === null) return null;
  return effectiveRealmRole(
    orgRole,
    rows.filter((r) => r.source === 'realm').map((r) => r.role as RealmRole),
  );
}

/**
 * Whether a user counts as a member of the realm (CONTRACT.md §3): a site administrator always,
 * org owners and admins in every realm of their org, others through a realm role held directly or
 * through a group. Used where a person is named, e.g. as a reviewer.
 */
export async function countsAsRealmMember(
  hub: Hub,
  user: { id: string; is_site_admin: number },
  realm: { id: string; org_id: string },
): Promise<boolean> {
  if (user.is_site_admin === 1) return true;
  return (await realmRoleOf(hub, user.id, realm)) !== null;
}

/** Loads the realm and checks the caller holds `permission` in it. */
export async function requireRealm(
  hub: Hub,
  actor: Actor | null,
  realmId: string,
  permission: RealmPermission,
): Promise<{ realm: RealmWithOrg; actor: UserActor; role: RealmRole }> {
  const user = requireUser(actor);
  const realm = await loadRealm(hub, realmId);
  if (user.user.is_site_admin === 1) return { realm, actor: user, role: 'admin' };
  const role = await realmRoleOf(hub, user.user.id, realm);
  if (!realmAllows(role, permission)) throw forbidden(`requires ${permission} in this realm`);
  return { realm, actor: user, role: role! };
}
