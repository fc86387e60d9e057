import type { Kysely } from 'kysely';

// What a run needs to wait for its review again after a restart of this daemon: the execute body,
// the review it waits for, and the outputs so far (`{outputs, phase_outputs}` as JSON).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('active_runs').addColumn('body', 'text').execute();
  await db.schema.alterTable('active_runs').addColumn('review_id', 'text').execute();
  await db.schema.alterTable('active_runs').addColumn('review_state', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('active_runs').dropColumn('review_state').execute();
  await db.schema.alterTable('active_runs').dropColumn('review_id').execute();
  await db.schema.alterTable('active_runs').dropColumn('body').execute();
}
