import type { RunState } from '../shared/api/run-states.js';

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
  /** The hub process (`hub_instances.id`) holding that connection (optional like connection_id). */
  hub_instance_id?: string | null;
}

/**
 * One running hub process (src/hub/cluster/presence.ts). A process whose heartbeat is stale is
 * presumed dead: its row is removed and its daemons are marked offline.
 */
export interface HubInstancesTable {
  id: string;
  host: string;
  pid: number;
  started_at: number;
  heartbeat_at: number;
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
  /** `withdrawn`: the offer was taken back (nobody claimed it in time, or the claimer went away). */
  status: 'offered' | 'claimed' | 'withdrawn';
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

/**
 * A team version on a daemon. `status` is the state the daemon last confirmed (a row whose first
 * install is not confirmed yet is `uninstalled` with `installed_at` null); `pending_action` and
 * `pending_tx_id` name the command still waiting for the daemon's ack.
 */
export interface TeamInstallsTable {
  id: string;
  daemon_id: string;
  realm_id: string;
  team_version_id: string;
  team_id: string;
  status: 'installed' | 'uninstalled';
  pending_action: 'install' | 'uninstall' | null;
  pending_tx_id: string | null;
  /** JSON `{code, message}`: why the daemon refused the last command. */
  last_error: string | null;
  installed_at: number | null;
  uninstalled_at: number | null;
  created_at: number;
  updated_at: number;
}

/** A directory on a daemon's machine where runs execute, as its daemon checked it (or will: `pending`). */
export interface WorkspacesTable {
  id: string;
  daemon_id: string;
  realm_id: string;
  path: string;
  name: string;
  /** JSON array of team ids (`team_versions.team_id`) assigned to the workspace. */
  team_ids: string;
  /** `pending` until the daemon checked the path, then `ready` or `failed`. */
  status: 'pending' | 'ready' | 'failed';
  /** The daemon's refusal (JSON `{code, message}`) of a `failed` workspace. */
  error: string | null;
  /** The `workspaces/register` command a `pending` workspace waits for. */
  pending_tx_id: string | null;
  created_at: number;
  updated_at: number;
}

/** A run of a team or an agent (src/hub/runs/). JSON columns are text. */
export interface RunsTable {
  run_id: string;
  org_id: string;
  realm_id: string;
  workspace_id: string | null;
  workspace_path: string | null;
  team_id: string | null;
  team_version_id: string | null;
  agent_id: string | null;
  daemon_id: string | null;
  parent_run_id: string | null;
  parent_phase: string | null;
  root_run_id: string | null;
  call_path: string | null;
  call_depth: number;
  iteration_key: string | null;
  child_key: string | null;
  run_name: string;
  state: RunState;
  inputs: string;
  /** JSON: phase name → that phase's outputs. */
  outputs: string;
  error: string | null;
  execution_type: string;
  current_pid: number | null;
  current_phase: string | null;
  external_id: string | null;
  context_labels: string | null;
  reviewers: string | null;
  notify_channels: string | null;
  /** Grows with every dispatch or claim; daemon calls with an older epoch are refused. */
  lease_epoch: number;
  lease_expires_at: number;
  queue_item_id: string | null;
  pending_control: string | null;
  /** tx_id of the control command (cancel) waiting for its daemon's ack. */
  control_tx_id: string | null;
  started_at: number;
  completed_at: number | null;
  state_lost_at: number | null;
  terminated_at: number | null;
  terminated_by_user_id: string | null;
  terminated_reason: string | null;
  created_by_user_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface RunHistoryTable {
  id: string;
  run_id: string;
  type: string;
  at: number;
  from_phase: string | null;
  phase: string | null;
  /** The run's state after this entry. */
  state: RunState;
  error: string | null;
  actor: string | null;
  /** JSON: the entry's details (a review's id, summary, verdict), or null. */
  data: string | null;
}

export interface RunLogsTable {
  run_id: string;
  seq: number;
  at: number;
  stream: 'stdout' | 'stderr' | 'system';
  phase: string | null;
  text: string;
}

/** A review (human gate) of a run's phase (src/hub/reviews/). `reviewers`: JSON handles, or null. */
export interface ReviewsTable {
  id: string;
  org_id: string;
  realm_id: string;
  run_id: string;
  /** The daemon that held the run when the review was requested: verdicts are delivered to it. */
  daemon_id: string;
  lease_epoch: number;
  phase: string;
  kind: 'phase' | 'agent';
  /** 1-based: each request_changes rerun of the phase asks again in the next round. */
  round: number;
  summary: string;
  state: 'open' | 'approved' | 'rejected' | 'changes_requested' | 'expired' | 'cancelled';
  reviewers: string | null;
  requested_at: number;
  deadline_at: number | null;
  closed_at: number | null;
  /** The user who closed it (null: the system, an expiry or the run's end). */
  closed_by: string | null;
  verdict_action: 'approve' | 'reject' | 'request_changes' | 'expired' | null;
  verdict_comment: string | null;
}

/** Every verdict or comment submitted on a review. */
export interface ReviewSubmissionsTable {
  id: string;
  review_id: string;
  action: 'approve' | 'reject' | 'request_changes' | 'comment';
  comment: string | null;
  actor_id: string | null;
  actor_handle: string | null;
  created_at: number;
}

/** A notification channel: where events go (CONTRACT.md §7). `destinations` is JSON. */
export interface NotificationChannelsTable {
  id: string;
  scope: 'realm' | 'org' | 'personal';
  realm_id: string | null;
  org_id: string | null;
  user_id: string | null;
  /** The organization the channel belongs to (its own or its realm's); null for personal channels. */
  owner_org_id: string | null;
  name: string;
  destinations: string;
  enabled: number;
  /** The HMAC signing key (shown once at creation; see docs/security.md). */
  secret: string;
  system_key: string | null;
  locked: number;
  system_reason: string | null;
  disabled_reason: string | null;
  consecutive_failures: number;
  created_at: number;
  updated_at: number;
}

export interface NotificationRulesTable {
  id: string;
  org_id: string;
  realm_id: string | null;
  event: string;
  filter_team_id: string | null;
  filter_state: string | null;
  system_key: string | null;
  locked: number;
  created_by: string | null;
  created_at: number;
}

export interface NotificationRuleChannelsTable {
  rule_id: string;
  channel_id: string;
}

/** The notification outbox: one row per (event, channel destination). */
export interface NotificationDeliveriesTable {
  id: string;
  channel_id: string;
  event_id: string;
  event_type: string;
  kind: 'event' | 'test';
  destination_index: number;
  destination_type: string;
  url: string;
  body: string;
  state: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

export interface NotificationAttemptsTable {
  id: string;
  delivery_id: string;
  attempt: number;
  outcome: 'success' | 'retry' | 'permanent';
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  at: number;
}

export interface DB {
  hub_instances: HubInstancesTable;
  users: UsersTable;
  tokens: TokensTable;
  sign_in_failures: SignInFailuresTable;
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
  team_installs: TeamInstallsTable;
  workspaces: WorkspacesTable;
  runs: RunsTable;
  run_history: RunHistoryTable;
  run_logs: RunLogsTable;
  reviews: ReviewsTable;
  review_submissions: ReviewSubmissionsTable;
  notification_channels: NotificationChannelsTable;
  notification_rules: NotificationRulesTable;
  notification_rule_channels: NotificationRuleChannelsTable;
  notification_deliveries: NotificationDeliveriesTable;
  notification_attempts: NotificationAttemptsTable;
}
