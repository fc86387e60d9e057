import type { Kysely } from 'kysely';

// Team installations on daemons and workspaces (directories on daemons). Both are written only
// after the daemon confirmed the command (see src/hub/catalog/installs.service.ts and
// src/hub/workspaces/).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('team_installs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('daemon_id', 'text', (c) => c.notNull().references('daemons.id').onDelete('cascade'))
    .addColumn('realm_id', 'text', (c) => c.notNull().references('realms.id').onDelete('cascade'))
    .addColumn('team_version_id', 'text', (c) =>
      c.notNull().references('team_versions.id').onDelete('cascade'),
    )
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('pending_action', 'text')
    .addColumn('pending_tx_id', 'text')
    .addColumn('last_error', 'text')
    .addColumn('installed_at', 'bigint')
    .addColumn('uninstalled_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('team_installs_daemon_team_version', ['daemon_id', 'team_version_id'])
    .execute();
  await db.schema
    .createIndex('team_installs_realm_team')
    .on('team_installs')
    .columns(['realm_id', 'team_id', 'status'])
    .execute();
  await db.schema.createIndex('team_installs_pending').on('team_installs').column('pending_tx_id').execute();

  await db.schema
    .createTable('workspaces')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('daemon_id', 'text', (c) => c.notNull().references('daemons.id').onDelete('cascade'))
    .addColumn('realm_id', 'text', (c) => c.notNull().references('realms.id').onDelete('cascade'))
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('team_ids', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('workspaces_daemon_path', ['daemon_id', 'path'])
    .execute();
  await db.schema.createIndex('workspaces_realm').on('workspaces').column('realm_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('workspaces').execute();
  await db.schema.dropTable('team_installs').execute();
}
