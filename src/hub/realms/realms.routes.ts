import { z } from 'zod';
import { isUniqueViolation } from '../../db/index.js';
import type { RealmMembersTable } from '../../db/schema.js';
import { conflict, notFound } from '../../shared/errors.js';
import { REALM_ROLES } from '../../shared/permissions.js';
import { hashSecret, mintToken, tokenHint } from '../../shared/tokens.js';
import { requireOrg, requireRealm, requireUser } from '../access/access.service.js';
import type { Hub } from '../context.js';
import { aclChanged } from '../daemons/acl.js';
import { daemonOut } from '../daemons/daemons.repo.js';
import { cursor, id, limit, name, op } from '../http/op.js';
import { keysetPage } from '../http/paging.js';
import { deleteDeliveriesOf } from '../notifications/channels.repo.js';
import { insertRealm, realmOut, upsertRealmMember } from './realms.repo.js';

const memberType = z.enum(['user', 'daemon', 'group']);
const role = z.enum(REALM_ROLES as [string, ...string[]]) as z.ZodType<RealmMembersTable['role']>;

/** Checks that a prospective realm member belongs to the realm's organization (or realm, for a daemon). */
async function requireMemberSubject(
  hub: Hub,
  realm: { id: string; org_id: string },
  type: RealmMembersTable['member_type'],
  memberId: string,
): Promise<void> {
  let found: unknown;
  if (type === 'user') {
    found = await hub.db
      .selectFrom('org_members')
      .select('user_id')
      .where('org_id', '=', realm.org_id)
      .where('user_id', '=', memberId)
      .executeTakeFirst();
  } else if (type === 'group') {
    found = await hub.db
      .selectFrom('groups')
      .select('id')
      .where('org_id', '=', realm.org_id)
      .where('id', '=', memberId)
      .executeTakeFirst();
  } else {
    found = await hub.db
      .selectFrom('daemons')
      .select('id')
      .where('realm_id', '=', realm.id)
      .where('id', '=', memberId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
  }
  if (!found) throw notFound(type === 'user' ? 'organization member' : type);
}

/** Refuses a change that would leave the realm without an explicit admin. */
async function guardLastAdmin(hub: Hub, realmId: string, type: string, memberId: string): Promise<void> {
  const admins = await hub.db
    .selectFrom('realm_members')
    .select(['member_type', 'member_id'])
    .where('realm_id', '=', realmId)
    .where('role', '=', 'admin')
    .execute();
  const others = admins.filter((a) => !(a.member_type === type && a.member_id === memberId));
  if (admins.length > 0 && others.length === 0) {
    throw conflict('this is the last admin of the realm; add another admin first');
  }
}

export const realmOps = [
  op({
    name: 'realms/new',
    summary: 'Creates a realm in an organization.',
    input: z.object({ org_id: id, name }),
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'realms.manage');
      try {
        const realm = await insertRealm(ctx.db, {
          id: ctx.newId(),
          org_id: org.id,
          name: input.name,
          created_at: ctx.now(),
        });
        ctx.status(201);
        return { data: realmOut(realm) };
      } catch (err) {
        if (isUniqueViolation(err))
          throw conflict(`a realm named "${input.name}" exists in this organization`);
        throw err;
      }
    },
  }),
  op({
    name: 'realms/get',
    summary: 'A realm the caller is a member of.',
    input: z.object({ id }),
    async handler(ctx, input) {
      const { realm, role: myRole } = await requireRealm(ctx, ctx.actor, input.id, 'runs.view');
      return { data: { ...realmOut(realm), my_role: myRole } };
    },
  }),
  op({
    name: 'realms/list',
    summary: "An organization's realms the caller can see (all of them for org owners and admins).",
    input: z.object({ org_id: id, limit, cursor }),
    async handler(ctx, input) {
      const { org, role: orgRole, actor } = await requireOrg(ctx, ctx.actor, input.org_id, 'orgs.view');
      let q = ctx.db.selectFrom('realms').selectAll().where('org_id', '=', org.id);
      if (orgRole === 'member') {
        const uid = actor.user.id;
        q = q.where((eb) =>
          eb.or([
            eb(
              'id',
              'in',
              eb
                .selectFrom('realm_members')
                .select('realm_id')
                .where('member_type', '=', 'user')
                .where('member_id', '=', uid),
            ),
            eb(
              'id',
              'in',
              eb
                .selectFrom('realm_members as rm')
                .innerJoin('group_members as gm', 'gm.group_id', 'rm.member_id')
                .select('rm.realm_id')
                .where('rm.member_type', '=', 'group')
                .where('gm.user_id', '=', uid),
            ),
          ]),
        );
      }
      const page = await keysetPage(q, input);
      return { data: page.data.map(realmOut), next_cursor: page.next_cursor };
    },
  }),
  op({
    name: 'realms/remove',
    summary: 'Removes a realm with its members and daemons (not the default realm).',
    input: z.object({ id }),
    async handler(ctx, input) {
      const user = requireUser(ctx.actor);
      const realm = await ctx.db
        .selectFrom('realms')
        .selectAll()
        .where('id', '=', input.id)
        .executeTakeFirst();
      if (!realm) throw notFound('realm');
      await requireOrg(ctx, user, realm.org_id, 'realms.manage');
      if (realm.name === 'default') throw conflict('the default realm cannot be removed');
      const daemons = await ctx.db
        .selectFrom('daemons')
        .select('id')
        .where('realm_id', '=', realm.id)
        .execute();
      await ctx.db.transaction().execute(async (trx) => {
        await deleteDeliveriesOf(trx, { realmId: realm.id });
        await trx.deleteFrom('realms').where('id', '=', realm.id).execute();
      });
      for (const d of daemons) ctx.tunnel.disconnect(d.id, 'the realm was removed');
      return { data: { id: realm.id, removed: true } };
    },
  }),
  op({
    name: 'realms/add_member',
    summary: 'Adds a user, group or daemon to a realm with a role.',
    input: z.object({ realm_id: id, member_type: memberType, member_id: id, role }),
    async handler(ctx, input) {
      const { realm } = await requireRealm(ctx, ctx.actor, input.realm_id, 'realms.members.manage');
      await requireMemberSubject(ctx, realm, input.member_type, input.member_id);
      const row: RealmMembersTable = {
        realm_id: realm.id,
        member_type: input.member_type,
        member_id: input.member_id,
        role: input.role,
        created_at: ctx.now(),
      };
      try {
        await ctx.db.insertInto('realm_members').values(row).execute();
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict('already a member; use realms/set_member_role');
        throw err;
      }
      await aclChanged(ctx, { realmId: realm.id });
      ctx.status(201);
      return { data: row };
    },
  }),
  op({
    name: 'realms/set_member_role',
    summary: "Changes a realm member's role (the last admin cannot be demoted).",
    input: z.object({ realm_id: id, member_type: memberType, member_id: id, role }),
    async handler(ctx, input) {
      const { realm } = await requireRealm(ctx, ctx.actor, input.realm_id, 'realms.members.manage');
      const row = await ctx.db
        .selectFrom('realm_members')
        .selectAll()
        .where('realm_id', '=', realm.id)
        .where('member_type', '=', input.member_type)
        .where('member_id', '=', input.member_id)
        .executeTakeFirst();
      if (!row) throw notFound('realm member');
      if (row.role === 'admin' && input.role !== 'admin') {
        await guardLastAdmin(ctx, realm.id, input.member_type, input.member_id);
      }
      await upsertRealmMember(ctx.db, { ...row, role: input.role });
      await aclChanged(ctx, { realmId: realm.id });
      return { data: { ...row, role: input.role } };
    },
  }),
  op({
    name: 'realms/remove_member',
    summary: 'Removes a person, daemon or group from a realm (never its last admin).',
    input: z.object({ realm_id: id, member_type: memberType, member_id: id }),
    async handler(ctx, input) {
      const { realm } = await requireRealm(ctx, ctx.actor, input.realm_id, 'realms.members.manage');
      const row = await ctx.db
        .selectFrom('realm_members')
        .select('role')
        .where('realm_id', '=', realm.id)
        .where('member_type', '=', input.member_type)
        .where('member_id', '=', input.member_id)
        .executeTakeFirst();
      if (!row) throw notFound('realm member');
      if (row.role === 'admin') await guardLastAdmin(ctx, realm.id, input.member_type, input.member_id);
      await ctx.db
        .deleteFrom('realm_members')
        .where('realm_id', '=', realm.id)
        .where('member_type', '=', input.member_type)
        .where('member_id', '=', input.member_id)
        .execute();
      await aclChanged(ctx, { realmId: realm.id });
      return {};
    },
  }),
  op({
    name: 'realms/list_members',
    summary: 'Members of a realm.',
    input: z.object({ realm_id: id, limit, cursor }),
    async handler(ctx, input) {
      const { realm } = await requireRealm(ctx, ctx.actor, input.realm_id, 'runs.view');
      // Member ids (users, groups, daemons) are time-ordered UUIDs, unique across member types.
      const page = await keysetPage(
        ctx.db.selectFrom('realm_members').selectAll().where('realm_id', '=', realm.id),
        input,
        'member_id',
      );
      return { data: page.data, next_cursor: page.next_cursor };
    },
  }),
  op({
    name: 'realms/create_daemon_token',
    summary: 'Registers a daemon in a realm and returns its realm token (shown once).',
    input: z.object({ realm_id: id, name }),
    async handler(ctx, input) {
      const { realm } = await requireRealm(ctx, ctx.actor, input.realm_id, 'daemons.manage');
      const token = mintToken('daemon');
      const now = ctx.now();
      const daemon = {
        id: ctx.newId(),
        realm_id: realm.id,
        name: input.name,
        token_hash: hashSecret(token),
        hint: tokenHint(token),
        status: 'offline' as const,
        last_seen_at: null,
        created_at: now,
        revoked_at: null,
      };
      await ctx.db.transaction().execute(async (trx) => {
        await trx.insertInto('daemons').values(daemon).execute();
        await upsertRealmMember(trx, {
          realm_id: realm.id,
          member_type: 'daemon',
          member_id: daemon.id,
          role: 'member',
          created_at: now,
        });
      });
      ctx.status(201);
      return { data: { daemon_id: daemon.id, token, daemon: daemonOut(daemon) } };
    },
  }),
];
