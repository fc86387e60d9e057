import { z } from 'zod';
import { conflict, notFound } from '../../shared/errors.js';
import { refuseRealmToken, requireOrg, requireSiteAdmin, requireUser } from '../access/access.service.js';
import { aclChanged } from '../daemons/acl.js';
import { cursor, id, limit, name, op } from '../http/op.js';
import { keysetPage } from '../http/paging.js';
import { detachPersonalChannels } from '../notifications/members.js';
import {
  acceptInvite,
  createInvite,
  createOrg,
  inviteOut,
  orgOut,
  resolveInvitee,
  sendInviteMail,
} from './orgs.service.js';

const slug = z
  .string()
  .min(1, 'must not be empty')
  .max(63)
  .regex(/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/, 'lowercase letters, digits and inner hyphens only');
// The HTML5 pattern (what browsers accept) allows single-label domains such as `dev@localhost`.
const email = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.email({ pattern: z.regexes.html5Email, error: 'must be an e-mail address' }));
const owner = z.union([
  z.object({ user_id: id }).strict(),
  z.object({ email, display_name: name.optional() }).strict(),
]);

export const orgOps = [
  op({
    name: 'orgs/new',
    summary: 'A site administrator creates an organization and invites its owner.',
    input: z.object({ slug, owner, display_name: name.optional(), reactivate: z.boolean().optional() }),
    async handler(ctx, input) {
      const admin = requireSiteAdmin(ctx.actor);
      const { org, sent, data } = await createOrg(ctx, input, admin.user.id);
      if (sent) sendInviteMail(ctx, org, sent.invite, sent.code);
      return { data };
    },
  }),
  op({
    name: 'invites/accept',
    summary:
      'Accepts an invitation with its code; answers a session token. A new account sets its password; an existing one accepts signed in (or with its password).',
    input: z.object({
      code: z.string().min(1),
      password: z.string().min(1).max(1000).optional(),
      handle: z
        .string()
        .min(1)
        .max(40)
        .regex(/^[a-z0-9][a-z0-9-]*$/, 'lowercase letters, digits and hyphens only')
        .optional(),
      display_name: name.optional(),
    }),
    async handler(ctx, input) {
      refuseRealmToken(ctx.actor);
      return { data: await acceptInvite(ctx, { actor: ctx.actor, ip: ctx.ip }, input) };
    },
  }),
  op({
    name: 'orgs/get',
    summary: 'An organization the caller belongs to.',
    input: z.object({ id }),
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.id, 'orgs.view');
      return { data: await orgOut(ctx.db, org) };
    },
  }),
  op({
    name: 'orgs/list',
    summary: 'Organizations the caller belongs to (every one for a site administrator).',
    input: z.object({ limit, cursor }),
    async handler(ctx, input) {
      const actor = requireUser(ctx.actor);
      let q = ctx.db.selectFrom('orgs').selectAll('orgs').where('orgs.deleted_at', 'is', null);
      if (actor.user.is_site_admin !== 1) {
        q = q
          .innerJoin('org_members', 'org_members.org_id', 'orgs.id')
          .where('org_members.user_id', '=', actor.user.id);
      }
      const page = await keysetPage(q, input, 'orgs.id');
      return {
        data: await Promise.all(page.data.map((o) => orgOut(ctx.db, o))),
        next_cursor: page.next_cursor,
      };
    },
  }),
  op({
    name: 'orgs/update',
    summary: "Changes an organization's display name (the slug is immutable).",
    input: z.object({ id, display_name: name }),
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.id, 'orgs.manage');
      const updated = { ...org, display_name: input.display_name, updated_at: ctx.now() };
      await ctx.db
        .updateTable('orgs')
        .set({ display_name: updated.display_name, updated_at: updated.updated_at })
        .where('id', '=', org.id)
        .execute();
      return { data: await orgOut(ctx.db, updated) };
    },
  }),
  op({
    name: 'orgs/delete',
    summary:
      'Soft-deletes an organization (owner or site administrator); orgs/new with reactivate restores it.',
    input: z.object({ id }),
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.id, 'orgs.delete');
      await ctx.db.updateTable('orgs').set({ deleted_at: ctx.now() }).where('id', '=', org.id).execute();
      return { data: { id: org.id, deleted: true } };
    },
  }),
  op({
    name: 'orgs/invite_member',
    summary: 'Invites a person to the organization as admin or member.',
    input: z.object({ org_id: id, email, role: z.enum(['admin', 'member']) }),
    async handler(ctx, input) {
      const { org, actor } = await requireOrg(ctx, ctx.actor, input.org_id, 'members.manage');
      const user = await resolveInvitee(ctx, { email: input.email }, org.id);
      const member = await ctx.db
        .selectFrom('org_members')
        .select('role')
        .where('org_id', '=', org.id)
        .where('user_id', '=', user.id)
        .executeTakeFirst();
      if (member) throw conflict(`${input.email} is already a member (${member.role})`);
      const { invite, code } = await createInvite(ctx, org, user, input.role, actor.user.id);
      sendInviteMail(ctx, org, invite, code);
      ctx.status(201);
      return { data: inviteOut(invite, code) };
    },
  }),
  op({
    name: 'orgs/list_members',
    summary: 'Members of an organization with their roles.',
    input: z.object({ org_id: id, limit, cursor }),
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'orgs.view');
      const q = ctx.db
        .selectFrom('org_members as m')
        .innerJoin('users as u', 'u.id', 'm.user_id')
        .select(['u.id', 'u.handle', 'u.email', 'u.display_name', 'u.status', 'm.role', 'm.created_at'])
        .where('m.org_id', '=', org.id);
      const page = await keysetPage(q, input, 'u.id');
      return {
        data: page.data.map((r) => ({
          user: {
            id: r.id,
            handle: r.handle,
            email: r.email,
            display_name: r.display_name,
            status: r.status,
          },
          role: r.role,
          created_at: r.created_at,
        })),
        next_cursor: page.next_cursor,
      };
    },
  }),
  op({
    name: 'orgs/set_member_role',
    summary: "Changes a member's organization role (admin or member; the owner's role is fixed).",
    input: z.object({ org_id: id, user_id: id, role: z.enum(['admin', 'member']) }),
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'members.manage');
      if (org.owner_user_id === input.user_id) throw conflict("the owner's role cannot be changed");
      const res = await ctx.db
        .updateTable('org_members')
        .set({ role: input.role })
        .where('org_id', '=', org.id)
        .where('user_id', '=', input.user_id)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 0) throw notFound('member');
      await aclChanged(ctx, { orgId: org.id });
      return { data: { org_id: org.id, user_id: input.user_id, role: input.role } };
    },
  }),
  op({
    name: 'orgs/remove_member',
    summary:
      "Removes a member from the organization, its groups and its realms; their personal channels leave the organization's notification rules.",
    input: z.object({ org_id: id, user_id: id }),
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'members.manage');
      if (org.owner_user_id === input.user_id) throw conflict('the owner cannot be removed');
      await ctx.db.transaction().execute(async (trx) => {
        const res = await trx
          .deleteFrom('org_members')
          .where('org_id', '=', org.id)
          .where('user_id', '=', input.user_id)
          .executeTakeFirst();
        if (Number(res.numDeletedRows) === 0) throw notFound('member');
        await trx
          .deleteFrom('group_members')
          .where('user_id', '=', input.user_id)
          .where('group_id', 'in', trx.selectFrom('groups').select('id').where('org_id', '=', org.id))
          .execute();
        await trx
          .deleteFrom('realm_members')
          .where('member_type', '=', 'user')
          .where('member_id', '=', input.user_id)
          .where('realm_id', 'in', trx.selectFrom('realms').select('id').where('org_id', '=', org.id))
          .execute();
        await detachPersonalChannels(trx, org.id, input.user_id, ctx.now());
      });
      await aclChanged(ctx, { orgId: org.id });
      return { data: { org_id: org.id, user_id: input.user_id, removed: true } };
    },
  }),
];
