import { type Kysely, sql } from 'kysely';

// A run's default name is `<team or agent>-<n>`: `run_numbers` holds the last n per realm and team
// (or agent), taken in the run's own transaction, so naming a run costs one row and not a count of
// every earlier run (and two runs started at once never get the same number).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('run_numbers')
    .addColumn('realm_id', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text', (c) => c.notNull())
    .addColumn('last', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_numbers_pk', ['realm_id', 'subject_id'])
    .execute();
  await sql`
    insert into run_numbers (realm_id, subject_id, last)
    select realm_id, coalesce(team_id, agent_id), count(*) from runs
    where coalesce(team_id, agent_id) is not null
    group by realm_id, coalesce(team_id, agent_id)
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('run_numbers').execute();
}
