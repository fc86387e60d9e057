import type { Kysely } from 'kysely';

// Runs, their history and their log lines. JSON is text, times are ms. `lease_epoch` grows with
// every dispatch or claim: a daemon call carrying an older epoch is refused (fencing).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('runs')
    .addColumn('run_id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('realm_id', 'text', (c) => c.notNull().references('realms.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text')
    .addColumn('workspace_path', 'text')
    .addColumn('team_id', 'text')
    .addColumn('team_version_id', 'text')
    .addColumn('agent_id', 'text')
    .addColumn('daemon_id', 'text')
    .addColumn('parent_run_id', 'text')
    .addColumn('parent_phase', 'text')
    .addColumn('root_run_id', 'text')
    .addColumn('call_path', 'text')
    .addColumn('call_depth', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('iteration_key', 'text')
    // parent run, its lease epoch, phase and iteration: one child per step, however often it is asked for
    .addColumn('child_key', 'text')
    .addColumn('run_name', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('inputs', 'text', (c) => c.notNull())
    .addColumn('outputs', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('execution_type', 'text', (c) => c.notNull())
    .addColumn('current_pid', 'integer')
    .addColumn('current_phase', 'text')
    .addColumn('external_id', 'text')
    .addColumn('context_labels', 'text')
    .addColumn('reviewers', 'text')
    .addColumn('notify_channels', 'text')
    .addColumn('lease_epoch', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_expires_at', 'bigint', (c) => c.notNull())
    .addColumn('queue_item_id', 'text')
    .addColumn('pending_control', 'text')
    .addColumn('control_tx_id', 'text')
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .addColumn('state_lost_at', 'bigint')
    .addColumn('terminated_at', 'bigint')
    .addColumn('terminated_by_user_id', 'text')
    .addColumn('terminated_reason', 'text')
    .addColumn('created_by_user_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('runs_realm').on('runs').columns(['realm_id', 'run_id']).execute();
  await db.schema.createIndex('runs_state_lease').on('runs').columns(['state', 'lease_expires_at']).execute();
  await db.schema.createIndex('runs_parent').on('runs').column('parent_run_id').execute();
  await db.schema.createIndex('runs_child_key').on('runs').column('child_key').unique().execute();
  await db.schema.createIndex('runs_queue_item').on('runs').column('queue_item_id').execute();
  await db.schema.createIndex('runs_control_tx').on('runs').column('control_tx_id').execute();

  await db.schema
    .createTable('run_history')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.run_id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('from_phase', 'text')
    .addColumn('phase', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('actor', 'text')
    .execute();
  await db.schema.createIndex('run_history_run').on('run_history').columns(['run_id', 'id']).execute();

  await db.schema
    .createTable('run_logs')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.run_id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('phase', 'text')
    .addColumn('text', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_logs_pk', ['run_id', 'seq'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('run_logs').execute();
  await db.schema.dropTable('run_history').execute();
  await db.schema.dropTable('runs').execute();
}
