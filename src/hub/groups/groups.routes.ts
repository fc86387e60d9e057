import { z } from 'zod';
import { isUniqueViolation } from '../../db/index.js';
import { conflict, notFound } from '../../shared/errors.js';
import { requireOrg, requireUser } from '../access/access.service.js';
import type { Actor } from '../access/actor.js';
import type { Hub } from '../context.js';
import { aclChanged } from '../daemons/acl.js';
import { cursor, id, limit, name, op } from '../http/op.js';
import { keysetPage } from '../http/paging.js';
import { findGroup, groupOut, membersOf } from './groups.repo.js';

/** Loads a group and checks the caller may manage its organization's members. */
async function requireGroupManager(hub: Hub, actor: Actor | null, groupId: string) {
  const user = requireUser(actor);
  const group = await findGroup(hub.db, groupId);
  if (!group) throw notFound('group');
  const { org } = await requireOrg(hub, user, group.org_id, 'members.manage');
  return { group, org };
}

export const groupOps = [
  op({
    name: 'groups/new',
    summary: 'Creates a group of organization members (a group can be a realm member).',
    input: z.object({ org_id: id, name }),
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'members.manage');
      const group = { id: ctx.newId(), org_id: org.id, name: input.name, created_at: ctx.now() };
      try {
        await ctx.db.insertInto('groups').values(group).execute();
      } catch (err) {
        if (isUniqueViolation(err))
          throw conflict(`a group named "${input.name}" exists in this organization`);
        throw err;
      }
      ctx.status(201);
      return { data: groupOut(group, []) };
    },
  }),
  op({
    name: 'groups/list',
    summary: "An organization's groups with their members.",
    input: z.object({ org_id: id, limit, cursor }),
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'orgs.view');
      const page = await keysetPage(
        ctx.db.selectFrom('groups').selectAll().where('org_id', '=', org.id),
        input,
      );
      const members = await membersOf(
        ctx.db,
        page.data.map((g) => g.id),
      );
      return {
        data: page.data.map((g) => groupOut(g, members.get(g.id) ?? [])),
        next_cursor: page.next_cursor,
      };
    },
  }),
  op({
    name: 'groups/add_member',
    summary: 'Adds an organization member to a group.',
    input: z.object({ group_id: id, user_id: id }),
    async handler(ctx, input) {
      const { group, org } = await requireGroupManager(ctx, ctx.actor, input.group_id);
      const member = await ctx.db
        .selectFrom('org_members')
        .select('user_id')
        .where('org_id', '=', org.id)
        .where('user_id', '=', input.user_id)
        .executeTakeFirst();
      if (!member) throw notFound('organization member');
      const row = { group_id: group.id, user_id: input.user_id, created_at: ctx.now() };
      try {
        await ctx.db.insertInto('group_members').values(row).execute();
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict('already a member of this group');
        throw err;
      }
      await aclChanged(ctx, { orgId: org.id });
      ctx.status(201);
      return { data: row };
    },
  }),
  op({
    name: 'groups/remove_member',
    summary: 'Removes a user from a group.',
    input: z.object({ group_id: id, user_id: id }),
    async handler(ctx, input) {
      const { group, org } = await requireGroupManager(ctx, ctx.actor, input.group_id);
      const res = await ctx.db
        .deleteFrom('group_members')
        .where('group_id', '=', group.id)
        .where('user_id', '=', input.user_id)
        .executeTakeFirst();
      if (Number(res.numDeletedRows) === 0) throw notFound('group member');
      await aclChanged(ctx, { orgId: org.id });
      return { data: { group_id: group.id, user_id: input.user_id, removed: true } };
    },
  }),
  op({
    name: 'groups/remove',
    summary: 'Removes a group with its memberships in realms (never the last admin of a realm).',
    input: z.object({ id }),
    async handler(ctx, input) {
      const { group, org } = await requireGroupManager(ctx, ctx.actor, input.id);
      await ctx.db.transaction().execute(async (trx) => {
        // A realm in which this group is the only explicit admin would be left without one.
        const orphaned = await trx
          .selectFrom('realm_members as rm')
          .select('rm.realm_id')
          .where('rm.member_type', '=', 'group')
          .where('rm.member_id', '=', group.id)
          .where('rm.role', '=', 'admin')
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom('realm_members as o')
                  .select('o.realm_id')
                  .whereRef('o.realm_id', '=', 'rm.realm_id')
                  .where('o.role', '=', 'admin')
                  .where((eb) =>
                    eb.or([eb('o.member_type', '!=', 'group'), eb('o.member_id', '!=', group.id)]),
                  ),
              ),
            ),
          )
          .executeTakeFirst();
        if (orphaned) {
          throw conflict('this group is the last admin of a realm; add another admin first', {
            realm_id: orphaned.realm_id,
          });
        }
        await trx
          .deleteFrom('realm_members')
          .where('member_type', '=', 'group')
          .where('member_id', '=', group.id)
          .execute();
        await trx.deleteFrom('group_members').where('group_id', '=', group.id).execute();
        await trx.deleteFrom('groups').where('id', '=', group.id).execute();
      });
      await aclChanged(ctx, { orgId: org.id });
      return { data: { id: group.id, removed: true } };
    },
  }),
];
