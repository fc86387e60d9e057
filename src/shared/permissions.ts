/**
 * The permission model of CONTRACT.md §3 as pure functions. Every route asks `realmAllows` or
 * `orgAllows` (through access.service.ts); nothing else decides who may do what.
 */
export type OrgRole = 'owner' | 'admin' | 'member';
export type RealmRole = 'member' | 'operator' | 'admin';

export const ORG_ROLES: readonly OrgRole[] = ['owner', 'admin', 'member'];
export const REALM_ROLES: readonly RealmRole[] = ['member', 'operator', 'admin'];

const REALM_RANK: Record<RealmRole, number> = { member: 0, operator: 1, admin: 2 };
const ORG_RANK: Record<OrgRole, number> = { member: 0, admin: 1, owner: 2 };

export const REALM_PERMISSIONS = {
  'runs.view': 'member',
  'runs.create': 'member',
  'reviews.submit': 'member',
  'runs.manage': 'operator',
  // Review any run of the realm (see and decide), listed as a reviewer or not.
  'reviews.manage': 'operator',
  'rules.manage.realm': 'operator',
  'channels.manage.realm': 'operator',
  'teams.install': 'operator',
  // Schedules and incoming-webhook triggers (CONTRACT.md §10): see them, or make and change them.
  'schedules.view': 'member',
  'schedules.manage': 'operator',
  'realms.members.manage': 'admin',
  'workspaces.manage': 'admin',
  'daemons.manage': 'admin',
  'runs.terminate': 'admin',
  'secrets.manage.realm': 'admin',
} as const satisfies Record<string, RealmRole>;

export const ORG_PERMISSIONS = {
  'agents.view': 'member',
  'teams.view': 'member',
  'orgs.view': 'member',
  'agents.manage': 'admin',
  'teams.manage': 'admin',
  'rules.manage': 'admin',
  'channels.manage': 'admin',
  'realms.manage': 'admin',
  'members.manage': 'admin',
  'orgs.manage': 'admin',
  'orgs.delete': 'owner',
  'secrets.manage': 'admin',
} as const satisfies Record<string, OrgRole>;

export type RealmPermission = keyof typeof REALM_PERMISSIONS;
export type OrgPermission = keyof typeof ORG_PERMISSIONS;

export function realmAllows(role: RealmRole | null, permission: RealmPermission): boolean {
  return role !== null && REALM_RANK[role] >= REALM_RANK[REALM_PERMISSIONS[permission]];
}

export function orgAllows(role: OrgRole | null, permission: OrgPermission): boolean {
  return role !== null && ORG_RANK[role] >= ORG_RANK[ORG_PERMISSIONS[permission]];
}

/**
 * A user's role in a realm: org owners and admins act as realm admins; otherwise the highest of the
 * roles held directly or through groups. Null when the user holds none.
 */
export function effectiveRealmRole(orgRole: OrgRole | null, held: readonly RealmRole[]): RealmRole | null {
  if (orgRole === 'owner' || orgRole === 'admin') return 'admin';
  let best: RealmRole | null = null;
  for (const r of held) if (best === null || REALM_RANK[r] > REALM_RANK[best]) best = r;
  return best;
}
