/**
 * Table types for Kysely. Conventions that hold on both databases:
 * times are integer ms (`bigint` columns, parsed to number), ids are UUID strings,
 * booleans are stored as integers 0/1, JSON is stored as text. Mappers turn rows into API objects.
 */
import type {
  GroupMembersTable,
  GroupsTable,
  InvitesTable,
  OrgMembersTable,
  OrgsTable,
  RealmMembersTable,
  RealmsTable,
  SignInFailuresTable,
  TokensTable,
  UsersTable,
} from './schema/access.js';
import type { ArtifactsTable } from './schema/artifacts.js';
import type { AgentsTable, TeamInstallsTable, TeamVersionsTable, WorkspacesTable } from './schema/catalog.js';
import type {
  CommandOutboxTable,
  DaemonsTable,
  EventsTable,
  HubInstancesTable,
  HubKeysTable,
  QueueItemsTable,
  SettingsTable,
} from './schema/daemons.js';
import type {
  NotificationAttemptsTable,
  NotificationChannelsTable,
  NotificationDeliveriesTable,
  NotificationRuleChannelsTable,
  NotificationRulesTable,
} from './schema/notifications.js';
import type {
  ReviewSubmissionsTable,
  ReviewsTable,
  RunGroupsTable,
  RunHistoryTable,
  RunIdempotencyKeysTable,
  RunLogsTable,
  RunNumbersTable,
  RunsTable,
} from './schema/runs.js';
import type {
  ScheduleSlotsTable,
  SchedulesTable,
  TriggerDeliveriesTable,
  TriggersTable,
} from './schema/schedules.js';
import type { SecretsTable } from './schema/secrets.js';

export type * from './schema/access.js';
export type * from './schema/artifacts.js';
export type * from './schema/catalog.js';
export type * from './schema/daemons.js';
export type * from './schema/notifications.js';
export type * from './schema/runs.js';
export type * from './schema/schedules.js';
export type * from './schema/secrets.js';

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
  run_numbers: RunNumbersTable;
  run_groups: RunGroupsTable;
  run_history: RunHistoryTable;
  run_logs: RunLogsTable;
  reviews: ReviewsTable;
  review_submissions: ReviewSubmissionsTable;
  notification_channels: NotificationChannelsTable;
  notification_rules: NotificationRulesTable;
  notification_rule_channels: NotificationRuleChannelsTable;
  notification_deliveries: NotificationDeliveriesTable;
  notification_attempts: NotificationAttemptsTable;
  secrets: SecretsTable;
  artifacts: ArtifactsTable;
  run_idempotency_keys: RunIdempotencyKeysTable;
  schedules: SchedulesTable;
  schedule_slots: ScheduleSlotsTable;
  triggers: TriggersTable;
  trigger_deliveries: TriggerDeliveriesTable;
}
