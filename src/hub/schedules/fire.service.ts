import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import { isUniqueViolation } from '../../db/index.js';
import type { ScheduleSlotsTable, SchedulesTable } from '../../db/schema.js';
import { AppError } from '../../shared/errors.js';
import type { Hub } from '../context.js';
import { recordEvent } from '../events/events.js';
import { requestCancel } from '../runs/control.service.js';
import { type RunClaim, type Started, startRun } from '../runs/create.service.js';
import { json } from '../runs/run.mapper.js';
import { nextSlot, slotsBetween } from './cron.js';
import * as repo from './schedules.repo.js';

/**
 * Firing schedules (CONTRACT.md §10). Each scheduled time ("slot") fires once across every hub
 * process and restart: its run is inserted in the same transaction as its row in `schedule_slots`,
 * whose primary key (schedule, slot time, kind) lets one process win. A slot is on time when the
 * hub reaches it within `scheduleGraceMs`; older slots were missed (the hub was down) and
 * `catch_up` decides: none (skip them), latest (run the newest one), all (run each, at most 100).
 */

/** `catch_up: all` runs at most this many missed times. */
export const CATCH_UP_MAX = 100;
/** `overlap: queue` keeps at most this many times waiting. */
export const QUEUE_MAX = 100;

export const scheduleActor = (id: string) => ({ type: 'schedule' as const, schedule_id: id });

/** The slot's run, started for the schedule's creator; null when another process took the slot. */
async function startFor(
  hub: Hub,
  s: SchedulesTable,
  slotAt: number,
  claim: RunClaim,
): Promise<Started | null> {
  const target = json<Record<string, string>>(s.target) ?? {};
  return startRun(
    hub,
    { id: s.realm_id, org_id: s.org_id },
    { user_id: s.created_by_user_id, actor: scheduleActor(s.id) },
    {
      ...target,
      workspace_id: s.workspace_id ?? undefined,
      inputs: json<Record<string, unknown>>(s.inputs) ?? {},
      run_name: s.run_name ?? undefined,
      reviewers: json<Record<string, string[]>>(s.reviewers) ?? undefined,
      external_id: `schedule:${s.id}:${slotAt}`,
    },
    claim,
  );
}

const fired = (db: Kysely<DB>, hub: Hub, s: SchedulesTable, slot: ScheduleSlotsTable) =>
  recordEvent(db, hub, {
    type: 'schedule.fired',
    org_id: s.org_id,
    realm_id: s.realm_id,
    subject_id: s.id,
    payload: {
      schedule_id: s.id,
      slot_at: slot.slot_at,
      kind: slot.kind,
      status: slot.status,
      run_id: slot.run_id,
      team_id: s.team_id,
      cron: s.cron,
    },
  });

