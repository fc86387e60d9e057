import type { Kysely } from 'kysely';

// Dispatch offers a run to the least loaded daemons first: it counts the runs each eligible daemon
// holds, by daemon and state. Without an index that count read the whole runs table for every run
// dispatched.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('runs_daemon_state').on('runs').columns(['daemon_id', 'state']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('runs_daemon_state').execute();
}
