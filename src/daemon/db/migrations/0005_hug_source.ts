import type { Kysely } from 'kysely';

// Whether a review message came from the hub (the tunnel, or a hub-held dispatch token): a run's
// review wait acts only on the hub's verdicts, not on one another process of this machine queued.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('hug_messages')
    .addColumn('from_hub', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('hug_messages').dropColumn('from_hub').execute();
}
