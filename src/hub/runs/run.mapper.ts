import type { RunsTable } from '../../db/schema.js';
import { isTerminal } from '../../shared/api/run-states.js';
import type { Actor, ForceTerminate, PendingControl, Run, WaitingFor } from '../../shared/api/runs.js';

export type { PendingControl };

/** Runs: the row → Run mapper and the pure rules it shows (force-terminate eligibility). */

/** A cancel that waited this long for its daemon makes the run eligible for force-terminate. */
export const CANCEL_WAIT_MS = 60_000;

export const json = <T>(s: string | null): T | null => (s === null ? null : (JSON.parse(s) as T));
export const toJson = (v: unknown): string | null =>
  v === undefined || v === null ? null : JSON.stringify(v);

/**
 * Whether a run may be force-terminated (CONTRACT.md §5): not terminal (a lost run may), and its
 * daemon is offline (or it never had one), its lease expired, or a cancel waited for its daemon
 * over 60 s.
 */
export function forceTerminateOf(run: RunsTable, daemonOnline: boolean, now: number): ForceTerminate {
  // One literal, not a spread of the common fields: this is built for every run shown.
  const answer = (eligible: boolean, trigger: string | null, blocker: string | null) => ({
    already_terminated: run.state === 'terminated',
    terminated_at: run.terminated_at,
    terminated_by_user_id: run.terminated_by_user_id,
    terminated_reason: run.terminated_reason,
    eligible,
    trigger,
    blocker,
  });
  const yes = (trigger: string) => answer(true, trigger, null);
  const no = (blocker: string) => answer(false, null, blocker);
  // A lost run has ended, but nobody confirmed its agent stopped: it may still be terminated.
  if (run.state === 'lost') return yes('lease_expired');
  if (isTerminal(run.state)) return no('already_terminal');
  if (run.daemon_id === null) return yes('no_daemon');
  if (!daemonOnline) return yes('daemon_offline');
  const held = run.state === 'assigned' || run.state === 'running' || run.state === 'awaiting_input';
  if (held && run.lease_expires_at < now) return yes('lease_expired');
  const pc = json<PendingControl>(run.pending_control);
  if (pc?.type === 'cancel') {
    return now - pc.requested_at > CANCEL_WAIT_MS ? yes('cancel_unacknowledged') : no('cancel_pending');
  }
  return no('daemon_online_use_cancel');
}

/** The Run as the API shows it (spec: Run resource), plus `outputs` (phase name → outputs). */
export function runOut(run: RunsTable, daemonOnline: boolean, now: number): Run {
  return {
    run_id: run.run_id,
    workspace_id: run.workspace_id,
    team_id: run.team_id,
    daemon_id: run.daemon_id,
    realm_id: run.realm_id,
    parent_run_id: run.parent_run_id,
    parent_phase: run.parent_phase,
    root_run_id: run.root_run_id,
    call_path: json<string[]>(run.call_path),
    call_depth: run.call_depth,
    iteration_key: run.iteration_key,
    run_name: run.run_name,
    state: run.state,
    inputs: json<Record<string, unknown>>(run.inputs) ?? {},
    error: run.error,
    execution_type: run.execution_type,
    current_pid: run.current_pid,
    current_phase: run.current_phase,
    external_id: run.external_id,
    context_labels: json<unknown>(run.context_labels),
    reviewers: json<Record<string, string[]>>(run.reviewers),
    notify_channels: json<unknown>(run.notify_channels),
    lease_expires_at: run.lease_expires_at,
    started_at: run.started_at,
    completed_at: run.completed_at,
    pending_control: json<PendingControl>(run.pending_control),
    force_terminate: forceTerminateOf(run, daemonOnline, now),
    state_lost_at: run.state_lost_at,
    team_version_id: run.team_version_id,
    outputs: json<Record<string, unknown>>(run.outputs) ?? {},
    created_by_user_id: run.created_by_user_id,
    priority: run.priority,
    waiting_for: run.state === 'queued' ? json<WaitingFor>(run.waiting_for) : null,
    queue_deadline_at: run.queue_deadline_at,
    run_deadline_at: run.run_deadline_at,
  };
}

export const userActor = (u: { id: string; handle: string }): Actor => ({
  type: 'user',
  user_id: u.id,
  handle: u.handle,
});
export const daemonActor = (daemonId: string): Actor => ({ type: 'daemon', daemon_id: daemonId });
export const systemActor: Actor = { type: 'system' };
