import type { RunState } from '../../shared/api/run-states.js';

/** Runs, their history and logs, and reviews. */

/** A run of a team or an agent (src/hub/runs/). JSON columns are text. */
export interface RunsTable {
  run_id: string;
  org_id: string;
  realm_id: string;
  workspace_id: string | null;
  workspace_path: string | null;
  team_id: string | null;
  team_version_id: string | null;
  agent_id: string | null;
  daemon_id: string | null;
  parent_run_id: string | null;
  parent_phase: string | null;
  root_run_id: string | null;
  call_path: string | null;
  call_depth: number;
  iteration_key: string | null;
  child_key: string | null;
  run_name: string;
  state: RunState;
  inputs: string;
  /** JSON: phase name → that phase's outputs. */
  outputs: string;
  error: string | null;
  execution_type: string;
  current_pid: number | null;
  current_phase: string | null;
  external_id: string | null;
  context_labels: string | null;
  reviewers: string | null;
  notify_channels: string | null;
  /** Grows with every dispatch or claim; daemon calls with an older epoch are refused. */
  lease_epoch: number;
  lease_expires_at: number;
  queue_item_id: string | null;
  pending_control: string | null;
  /** tx_id of the control command (cancel) waiting for its daemon's ack. */
  control_tx_id: string | null;
  started_at: number;
  completed_at: number | null;
  state_lost_at: number | null;
  terminated_at: number | null;
  terminated_by_user_id: string | null;
  terminated_reason: string | null;
  created_by_user_id: string | null;
  created_at: number;
  updated_at: number;
  /** When retention removed the logs of this kept run (`retention.logs_days`), or null. */
  logs_pruned_at: number | null;
  /** 0–9: among runs that can start, higher first, then older first. */
  priority: number;
  /** JSON: the run's concurrency groups [{group, key, value, limit}], or null (docs/api.md). */
  concurrency: string | null;
  /** JSON: the full group the queued run waits for {key, value, limit, running}, or null. */
  waiting_for: string | null;
  /** A run still queued then fails with `queue_timeout`. */
  queue_deadline_at: number | null;
  /** A run not terminal then is cancelled with `run_timeout`. */
  run_deadline_at: number | null;
}

/** A run's membership of a concurrency group, written with the run. */
export interface RunGroupsTable {
  run_id: string;
  group_key: string;
}

export interface RunHistoryTable {
  id: string;
  run_id: string;
  /** The run's realm (its realm's event stream reads by it); null only for entries of a run that was gone when it was added. */
  realm_id: string | null;
  type: string;
  at: number;
  from_phase: string | null;
  phase: string | null;
  /** The run's state after this entry. */
  state: RunState;
  error: string | null;
  actor: string | null;
  /** JSON: the entry's details (a review's id, summary, verdict), or null. */
  data: string | null;
}

export interface RunLogsTable {
  run_id: string;
  seq: number;
  at: number;
  stream: 'stdout' | 'stderr' | 'system';
  phase: string | null;
  text: string;
}

/** A review (human gate) of a run's phase (src/hub/reviews/). `reviewers`: JSON handles, or null. */
export interface ReviewsTable {
  id: string;
  org_id: string;
  realm_id: string;
  run_id: string;
  /** The daemon that held the run when the review was requested: verdicts are delivered to it. */
  daemon_id: string;
  lease_epoch: number;
  phase: string;
  kind: 'phase' | 'agent';
  /** 1-based: each request_changes rerun of the phase asks again in the next round. */
  round: number;
  summary: string;
  state: 'open' | 'approved' | 'rejected' | 'changes_requested' | 'expired' | 'cancelled';
  reviewers: string | null;
  requested_at: number;
  deadline_at: number | null;
  closed_at: number | null;
  /** The user who closed it (null: the system, an expiry or the run's end). */
  closed_by: string | null;
  verdict_action: 'approve' | 'reject' | 'request_changes' | 'expired' | null;
  verdict_comment: string | null;
  /** A `review: true` phase's outputs (JSON text), null for an agent's own request. */
  outputs: string | null;
  /** The last lines of the phase's log when the review was requested. */
  log_excerpt: string | null;
}

/** Every verdict or comment submitted on a review. */
export interface ReviewSubmissionsTable {
  id: string;
  review_id: string;
  action: 'approve' | 'reject' | 'request_changes' | 'comment';
  comment: string | null;
  actor_id: string | null;
  actor_handle: string | null;
  created_at: number;
}

/** The last number given to a default run name, per realm and team (or agent). */
export interface RunNumbersTable {
  realm_id: string;
  /** The team's id, or the agent's for a single-agent run. */
  subject_id: string;
  last: number;
}

/** The first run started with an `idempotency_key` in a realm (kept 24 h). */
export interface RunIdempotencyKeysTable {
  realm_id: string;
  key: string;
  run_id: string;
  created_at: number;
}
