import { z } from 'zod';
import * as a from './access.js';
import * as af from './artifacts.js';
import * as c from './catalog.js';
import * as d from './daemons.js';
import { one, page, Removed } from './envelope.js';
import * as n from './notifications.js';
import * as rv from './reviews.js';
import * as r from './runs.js';
import * as sc from './schedules.js';

/**
 * What each hub operation answers on success, beside `ok: true` (`POST /v1/<name>` →
 * `{ok: true, ...reply}`). The hub's handlers are typed by it (src/hub/http/op.ts), its OpenAPI
 * document describes it (src/hub/openapi.ts), and the typed client returns it (./client.ts).
 */
export const REPLIES = {
  'auth/whoami': one(a.WhoAmI),
  'auth/sign_in': one(a.Session),
  'auth/sign_out': one(a.SignOut),
  'tokens/create': one(a.NewToken),
  'tokens/list': page(a.Token),
  'tokens/revoke': one(a.TokenRevoked),

  'orgs/new': one(a.NewOrg),
  'invites/accept': one(a.Session),
  'orgs/get': one(a.Org),
  'orgs/list': page(a.Org),
  'orgs/update': one(a.Org),
  'orgs/delete': one(a.OrgDeleted),
  'orgs/invite_member': one(a.Invite),
  'orgs/list_members': page(a.OrgMember),
  'orgs/set_member_role': one(a.OrgMemberRole),
  'orgs/remove_member': one(a.OrgMemberRemoved),

  'groups/new': one(a.Group),
  'groups/list': page(a.Group),
  'groups/add_member': one(a.GroupMember),
  'groups/remove_member': one(a.GroupMemberRemoved),
  'groups/remove': one(Removed),

  'realms/new': one(a.Realm),
  'realms/get': one(a.Realm),
  'realms/list': page(a.Realm),
  'realms/remove': one(Removed),
  'realms/add_member': one(a.RealmMember),
  'realms/set_member_role': one(a.RealmMember),
  'realms/remove_member': z.strictObject({}),
  'realms/list_members': page(a.RealmMember),
  'realms/create_daemon_token': one(a.DaemonToken),

  'daemons/list': page(d.Daemon),
  'daemons/get': one(d.Daemon),
  'daemons/remove': one(Removed),
  'daemons/issue_dispatch_token': one(d.DispatchToken),

  'settings/set': one(d.Setting),
  'settings/get_by_key': z.strictObject({ setting: d.Setting.nullable() }),
  'settings/remove': z.strictObject({ removed: z.boolean() }),
  'settings/list': page(d.Setting),

  'mesh/adapters/list': z.strictObject({ adapters: z.array(d.MeshAdapter) }),

  'notification_channels/new': one(n.ChannelWithSecret),
  'notification_channels/list': page(n.Channel),
  'notification_channels/update': one(n.Channel),
  'notification_channels/remove': one(Removed),
  'notification_channels/test': one(n.ChannelTest),
  'notification_channels/rotate_secret': one(n.ChannelWithSecret),
  'notifications/list_deliveries': page(n.Delivery),
  'realms/new_notification_rule': one(n.Rule),
  'realms/list_notification_rules': page(n.Rule),
  'realms/remove_notification_rules': one(z.literal(true)),

  'agents/register': one(c.Agent),
  'agents/list': page(c.Agent),
  'agents/get': one(c.Agent),
  'agents/remove': one(Removed),
  'teams/register': one(c.TeamVersion),
  'teams/list': page(c.TeamVersion),
  'teams/get': one(c.TeamVersion),
  'teams/remove': one(Removed),
  'teams/install': one(d.InstallChange),
  'teams/uninstall': one(d.InstallChange),
  'teams/list_installs': page(d.TeamInstall),

  'workspaces/register': one(d.Workspace),
  'workspaces/list': page(d.Workspace),
  'workspaces/get': one(d.Workspace),
  'workspaces/remove': z.strictObject({ removed: z.boolean() }),
  'workspaces/assign_teams': one(d.WorkspaceAssigned),

  'runs/new': one(r.Run),
  'runs/get_by_id': one(r.Run),
  'runs/list': r.RunPage,
  'runs/logs': r.LogsPage,
  'runs/cancel': one(r.Run),
  'runs/resume': one(r.Run),
  'runs/force_terminate': one(r.Run),
  'queue/claim': one(r.Claim),
  'runs/report': one(r.RunReport),
  'runs/renew_lease': one(r.LeaseRenewal),
  'runs/append_logs': one(r.LogsAppended),
  'runs/start_child': one(r.Run),
  'artifacts/list': z.strictObject({ data: z.array(af.Artifact) }),

  'reviews/request': one(rv.Review),
  'reviews/list': page(rv.Review),
  'reviews/get': one(rv.ReviewDetail),
  'reviews/submit': one(rv.Review),

  'schedules/new': one(sc.Schedule),
  'schedules/list': page(sc.Schedule),
  'schedules/get': one(sc.Schedule),
  'schedules/update': one(sc.Schedule),
  'schedules/remove': z.strictObject({ removed: z.boolean() }),
  'schedules/trigger': one(r.Run),
  'triggers/new': one(sc.TriggerWithSecret),
  'triggers/list': page(sc.Trigger),
  'triggers/get': one(sc.TriggerDetail),
  'triggers/update': one(sc.Trigger),
  'triggers/remove': z.strictObject({ removed: z.boolean() }),
  'triggers/rotate_secret': one(sc.TriggerWithSecret),

  'secrets/set': one(sc.SecretSet),
  'secrets/list': page(sc.SecretName),
  'secrets/remove': z.strictObject({ removed: z.boolean() }),
} as const;

export type OpName = keyof typeof REPLIES;
/** The success reply of an operation, `ok: true` included. */
export type Reply<K extends OpName> = { ok: true } & Fields<z.output<(typeof REPLIES)[K]>>;
/** An empty reply body (`{}`) is typed as an index of `never`; beside `ok` it adds nothing. */
type Fields<T> = string extends keyof T ? Record<never, never> : T;

/** The named shapes, for the `components.schemas` of the OpenAPI document. */
export const COMPONENTS = {
  Run: r.Run,
  HistoryEntry: r.HistoryEntry,
  LogLine: r.LogLine,
  Review: rv.Review,
  Daemon: d.Daemon,
  Workspace: d.Workspace,
  TeamInstall: d.TeamInstall,
  Setting: d.Setting,
  MeshAdapter: d.MeshAdapter,
  Agent: c.Agent,
  TeamVersion: c.TeamVersion,
  Channel: n.Channel,
  Rule: n.Rule,
  Delivery: n.Delivery,
  User: a.User,
  Token: a.Token,
  Org: a.Org,
  Invite: a.Invite,
  OrgMember: a.OrgMember,
  Group: a.Group,
  Realm: a.Realm,
  RealmMember: a.RealmMember,
  Schedule: sc.Schedule,
  Trigger: sc.Trigger,
} as const;

/** `runs/get_by_id` → `RunsGetByIdReply`: the OpenAPI component name of an operation's success reply. */
export const replyId = (opName: string) =>
  `${opName
    .split(/[/_]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')}Reply`;
