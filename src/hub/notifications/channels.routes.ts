import { z } from 'zod';
import type { NotificationChannelsTable } from '../../db/schema.js';
import { AppError, conflict } from '../../shared/errors.js';
import { requireOrg, requireRealm, requireUser } from '../access/access.service.js';
import { cursor, id, limit, name, op } from '../http/op.js';
import { decodeCursor, pageOf } from '../http/paging.js';
import {
  channelOut,
  channelWithCount,
  deleteDeliveriesOf,
  parseDestinations,
  requireChannel,
  ruleCounts,
} from './channels.repo.js';
import { deliveriesOut } from './deliveries.repo.js';
import { DESTINATION_TYPES, TEST_EVENT } from './kinds.js';
import { enqueueForChannel } from './outbox.js';
import { newChannelSecret } from './signing.js';
import { wakeDeliveryWorkers } from './worker.js';

const isHttpUrl = (s: string) => {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
};

export const destinationSchema = z.object({
  type: z.enum(DESTINATION_TYPES),
  webhook_url: z.string().trim().max(2000).refine(isHttpUrl, 'must be an http or https URL'),
});
const destinations = z.array(destinationSchema).max(10, 'at most 10 destinations');

/** `realm_id`, `org_id` or neither (personal), never both. */
export const oneScope = <T extends { realm_id?: string | undefined; org_id?: string | undefined }>(
  v: T,
  ctx: z.RefinementCtx,
) => {
  if (v.realm_id !== undefined && v.org_id !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['org_id'], message: 'give realm_id or org_id, not both' });
  }
};

const TEST_WAIT_MS = 15_000;

