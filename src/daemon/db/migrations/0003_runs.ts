import type { Kysely } from 'kysely';

// The runs this daemon is executing, so a restart can report them failed instead of leaving them
// silently `running` on the hub.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('active_runs')
    .addColumn('run_id', 'text', (c) => c.primaryKey())
    .addColumn('lease_epoch', 'integer', (c) => c.notNull())
    .addColumn('phase', 'text')
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('active_runs').execute();
}
