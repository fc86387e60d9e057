import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { hubOps } from '../../src/hub/ops.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { allowOrgTeams } from '../helpers/runs.js';
import { tunnelUrl } from '../helpers/tunnel-client.js';
import { ACTORS, type Actor, addOrgUser, buildWorld, uniq, type World } from '../helpers/world.js';

/**
 * Who may call every foundation operation (CONTRACT.md §3): for each row and each actor of the
 * world, exactly the allowed actors succeed; anonymous callers and bad tokens get 401, every other
 * actor 403. Rows build fresh targets per call so that calls never interfere.
 */

// Operations of the daemon tunnel, covered by its own tests (src/hub/daemons/).
const TUNNEL_OPS = new Set(['daemons/issue_dispatch_token', 'queue/claim']);
// Every operation under these prefixes must have a row.
const FOUNDATION_AREAS = [
  'auth/',
  'tokens/',
  'orgs/',
  'invites/',
  'groups/',
  'realms/',
  'daemons/',
  'settings/',
  'mesh/',
  'agents/',
  'teams/',
  'workspaces/',
  'notification_channels/',
  'notifications/',
  'reviews/',
  'secrets/',
  'schedules/',
  'triggers/',
  'artifacts/',
];

const USERS: Actor[] = [
  'outsider',
  'org_member',
  'realm_member',
  'realm_operator',
  'realm_admin',
  'org_admin',
  'org_owner',
  'site_admin',
];
const ORG_MEMBERS: Actor[] = USERS.filter((a) => a !== 'outsider');
const REALM_MEMBERS: Actor[] = ORG_MEMBERS.filter((a) => a !== 'org_member');
const REALM_OPERATORS: Actor[] = REALM_MEMBERS.filter((a) => a !== 'realm_member');
const REALM_ADMINS: Actor[] = REALM_OPERATORS.filter((a) => a !== 'realm_operator');
const ORG_ADMINS: Actor[] = ['org_admin', 'org_owner', 'site_admin'];
const ORG_OWNERS: Actor[] = ['org_owner', 'site_admin'];
const SITE_ADMIN: Actor[] = ['site_admin'];

interface Row {
  op: string;
  /** Shown in the test name when one op has several rows. */
  note?: string;
  allowed: readonly Actor[];
  /** The request body for one call by `actor`; builds fresh targets as needed. */
  body(actor: Actor): Promise<unknown> | unknown;
  /** The token to call with, when not the actor's own (e.g. a fresh one to sign out). */
  token?(actor: Actor): Promise<string | null>;
  /** Undoes a successful call so the world stays intact. */
  undo?(): Promise<void>;
}

type Outcome = 'ok' | 401 | 403 | string;

