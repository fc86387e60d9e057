import type { Kysely } from 'kysely';

// Installed team versions (with the agent manifests and child teams they need) and workspaces.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('installed_teams')
    .addColumn('team_version_id', 'text', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('definition', 'text', (c) => c.notNull())
    .addColumn('teams', 'text', (c) => c.notNull())
    .addColumn('agents', 'text', (c) => c.notNull())
    .addColumn('installed_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('installed_teams_team').on('installed_teams').column('team_id').execute();

  await db.schema
    .createTable('workspaces')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('path', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('team_ids', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('workspaces').execute();
  await db.schema.dropTable('installed_teams').execute();
}