export const channelOps = [
  op({
    name: 'notification_channels/new',
    summary:
      'Creates a notification channel of a realm (realm_id), an organization (org_id) or the caller (neither); the reply carries its signing secret, once.',
    input: z
      .object({
        realm_id: id.optional(),
        org_id: id.optional(),
        name,
        destinations: destinations.min(1, 'at least one destination'),
        enabled: z.boolean().default(true),
      })
      .superRefine(oneScope),
    async handler(ctx, input) {
      const user = requireUser(ctx.actor);
      let place: Pick<
        NotificationChannelsTable,
        'scope' | 'realm_id' | 'org_id' | 'user_id' | 'owner_org_id'
      >;
      if (input.realm_id !== undefined) {
        const { realm } = await requireRealm(ctx, ctx.actor, input.realm_id, 'channels.manage.realm');
        place = {
          scope: 'realm',
          realm_id: realm.id,
          org_id: null,
          user_id: null,
          owner_org_id: realm.org_id,
        };
      } else if (input.org_id !== undefined) {
        const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'channels.manage');
        place = { scope: 'org', realm_id: null, org_id: org.id, user_id: null, owner_org_id: org.id };
      } else {
        place = {
          scope: 'personal',
          realm_id: null,
          org_id: null,
          user_id: user.user.id,
          owner_org_id: null,
        };
      }
      const now = ctx.now();
      const secret = newChannelSecret();
      const row: NotificationChannelsTable = {
        id: ctx.newId(),
        ...place,
        name: input.name,
        destinations: JSON.stringify(input.destinations),
        enabled: input.enabled ? 1 : 0,
        secret: ctx.cipher.seal(secret),
        system_key: null,
        locked: 0,
        system_reason: null,
        disabled_reason: null,
        consecutive_failures: 0,
        created_at: now,
        updated_at: now,
      };
      await ctx.db.insertInto('notification_channels').values(row).execute();
      ctx.status(201);
      return { data: { ...channelOut(row, 0), secret } };
    },
  }),
  op({
    name: 'notification_channels/list',
    summary:
      "A realm's (realm_id) or an organization's (org_id) channels, plus the caller's personal channels; neither: personal channels only.",
    input: z.object({ realm_id: id.optional(), org_id: id.optional(), limit, cursor }).superRefine(oneScope),
    async handler(ctx, input) {
      const user = requireUser(ctx.actor);
      const after = decodeCursor(input.cursor);
      const me = user.user.id;
      let scopeId: { realm_id: string } | { org_id: string } | null = null;
      if (input.realm_id !== undefined) {
        const { realm } = await requireRealm(ctx, ctx.actor, input.realm_id, 'channels.manage.realm');
        scopeId = { realm_id: realm.id };
      } else if (input.org_id !== undefined) {
        const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'channels.manage');
        scopeId = { org_id: org.id };
      }
      let q = ctx.db
        .selectFrom('notification_channels')
        .selectAll()
        .where((eb) => {
          const personal = eb.and([eb('scope', '=', 'personal'), eb('user_id', '=', me)]);
          if (scopeId && 'realm_id' in scopeId)
            return eb.or([
              eb.and([eb('scope', '=', 'realm'), eb('realm_id', '=', scopeId.realm_id)]),
              personal,
            ]);
          if (scopeId)
            return eb.or([eb.and([eb('scope', '=', 'org'), eb('org_id', '=', scopeId.org_id)]), personal]);
          return personal;
        });
      if (after) q = q.where('id', '>', after);
      const rows = await q
        .orderBy('id')
        .limit(input.limit + 1)
        .execute();
      const page = pageOf(rows, input.limit, (r) => r.id);
      const counts = await ruleCounts(
        ctx.db,
        page.data.map((r) => r.id),
      );
      return {
        data: page.data.map((r) => channelOut(r, counts.get(r.id) ?? 0)),
        next_cursor: page.next_cursor,
      };
    },
  }),
  op({
    name: 'notification_channels/update',
    summary: 'Renames a channel, replaces its destinations, or turns it on or off; answers the full channel.',
    input: z.object({
      id,
      enabled: z.boolean().optional(),
      name: name.optional(),
      destinations: destinations.optional(),
    }),
    async handler(ctx, input) {
      const { channel } = await requireChannel(ctx, ctx.actor, input.id);
      const patch: Partial<NotificationChannelsTable> = { updated_at: ctx.now() };
      if (input.name !== undefined) patch.name = input.name;
      if (input.destinations !== undefined) patch.destinations = JSON.stringify(input.destinations);
      if (input.enabled !== undefined) {
        patch.enabled = input.enabled ? 1 : 0;
        // Turning a channel on again starts its failure count afresh.
        if (input.enabled) Object.assign(patch, { disabled_reason: null, consecutive_failures: 0 });
      }
      await ctx.db.updateTable('notification_channels').set(patch).where('id', '=', channel.id).execute();
      return { data: await channelWithCount(ctx.db, { ...channel, ...patch }) };
    },
  }),
  op({
    name: 'notification_channels/remove',
    summary:
      'Removes a channel, its place in rules and its delivery log. A locked (system) channel answers locked.',
    input: z.object({ id }),
    async handler(ctx, input) {
      const { channel } = await requireChannel(ctx, ctx.actor, input.id);
      if (channel.locked === 1)
        throw new AppError('locked', 'this is a system channel; it cannot be removed');
      await ctx.db.transaction().execute(async (trx) => {
        await deleteDeliveriesOf(trx, { channelId: channel.id });
        await trx.deleteFrom('notification_channels').where('id', '=', channel.id).execute();
      });
      return { data: { id: channel.id, removed: true } };
    },
  }),
  op({
    name: 'notification_channels/test',
    summary:
      'Sends a test event to every destination of the channel through the delivery outbox; with wait: true, answers once the attempts settled (15 s at most).',
    input: z.object({ id, wait: z.boolean().default(false) }),
    async handler(ctx, input) {
      const { channel } = await requireChannel(ctx, ctx.actor, input.id);
      if (parseDestinations(channel.destinations).length === 0) {
        throw conflict('the channel has no destinations; add one with notification_channels/update');
      }
      const eventId = ctx.newId();
      await enqueueForChannel(
        ctx.db,
        ctx,
        channel,
        {
          id: eventId,
          type: TEST_EVENT,
          occurred_at: ctx.now(),
          org_id: channel.owner_org_id,
          realm_id: channel.realm_id,
          subject_id: channel.id,
          data: { channel_id: channel.id, channel_name: channel.name },
        },
        'test',
      );
      wakeDeliveryWorkers(ctx.db);
      const load = () =>
        ctx.db
          .selectFrom('notification_deliveries')
          .selectAll()
          .where('event_id', '=', eventId)
          .orderBy('id')
          .execute();
      let rows = await load();
      const until = Date.now() + TEST_WAIT_MS;
      // A test is interactive: polling the outbox for at most a few seconds is fine here.
      while (input.wait && rows.some((r) => r.state === 'pending') && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 100));
        rows = await load();
      }
      return { data: { event_id: eventId, deliveries: await deliveriesOut(ctx.db, rows) } };
    },
  }),
  op({
    name: 'notification_channels/rotate_secret',
    summary: "Replaces a channel's signing secret; the reply carries the new one, once.",
    input: z.object({ id }),
    async handler(ctx, input) {
      const { channel } = await requireChannel(ctx, ctx.actor, input.id);
      const secret = newChannelSecret();
      const patch = { secret: ctx.cipher.seal(secret), updated_at: ctx.now() };
      await ctx.db.updateTable('notification_channels').set(patch).where('id', '=', channel.id).execute();
      return { data: { ...(await channelWithCount(ctx.db, { ...channel, ...patch })), secret } };
    },
  }),
  op({
    name: 'notifications/list_deliveries',
    summary: "A channel's delivery log, newest first: state, attempts, last status code, latency and error.",
    input: z.object({
      channel_id: id,
      state: z.enum(['pending', 'succeeded', 'failed', 'cancelled']).optional(),
      limit,
      cursor,
    }),
    async handler(ctx, input) {
      const { channel } = await requireChannel(ctx, ctx.actor, input.channel_id);
      const before = decodeCursor(input.cursor);
      let q = ctx.db.selectFrom('notification_deliveries').selectAll().where('channel_id', '=', channel.id);
      if (input.state) q = q.where('state', '=', input.state);
      if (before) q = q.where('id', '<', before);
      const rows = await q
        .orderBy('id', 'desc')
        .limit(input.limit + 1)
        .execute();
      const page = pageOf(rows, input.limit, (r) => r.id);
      return { data: await deliveriesOut(ctx.db, page.data), next_cursor: page.next_cursor };
    },
  }),
];
