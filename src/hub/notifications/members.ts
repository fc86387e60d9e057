import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { NotificationChannelsTable } from '../../db/schema.js';

/**
 * Personal channels and organization membership: a person's own channel hears an organization's
 * events only while that person belongs to it (or is a site administrator, who counts as a member
 * of every realm).
 */

const personalChannelsOf = (db: Kysely<DB>, userId: string) =>
  db
    .selectFrom('notification_channels')
    .select('id')
    .where('scope', '=', 'personal')
    .where('user_id', '=', userId);

/**
 * A member left the organization (orgs/remove_member, in its transaction): their personal
 * channels leave every rule of the organization and of its realms, and their deliveries still
 * pending for its events are cancelled.
 */
export async function detachPersonalChannels(
  db: Kysely<DB>,
  orgId: string,
  userId: string,
  now: number,
): Promise<void> {
  await db
    .deleteFrom('notification_rule_channels')
    .where('channel_id', 'in', personalChannelsOf(db, userId))
    .where('rule_id', 'in', db.selectFrom('notification_rules').select('id').where('org_id', '=', orgId))
    .execute();
  const realms = db.selectFrom('realms').select('id').where('org_id', '=', orgId);
  await db
    .updateTable('notification_deliveries')
    .set({
      state: 'cancelled',
      last_error: 'the channel’s owner left the organization',
      lease_owner: null,
      lease_until: null,
      updated_at: now,
      completed_at: now,
    })
    .where('state', '=', 'pending')
    .where('channel_id', 'in', personalChannelsOf(db, userId))
    .where('event_id', 'in', (eb) =>
      eb
        .selectFrom('events')
        .select('id')
        .where((w) => w.or([w('org_id', '=', orgId), w('realm_id', 'in', realms)])),
    )
    .execute();
}

/**
 * Drops the personal channels whose person is neither a member of the organization nor a site
 * administrator (a run's `notify_channels` may still name the channel of someone who left).
 */
export async function withoutFormerMembers(
  db: Kysely<DB>,
  orgId: string,
  channels: NotificationChannelsTable[],
): Promise<NotificationChannelsTable[]> {
  const userIds = [
    ...new Set(channels.flatMap((c) => (c.scope === 'personal' && c.user_id ? [c.user_id] : []))),
  ];
  if (userIds.length === 0) return channels;
  const members = await db
    .selectFrom('users')
    .select('users.id')
    .where('users.id', 'in', userIds)
    .where((eb) =>
      eb.or([
        eb('users.is_site_admin', '=', 1),
        eb.exists(
          eb
            .selectFrom('org_members')
            .select('org_members.user_id')
            .whereRef('org_members.user_id', '=', 'users.id')
            .where('org_members.org_id', '=', orgId),
        ),
      ]),
    )
    .execute();
  const keep = new Set(members.map((m) => m.id));
  return channels.filter((c) => c.scope !== 'personal' || (c.user_id !== null && keep.has(c.user_id)));
}
