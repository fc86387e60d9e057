import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { DB } from '../../db/index.js';
import type { NotificationRulesTable } from '../../db/schema.js';
import type { Rule } from '../../shared/api/notifications.js';
import { RUN_STATES } from '../../shared/api/run-states.js';
import { AppError, invalidParams, notFound } from '../../shared/errors.js';
import { requireOrg, requireRealm, requireUser } from '../access/access.service.js';
import type { Actor } from '../access/actor.js';
import type { Hub } from '../context.js';
import { cursor, exactlyOneScope, id, limit, op } from '../http/op.js';
import { decodeCursor, pageOf } from '../http/paging.js';
import { unusableChannelIds } from './channels.repo.js';
import { EVENT_KINDS } from './kinds.js';

/** A notification rule (the spec shows only its id; the rest is ours, docs/api.md). */
export function ruleOut(r: NotificationRulesTable, channelIds: string[]): Rule {
  const filter = {
    ...(r.filter_team_id !== null ? { team_id: r.filter_team_id } : {}),
    ...(r.filter_state !== null ? { state: r.filter_state } : {}),
  };
  return {
    id: r.id,
    realm_id: r.realm_id,
    org_id: r.realm_id === null ? r.org_id : null,
    event: r.event,
    channel_ids: channelIds,
    filter: Object.keys(filter).length ? filter : null,
    system_key: r.system_key,
    locked: r.locked === 1,
    created_by: r.created_by,
    created_at: r.created_at,
  };
}

async function rulesOut(db: Kysely<DB>, rules: NotificationRulesTable[]) {
  if (rules.length === 0) return [];
  const links = await db
    .selectFrom('notification_rule_channels')
    .selectAll()
    .where(
      'rule_id',
      'in',
      rules.map((r) => r.id),
    )
    .orderBy('channel_id')
    .execute();
  const by = new Map<string, string[]>();
  for (const l of links) by.set(l.rule_id, [...(by.get(l.rule_id) ?? []), l.channel_id]);
  return rules.map((r) => ruleOut(r, by.get(r.id) ?? []));
}

/** `realm_id` or `org_id`, exactly one. */
/** The rule's scope after the permission check: rules.manage.realm on a realm, rules.manage in an org. */
async function requireRuleScope(
  hub: Hub,
  actor: Actor | null,
  scope: { realm_id?: string | null | undefined; org_id?: string | null | undefined },
) {
  if (scope.realm_id) {
    const { realm } = await requireRealm(hub, actor, scope.realm_id, 'rules.manage.realm');
    return { realmId: realm.id as string | null, orgId: realm.org_id };
  }
  const { org } = await requireOrg(hub, actor, scope.org_id!, 'rules.manage');
  return { realmId: null, orgId: org.id };
}

export const ruleOps = [
  op({
    name: 'realms/new_notification_rule',
    summary:
      'Sends events of one kind (optionally only for a team or a final state) of a realm or an organization to channels.',
    input: z
      .object({
        realm_id: id.optional(),
        org_id: id.optional(),
        event: z.enum(EVENT_KINDS),
        channel_ids: z.array(id).min(1, 'at least one channel').max(20, 'at most 20 channels'),
        filter: z.object({ team_id: id.optional(), state: z.enum(RUN_STATES).optional() }).optional(),
      })
      .superRefine(exactlyOneScope),
    async handler(ctx, input) {
      const user = requireUser(ctx.actor);
      const scope = await requireRuleScope(ctx, ctx.actor, input);
      const channelIds = [...new Set(input.channel_ids)];
      // A realm rule may use the realm's channels, its org's channels and the caller's own; an org
      // rule the org's channels and the caller's own.
      const bad = await unusableChannelIds(ctx.db, { ...scope, userId: user.user.id }, channelIds);
      if (bad.length) {
        throw invalidParams(
          bad.map((b) => ({
            field: `channel_ids.${input.channel_ids.indexOf(b)}`,
            message: `no channel ${b} usable here (a channel of this ${scope.realmId ? 'realm or its organization' : 'organization'}, or your own)`,
          })),
        );
      }
      const rule: NotificationRulesTable = {
        id: ctx.newId(),
        org_id: scope.orgId,
        realm_id: scope.realmId,
        event: input.event,
        filter_team_id: input.filter?.team_id ?? null,
        filter_state: input.filter?.state ?? null,
        system_key: null,
        locked: 0,
        created_by: user.user.id,
        created_at: ctx.now(),
      };
      await ctx.db.transaction().execute(async (trx) => {
        await trx.insertInto('notification_rules').values(rule).execute();
        await trx
          .insertInto('notification_rule_channels')
          .values(channelIds.map((c) => ({ rule_id: rule.id, channel_id: c })))
          .execute();
      });
      ctx.status(201);
      return { data: ruleOut(rule, [...channelIds].sort()) };
    },
  }),
  op({
    name: 'realms/list_notification_rules',
    summary: "A realm's (realm_id) or an organization's own (org_id) notification rules.",
    input: z
      .object({ realm_id: id.optional(), org_id: id.optional(), limit, cursor })
      .superRefine(exactlyOneScope),
    async handler(ctx, input) {
      const scope = await requireRuleScope(ctx, ctx.actor, input);
      const after = decodeCursor(input.cursor);
      let q = ctx.db.selectFrom('notification_rules').selectAll().where('org_id', '=', scope.orgId);
      q = scope.realmId ? q.where('realm_id', '=', scope.realmId) : q.where('realm_id', 'is', null);
      if (after) q = q.where('id', '>', after);
      const rows = await q
        .orderBy('id')
        .limit(input.limit + 1)
        .execute();
      const page = pageOf(rows, input.limit, (r) => r.id);
      return { data: await rulesOut(ctx.db, page.data), next_cursor: page.next_cursor };
    },
  }),
  op({
    name: 'realms/remove_notification_rules',
    summary: 'Removes a notification rule. A system rule answers locked.',
    input: z.object({ id }),
    async handler(ctx, input) {
      requireUser(ctx.actor);
      const rule = await ctx.db
        .selectFrom('notification_rules')
        .selectAll()
        .where('id', '=', input.id)
        .executeTakeFirst();
      if (!rule) throw notFound('notification rule');
      await requireRuleScope(
        ctx,
        ctx.actor,
        rule.realm_id ? { realm_id: rule.realm_id } : { org_id: rule.org_id },
      );
      if (rule.locked === 1) throw new AppError('locked', 'this is a system rule; it cannot be removed');
      await ctx.db.deleteFrom('notification_rules').where('id', '=', rule.id).execute();
      return { data: true };
    },
  }),
];
