import type { Kysely } from 'kysely';

// Kysely's schema builder only, like the hub's migrations.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('state')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('tx_replies')
    .addColumn('tx_id', 'text', (c) => c.primaryKey())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reply', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tx_replies_created').on('tx_replies').column('created_at').execute();

  await db.schema
    .createTable('hug_messages')
    .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
    .addColumn('review_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('hug_messages_review')
    .on('hug_messages')
    .columns(['review_id', 'id'])
    .execute();

  await db.schema
    .createTable('local_tokens')
    .addColumn('hash', 'text', (c) => c.primaryKey())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['local_tokens', 'hug_messages', 'tx_replies', 'state']) {
    await db.schema.dropTable(t).execute();
  }
}
