import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { NotificationChannelsTable } from '../../db/schema.js';
import type { Channel } from '../../shared/api/notifications.js';
import { forbidden, notFound } from '../../shared/errors.js';
import { requireOrg, requireRealm, requireUser } from '../access/access.service.js';
import type { Actor } from '../access/actor.js';
import type { Hub } from '../context.js';
import type { Destination } from './kinds.js';

export const parseDestinations = (json: string): Destination[] => JSON.parse(json) as Destination[];

/** The spec's Notification channel. The secret never leaves through here. */
export function channelOut(c: NotificationChannelsTable, ruleCount: number): Channel {
  return {
    id: c.id,
    realm_id: c.realm_id,
    org_id: c.org_id,
    user_id: c.user_id,
    name: c.name,
    destinations: parseDestinations(c.destinations).map((d) => ({
      type: d.type,
      webhook_url: d.webhook_url,
    })),
    enabled: c.enabled === 1,
    created_at: c.created_at,
    updated_at: c.updated_at,
    rule_count: ruleCount,
    system_key: c.system_key,
    locked: c.locked === 1,
    // Why the channel was disabled automatically, else why it is locked (system channels).
    lock_reason: c.disabled_reason ?? c.system_reason,
  };
}

export async function ruleCounts(db: Kysely<DB>, channelIds: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (channelIds.length === 0) return out;
  const rows = await db
    .selectFrom('notification_rule_channels')
    .select(['channel_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('channel_id', 'in', channelIds)
    .groupBy('channel_id')
    .execute();
  for (const r of rows) out.set(r.channel_id, Number(r.n));
  return out;
}

export async function channelWithCount(db: Kysely<DB>, c: NotificationChannelsTable) {
  return channelOut(c, (await ruleCounts(db, [c.id])).get(c.id) ?? 0);
}

export async function findChannel(
  db: Kysely<DB>,
  id: string,
): Promise<NotificationChannelsTable | undefined> {
  return db.selectFrom('notification_channels').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Loads a channel and checks that the caller may manage it: a realm channel needs
 * channels.manage.realm on its realm, an org channel channels.manage in its org, a personal channel
 * is its user's (and a site administrator's).
 */
export async function requireChannel(hub: Hub, actor: Actor | null, id: string) {
  const user = requireUser(actor);
  const ch = await findChannel(hub.db, id);
  if (!ch) throw notFound('notification channel');
  if (ch.scope === 'realm') await requireRealm(hub, actor, ch.realm_id!, 'channels.manage.realm');
  else if (ch.scope === 'org') await requireOrg(hub, actor, ch.org_id!, 'channels.manage');
  else if (ch.user_id !== user.user.id && user.user.is_site_admin !== 1) {
    throw forbidden('this is another user’s personal channel');
  }
  return { channel: ch, user };
}

/**
 * For other features (runs' `notify_channels`): the channels a user may attach to something in a
 * realm — channels of that realm, org-level channels of its organization, and the user's own
 * personal channels. Returns the ids that are not usable (unknown ones included).
 */
export async function unusableChannelIds(
  db: Kysely<DB>,
  scope: { realmId: string | null; orgId: string; userId: string | null },
  channelIds: readonly string[],
): Promise<string[]> {
  if (channelIds.length === 0) return [];
  const rows = await db
    .selectFrom('notification_channels')
    .select('id')
    .where('id', 'in', [...channelIds])
    .where((eb) =>
      eb.or([
        ...(scope.realmId ? [eb.and([eb('scope', '=', 'realm'), eb('realm_id', '=', scope.realmId)])] : []),
        eb.and([eb('scope', '=', 'org'), eb('org_id', '=', scope.orgId)]),
        ...(scope.userId ? [eb.and([eb('scope', '=', 'personal'), eb('user_id', '=', scope.userId)])] : []),
      ]),
    )
    .execute();
  const ok = new Set(rows.map((r) => r.id));
  return channelIds.filter((id) => !ok.has(id));
}

/**
 * Deletes the delivery log of the channels `which` selects (one channel, or a realm's), before the
 * caller deletes the channels (or the realm that cascades to them) in the same transaction. The
 * delivery worker locks a delivery, then its channel, when it records an attempt: deleting in that
 * order too makes the two wait for each other on PostgreSQL instead of deadlocking.
 */
export async function deleteDeliveriesOf(
  trx: Kysely<DB>,
  which: { channelId: string } | { realmId: string },
) {
  const channels =
    'channelId' in which
      ? [which.channelId]
      : trx.selectFrom('notification_channels').select('id').where('realm_id', '=', which.realmId);
  await trx.deleteFrom('notification_deliveries').where('channel_id', 'in', channels).execute();
}
