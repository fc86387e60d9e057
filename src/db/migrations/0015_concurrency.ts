import type { Kysely } from 'kysely';

// Concurrency groups, priority and deadlines of runs (CONTRACT.md §11). A run's groups are rows of
// `run_groups`, written in the run's own transaction; a group's slots in use are counted from the
// states of its runs, so no counter can drift from them.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('runs')
    .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(5))
    .execute();
  // JSON: the run's groups [{group, key, value, limit}], or null for a run in no group.
  await db.schema.alterTable('runs').addColumn('concurrency', 'text').execute();
  // JSON: the full group the run last waited for, or null.
  await db.schema.alterTable('runs').addColumn('waiting_for', 'text').execute();
  await db.schema.alterTable('runs').addColumn('queue_deadline_at', 'bigint').execute();
  await db.schema.alterTable('runs').addColumn('run_deadline_at', 'bigint').execute();
  await db.schema
    .createIndex('runs_queue_deadline')
    .on('runs')
    .columns(['state', 'queue_deadline_at'])
    .execute();
  await db.schema.createIndex('runs_run_deadline').on('runs').columns(['state', 'run_deadline_at']).execute();
  await db.schema
    .createIndex('runs_queue_order')
    .on('runs')
    .columns(['realm_id', 'state', 'priority', 'created_at'])
    .execute();
  await db.schema
    .createTable('run_groups')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('group_key', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_groups_pk', ['run_id', 'group_key'])
    .execute();
  await db.schema.createIndex('run_groups_group').on('run_groups').columns(['group_key', 'run_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('run_groups').execute();
  for (const index of ['runs_queue_deadline', 'runs_run_deadline', 'runs_queue_order']) {
    await db.schema.dropIndex(index).execute();
  }
  for (const column of ['priority', 'concurrency', 'waiting_for', 'queue_deadline_at', 'run_deadline_at']) {
    await db.schema.alterTable('runs').dropColumn(column).execute();
  }
}
