import type { Kysely } from 'kysely';

// Several hub processes on one database: which process holds each daemon's connection, and each
// process's heartbeat, so that the daemons of a process that died without closing (SIGKILL, lost
// machine) are marked offline by the others. Additive only: older processes keep working.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('hub_instances')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('pid', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('heartbeat_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('hub_instances_heartbeat').on('hub_instances').column('heartbeat_at').execute();
  await db.schema.alterTable('daemons').addColumn('hub_instance_id', 'text').execute();
  await db.schema
    .createIndex('daemons_hub_instance')
    .on('daemons')
    .columns(['hub_instance_id', 'status'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('daemons_hub_instance').execute();
  await db.schema.alterTable('daemons').dropColumn('hub_instance_id').execute();
  await db.schema.dropTable('hub_instances').execute();
}
