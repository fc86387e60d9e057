import type { TestHub } from './hub.js';

/**
 * One organization with a person in every role, an outsider and a realm token: the cast of every
 * authorization matrix. Tokens are session tokens from invites/accept.
 */
export interface World {
  orgId: string;
  realmId: string;
  /** Another realm of the same org in which only org owners/admins hold a role. */
  otherRealmId: string;
  daemonId: string;
  users: Record<Actor, { id: string; handle: string } | null>;
  tokens: Record<Actor, string | null>;
}

export const ACTORS = [
  'anonymous',
  'bad_token',
  'outsider',
  'org_member',
  'realm_member',
  'realm_operator',
  'realm_admin',
  'org_admin',
  'org_owner',
  'site_admin',
  'realm_token',
] as const;
export type Actor = (typeof ACTORS)[number];

let counter = 0;

/** Invites `email` to the org with `role` and accepts; returns the user and a session token. */
export async function addOrgUser(
  h: TestHub,
  orgId: string,
  email: string,
  role: 'admin' | 'member',
  byToken = h.adminToken,
) {
  const inv = await h.ok('orgs/invite_member', { org_id: orgId, email, role }, byToken);
  const acc = await h.ok('invites/accept', { code: inv.data.code, password: 'correct horse battery' }, null);
  return {
    id: acc.data.user.id as string,
    handle: acc.data.user.handle as string,
    token: acc.data.token as string,
  };
}

/** Creates an org with an accepted owner; returns ids and the owner's session token. */
export async function createOrgWithOwner(h: TestHub, slug: string) {
  const created = await h.ok('orgs/new', { slug, owner: { email: `owner@${slug}.test` } });
  const acc = await h.ok(
    'invites/accept',
    { code: created.data.owner_invite.code, password: 'correct horse battery' },
    null,
  );
  const realms = await h.ok('realms/list', { org_id: created.data.org.id }, acc.data.token);
  return {
    orgId: created.data.org.id as string,
    defaultRealmId: realms.data[0].id as string,
    owner: {
      id: acc.data.user.id as string,
      handle: acc.data.user.handle as string,
      token: acc.data.token as string,
    },
  };
}

export async function buildWorld(h: TestHub): Promise<World> {
  const n = ++counter;
  const org = await createOrgWithOwner(h, `acme-${n}`);
  const other = await createOrgWithOwner(h, `other-${n}`);
  const admin = await addOrgUser(h, org.orgId, `admin${n}@acme.test`, 'admin');
  const member = await addOrgUser(h, org.orgId, `member${n}@acme.test`, 'member');
  const rm = await addOrgUser(h, org.orgId, `rmember${n}@acme.test`, 'member');
  const ro = await addOrgUser(h, org.orgId, `roperator${n}@acme.test`, 'member');
  const ra = await addOrgUser(h, org.orgId, `radmin${n}@acme.test`, 'member');
  const realmId = org.defaultRealmId;
  for (const [u, role] of [
    [rm, 'member'],
    [ro, 'operator'],
    [ra, 'admin'],
  ] as const) {
    await h.ok('realms/add_member', { realm_id: realmId, member_type: 'user', member_id: u.id, role });
  }
  const otherRealm = await h.ok('realms/new', { org_id: org.orgId, name: 'other' });
  const dt = await h.ok('realms/create_daemon_token', { realm_id: realmId, name: 'worker' });
  const me = await h.ok('auth/whoami', {}, h.adminToken);
  const pick = (u: { id: string; handle: string; token: string }) => ({ id: u.id, handle: u.handle });
  return {
    orgId: org.orgId,
    realmId,
    otherRealmId: otherRealm.data.id,
    daemonId: dt.data.daemon_id,
    users: {
      anonymous: null,
      bad_token: null,
      outsider: pick(other.owner),
      org_member: pick(member),
      realm_member: pick(rm),
      realm_operator: pick(ro),
      realm_admin: pick(ra),
      org_admin: pick(admin),
      org_owner: pick(org.owner),
      site_admin: { id: me.data.user.id, handle: me.data.user.handle },
      realm_token: null,
    },
    tokens: {
      anonymous: null,
      bad_token: 'svc_tok_000000000000000000000000000000000000',
      outsider: other.owner.token,
      org_member: member.token,
      realm_member: rm.token,
      realm_operator: ro.token,
      realm_admin: ra.token,
      org_admin: admin.token,
      org_owner: org.owner.token,
      site_admin: h.adminToken,
      realm_token: dt.data.token,
    },
  };
}

/** Hub config under which a channel stays enabled whatever its failures (see `notifiedOf`). */
export const KEEPS_REFUSED_CHANNELS = { notifyDisableAfter: Number.MAX_SAFE_INTEGER } as const;

export const uniq = () => `${Date.now().toString(36)}${(++counter).toString(36)}`;

/**
 * A channel of the realm that the hub refuses to call (a private address) and a rule sending it each
 * of `events`: their deliveries are written, and with them the events (`events`), but none is sent.
 * Each refusal is a failed delivery, and the hub disables a channel after `notifyDisableAfter` of
 * them in a row: a test that sends more events than that through it starts its hub with
 * `KEEPS_REFUSED_CHANNELS`, or the later events would find the channel disabled and not be written.
 */
export async function notifiedOf(
  h: TestHub,
  realmId: string,
  events: readonly string[],
): Promise<{ channelId: string; ruleIds: string[] }> {
  const channel = await h.ok('notification_channels/new', {
    realm_id: realmId,
    name: `events-${uniq()}`,
    destinations: [{ type: 'webhook', webhook_url: 'http://127.0.0.1:9/events' }],
  });
  const ruleIds: string[] = [];
  for (const event of events) {
    const rule = await h.ok('realms/new_notification_rule', {
      realm_id: realmId,
      event,
      channel_ids: [channel.data.id],
    });
    ruleIds.push(rule.data.id);
  }
  return { channelId: channel.data.id, ruleIds };
}
