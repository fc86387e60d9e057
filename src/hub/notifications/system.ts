import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { Cipher } from '../ports.js';
import { SYSTEM_INVITES_KEY } from './kinds.js';
import { newChannelSecret } from './signing.js';

export const SYSTEM_CHANNEL_REASON =
  'system channel of the organization’s invite.sent rule: it cannot be removed; add destinations to receive invitations';

/**
 * Every organization has a locked system rule for `invite.sent` (CONTRACT.md §7). It targets the
 * organization's locked system channel "Invitations", created with no destinations: org admins add
 * destinations to it (notification_channels/update) to hear about invitations, and may add more
 * rules and channels of their own. Neither can be removed. Idempotent; runs in the org-creation
 * transaction (orgs.service.ts createOrg), also when a deleted organization is restored.
 */
export async function ensureSystemNotifications(
  db: Kysely<DB>,
  ids: { newId: () => string; now: () => number; cipher: Cipher },
  orgId: string,
): Promise<void> {
  const existing = await db
    .selectFrom('notification_rules')
    .select('id')
    .where('org_id', '=', orgId)
    .where('system_key', '=', SYSTEM_INVITES_KEY)
    .executeTakeFirst();
  if (existing) return;
  const now = ids.now();
  let channel = await db
    .selectFrom('notification_channels')
    .select('id')
    .where('owner_org_id', '=', orgId)
    .where('system_key', '=', SYSTEM_INVITES_KEY)
    .executeTakeFirst();
  if (!channel) {
    channel = { id: ids.newId() };
    await db
      .insertInto('notification_channels')
      .values({
        id: channel.id,
        scope: 'org',
        realm_id: null,
        org_id: orgId,
        user_id: null,
        owner_org_id: orgId,
        name: 'Invitations',
        destinations: '[]',
        enabled: 1,
        secret: ids.cipher.seal(newChannelSecret()),
        system_key: SYSTEM_INVITES_KEY,
        locked: 1,
        system_reason: SYSTEM_CHANNEL_REASON,
        disabled_reason: null,
        consecutive_failures: 0,
        created_at: now,
        updated_at: now,
      })
      .execute();
  }
  const ruleId = ids.newId();
  await db
    .insertInto('notification_rules')
    .values({
      id: ruleId,
      org_id: orgId,
      realm_id: null,
      event: 'invite.sent',
      filter_team_id: null,
      filter_state: null,
      system_key: SYSTEM_INVITES_KEY,
      locked: 1,
      created_by: null,
      created_at: now,
    })
    .execute();
  await db
    .insertInto('notification_rule_channels')
    .values({ rule_id: ruleId, channel_id: channel.id })
    .execute();
}
