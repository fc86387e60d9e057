import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import { enqueueEventDeliveries } from '../notifications/outbox.js';

export interface HubEvent {
  type: string;
  org_id?: string | null;
  realm_id?: string | null;
  subject_id?: string | null;
  /**
   * Free-form data of the event. Notification rules filter on `team_id` and `state` when present;
   * `channel_ids` (string[]) sends the event to those channels too (a run's `notify_channels`).
   */
  payload?: Record<string, unknown>;
}

/**
 * The hub's event log: every event (invite.sent, daemon.connected, run.*) is recorded here, in the
 * transaction of the change that caused it, together with the notification deliveries it causes
 * (src/hub/notifications/outbox.ts), so a committed change never loses its notifications.
 */
export async function recordEvent(
  db: Kysely<DB>,
  ids: { newId: () => string; now: () => number },
  e: HubEvent,
): Promise<void> {
  // The event and its deliveries are written together even when the caller has no transaction.
  if (!db.isTransaction) return db.transaction().execute((trx) => recordEvent(trx, ids, e));
  const row = {
    id: ids.newId(),
    type: e.type,
    org_id: e.org_id ?? null,
    realm_id: e.realm_id ?? null,
    subject_id: e.subject_id ?? null,
    payload: e.payload ?? {},
    created_at: ids.now(),
  };
  await db
    .insertInto('events')
    .values({ ...row, payload: JSON.stringify(row.payload) })
    .execute();
  // The event bus: matching notification rules become outbox rows in this same transaction.
  await enqueueEventDeliveries(db, ids, row);
}