/** Writes a slot with no run (skipped, waiting, failed); false when it exists already. */
async function recordSlot(hub: Hub, s: SchedulesTable, slot: ScheduleSlotsTable): Promise<boolean> {
  try {
    await hub.db.transaction().execute(async (trx) => {
      await repo.insertSlot(trx, slot);
      await fired(trx, hub, s, slot);
    });
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/**
 * One slot (a scheduled time, or `schedules/trigger`): the overlap policy decides against the
 * schedule's runs still going, then the run starts with the slot, once. Answers the run, if any.
 */
export async function fireSlot(
  hub: Hub,
  s: SchedulesTable,
  slotAt: number,
  kind: 'cron' | 'manual',
  caughtUp = false,
): Promise<Started | null> {
  const now = hub.now();
  const slot: ScheduleSlotsTable = {
    schedule_id: s.id,
    slot_at: slotAt,
    kind,
    status: 'started',
    run_id: null,
    error: null,
    caught_up: caughtUp ? 1 : 0,
    created_at: now,
    updated_at: now,
  };
  const live = await repo.liveRunsOfSchedule(hub.db, s.id);
  if (kind === 'cron' && s.overlap === 'queue') {
    // Times wait in order: behind a run still going, or behind times already waiting.
    const waiting = await repo.countWaiting(hub.db, s.id);
    if (live.length > 0 || waiting > 0) {
      // At most QUEUE_MAX times wait; beyond, a time is skipped (a run that never ends fills no disk).
      await recordSlot(hub, s, { ...slot, status: waiting >= QUEUE_MAX ? 'skipped' : 'waiting' });
      return null;
    }
  }
  if (live.length > 0 && kind === 'cron') {
    if (s.overlap === 'skip') {
      await recordSlot(hub, s, { ...slot, status: 'skipped' });
      return null;
    }
    for (const run of live) {
      await requestCancel(
        hub,
        run,
        { actor: scheduleActor(s.id), user_id: null },
        'replaced by the next scheduled run',
      ).catch((err) => {
        if (!(err instanceof AppError && err.code === 'conflict')) throw err;
      });
    }
  }
  return startSlot(hub, s, slot, async (db, runId) => {
    try {
      await repo.insertSlot(db, { ...slot, run_id: runId });
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
    await fired(db, hub, s, { ...slot, run_id: runId });
    return true;
  });
}

/** Starts the slot's run; a start the run itself refuses (team gone…) marks the slot failed. */
async function startSlot(
  hub: Hub,
  s: SchedulesTable,
  slot: ScheduleSlotsTable,
  claim: RunClaim,
): Promise<Started | null> {
  let started: Started | null;
  try {
    started = await startFor(hub, s, slot.slot_at, claim);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    hub.log.warn({ schedule_id: s.id, slot_at: slot.slot_at, err: err.message }, 'scheduled run not started');
    if (slot.status === 'waiting') {
      await repo.failWaitingSlot(hub.db, slot, err.message, hub.now());
    } else {
      await recordSlot(hub, s, { ...slot, status: 'failed', error: err.message });
    }
    return null;
  }
  if (started) {
    await repo.updateSchedule(hub.db, s.id, {
      last_fired_at: slot.slot_at,
      last_run_id: started.run.run_id,
    });
  }
  return started;
}

/** The slots of one due schedule, per catch_up, then its next time. */
async function fireSchedule(hub: Hub, s: SchedulesTable): Promise<void> {
  const now = hub.now();
  const from = s.next_fire_at!;
  const onTimeFrom = now - hub.config.scheduleGraceMs;
  const { slots } = slotsBetween(s.cron, s.timezone, from, now, CATCH_UP_MAX + 1000);
  const missed = slots.filter((t) => t < onTimeFrom);
  const onTime = slots.filter((t) => t >= onTimeFrom);
  const caught =
    s.catch_up === 'all' ? missed.slice(-CATCH_UP_MAX) : s.catch_up === 'latest' ? missed.slice(-1) : [];
  if (missed.length > caught.length) {
    hub.log.info(
      { schedule_id: s.id, missed: missed.length - caught.length, catch_up: s.catch_up },
      'missed schedule times not run',
    );
  }
  for (const t of caught) await fireSlot(hub, s, t, 'cron', true);
  for (const t of onTime) await fireSlot(hub, s, t, 'cron');
  await repo.advanceSchedule(hub.db, s, {
    next_fire_at: nextSlot(s.cron, s.timezone, Math.max(now, slots.at(-1) ?? now)),
    updated_at: hub.now(),
  });
}

/** A slot waiting (overlap: queue) starts once the schedule has no run going. */
async function startWaiting(hub: Hub): Promise<void> {
  const seen = new Set<string>();
  for (const slot of await repo.oldestWaitingSlots(hub.db, 200)) {
    if (seen.has(slot.schedule_id)) continue;
    seen.add(slot.schedule_id);
    const s = await repo.loadSchedule(hub.db, slot.schedule_id);
    if (!s || (await repo.liveRunsOfSchedule(hub.db, s.id)).length > 0) continue;
    await startSlot(hub, s, slot, async (db, runId) => {
      if (!(await repo.startWaitingSlot(db, slot, runId, hub.now()))) return false;
      await fired(db, hub, s, { ...slot, status: 'started', run_id: runId });
      return true;
    });
  }
}

/** One pass of the scheduler: due schedules fire, waiting slots start. */
export async function fireDue(hub: Hub): Promise<void> {
  for (const s of await repo.dueSchedules(hub.db, hub.now(), 100)) {
    try {
      await fireSchedule(hub, s);
    } catch (err) {
      hub.log.error({ err, schedule_id: s.id }, 'schedule not fired');
    }
  }
  await startWaiting(hub);
}
