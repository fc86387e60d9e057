import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
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
  const rows = newEvents(ids, events);
  await insertEvents(db, rows).execute();
  // The event bus: matching notification rules become outbox rows in this same transaction.
  await enqueueEventDeliveries(db, ids, rows);
}

/** The rows of new events (ids and time given now). */
export function newEvents(ids: EventContext, events: readonly HubEvent[]): RecordedEvent[] {
  const createdAt = ids.now();
  return events.map((e) => ({
    id: ids.newId(),
    type: e.type,
    org_id: e.org_id ?? null,
    realm_id: e.realm_id ?? null,
    subject_id: e.subject_id ?? null,
    payload: e.payload ?? {},
    created_at: createdAt,
  }));
}

/**
 * The statement that writes them, not yet run: a caller may send it with others in one round trip
 * (src/hub/runs/history.repo.ts); it then calls `enqueueEventDeliveries` itself.
 */
export function insertEvents(db: Kysely<DB>, rows: readonly RecordedEvent[]) {
  return db
    .insertInto('events')
    .values(rows.map((row) => ({ ...row, payload: JSON.stringify(row.payload) })));
}
