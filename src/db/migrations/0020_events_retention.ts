import type { Kysely } from 'kysely';

// Retention removes events that no notification delivery refers to any more (src/hub/retention/):
// the deliveries of an event, found by its id.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('notification_deliveries_event')
    .on('notification_deliveries')
    .column('event_id')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('notification_deliveries_event').execute();
}
