import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { NotificationAttemptsTable, NotificationDeliveriesTable } from '../../db/schema.js';
import type { Delivery } from '../../shared/api/notifications.js';

/** A delivery as `notifications/list_deliveries` shows it, with its attempts (oldest first). */
export function deliveryOut(d: NotificationDeliveriesTable, attempts: NotificationAttemptsTable[]): Delivery {
  return {
    id: d.id,
    channel_id: d.channel_id,
    event_id: d.event_id,
    event_type: d.event_type,
    test: d.kind === 'test',
    destination: { index: d.destination_index, type: d.destination_type, webhook_url: d.url },
    state: d.state,
    attempts: d.attempts,
    last_status_code: d.last_status_code,
    last_latency_ms: d.last_latency_ms,
    last_error: d.last_error,
    next_attempt_at: d.state === 'pending' ? d.next_attempt_at : null,
    created_at: d.created_at,
    updated_at: d.updated_at,
    completed_at: d.completed_at,
    attempt_log: attempts.map((a) => ({
      attempt: a.attempt,
      at: a.at,
      outcome: a.outcome,
      status_code: a.status_code,
      latency_ms: a.latency_ms,
      error: a.error,
    })),
  };
}

export async function deliveriesOut(db: Kysely<DB>, rows: NotificationDeliveriesTable[]) {
  if (rows.length === 0) return [];
  const attempts = await db
    .selectFrom('notification_attempts')
    .selectAll()
    .where(
      'delivery_id',
      'in',
      rows.map((r) => r.id),
    )
    .orderBy('delivery_id')
    .orderBy('attempt')
    .execute();
  const by = new Map<string, NotificationAttemptsTable[]>();
  for (const a of attempts) by.set(a.delivery_id, [...(by.get(a.delivery_id) ?? []), a]);
  return rows.map((r) => deliveryOut(r, by.get(r.id) ?? []));
}
