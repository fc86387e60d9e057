import { z } from 'zod';
import { ms, page } from './envelope.js';
import { RUN_STATES } from './run-states.js';

/** Runs as the hub shows them (spec: "Run resource"; docs/api.md "Runs"). */

export const RunState = z.enum(RUN_STATES);

/** Who did something: a person, a daemon, or the hub itself. */
export const Actor = z.union([
  z.strictObject({ type: z.literal('user'), user_id: z.string().nullable(), handle: z.string().optional() }),
  z.strictObject({ type: z.literal('daemon'), daemon_id: z.string() }),
  z.strictObject({ type: z.literal('system') }),
  // A run started by a schedule or an incoming webhook (CONTRACT.md §10).
  z.strictObject({ type: z.literal('schedule'), schedule_id: z.string() }),
  z.strictObject({ type: z.literal('trigger'), trigger_id: z.string() }),
]);
export type Actor = z.infer<typeof Actor>;

/** A cancel or resume sent to the run's daemon and not yet acknowledged. */
export const PendingControl = z.strictObject({
  type: z.enum(['cancel', 'resume']),
  tx_id: z.string(),
  requested_by: z.string().nullable(),
  requested_at: ms,
});
export type PendingControl = z.infer<typeof PendingControl>;

/** Whether the run may be force-terminated now, and why (CONTRACT §5). */
export const ForceTerminate = z.strictObject({
  already_terminated: z.boolean(),
  terminated_at: ms.nullable(),
  terminated_by_user_id: z.string().nullable(),
  terminated_reason: z.string().nullable(),
  eligible: z.boolean(),
  trigger: z.string().nullable(),
  blocker: z.string().nullable(),
});
export type ForceTerminate = z.infer<typeof ForceTerminate>;

/** One entry of a run's history (`runs/get_by_id` with `with_history: true`), oldest first. */
export const HistoryEntry = z.strictObject({
  type: z.string(),
  at: ms,
  from_phase: z.string().nullable(),
  phase: z.string().nullable(),
  error: z.string().nullable(),
  actor: Actor.nullable(),
  /** The run's state after this entry. */
  state: RunState,
  /** Extra facts of some entries (reviews: review_id, action, comment, round…). */
  data: z.record(z.string(), z.unknown()).nullable(),
});
export type HistoryEntry = z.infer<typeof HistoryEntry>;

/** The full concurrency group a queued run waits for (CONTRACT.md §11). */
export const WaitingFor = z.strictObject({
  key: z.string(),
  value: z.string(),
  limit: z.number(),
  running: z.number(),
});
export type WaitingFor = z.infer<typeof WaitingFor>;

export const Run = z.strictObject({
  run_id: z.string(),
  workspace_id: z.string().nullable(),
  team_id: z.string().nullable(),
  daemon_id: z.string().nullable(),
  realm_id: z.string(),
  parent_run_id: z.string().nullable(),
  parent_phase: z.string().nullable(),
  root_run_id: z.string().nullable(),
  call_path: z.array(z.string()).nullable(),
  call_depth: z.number(),
  iteration_key: z.string().nullable(),
  run_name: z.string(),
  state: RunState,
  inputs: z.record(z.string(), z.unknown()),
  error: z.string().nullable(),
  execution_type: z.string(),
  current_pid: z.number().nullable(),
  current_phase: z.string().nullable(),
  external_id: z.string().nullable(),
  context_labels: z.unknown(),
  /** Phase name → handles of the people who may review it. */
  reviewers: z.record(z.string(), z.array(z.string())).nullable(),
  notify_channels: z.unknown(),
  lease_expires_at: ms,
  started_at: ms,
  completed_at: ms.nullable(),
  pending_control: PendingControl.nullable(),
  force_terminate: ForceTerminate,
  state_lost_at: ms.nullable(),
  team_version_id: z.string().nullable(),
  /** Phase name → that phase's outputs. */
  outputs: z.record(z.string(), z.unknown()),
  /** The user who started the run (for a schedule's or trigger's run, who made it; a child: its parent's). */
  created_by_user_id: z.string().nullable(),
  /** 0–9: among runs that can start, higher first, then older first. */
  priority: z.number(),
  /** A queued run whose concurrency group is full: that group; else null. */
  waiting_for: WaitingFor.nullable(),
  /** When a still queued run fails with `queue_timeout`, or null. */
  queue_deadline_at: ms.nullable(),
  /** When a run not yet ended is cancelled with `run_timeout`, or null. */
  run_deadline_at: ms.nullable(),
  /** Only in `runs/list` with `order: "queue"`: 1 for the run that starts next. */
  queue_position: z.number().optional(),
  /** Only with `with_history: true`. */
  history: z.array(HistoryEntry).optional(),
});
export type Run = z.infer<typeof Run>;

export const RunPage = page(Run);
export type RunPage = z.infer<typeof RunPage>;

export const LogLine = z.strictObject({
  seq: z.number(),
  at: ms,
  stream: z.enum(['stdout', 'stderr', 'system']),
  phase: z.string().nullable(),
  text: z.string(),
});
export type LogLine = z.infer<typeof LogLine>;

/** `runs/logs`: lines after `after`; ask again from `next_after` while `has_more`. */
export const LogsPage = z.strictObject({
  data: z.array(LogLine),
  next_after: z.number(),
  has_more: z.boolean(),
  run_state: RunState,
});
export type LogsPage = z.infer<typeof LogsPage>;

// Daemon-side replies.

/** `queue/claim`: whether this daemon won the offer, and the run if it did. */
export const Claim = z.strictObject({
  claimed: z.boolean(),
  queue_item_id: z.string(),
  /** The run this daemon now holds, with its lease epoch (the daemon is then sent runs/execute). */
  run: z.strictObject({ run_id: z.string(), lease_epoch: z.number() }).optional(),
});
export const LeaseRenewal = z.strictObject({ renewed: z.array(z.string()), lease_expires_at: ms });
export const LogsAppended = z.strictObject({ appended: z.number(), last_seq: z.number() });
/** `runs/report`: the run's state and lease after the report, and how many of its events applied. */
export const RunReport = z.strictObject({
  run_id: z.string(),
  state: RunState,
  lease_epoch: z.number(),
  lease_expires_at: ms,
  applied: z.number(),
});
