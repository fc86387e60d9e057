import { type Kysely, PostgresAdapter, sql } from 'kysely';

// `svc_expect(ok, message)`: true, or an error with SQLSTATE SV409 and `message` when `ok` is not
// true. A transaction that does not wait for a guarded write's answer sends it as a statement that
// counts the rows it changed through this (src/hub/cluster/bus.ts `expectOne`): the transaction then
// fails where it would have been refused. PostgreSQL only; SQLite answers each write at once.

const isPostgres = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof PostgresAdapter;

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`
    create function svc_expect(ok boolean, message text) returns boolean language plpgsql as $$
    begin
      if ok is not true then
        raise exception using errcode = 'SV409', message = message;
      end if;
      return true;
    end
    $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`drop function svc_expect(boolean, text)`.execute(db);
}
