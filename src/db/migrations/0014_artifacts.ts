import type { Kysely } from 'kysely';

// Artifacts of runs (CONTRACT.md §13): one row per file a phase saved; the bytes live in the
// artifact store, content-addressed by `sha256`, so rows of equal content share one file.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('artifacts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('realm_id', 'text', (c) => c.notNull())
    .addColumn('phase', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // A repeated upload of the same file of a phase answers the row it made the first time.
  await db.schema
    .createIndex('artifacts_upload')
    .on('artifacts')
    .columns(['run_id', 'phase', 'name', 'sha256'])
    .unique()
    .execute();
  await db.schema.createIndex('artifacts_sha256').on('artifacts').column('sha256').execute();
  await db.schema.createIndex('artifacts_created').on('artifacts').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('artifacts').execute();
}
