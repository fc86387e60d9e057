import type { Kysely } from 'kysely';

// Secrets of realms and organizations (CONTRACT.md §12), sealed with the hub's cipher
// (src/hub/secrets/cipher.ts): `scope_id` is the realm's id for a realm secret and the
// organization's for an organization secret, so one unique index covers both. Retention
// (src/hub/retention/): indexes that let each pass find old rows without scanning, and the
// time a kept run's logs were pruned. Plain-text secrets already stored (the dispatch key, channel
// secrets) are sealed when a hub with the key starts (src/hub/secrets/reseal.ts), not here: a
// migration does not hold the key.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('secrets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('realm_id', 'text', (c) => c.references('realms.id').onDelete('cascade'))
    .addColumn('scope_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .execute();
  await db.schema
    .createIndex('secrets_scope_name')
    .on('secrets')
    .columns(['scope_id', 'name'])
    .unique()
    .execute();
  await db.schema.createIndex('secrets_org').on('secrets').column('org_id').execute();

  await db.schema.alterTable('runs').addColumn('logs_pruned_at', 'bigint').execute();
  await db.schema.createIndex('runs_completed').on('runs').columns(['completed_at']).execute();
  await db.schema.createIndex('runs_root').on('runs').column('root_run_id').execute();
  await db.schema
    .createIndex('command_outbox_acked')
    .on('command_outbox')
    .columns(['status', 'acked_at'])
    .execute();
  await db.schema
    .createIndex('notification_deliveries_completed')
    .on('notification_deliveries')
    .columns(['state', 'completed_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('notification_deliveries_completed').execute();
  await db.schema.dropIndex('command_outbox_acked').execute();
  await db.schema.dropIndex('runs_root').execute();
  await db.schema.dropIndex('runs_completed').execute();
  await db.schema.alterTable('runs').dropColumn('logs_pruned_at').execute();
  await db.schema.dropTable('secrets').execute();
}
