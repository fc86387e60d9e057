/** The hub API's shapes as the console reads them (docs/api.md). Only the fields the console uses. */

import type { RunState } from '../shared/api/run-states.js';

export type RealmRole = 'member' | 'operator' | 'admin';

export interface User {
  id: string;
  handle: string;
  email: string;
  display_name: string | null;
  is_site_admin: boolean;
}

export interface Org {
  id: string;
  slug: string;
  display_name: string;
}

export interface Realm {
  id: string;
  org_id: string;
  name: string;
  my_role?: RealmRole | null;
}

export interface Actor {
  type: 'user' | 'daemon' | 'system';
  user_id?: string;
  handle?: string;
  daemon_id?: string;
}

export interface HistoryEntry {
  type: string;
  at: number;
  from_phase: string | null;
  phase: string | null;
  error: string | null;
  actor: Actor | null;
  state: string;
  /** Extra facts of some entries (reviews: review_id, action, comment, round…). */
  data?: Record<string, unknown> | null;
}

export interface ForceTerminate {
  already_terminated: boolean;
  terminated_at: number | null;
  terminated_by_user_id: string | null;
  terminated_reason: string | null;
  eligible: boolean;
  trigger: string | null;
  blocker: string | null;
}

export interface PendingControl {
  type: 'cancel' | 'resume';
  tx_id: string;
  requested_by: string;
  requested_at: number;
}

export interface Run {
  run_id: string;
  realm_id: string;
  workspace_id: string | null;
  team_id: string | null;
  team_version_id: string | null;
  daemon_id: string | null;
  parent_run_id: string | null;
  parent_phase: string | null;
  root_run_id: string | null;
  call_depth: number;
  iteration_key: string | null;
  run_name: string;
  state: RunState;
  inputs: Record<string, unknown>;
  outputs: Record<string, unknown>;
  error: string | null;
  current_phase: string | null;
  started_at: number;
  completed_at: number | null;
  pending_control: PendingControl | null;
  force_terminate: ForceTerminate;
  history?: HistoryEntry[];
}

export interface LogLine {
  seq: number;
  at: number;
  stream: 'stdout' | 'stderr' | 'system';
  phase: string | null;
  text: string;
}

export type ReviewState =
  | 'open'
  | 'approved'
  | 'rejected'
  | 'changes_requested'
  | 'expired'
  | 'cancelled'
  | 'closed';

export type ReviewAction = 'approve' | 'reject' | 'request_changes' | 'comment';

export interface Review {
  id: string;
  run_id: string;
  realm_id: string;
  phase: string;
  kind: 'phase' | 'agent';
  round: number;
  summary: string | null;
  state: ReviewState;
  reviewers: string[] | null;
  requested_at: number;
  deadline_at: number | null;
  closed_at: number | null;
  closed_by: { user_id: string; handle: string } | null;
  verdict: { action: ReviewAction; comment: string | null } | null;
  run_name: string;
  team_name: string | null;
  can_submit: boolean;
}

export interface Daemon {
  id: string;
  realm_id: string;
  name: string;
  status: 'online' | 'offline' | string;
  last_seen_at: number | null;
  created_at: number;
}

export interface TeamInstall {
  id: string;
  daemon_id: string;
  team_id: string;
  team_version_id: string;
  status: string;
  pending: string | null;
  error: string | null;
}

export interface Workspace {
  id: string;
  daemon_id: string;
  realm_id: string;
  path: string;
  name: string;
  team_ids: string[];
}

export interface Agent {
  id: string;
  name: string;
  version: string;
  description: string;
  agent_type: string;
  created_at: number;
}

export interface PhaseDef {
  name: string;
  agent?: string;
  team?: string;
  foreach?: string;
  review?: boolean;
}

export interface TeamVersion {
  id: string;
  team_id: string;
  name: string;
  version: string;
  description: string;
  definition: { phases: PhaseDef[] };
  created_at: number;
}

export interface Channel {
  id: string;
  realm_id: string | null;
  org_id: string | null;
  user_id: string | null;
  name: string;
  destinations: { type: string; webhook_url: string }[];
  enabled: boolean;
  rule_count: number;
  locked: boolean;
  lock_reason: string | null;
}

export interface Delivery {
  id: string;
  channel_id: string;
  event_type: string;
  test: boolean;
  destination: { index: number; type: string; webhook_url: string };
  state: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
  created_at: number;
  completed_at: number | null;
}

/** A schedule (docs/api.md, "Schedules and triggers"). */
export interface Schedule {
  id: string;
  realm_id: string;
  team?: string;
  team_id: string | null;
  agent?: string;
  agent_id: string | null;
  cron: string;
  timezone: string;
  overlap: string;
  catch_up: string;
  enabled: boolean;
  next_fire_at: number | null;
  last_fired_at: number | null;
  last_run_id: string | null;
}

export interface TriggerDelivery {
  id: string;
  received_at: number;
  outcome: 'started' | 'repeated' | 'refused';
  http_status: number;
  error: string | null;
  run_id: string | null;
}

export interface Trigger {
  id: string;
  name: string;
  team?: string;
  team_id: string | null;
  agent?: string;
  url: string;
  recent_deliveries?: TriggerDelivery[];
}
