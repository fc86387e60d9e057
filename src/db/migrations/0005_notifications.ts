import type { Kysely } from 'kysely';

// Notifications: channels (destinations + signing secret), rules (event kind → channels) and the
// durable delivery outbox with its attempt log. Kysely's schema builder only (SQLite and PostgreSQL).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('notification_channels')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('scope', 'text', (c) => c.notNull()) // realm | org | personal
    .addColumn('realm_id', 'text', (c) => c.references('realms.id').onDelete('cascade'))
    .addColumn('org_id', 'text', (c) => c.references('orgs.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
    // The organization the channel belongs to (its own, or its realm's); null for personal channels.
    .addColumn('owner_org_id', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('destinations', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('system_key', 'text')
    .addColumn('locked', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('system_reason', 'text')
    .addColumn('disabled_reason', 'text')
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('notification_channels_realm')
    .on('notification_channels')
    .column('realm_id')
    .execute();
  await db.schema
    .createIndex('notification_channels_org')
    .on('notification_channels')
    .column('org_id')
    .execute();
  await db.schema
    .createIndex('notification_channels_user')
    .on('notification_channels')
    .column('user_id')
    .execute();
  await db.schema
    .createIndex('notification_channels_system')
    .on('notification_channels')
    .columns(['owner_org_id', 'system_key'])
    .unique()
    .execute();

  await db.schema
    .createTable('notification_rules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('realm_id', 'text', (c) => c.references('realms.id').onDelete('cascade'))
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('filter_team_id', 'text')
    .addColumn('filter_state', 'text')
    .addColumn('system_key', 'text')
    .addColumn('locked', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('notification_rules_match')
    .on('notification_rules')
    .columns(['event', 'org_id'])
    .execute();
  await db.schema
    .createIndex('notification_rules_system')
    .on('notification_rules')
    .columns(['org_id', 'system_key'])
    .unique()
    .execute();

  await db.schema
    .createTable('notification_rule_channels')
    .addColumn('rule_id', 'text', (c) => c.notNull().references('notification_rules.id').onDelete('cascade'))
    .addColumn('channel_id', 'text', (c) =>
      c.notNull().references('notification_channels.id').onDelete('cascade'),
    )
    .addPrimaryKeyConstraint('notification_rule_channels_pk', ['rule_id', 'channel_id'])
    .execute();
  await db.schema
    .createIndex('notification_rule_channels_channel')
    .on('notification_rule_channels')
    .column('channel_id')
    .execute();

  await db.schema
    .createTable('notification_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('channel_id', 'text', (c) =>
      c.notNull().references('notification_channels.id').onDelete('cascade'),
    )
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull()) // event | test
    .addColumn('destination_index', 'integer', (c) => c.notNull())
    .addColumn('destination_type', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull()) // pending | succeeded | failed | cancelled
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_latency_ms', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('notification_deliveries_due')
    .on('notification_deliveries')
    .columns(['state', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('notification_deliveries_channel')
    .on('notification_deliveries')
    .columns(['channel_id', 'id'])
    .execute();

  await db.schema
    .createTable('notification_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) =>
      c.notNull().references('notification_deliveries.id').onDelete('cascade'),
    )
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull()) // success | retry | permanent
    .addColumn('status_code', 'integer')
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('notification_attempts_delivery')
    .on('notification_attempts')
    .columns(['delivery_id', 'attempt'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of [
    'notification_attempts',
    'notification_deliveries',
    'notification_rule_channels',
    'notification_rules',
    'notification_channels',
  ]) {
    await db.schema.dropTable(t).execute();
  }
}
