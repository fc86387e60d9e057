import type { Kysely } from 'kysely';

// Workspaces registered while their daemon is offline: `pending` until the daemon has checked the
// path (`pending_tx_id` is the workspaces/register command waiting for its ack), then `ready`, or
// `failed` with the daemon's `error` (JSON {code, message}). Existing rows were checked: `ready`.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('workspaces')
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('ready'))
    .execute();
  await db.schema.alterTable('workspaces').addColumn('error', 'text').execute();
  await db.schema.alterTable('workspaces').addColumn('pending_tx_id', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const column of ['pending_tx_id', 'error', 'status']) {
    await db.schema.alterTable('workspaces').dropColumn(column).execute();
  }
}
