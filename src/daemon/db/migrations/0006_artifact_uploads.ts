import type { Kysely } from 'kysely';

// Artifacts waiting to go to the hub (CONTRACT.md §13): each file was moved into the spool folder
// when its phase ended; the row stays until the hub has the whole file, across restarts.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('artifact_uploads')
    .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('phase', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('file', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('created_at', 'integer', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('artifact_uploads').execute();
}
