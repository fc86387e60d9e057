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
 * The hub's events (invite.sent, daemon.connected, run.*): each is matched against the notification
 * rules in the transaction of the change that caused it, and its deliveries are written there
 * (src/hub/notifications/outbox.ts), so a committed change never loses its notifications. An event is
 * written to `events` only when it caused a delivery: the deliveries point at it, and nothing else
 * reads it. The change itself is the record of the others (a run's history, a daemon's row, an
 * invite), and a reconnect storm or a busy hub would otherwise write a row per daemon and per step
 * that retention removes unread.
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
  // The event bus: matching notification rules become outbox rows in this same transaction.
  const delivered = await enqueueEventDeliveries(db, ids, rows);
  const kept = rows.filter((r) => delivered.has(r.id));
  if (kept.length === 0) return;
  // Nothing reads them back in the transaction: on PostgreSQL, inTx sends them with its other kept
  // writes, in one statement before the commit (src/hub/cluster/bus.ts).
  const insert = insertRows(
    db,
    'events',
    kept.map((row) => ({ ...row, payload: JSON.stringify(row.payload) })),
  );
  await writeThenNotify(db, [insert], []);
}
