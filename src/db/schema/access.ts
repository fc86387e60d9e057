/** People, tokens, organizations, groups and realms. */

export interface UsersTable {
  id: string;
  handle: string;
  email: string;
  display_name: string;
  status: 'invited' | 'active';
  is_site_admin: number;
  password_hash: string | null;
  /**
   * The organization whose invitation created this account: while it has no password, only an
   * invitation of that organization may set one (docs/security.md, invitations).
   */
  claim_org_id: string | null;
  created_at: number;
}

export interface TokensTable {
  id: string;
  user_id: string;
  /** `admin`: the SVC_ADMIN_TOKEN the site administrator holds (restored at every start). */
  kind: 'personal' | 'session' | 'admin';
  name: string;
  token_hash: string;
  hint: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** A failed (or in-flight) sign-in under one key: `email:<address>` or `ip:<client address>`. */
export interface SignInFailuresTable {
  id: string;
  key: string;
  at: number;
}

export interface OrgsTable {
  id: string;
  slug: string;
  display_name: string;
  status: 'waiting_for_owner' | 'active';
  owner_user_id: string;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
}

export interface OrgMembersTable {
  org_id: string;
  user_id: string;
  role: 'owner' | 'admin' | 'member';
  created_at: number;
}

export interface InvitesTable {
  id: string;
  org_id: string;
  user_id: string;
  email: string;
  role: 'owner' | 'admin' | 'member';
  code_hash: string;
  status: 'pending' | 'accepted' | 'revoked';
  email_sent: number;
  invited_by: string | null;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
}

export interface GroupsTable {
  id: string;
  org_id: string;
  name: string;
  created_at: number;
}

export interface GroupMembersTable {
  group_id: string;
  user_id: string;
  created_at: number;
}

export interface RealmsTable {
  id: string;
  org_id: string;
  name: string;
  created_at: number;
}

export interface RealmMembersTable {
  realm_id: string;
  member_type: 'user' | 'daemon' | 'group';
  member_id: string;
  role: 'member' | 'operator' | 'admin';
  created_at: number;
}
