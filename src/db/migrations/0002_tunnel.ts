import type { Kysely } from 'kysely';

// The hub↔daemon tunnel: the durable command outbox, the queue of offered work and the hub's
// dispatch key pair. Kysely's schema builder only, so it runs on SQLite and PostgreSQL alike.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('command_outbox')
    .addColumn('tx_id', 'text', (c) => c.primaryKey())
    .addColumn('daemon_id', 'text', (c) => c.notNull().references('daemons.id').onDelete('cascade'))
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('ack_status', 'text')
    .addColumn('reply', 'text')
    .addColumn('error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('last_sent_at', 'bigint')
    .addColumn('acked_at', 'bigint')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createIndex('command_outbox_pending')
    .on('command_outbox')
    .columns(['daemon_id', 'status', 'seq'])
    .execute();

  await db.schema
    .createTable('queue_items')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('realm_id', 'text', (c) => c.notNull().references('realms.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('claimed_by', 'text')
    .addColumn('claimed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('queue_items_realm_status')
    .on('queue_items')
    .columns(['realm_id', 'status'])
    .execute();

  await db.schema
    .createTable('hub_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('alg', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('private_jwk', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  // Which tunnel connection made the daemon online, so that a stale connection closing late (on
  // this or another hub process) does not mark a reconnected daemon offline.
  await db.schema.alterTable('daemons').addColumn('connection_id', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('daemons').dropColumn('connection_id').execute();
  for (const t of ['hub_keys', 'queue_items', 'command_outbox']) await db.schema.dropTable(t).execute();
}
