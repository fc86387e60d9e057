import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import { insertRows, writeThenNotify } from '../cluster/bus.js';
import { type EventContext, enqueueEventDeliveries, type RecordedEvent } from '../notifications/outbox.js';

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
export async function recordEvent(db: Kysely<DB>, ids: EventContext, e: HubEvent): Promise<void> {
  await recordEvents(db, ids, [e]);
}

/** Several events at once (one statement for the events, one lookup of rules per kind of event). */
export async function recordEvents(
  db: Kysely<DB>,
  ids: EventContext,
  events: readonly HubEvent[],
): Promise<void> {
  if (events.length === 0) return;
  // The events and their deliveries are written together even when the caller has no transaction.
  if (!db.isTransaction) return db.transaction().execute((trx) => recordEvents(trx, ids, events));
  const createdAt = ids.now();
  const rows: RecordedEvent[] = events.map((e) => ({
    id: ids.newId(),
    type: e.type,
    org_id: e.org_id ?? null,
    realm_id: e.realm_id ?? null,
    subject_id: e.subject_id ?? null,
    payload: e.payload ?? {},
    created_at: createdAt,
  }));
  // Nothing reads them back in the transaction: on PostgreSQL, inTx sends them with its other kept
  // writes, in one statement before the commit (src/hub/cluster/bus.ts).
  const insert = insertRows(
    db,
    'events',
    rows.map((row) => ({ ...row, payload: JSON.stringify(row.payload) })),
  );
  await writeThenNotify(db, [insert], []);
  // The event bus: matching notification rules become outbox rows in this same transaction.
  await enqueueEventDeliveries(db, ids, rows);
}
