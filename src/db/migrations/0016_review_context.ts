import type { Kysely } from 'kysely';

// A review of a `review: true` phase keeps what a reviewer needs beside the agent's summary: the
// phase's outputs (JSON text) and the last lines of its log. Runs with no workspace are offered by
// team version: installs are looked up by version and status.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('reviews').addColumn('outputs', 'text').execute();
  await db.schema.alterTable('reviews').addColumn('log_excerpt', 'text').execute();
  await db.schema
    .createIndex('team_installs_version_status')
    .on('team_installs')
    .columns(['team_version_id', 'status'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('team_installs_version_status').execute();
  await db.schema.alterTable('reviews').dropColumn('log_excerpt').execute();
  await db.schema.alterTable('reviews').dropColumn('outputs').execute();
}
