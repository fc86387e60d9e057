import type { Kysely } from 'kysely';

// Reviews (human gates) and every verdict or comment submitted on them. `reviewers` is a JSON array
// of user handles, or null: the realm's operators and admins review. Times are ms. A review is
// closed by one conditional UPDATE `… WHERE state = 'open'`, so two verdicts never both win.
// run_history gets `data` (JSON text): the details of an entry (a review's id, summary, verdict).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('reviews')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('realm_id', 'text', (c) => c.notNull().references('realms.id').onDelete('cascade'))
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.run_id').onDelete('cascade'))
    .addColumn('daemon_id', 'text', (c) => c.notNull())
    .addColumn('lease_epoch', 'integer', (c) => c.notNull())
    .addColumn('phase', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('round', 'integer', (c) => c.notNull())
    .addColumn('summary', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reviewers', 'text')
    .addColumn('requested_at', 'bigint', (c) => c.notNull())
    .addColumn('deadline_at', 'bigint')
    .addColumn('closed_at', 'bigint')
    .addColumn('closed_by', 'text')
    .addColumn('verdict_action', 'text')
    .addColumn('verdict_comment', 'text')
    .execute();
  await db.schema
    .createIndex('reviews_realm_state')
    .on('reviews')
    .columns(['realm_id', 'state', 'id'])
    .execute();
  await db.schema.createIndex('reviews_run').on('reviews').columns(['run_id', 'phase']).execute();
  await db.schema.createIndex('reviews_deadline').on('reviews').columns(['state', 'deadline_at']).execute();

  await db.schema
    .createTable('review_submissions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('review_id', 'text', (c) => c.notNull().references('reviews.id').onDelete('cascade'))
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('comment', 'text')
    .addColumn('actor_id', 'text')
    .addColumn('actor_handle', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('review_submissions_review')
    .on('review_submissions')
    .columns(['review_id', 'id'])
    .execute();

  await db.schema.alterTable('run_history').addColumn('data', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('run_history').dropColumn('data').execute();
  await db.schema.dropTable('review_submissions').execute();
  await db.schema.dropTable('reviews').execute();
}
