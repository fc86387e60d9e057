import type { Kysely } from 'kysely';
import { type DB, updateOne } from '../../db/index.js';
import type { ScheduleSlotsTable, SchedulesTable } from '../../db/schema.js';
import { keysetPage } from '../http/paging.js';
import { LIVE } from '../runs/runs.repo.js';

/** Schedules and their slots: every query on `schedules` and `schedule_slots`. */

export function loadSchedule(db: Kysely<DB>, id: string): Promise<SchedulesTable | undefined> {
  return db.selectFrom('schedules').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertSchedule(db: Kysely<DB>, row: SchedulesTable): Promise<void> {
  await db.insertInto('schedules').values(row).execute();
}

export async function updateSchedule(
  db: Kysely<DB>,
  id: string,
  set: Partial<SchedulesTable>,
): Promise<void> {
  await db.updateTable('schedules').set(set).where('id', '=', id).execute();
}

export async function deleteSchedule(db: Kysely<DB>, id: string): Promise<boolean> {
  return updateOne(db.deleteFrom('schedules').where('id', '=', id));
}

export function listSchedules(db: Kysely<DB>, realmId: string, page: { limit: number; cursor?: string }) {
  return keysetPage(db.selectFrom('schedules').selectAll().where('realm_id', '=', realmId), page);
}

/** Enabled schedules whose next time has come, oldest first. */
export function dueSchedules(db: Kysely<DB>, now: number, limit: number) {
  return db
    .selectFrom('schedules')
    .selectAll()
    .where('enabled', '=', 1)
    .where('next_fire_at', '<=', now)
    .orderBy('next_fire_at')
    .limit(limit)
    .execute();
}

/** The soonest next time of any enabled schedule (the scheduler sleeps until then). */
export async function soonestFireAt(db: Kysely<DB>): Promise<number | null> {
  const r = await db
    .selectFrom('schedules')
    .select((eb) => eb.fn.min('next_fire_at').as('at'))
    .where('enabled', '=', 1)
    .executeTakeFirst();
  return r?.at === null || r?.at === undefined ? null : Number(r.at);
}

/**
 * Moves `next_fire_at` on, only from the value this process read: another process that handled the
 * same times first has moved it already.
 */
export function advanceSchedule(
  db: Kysely<DB>,
  s: SchedulesTable,
  set: Pick<SchedulesTable, 'next_fire_at' | 'updated_at'>,
) {
  return updateOne(
    db
      .updateTable('schedules')
      .set(set)
      .where('id', '=', s.id)
      .where('next_fire_at', '=', s.next_fire_at)
      .where('enabled', '=', 1),
  );
}

/** Records a slot; a slot that exists already (another process, a restart) is a unique violation. */
export async function insertSlot(db: Kysely<DB>, row: ScheduleSlotsTable): Promise<void> {
  await db.insertInto('schedule_slots').values(row).execute();
}

/** A waiting slot (overlap: queue) becomes started with its run, once. */
export function startWaitingSlot(db: Kysely<DB>, slot: ScheduleSlotsTable, runId: string, now: number) {
  return updateOne(
    db
      .updateTable('schedule_slots')
      .set({ status: 'started', run_id: runId, updated_at: now })
      .where('schedule_id', '=', slot.schedule_id)
      .where('slot_at', '=', slot.slot_at)
      .where('kind', '=', slot.kind)
      .where('status', '=', 'waiting'),
  );
}

/** Runs of the schedule that have not ended (the overlap policy looks at them). */
export function liveRunsOfSchedule(db: Kysely<DB>, scheduleId: string) {
  return db
    .selectFrom('schedule_slots as s')
    .innerJoin('runs as r', 'r.run_id', 's.run_id')
    .selectAll('r')
    .where('s.schedule_id', '=', scheduleId)
    .where('r.state', 'in', LIVE)
    .execute();
}

/** The oldest slot waiting for the previous run to end, of schedules that have one. */
export function oldestWaitingSlots(db: Kysely<DB>, limit: number) {
  return db
    .selectFrom('schedule_slots')
    .selectAll()
    .where('status', '=', 'waiting')
    .orderBy('slot_at')
    .limit(limit)
    .execute();
}

export function slotsOfSchedule(db: Kysely<DB>, scheduleId: string) {
  return db
    .selectFrom('schedule_slots')
    .selectAll()
    .where('schedule_id', '=', scheduleId)
    .orderBy('slot_at')
    .execute();
}

/** A waiting slot whose run could not start. */
export async function failWaitingSlot(db: Kysely<DB>, slot: ScheduleSlotsTable, error: string, now: number) {
  await db
    .updateTable('schedule_slots')
    .set({ status: 'failed', error, updated_at: now })
    .where('schedule_id', '=', slot.schedule_id)
    .where('slot_at', '=', slot.slot_at)
    .where('kind', '=', slot.kind)
    .where('status', '=', 'waiting')
    .execute();
}

/** How many times of the schedule wait for the run before them to end (overlap: queue). */
export async function countWaiting(db: Kysely<DB>, scheduleId: string): Promise<number> {
  const r = await db
    .selectFrom('schedule_slots')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('schedule_id', '=', scheduleId)
    .where('status', '=', 'waiting')
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
