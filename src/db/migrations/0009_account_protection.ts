import { type Kysely, sql } from 'kysely';

// Sign-in throttle, invitation claims and the configured admin token (docs/security.md).
// Additive only: older processes keep working.
export async function up(db: Kysely<unknown>): Promise<void> {
  // One row per failed (or in-flight) sign-in, under two keys: the e-mail address and the client
  // address. Counted over a sliding window; rows older than the window are pruned.
  await db.schema
    .createTable('sign_in_failures')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('sign_in_failures_key_at')
    .on('sign_in_failures')
    .columns(['key', 'at'])
    .execute();
  await db.schema.createIndex('sign_in_failures_at').on('sign_in_failures').column('at').execute();

  // The organization whose invitation created an account; only it may set the first password.
  await db.schema.alterTable('users').addColumn('claim_org_id', 'text').execute();
  await sql`
    update users set claim_org_id = (
      select i.org_id from invites i where i.user_id = users.id order by i.created_at, i.id limit 1
    )
    where password_hash is null`.execute(db);

  // The SVC_ADMIN_TOKEN row gets its own kind, so a changed value retires the previous one.
  await sql`
    update tokens set kind = 'admin'
    where kind = 'personal' and name = 'SVC_ADMIN_TOKEN'
      and user_id in (select id from users where handle = 'admin' and is_site_admin = 1)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`update tokens set kind = 'personal' where kind = 'admin'`.execute(db);
  await db.schema.alterTable('users').dropColumn('claim_org_id').execute();
  await db.schema.dropTable('sign_in_failures').execute();
}
