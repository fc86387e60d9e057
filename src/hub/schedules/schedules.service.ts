import type { SchedulesTable } from '../../db/schema.js';
import { invalidParams, notFound } from '../../shared/errors.js';
import type { RealmPermission } from '../../shared/permissions.js';
import { requireRealm, requireUser } from '../access/access.service.js';
import type { Actor } from '../access/actor.js';
import type { Hub } from '../context.js';
import { json, toJson } from '../runs/run.mapper.js';
import { cronProblem, nextSlot } from './cron.js';
import * as repo from './schedules.repo.js';
import { checkTarget, retarget, type TargetInput } from './target.js';

/** Schedules (CONTRACT.md §10): make, show, change, remove. Firing is fire.service.ts's. */

export const OVERLAPS = ['skip', 'queue', 'cancel_previous'] as const;
export const CATCH_UPS = ['none', 'latest', 'all'] as const;

export interface ScheduleFields extends TargetInput {
  inputs?: Record<string, unknown> | undefined;
  run_name?: string | null | undefined;
  reviewers?: Record<string, string[]> | null | undefined;
  cron?: string | undefined;
  timezone?: string | undefined;
  overlap?: (typeof OVERLAPS)[number] | undefined;
  catch_up?: (typeof CATCH_UPS)[number] | undefined;
  enabled?: boolean | undefined;
}

export function scheduleOut(s: SchedulesTable) {
  return {
    id: s.id,
    realm_id: s.realm_id,
    ...json<Record<string, string>>(s.target),
    team_id: s.team_id,
    agent_id: s.agent_id,
    workspace_id: s.workspace_id,
    inputs: json<Record<string, unknown>>(s.inputs) ?? {},
    run_name: s.run_name,
    reviewers: json<Record<string, string[]>>(s.reviewers),
    cron: s.cron,
    timezone: s.timezone,
    overlap: s.overlap,
    catch_up: s.catch_up,
    enabled: s.enabled === 1,
    next_fire_at: s.next_fire_at,
    last_fired_at: s.last_fired_at,
    last_run_id: s.last_run_id,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

function checkCron(cron: string, timezone: string): void {
  const problem = cronProblem(cron, timezone);
  if (problem) throw invalidParams([problem]);
}

/** The next time from now, for an enabled schedule (null when disabled). */
const nextFrom = (hub: Hub, s: Pick<SchedulesTable, 'cron' | 'timezone' | 'enabled'>) =>
  s.enabled === 1 ? nextSlot(s.cron, s.timezone, hub.now()) : null;

export async function newSchedule(
  hub: Hub,
  actor: Actor | null,
  input: ScheduleFields & { realm_id: string; cron: string },
) {
  const { realm, actor: user } = await requireRealm(hub, actor, input.realm_id, 'schedules.manage');
  const timezone = input.timezone ?? 'UTC';
  checkCron(input.cron, timezone);
  const t = await checkTarget(hub, realm, input);
  const now = hub.now();
  const row: SchedulesTable = {
    id: hub.newId(),
    org_id: realm.org_id,
    realm_id: realm.id,
    target: JSON.stringify(t.target),
    team_id: t.team_id,
    agent_id: t.agent_id,
    workspace_id: t.workspace_id,
    inputs: JSON.stringify(input.inputs ?? {}),
    run_name: input.run_name ?? null,
    reviewers: toJson(input.reviewers),
    cron: input.cron.trim(),
    timezone,
    overlap: input.overlap ?? 'skip',
    catch_up: input.catch_up ?? 'none',
    enabled: input.enabled === false ? 0 : 1,
    next_fire_at: null,
    last_fired_at: null,
    last_run_id: null,
    created_by_user_id: user.user.id,
    created_at: now,
    updated_at: now,
  };
  row.next_fire_at = nextFrom(hub, row);
  await repo.insertSchedule(hub.db, row);
  return scheduleOut(row);
}

/** A schedule the caller may see (`schedules.view`) or change (`schedules.manage`). */
export async function visibleSchedule(
  hub: Hub,
  actor: Actor | null,
  id: string,
  permission: RealmPermission,
): Promise<{ schedule: SchedulesTable; userId: string }> {
  requireUser(actor);
  const schedule = await repo.loadSchedule(hub.db, id);
  if (!schedule) throw notFound('schedule');
  const { actor: user } = await requireRealm(hub, actor, schedule.realm_id, permission);
  return { schedule, userId: user.user.id };
}

export async function updateSchedule(hub: Hub, actor: Actor | null, input: ScheduleFields & { id: string }) {
  const { schedule: s } = await visibleSchedule(hub, actor, input.id, 'schedules.manage');
  const next: SchedulesTable = { ...s, updated_at: hub.now() };
  Object.assign(next, await retarget(hub, s, input));
  if (input.inputs !== undefined) next.inputs = JSON.stringify(input.inputs);
  if (input.run_name !== undefined) next.run_name = input.run_name;
  if (input.reviewers !== undefined) next.reviewers = toJson(input.reviewers);
  if (input.cron !== undefined) next.cron = input.cron.trim();
  if (input.timezone !== undefined) next.timezone = input.timezone;
  if (input.overlap !== undefined) next.overlap = input.overlap;
  if (input.catch_up !== undefined) next.catch_up = input.catch_up;
  if (input.enabled !== undefined) next.enabled = input.enabled ? 1 : 0;
  checkCron(next.cron, next.timezone);
  // A changed time or a (re-)enabled schedule counts from now: what it missed meanwhile is not caught up.
  if (next.cron !== s.cron || next.timezone !== s.timezone || next.enabled !== s.enabled) {
    next.next_fire_at = nextFrom(hub, next);
  }
  const { id: _, ...set } = next;
  await repo.updateSchedule(hub.db, s.id, set);
  return scheduleOut(next);
}

export async function removeSchedule(hub: Hub, actor: Actor | null, id: string): Promise<boolean> {
  requireUser(actor);
  const s = await repo.loadSchedule(hub.db, id);
  if (!s) return false;
  await requireRealm(hub, actor, s.realm_id, 'schedules.manage');
  return repo.deleteSchedule(hub.db, id);
}

export async function listSchedules(
  hub: Hub,
  actor: Actor | null,
  input: { realm_id: string; limit: number; cursor?: string | undefined },
) {
  await requireRealm(hub, actor, input.realm_id, 'schedules.view');
  const page = await repo.listSchedules(hub.db, input.realm_id, {
    limit: input.limit,
    ...(input.cursor ? { cursor: input.cursor } : {}),
  });
  return { data: page.data.map(scheduleOut), next_cursor: page.next_cursor };
}
