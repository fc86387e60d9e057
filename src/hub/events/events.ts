import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';

export interface HubEvent {
  type: string;
  org_id?: string | null;
  realm_id?: string | null;
  subject_id?: string | null;
  payload?: Record<string, unknown>;
}

/**
 * The hub's event log: every event (invite.sent, daemon.connected, run.*) is recorded here, in the
 * transaction of the change that caused it. Notification delivery reads from it.
 */
export async function recordEvent(
  db: Kysely<DB>,
  ids: { newId: () => string; now: () => number },
  e: HubEvent,
): Promise<void> {
  await db
    .insertInto('events')
    .values({
      id: ids.newId(),
      type: e.type,
      org_id: e.org_id ?? null,
      realm_id: e.realm_id ?? null,
      subject_id: e.subject_id ?? null,
      payload: JSON.stringify(e.payload ?? {}),
      created_at: ids.now(),
    })
    .execute();
}
