/** Schedules and triggers (src/hub/schedules/, src/hub/triggers/). */

export type ScheduleOverlap = 'skip' | 'queue' | 'cancel_previous';
export type ScheduleCatchUp = 'none' | 'latest' | 'all';

export interface SchedulesTable {
  id: string;
  org_id: string;
  realm_id: string;
  /** JSON: the runs/new target ({team} | {team_id} | {agent}), resolved at every fire. */
  target: string;
  team_id: string | null;
  agent_id: string | null;
  workspace_id: string | null;
  inputs: string;
  run_name: string | null;
  reviewers: string | null;
  cron: string;
  timezone: string;
  overlap: ScheduleOverlap;
  catch_up: ScheduleCatchUp;
  enabled: number;
  /** The first scheduled time not handled yet (null: disabled, or the expression has no next time). */
  next_fire_at: number | null;
  last_fired_at: number | null;
  last_run_id: string | null;
  created_by_user_id: string | null;
  created_at: number;
  updated_at: number;
}

export type SlotStatus = 'started' | 'skipped' | 'waiting' | 'failed';

/** One scheduled time of a schedule (or one schedules/trigger): its key makes it fire once. */
export interface ScheduleSlotsTable {
  schedule_id: string;
  slot_at: number;
  kind: 'cron' | 'manual';
  status: SlotStatus;
  run_id: string | null;
  error: string | null;
  /** 1: a time the hub missed (it was down) and ran later, per catch_up. */
  caught_up: number;
  created_at: number;
  updated_at: number;
}

export interface TriggersTable {
  id: string;
  org_id: string;
  realm_id: string;
  name: string;
  target: string;
  team_id: string | null;
  agent_id: string | null;
  workspace_id: string | null;
  inputs: string;
  secret: string;
  created_by_user_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface TriggerDeliveriesTable {
  id: string;
  trigger_id: string;
  received_at: number;
  outcome: 'started' | 'repeated' | 'refused';
  http_status: number;
  error: string | null;
  run_id: string | null;
}
