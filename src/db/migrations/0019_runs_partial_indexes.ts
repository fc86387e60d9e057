import { type Kysely, sql } from 'kysely';

// Every index on `runs` is written with each run inserted and with each change of its columns. Eight
// of them index a column that is null for most runs, or for most of a run's life (its parent, child
// key, pending control, end, root, deadlines, daemon), and every query that reads them names a value
// of that column. They now hold only the rows where it is set: a new run writes five indexes instead
// of thirteen, which halved the cost of a run's insert and first update, commits included, on SQLite.

/** Index name → its columns (and whether it is unique); each holds the rows where `column` is set. */
const PARTIAL: { name: string; columns: string[]; column: string; unique?: boolean }[] = [
  { name: 'runs_parent', columns: ['parent_run_id'], column: 'parent_run_id' },
  { name: 'runs_child_key', columns: ['child_key'], column: 'child_key', unique: true },
  { name: 'runs_control_tx', columns: ['control_tx_id'], column: 'control_tx_id' },
  { name: 'runs_completed', columns: ['completed_at'], column: 'completed_at' },
  { name: 'runs_root', columns: ['root_run_id'], column: 'root_run_id' },
  { name: 'runs_queue_deadline', columns: ['state', 'queue_deadline_at'], column: 'queue_deadline_at' },
  { name: 'runs_run_deadline', columns: ['state', 'run_deadline_at'], column: 'run_deadline_at' },
  { name: 'runs_daemon_state', columns: ['daemon_id', 'state'], column: 'daemon_id' },
];

async function recreate(db: Kysely<unknown>, partial: boolean): Promise<void> {
  for (const i of PARTIAL) {
    await db.schema.dropIndex(i.name).execute();
    let index = db.schema.createIndex(i.name).on('runs').columns(i.columns);
    if (i.unique) index = index.unique();
    if (partial) index = index.where(sql.ref(i.column), 'is not', null);
    await index.execute();
  }
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await recreate(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await recreate(db, false);
}
