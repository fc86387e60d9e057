import { z } from 'zod';
import { Daemon } from './daemons.js';
import { iso, ms } from './envelope.js';

/** People, tokens, organizations, groups and realms as the hub shows them (docs/api.md). */

export const User = z.strictObject({
  id: z.string(),
  handle: z.string(),
  email: z.string(),
  display_name: z.string().nullable(),
  status: z.enum(['invited', 'active']),
  is_site_admin: z.boolean(),
  created_at: ms,
});
export type User = z.infer<typeof User>;

/** `auth/whoami`: the person, or the daemon, the token belongs to. */
export const WhoAmI = z.strictObject({
  user: User.nullable(),
  daemon: z.strictObject({ id: z.string(), realm_id: z.string(), name: z.string() }).nullable(),
});
export type WhoAmI = z.infer<typeof WhoAmI>;

/** `auth/sign_in`, `invites/accept`: a session token (shown once) and its person. */
export const Session = z.strictObject({ token: z.string(), expires_at: ms.nullable(), user: User });
export type Session = z.infer<typeof Session>;

export const SignOut = z.strictObject({
  revoked: z.boolean(),
  kind: z.enum(['personal', 'session', 'admin']),
});

/** A token; its secret is shown only in the reply to `tokens/create` (`token`). */
export const Token = z.strictObject({
  id: z.string(),
  name: z.string(),
  kind: z.string(),
  hint: z.string(),
  created_at: ms,
  expires_at: ms.nullable(),
  last_used_at: ms.nullable(),
});
export type Token = z.infer<typeof Token>;
export const NewToken = Token.extend({ token: z.string() });
export const TokenRevoked = z.strictObject({ id: z.string(), revoked: z.literal(true) });

export const OrgRole = z.enum(['owner', 'admin', 'member']);

/** An organization; `created_at`/`updated_at` are ISO texts in the reply to `orgs/new` only. */
export const Org = z.strictObject({
  id: z.string(),
  slug: z.string(),
  display_name: z.string(),
  status: z.enum(['waiting_for_owner', 'active']),
  owner: z.strictObject({ user_id: z.string(), email: z.string(), status: z.enum(['active', 'invited']) }),
  created_at: z.union([ms, iso]),
  updated_at: z.union([ms, iso]),
  reactivated: z.boolean(),
});
export type Org = z.infer<typeof Org>;

/** An invitation; `code` only in the reply that created it. */
export const Invite = z.strictObject({
  invite_id: z.string(),
  org_id: z.string(),
  email: z.string(),
  role: OrgRole,
  status: z.enum(['pending', 'accepted', 'revoked']),
  expires_at: iso,
  email_sent: z.boolean(),
  code: z.string().optional(),
});
export type Invite = z.infer<typeof Invite>;

/** `orgs/new`: the organization and its owner's invitation (the last one, for a reactivated org). */
export const NewOrg = z.strictObject({ org: Org, owner_invite: Invite });

export const OrgMember = z.strictObject({
  user: User.omit({ is_site_admin: true, created_at: true }),
  role: OrgRole,
  created_at: ms,
});
export type OrgMember = z.infer<typeof OrgMember>;
export const OrgMemberRole = z.strictObject({ org_id: z.string(), user_id: z.string(), role: OrgRole });
export const OrgMemberRemoved = z.strictObject({
  org_id: z.string(),
  user_id: z.string(),
  removed: z.literal(true),
});
export const OrgDeleted = z.strictObject({ id: z.string(), deleted: z.literal(true) });

export const Group = z.strictObject({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  created_at: ms,
  members: z.array(z.strictObject({ user_id: z.string(), handle: z.string() })),
});
export type Group = z.infer<typeof Group>;
export const GroupMember = z.strictObject({ group_id: z.string(), user_id: z.string(), created_at: ms });
export const GroupMemberRemoved = z.strictObject({
  group_id: z.string(),
  user_id: z.string(),
  removed: z.literal(true),
});

export const RealmRole = z.enum(['member', 'operator', 'admin']);
export type RealmRole = z.infer<typeof RealmRole>;

/** A realm; `my_role` (the caller's role in it) only in the reply to `realms/get`. */
export const Realm = z.strictObject({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  created_at: ms,
  my_role: RealmRole.nullable().optional(),
});
export type Realm = z.infer<typeof Realm>;

export const RealmMember = z.strictObject({
  realm_id: z.string(),
  member_type: z.enum(['user', 'daemon', 'group']),
  member_id: z.string(),
  role: RealmRole,
  created_at: ms,
});
export type RealmMember = z.infer<typeof RealmMember>;

/** `realms/create_daemon_token`: the new daemon and its token (shown once). */
export const DaemonToken = z.strictObject({ daemon_id: z.string(), token: z.string(), daemon: Daemon });
