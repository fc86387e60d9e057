/**
 * Table types for Kysely. Conventions that hold on both databases:
 * times are integer ms (`bigint` columns, parsed to number), ids are UUID strings,
 * booleans are stored as integers 0/1, JSON is stored as text. Mappers turn rows into API objects.
 */
export interface UsersTable {
  id: string;
  handle: string;
  email: string;
  display_name: string;
  status: 'invited' | 'active';
  is_site_admin: number;
  password_hash: string | null;
  created_at: number;
}

export interface TokensTable {
  id: string;
  user_id: string;
  kind: 'personal' | 'session';
  name: string;
  token_hash: string;
  hint: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
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

export interface DaemonsTable {
  id: string;
  realm_id: string;
  name: string;
  token_hash: string;
  hint: string;
  status: 'online' | 'offline';
  last_seen_at: number | null;
  created_at: number;
  revoked_at: number | null;
  /** The tunnel connection that made it online (optional: older literal rows omit it). */
  connection_id?: string | null;
}

export interface SettingsTable {
  daemon_id: string;
  key: string;
  value: string;
  updated_at: number;
}

export interface EventsTable {
  id: string;
  type: string;
  org_id: string | null;
  realm_id: string | null;
  subject_id: string | null;
  payload: string;
  created_at: number;
}

/** A command for a daemon, kept until the daemon acknowledges it (the tunnel's durable outbox). */
export interface CommandOutboxTable {
  tx_id: string;
  daemon_id: string;
  /** Daemon route without /v1/, e.g. `offer_job`. */
  path: string;
  /** JSON. */
  body: string;
  status: 'pending' | 'acked';
  ack_status: 'ok' | 'error' | null;
  /** JSON: the route's `data` (ack ok). */
  reply: string | null;
  /** JSON: the daemon's error `{code, message, details?}` (ack error). */
  error: string | null;
  created_at: number;
  /** Delivery order: increases with every command written by a hub process (µs-like, see outbox.repo). */
  seq: number;
  last_sent_at: number | null;
  acked_at: number | null;
  attempts: number;
}

/** Work offered to the daemons of a realm; the first `queue/claim` wins. */
export interface QueueItemsTable {
  id: string;
  realm_id: string;
  kind: string;
  /** JSON. */
  payload: string;
  status: 'offered' | 'claimed';
  claimed_by: string | null;
  claimed_at: number | null;
  created_at: number;
}

/** The hub's signing keys (JWK JSON), created once and shared by every hub process. */
export interface HubKeysTable {
  id: string;
  alg: string;
  public_jwk: string;
  private_jwk: string;
  created_at: number;
}

export interface AgentsTable {
  id: string;
  org_id: string;
  name: string;
  version: string;
  description: string;
  agent_type: string;
  /** The normalized manifest as JSON. */
  manifest: string;
  is_system: number;
  created_at: number;
  updated_at: number;
}

export interface TeamVersionsTable {
  id: string;
  /** Stable across versions of one team name in one org. */
  team_id: string;
  org_id: string;
  name: string;
  version: string;
  description: string;
  /** The normalized definition as JSON, with every reference pinned to a version. */
  definition: string;
  created_at: number;
  updated_at: number;
}

export interface DB {
  users: UsersTable;
  tokens: TokensTable;
  orgs: OrgsTable;
  org_members: OrgMembersTable;
  invites: InvitesTable;
  groups: GroupsTable;
  group_members: GroupMembersTable;
  realms: RealmsTable;
  realm_members: RealmMembersTable;
  daemons: DaemonsTable;
  settings: SettingsTable;
  events: EventsTable;
  command_outbox: CommandOutboxTable;
  queue_items: QueueItemsTable;
  hub_keys: HubKeysTable;
  agents: AgentsTable;
  team_versions: TeamVersionsTable;
}
