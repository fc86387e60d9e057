import type { Kysely } from 'kysely';

// Idempotent starts, schedules and incoming-webhook triggers (CONTRACT.md §10). Times are ms, JSON is
// text. Exactly-once is kept by primary keys, never by a lock in memory:
// - `run_idempotency_keys` (realm, key): the first `runs/new` with a key inserts it in the run's own
//   transaction; a concurrent repeat hits the key and answers the first run.
// - `schedule_slots` (schedule, slot time, kind): the run of a scheduled time is inserted in the same
//   transaction as its slot, so a slot fires once across every hub process and restart.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('run_idempotency_keys')
    .addColumn('realm_id', 'text', (c) => c.notNull().references('realms.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.run_id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_idempotency_keys_pk', ['realm_id', 'key'])
    .execute();

  await db.schema
    .createTable('schedules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('realm_id', 'text', (c) => c.notNull().references('realms.id').onDelete('cascade'))
    // JSON: what runs/new is given ({team} | {team_id} | {agent}), resolved again at every fire.
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('team_id', 'text')
    .addColumn('agent_id', 'text')
    .addColumn('workspace_id', 'text')
    .addColumn('inputs', 'text', (c) => c.notNull())
    .addColumn('run_name', 'text')
    .addColumn('reviewers', 'text')
    .addColumn('cron', 'text', (c) => c.notNull())
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('overlap', 'text', (c) => c.notNull())
    .addColumn('catch_up', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('next_fire_at', 'bigint')
    .addColumn('last_fired_at', 'bigint')
    .addColumn('last_run_id', 'text')
    .addColumn('created_by_user_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('schedules_realm').on('schedules').columns(['realm_id', 'id']).execute();
  await db.schema.createIndex('schedules_due').on('schedules').columns(['enabled', 'next_fire_at']).execute();

  await db.schema
    .createTable('schedule_slots')
    .addColumn('schedule_id', 'text', (c) => c.notNull().references('schedules.id').onDelete('cascade'))
    .addColumn('slot_at', 'bigint', (c) => c.notNull())
    // cron (a scheduled time) or manual (schedules/trigger)
    .addColumn('kind', 'text', (c) => c.notNull())
    // started, skipped (overlap: skip), waiting (overlap: queue, until the previous run ends), or
    // failed (the run could not start: its team or workspace is gone; `error` says why)
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text')
    .addColumn('error', 'text')
    // 1: a time the hub missed (it was down) and ran later, per catch_up
    .addColumn('caught_up', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('schedule_slots_pk', ['schedule_id', 'slot_at', 'kind'])
    .execute();
  await db.schema.createIndex('schedule_slots_run').on('schedule_slots').column('run_id').execute();

  await db.schema
    .createTable('triggers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('realm_id', 'text', (c) => c.notNull().references('realms.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('team_id', 'text')
    .addColumn('agent_id', 'text')
    .addColumn('workspace_id', 'text')
    .addColumn('inputs', 'text', (c) => c.notNull())
    // The HMAC key, kept as channel signing secrets are (the hub must recompute signatures).
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_by_user_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('triggers_realm').on('triggers').columns(['realm_id', 'id']).execute();

  await db.schema
    .createTable('trigger_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('trigger_id', 'text', (c) => c.notNull().references('triggers.id').onDelete('cascade'))
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    // started | repeated | refused
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('http_status', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('run_id', 'text')
    .execute();
  await db.schema
    .createIndex('trigger_deliveries_trigger')
    .on('trigger_deliveries')
    .columns(['trigger_id', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['trigger_deliveries', 'triggers', 'schedule_slots', 'schedules', 'run_idempotency_keys']) {
    await db.schema.dropTable(t).execute();
  }
}