describe('authorization matrix', () => {
  let h: TestHub;
  let w: World;
  let orgSlug: string;
  let memberEmail: string;
  let teamVersionId: string;
  let workspaceId: string;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    orgSlug = (await h.ok('orgs/get', { id: w.orgId })).data.slug;
    memberEmail = (await h.ok('auth/whoami', {}, w.tokens.org_member)).data.user.email;
    // The world's daemon, faked: it accepts every command (workspaces need an online daemon).
    const ws = new WebSocket(tunnelUrl(h.url), {
      headers: { authorization: `Bearer ${w.tokens.realm_token}` },
    });
    ws.on('message', (data) => {
      const f = JSON.parse(data.toString()) as { type: string; tx_id?: string; body?: { path?: string } };
      if (f.type === 'command') {
        ws.send(JSON.stringify({ type: 'ack', tx_id: f.tx_id, status: 'ok', reply: { path: f.body?.path } }));
      }
    });
    await new Promise<void>((resolve) => ws.once('message', () => resolve()));
    await h.ok('agents/register', { org_id: w.orgId, manifest: agentManifest('matrix-agent') });
    teamVersionId = (
      await h.ok('teams/register', { org_id: w.orgId, definition: teamDefinition('matrix-team') })
    ).data.id;
    workspaceId = await freshWorkspace();
    await h.ok('teams/register', { org_id: w.orgId, definition: teamDefinition('matrix-review-team') });
    await allowOrgTeams(h, w.orgId);
  });
  after(() => h.close());

  // Fresh targets, made by the site administrator.
  const agentManifest = (name: string) => `name: ${name}\nversion: 1.0.0\ncommand: ["true"]\n`;
  const teamDefinition = (name: string) =>
    `name: ${name}\nversion: 1.0.0\nphases:\n  - name: p\n    agent: matrix-agent\n`;
  const freshAgent = async () =>
    (await h.ok('agents/register', { org_id: w.orgId, manifest: agentManifest(`a-${uniq()}`) })).data
      .id as string;
  const freshTeam = async () =>
    (await h.ok('teams/register', { org_id: w.orgId, definition: teamDefinition(`t-${uniq()}`) })).data
      .id as string;
  const freshWorkspace = async () =>
    (await h.ok('workspaces/register', { daemon_id: w.daemonId, path: `/srv/${uniq()}` })).data.id as string;
  const freshGroup = async () =>
    (await h.ok('groups/new', { org_id: w.orgId, name: `g-${uniq()}` })).data.id as string;
  const freshGroupWithMember = async () => {
    const id = await freshGroup();
    await h.ok('groups/add_member', { group_id: id, user_id: w.users.org_member!.id });
    return id;
  };
  const freshRealmGroup = async (role = 'member') => {
    const id = await freshGroup();
    await h.ok('realms/add_member', { realm_id: w.realmId, member_type: 'group', member_id: id, role });
    return id;
  };
  const freshKey = async () => {
    const key = `matrix.${uniq()}`;
    await h.ok('settings/set', { key, value: 'v' });
    return key;
  };
  // A user token of `actor` that may be spent (revoked), or the actor's own for non-users.
  const spareToken = async (actor: Actor) => {
    const own = w.tokens[actor];
    if (!USERS.includes(actor)) return own;
    return (await h.ok('tokens/create', { name: `spare-${uniq()}` }, own)).data.token as string;
  };
  let decoyMember: string | null = null;
  // Reviews: a fresh run held by the world's (fake) daemon, running its phase `p`.
  const freshRunningRun = async (reviewers?: Record<string, string[]>) => {
    const run = (
      await h.ok('runs/new', {
        realm_id: w.realmId,
        team: 'matrix-review-team',
        ...(reviewers ? { reviewers } : {}),
      })
    ).data;
    const row = await h.running.hub.db
      .selectFrom('runs')
      .select('queue_item_id')
      .where('run_id', '=', run.run_id)
      .executeTakeFirstOrThrow();
    const dt = w.tokens.realm_token;
    const claim = await h.ok('queue/claim', { queue_item_id: row.queue_item_id, daemon_id: w.daemonId }, dt);
    const epoch = claim.data.run.lease_epoch as number;
    await h.ok('runs/report', { run_id: run.run_id, lease_epoch: epoch, event: 'started' }, dt);
    return { run_id: run.run_id as string, lease_epoch: epoch, phase: 'p', summary: 'please look' };
  };
  const freshReview = async (reviewers?: Record<string, string[]>) =>
    (await h.ok('reviews/request', await freshRunningRun(reviewers), w.tokens.realm_token)).data.id as string;
  // Notifications: fresh channels and rules, made by the site administrator. The destination is
  // refused by the SSRF guard at once, so test deliveries never leave the machine.
  const DEST = [{ type: 'webhook', webhook_url: 'http://127.0.0.1:9/matrix' }];
  const freshChannel = async (scope: object = { realm_id: w.realmId }) =>
    (await h.ok('notification_channels/new', { ...scope, name: `c-${uniq()}`, destinations: DEST })).data
      .id as string;
  const freshRule = async (scope: object = { realm_id: w.realmId }) =>
    (
      await h.ok('realms/new_notification_rule', {
        ...scope,
        event: 'run.ended',
        channel_ids: [await freshChannel(scope)],
      })
    ).data.id as string;

  // Schedules and triggers: fresh ones, made by the site administrator (a yearly time never fires here).
  const freshSchedule = async () =>
    (await h.ok('schedules/new', { realm_id: w.realmId, team: 'matrix-team', cron: '0 0 1 1 *' })).data
      .id as string;
  const freshTrigger = async () =>
    (await h.ok('triggers/new', { realm_id: w.realmId, name: `tr-${uniq()}`, team: 'matrix-team' })).data
      .id as string;

  const rows: Row[] = [
    { op: 'auth/whoami', allowed: [...USERS, 'realm_token'], body: () => ({}) },
    {
      // Anyone with the password may sign in, signed in or not; a daemon may not.
      op: 'auth/sign_in',
      allowed: ['anonymous', ...USERS],
      body: () => ({ email: memberEmail, password: 'correct horse battery' }),
    },
    { op: 'auth/sign_out', allowed: USERS, body: () => ({}), token: spareToken },
    { op: 'tokens/create', allowed: USERS, body: () => ({ name: `t-${uniq()}` }) },
    { op: 'tokens/list', allowed: USERS, body: () => ({}) },
    {
      op: 'tokens/revoke',
      allowed: USERS,
      async body(actor) {
        if (!USERS.includes(actor)) return { id: 'no-such-token' };
        const t = await h.ok('tokens/create', { name: `r-${uniq()}` }, w.tokens[actor]);
        return { id: t.data.id };
      },
    },
    {
      op: 'orgs/new',
      allowed: SITE_ADMIN,
      body: () => {
        const s = `m-${uniq()}`;
        return { slug: s, owner: { email: `owner@${s}.test` } };
      },
    },
    { op: 'orgs/get', allowed: ORG_MEMBERS, body: () => ({ id: w.orgId }) },
    { op: 'orgs/list', allowed: USERS, body: () => ({}) },
    { op: 'orgs/update', allowed: ORG_ADMINS, body: () => ({ id: w.orgId, display_name: `Acme ${uniq()}` }) },
    {
      op: 'orgs/delete',
      allowed: ORG_OWNERS,
      body: () => ({ id: w.orgId }),
      async undo() {
        await h.ok('orgs/new', {
          slug: orgSlug,
          owner: { user_id: w.users.org_owner!.id },
          reactivate: true,
        });
      },
    },
    {
      op: 'orgs/invite_member',
      allowed: ORG_ADMINS,
      body: () => ({ org_id: w.orgId, email: `inv-${uniq()}@acme.test`, role: 'member' }),
    },
    { op: 'orgs/list_members', allowed: ORG_MEMBERS, body: () => ({ org_id: w.orgId }) },
    {
      op: 'orgs/set_member_role',
      allowed: ORG_ADMINS,
      body: () => ({ org_id: w.orgId, user_id: w.users.org_member!.id, role: 'member' }),
    },
    {
      op: 'orgs/remove_member',
      allowed: ORG_ADMINS,
      async body(actor) {
        if (ORG_ADMINS.includes(actor)) {
          const u = await addOrgUser(h, w.orgId, `rm-${uniq()}@acme.test`, 'member');
          return { org_id: w.orgId, user_id: u.id };
        }
        decoyMember ??= (await addOrgUser(h, w.orgId, `decoy-${uniq()}@acme.test`, 'member')).id;
        return { org_id: w.orgId, user_id: decoyMember };
      },
    },
    {
      // Anyone holding an invitation code may accept it, signed in or not; a daemon may not.
      op: 'invites/accept',
      allowed: ['anonymous', ...USERS],
      async body() {
        const inv = await h.ok('orgs/invite_member', {
          org_id: w.orgId,
          email: `acc-${uniq()}@acme.test`,
          role: 'member',
        });
        return { code: inv.data.code, password: 'correct horse battery' };
      },
    },
    { op: 'groups/new', allowed: ORG_ADMINS, body: () => ({ org_id: w.orgId, name: `n-${uniq()}` }) },
    { op: 'groups/list', allowed: ORG_MEMBERS, body: () => ({ org_id: w.orgId }) },
    {
      op: 'groups/add_member',
      allowed: ORG_ADMINS,
      body: async () => ({ group_id: await freshGroup(), user_id: w.users.org_member!.id }),
    },
    {
      op: 'groups/remove_member',
      allowed: ORG_ADMINS,
      body: async () => ({ group_id: await freshGroupWithMember(), user_id: w.users.org_member!.id }),
    },
    { op: 'groups/remove', allowed: ORG_ADMINS, body: async () => ({ id: await freshGroupWithMember() }) },
    { op: 'realms/new', allowed: ORG_ADMINS, body: () => ({ org_id: w.orgId, name: `r-${uniq()}` }) },
    { op: 'realms/get', allowed: REALM_MEMBERS, body: () => ({ id: w.realmId }) },
    {
      op: 'realms/get',
      note: 'a realm where only org owners and admins hold a role',
      allowed: ORG_ADMINS,
      body: () => ({ id: w.otherRealmId }),
    },
    { op: 'realms/list', allowed: ORG_MEMBERS, body: () => ({ org_id: w.orgId }) },
    {
      op: 'realms/remove',
      allowed: ORG_ADMINS,
      body: async () => ({
        id: (await h.ok('realms/new', { org_id: w.orgId, name: `x-${uniq()}` })).data.id,
      }),
    },
    {
      op: 'realms/add_member',
      allowed: REALM_ADMINS,
      body: async () => ({
        realm_id: w.realmId,
        member_type: 'group',
        member_id: await freshGroup(),
        role: 'member',
      }),
    },
    {
      op: 'realms/remove_member',
      allowed: REALM_ADMINS,
      body: async () => ({ realm_id: w.realmId, member_type: 'group', member_id: await freshRealmGroup() }),
    },
    {
      op: 'realms/set_member_role',
      allowed: REALM_ADMINS,
      body: async () => ({
        realm_id: w.realmId,
        member_type: 'group',
        member_id: await freshRealmGroup(),
        role: 'operator',
      }),
    },
    { op: 'realms/list_members', allowed: REALM_MEMBERS, body: () => ({ realm_id: w.realmId }) },
    {
      op: 'realms/create_daemon_token',
      allowed: REALM_ADMINS,
      body: () => ({ realm_id: w.realmId, name: `d-${uniq()}` }),
    },
    { op: 'daemons/list', allowed: REALM_MEMBERS, body: () => ({ realm_id: w.realmId }) },
    { op: 'daemons/get', allowed: REALM_MEMBERS, body: () => ({ id: w.daemonId }) },
    {
      op: 'daemons/remove',
      allowed: REALM_ADMINS,
      body: async () => ({
        id: (await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: `rm-${uniq()}` })).data
          .daemon_id,
      }),
    },
    {
      op: 'secrets/set',
      note: 'realm',
      allowed: REALM_ADMINS,
      body: () => ({ realm_id: w.realmId, name: `S_${uniq().toUpperCase()}`, value: 'v' }),
    },
    {
      op: 'secrets/set',
      note: 'organization',
      allowed: ORG_ADMINS,
      body: () => ({ org_id: w.orgId, name: `S_${uniq().toUpperCase()}`, value: 'v' }),
    },
    { op: 'secrets/list', note: 'realm', allowed: REALM_ADMINS, body: () => ({ realm_id: w.realmId }) },
    { op: 'secrets/list', note: 'organization', allowed: ORG_ADMINS, body: () => ({ org_id: w.orgId }) },
    {
      op: 'secrets/remove',
      note: 'realm',
      allowed: REALM_ADMINS,
      body: async () => {
        const name = `S_${uniq().toUpperCase()}`;
        await h.ok('secrets/set', { realm_id: w.realmId, name, value: 'v' });
        return { realm_id: w.realmId, name };
      },
    },
    {
      op: 'secrets/remove',
      note: 'organization',
      allowed: ORG_ADMINS,
      body: async () => {
        const name = `S_${uniq().toUpperCase()}`;
        await h.ok('secrets/set', { org_id: w.orgId, name, value: 'v' });
        return { org_id: w.orgId, name };
      },
    },
    { op: 'settings/set', allowed: SITE_ADMIN, body: () => ({ key: `matrix.${uniq()}`, value: 'v' }) },
    {
      op: 'settings/get_by_key',
      allowed: ['site_admin', 'realm_token'],
      body: async () => ({ key: await freshKey() }),
    },
    { op: 'settings/remove', allowed: SITE_ADMIN, body: async () => ({ key: await freshKey() }) },
    { op: 'settings/list', allowed: SITE_ADMIN, body: () => ({}) },
    { op: 'mesh/adapters/list', allowed: USERS, body: () => ({}) },
    {
      op: 'agents/register',
      allowed: ORG_ADMINS,
      body: () => ({ org_id: w.orgId, manifest: agentManifest(`r-${uniq()}`) }),
    },
    { op: 'agents/list', allowed: ORG_MEMBERS, body: () => ({ org_id: w.orgId }) },
    { op: 'agents/get', allowed: ORG_MEMBERS, body: () => ({ org_id: w.orgId, name: 'matrix-agent' }) },
    { op: 'agents/remove', allowed: ORG_ADMINS, body: async () => ({ id: await freshAgent() }) },
    {
      op: 'teams/register',
      allowed: ORG_ADMINS,
      body: () => ({ org_id: w.orgId, definition: teamDefinition(`r-${uniq()}`) }),
    },
    { op: 'teams/list', allowed: ORG_MEMBERS, body: () => ({ org_id: w.orgId }) },
    { op: 'teams/get', allowed: ORG_MEMBERS, body: () => ({ id: teamVersionId }) },
    { op: 'teams/remove', allowed: ORG_ADMINS, body: async () => ({ id: await freshTeam() }) },
    {
      op: 'teams/install',
      allowed: REALM_OPERATORS,
      body: () => ({ team_version_id: teamVersionId, daemon_id: w.daemonId }),
    },
    {
      op: 'teams/uninstall',
      allowed: REALM_OPERATORS,
      body: () => ({ team_version_id: teamVersionId, daemon_id: w.daemonId }),
    },
    { op: 'teams/list_installs', allowed: REALM_MEMBERS, body: () => ({ daemon_id: w.daemonId }) },
    {
      op: 'workspaces/register',
      allowed: REALM_ADMINS,
      body: () => ({ daemon_id: w.daemonId, path: `/srv/${uniq()}` }),
    },
    { op: 'workspaces/list', allowed: REALM_MEMBERS, body: () => ({ realm_id: w.realmId }) },
    { op: 'workspaces/get', allowed: REALM_MEMBERS, body: () => ({ id: workspaceId }) },
    {
      // The workspace's own daemon may remove it (when it is unregistered there).
      op: 'workspaces/remove',
      allowed: [...REALM_ADMINS, 'realm_token'],
      body: async () => ({ id: await freshWorkspace() }),
    },
    {
      op: 'workspaces/assign_teams',
      allowed: REALM_ADMINS,
      body: () => ({ workspace_id: workspaceId, team_ids: [] }),
    },
    {
      op: 'notification_channels/new',
      note: 'realm channel',
      allowed: REALM_OPERATORS,
      body: () => ({ realm_id: w.realmId, name: `n-${uniq()}`, destinations: DEST }),
    },
    {
      op: 'notification_channels/new',
      note: 'organization channel',
      allowed: ORG_ADMINS,
      body: () => ({ org_id: w.orgId, name: `n-${uniq()}`, destinations: DEST }),
    },
    {
      op: 'notification_channels/new',
      note: 'personal channel',
      allowed: USERS,
      body: () => ({ name: `n-${uniq()}`, destinations: DEST }),
    },
    {
      op: 'notification_channels/list',
      note: 'realm',
      allowed: REALM_OPERATORS,
      body: () => ({ realm_id: w.realmId }),
    },
    {
      op: 'notification_channels/list',
      note: 'organization',
      allowed: ORG_ADMINS,
      body: () => ({ org_id: w.orgId }),
    },
    { op: 'notification_channels/list', note: 'personal', allowed: USERS, body: () => ({}) },
    {
      op: 'notification_channels/update',
      note: 'realm channel',
      allowed: REALM_OPERATORS,
      body: async () => ({ id: await freshChannel(), enabled: false }),
    },
    {
      op: 'notification_channels/update',
      note: 'organization channel',
      allowed: ORG_ADMINS,
      body: async () => ({ id: await freshChannel({ org_id: w.orgId }), name: `u-${uniq()}` }),
    },
    {
      op: 'notification_channels/remove',
      allowed: REALM_OPERATORS,
      body: async () => ({ id: await freshChannel() }),
    },
    {
      op: 'notification_channels/remove',
      note: 'organization channel',
      allowed: ORG_ADMINS,
      body: async () => ({ id: await freshChannel({ org_id: w.orgId }) }),
    },
    {
      op: 'notification_channels/test',
      allowed: REALM_OPERATORS,
      body: async () => ({ id: await freshChannel() }),
    },
    {
      op: 'notification_channels/rotate_secret',
      allowed: REALM_OPERATORS,
      body: async () => ({ id: await freshChannel() }),
    },
    {
      op: 'notifications/list_deliveries',
      allowed: REALM_OPERATORS,
      body: async () => ({ channel_id: await freshChannel() }),
    },
    {
      op: 'notifications/list_deliveries',
      note: 'organization channel',
      allowed: ORG_ADMINS,
      body: async () => ({ channel_id: await freshChannel({ org_id: w.orgId }) }),
    },
    {
      op: 'realms/new_notification_rule',
      note: 'realm rule',
      allowed: REALM_OPERATORS,
      body: async () => ({ realm_id: w.realmId, event: 'run.ended', channel_ids: [await freshChannel()] }),
    },
    {
      op: 'realms/new_notification_rule',
      note: 'organization rule',
      allowed: ORG_ADMINS,
      body: async () => ({
        org_id: w.orgId,
        event: 'invite.accepted',
        channel_ids: [await freshChannel({ org_id: w.orgId })],
      }),
    },
    {
      op: 'realms/list_notification_rules',
      note: 'realm',
      allowed: REALM_OPERATORS,
      body: () => ({ realm_id: w.realmId }),
    },
    {
      op: 'realms/list_notification_rules',
      note: 'organization',
      allowed: ORG_ADMINS,
      body: () => ({ org_id: w.orgId }),
    },
    {
      op: 'realms/remove_notification_rules',
      note: 'realm rule',
      allowed: REALM_OPERATORS,
      body: async () => ({ id: await freshRule() }),
    },
    {
      op: 'realms/remove_notification_rules',
      note: 'organization rule',
      allowed: ORG_ADMINS,
      body: async () => ({ id: await freshRule({ org_id: w.orgId }) }),
    },
    { op: 'reviews/request', allowed: ['realm_token'], body: () => freshRunningRun() },
    { op: 'reviews/list', allowed: REALM_MEMBERS, body: () => ({ realm_id: w.realmId }) },
    { op: 'reviews/get', allowed: REALM_MEMBERS, body: async () => ({ id: await freshReview() }) },
    {
      op: 'reviews/submit',
      note: 'no reviewers named: realm operators+',
      allowed: REALM_OPERATORS,
      body: async () => ({ review_id: await freshReview(), action: 'approve' }),
    },
    {
      op: 'reviews/submit',
      note: 'a realm member named as reviewer',
      allowed: ['realm_member', ...REALM_OPERATORS],
      body: async () => ({
        review_id: await freshReview({ p: [w.users.realm_member!.handle] }),
        action: 'comment',
        comment: 'looks fine',
      }),
    },
  ];

  rows.push(
    {
      op: 'schedules/new',
      allowed: REALM_OPERATORS,
      body: () => ({ realm_id: w.realmId, team: 'matrix-team', cron: '0 0 1 1 *' }),
    },
    { op: 'schedules/list', allowed: REALM_MEMBERS, body: () => ({ realm_id: w.realmId }) },
    { op: 'schedules/get', allowed: REALM_MEMBERS, body: async () => ({ id: await freshSchedule() }) },
    {
      op: 'schedules/update',
      allowed: REALM_OPERATORS,
      body: async () => ({ id: await freshSchedule(), enabled: false }),
    },
    { op: 'schedules/remove', allowed: REALM_OPERATORS, body: async () => ({ id: await freshSchedule() }) },
    { op: 'schedules/trigger', allowed: REALM_OPERATORS, body: async () => ({ id: await freshSchedule() }) },
    {
      op: 'triggers/new',
      allowed: REALM_OPERATORS,
      body: () => ({ realm_id: w.realmId, name: `n-${uniq()}`, team: 'matrix-team' }),
    },
    // Whoever may view the run (runs/get_by_id): realm members and the realm's daemons.
    {
      op: 'artifacts/list',
      allowed: [...REALM_MEMBERS, 'realm_token'],
      body: async () => ({ run_id: (await freshRunningRun()).run_id }),
    },
    { op: 'triggers/list', allowed: REALM_MEMBERS, body: () => ({ realm_id: w.realmId }) },
    { op: 'triggers/get', allowed: REALM_MEMBERS, body: async () => ({ id: await freshTrigger() }) },
    {
      op: 'triggers/update',
      allowed: REALM_OPERATORS,
      body: async () => ({ id: await freshTrigger(), name: `u-${uniq()}` }),
    },
    { op: 'triggers/remove', allowed: REALM_OPERATORS, body: async () => ({ id: await freshTrigger() }) },
    {
      op: 'triggers/rotate_secret',
      allowed: REALM_OPERATORS,
      body: async () => ({ id: await freshTrigger() }),
    },
  );

  it('has a row for every foundation operation except the daemon tunnel’s', (t) => {
    const registered = hubOps.map((o) => o.name);
    const covered = new Set(rows.map((r) => r.op));
    const uncovered = registered.filter((n) => !covered.has(n) && !TUNNEL_OPS.has(n));
    const isFoundation = (n: string) => FOUNDATION_AREAS.some((a) => n.startsWith(a));
    assert.deepEqual(
      uncovered.filter(isFoundation),
      [],
      'foundation operations without a row in the authorization matrix',
    );
    // Later features add their rows here; until then, say which operations the matrix misses.
    const later = uncovered.filter((n) => !isFoundation(n));
    if (later.length) t.diagnostic(`not in the matrix yet: ${later.join(', ')}`);
    const unknown = [...covered].filter((n) => !registered.includes(n));
    assert.deepEqual(unknown, [], 'rows for operations that are not registered');
  });

  // ACTORS and rows are fixed: one test per row, one call per actor.
  for (const row of rows) {
    it(`${row.op}${row.note ? ` (${row.note})` : ''}`, async () => {
      const expected: Record<string, Outcome> = {};
      const actual: Record<string, Outcome> = {};
      for (const actor of ACTORS) {
        const allowed = row.allowed.includes(actor);
        expected[actor] = allowed ? 'ok' : actor === 'anonymous' || actor === 'bad_token' ? 401 : 403;
        const body = await row.body(actor);
        const token = row.token ? await row.token(actor) : w.tokens[actor];
        const r = await h.call(row.op, body, token);
        if (r.body?.ok === true && (r.status === 200 || r.status === 201)) {
          actual[actor] = 'ok';
          await row.undo?.();
        } else if (
          (r.status === 401 && r.body?.error?.code === 'unauthorized') ||
          (r.status === 403 && r.body?.error?.code === 'forbidden')
        ) {
          actual[actor] = r.status;
        } else {
          actual[actor] = `${r.status} ${JSON.stringify(r.body)}`;
        }
      }
      assert.deepEqual(actual, expected);
    });
  }
});
