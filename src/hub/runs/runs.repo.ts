import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import { isTerminal, type RunState } from '../../shared/api/run-states.js';
import type { Hub } from '../context.js';
import { recordEvent } from '../events/events.js';
import { getSetting } from '../settings/settings.repo.js';

/** Runs: SQL, the row → Run mapper and the history writer. */

export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_MAX_CALL_DEPTH = 8;
/** A cancel that waited this long for its daemon makes the run eligible for force-terminate. */
export const CANCEL_WAIT_MS = 60_000;

async function intSetting(hub: { db: Kysely<DB> }, key: string, fallback: number, min: number) {
  const raw = await getSetting(hub, key);
  const n = raw === null ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n >= min ? n : fallback;
}
export const leaseMsOf = (hub: { db: Kysely<DB> }) => intSetting(hub, 'runs.lease_ms', DEFAULT_LEASE_MS, 100);
export const maxCallDepthOf = (hub: { db: Kysely<DB> }) =>
  intSetting(hub, 'runs.max_call_depth', DEFAULT_MAX_CALL_DEPTH, 0);

export interface PendingControl {
  type: 'cancel' | 'resume';
  tx_id: string;
  requested_by: string | null;
  requested_at: number;
}

export const json = <T>(s: string | null): T | null => (s === null ? null : (JSON.parse(s) as T));
export const toJson = (v: unknown): string | null =>
  v === undefined || v === null ? null : JSON.stringify(v);

export function loadRun(db: Kysely<DB>, runId: string): Promise<RunsTable | undefined> {
  return db.selectFrom('runs').selectAll().where('run_id', '=', runId).executeTakeFirst();
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

/**
 * Whether a run may be force-terminated (CONTRACT.md §5): not terminal, and its daemon is offline
 * (or it never had one), its lease expired, or a cancel waited for its daemon over 60 s.
 */
export function forceTerminateOf(run: RunsTable, daemonOnline: boolean, now: number): ForceTerminate {
  const base = {
    already_terminated: run.state === 'terminated',
    terminated_at: run.terminated_at,
    terminated_by_user_id: run.terminated_by_user_id,
    terminated_reason: run.terminated_reason,
  };
  const state = run.state as RunState;
  const yes = (trigger: string) => ({ ...base, eligible: true, trigger, blocker: null });
  const no = (blocker: string) => ({ ...base, eligible: false, trigger: null, blocker });
  // A lost run has ended, but nobody confirmed its agent stopped: it may still be terminated.
  if (state === 'lost') return yes('lease_expired');
  if (isTerminal(state)) return no('already_terminal');
  if (run.daemon_id === null) return yes('no_daemon');
  if (!daemonOnline) return yes('daemon_offline');
  if ((state === 'running' || state === 'awaiting_input') && run.lease_expires_at < now) {
    return yes('lease_expired');
  }
  const pc = json<PendingControl>(run.pending_control);
  if (pc?.type === 'cancel') {
    return now - pc.requested_at > CANCEL_WAIT_MS ? yes('cancel_unacknowledged') : no('cancel_pending');
  }
  return no('daemon_online_use_cancel');
}

/** The Run as the API shows it (spec: Run resource), plus `outputs` (phase name → outputs). */
export function runOut(run: RunsTable, daemonOnline: boolean, now: number) {
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
  };
}
export type RunOut = ReturnType<typeof runOut> & { history?: HistoryOut[] };

export async function daemonOnline(db: Kysely<DB>, daemonId: string | null): Promise<boolean> {
  if (daemonId === null) return false;
  const d = await db.selectFrom('daemons').select('status').where('id', '=', daemonId).executeTakeFirst();
  return d?.status === 'online';
}

export interface HistoryEntry {
  type: string;
  from_phase?: string | null;
  phase?: string | null;
  error?: string | null;
  actor?: Record<string, unknown> | null;
  /** Details of the entry (a review's id and summary…): stored, shown, and added to the event. */
  data?: Record<string, unknown> | null;
}
export interface HistoryOut {
  type: string;
  at: number;
  from_phase: string | null;
  phase: string | null;
  error: string | null;
  actor: Record<string, unknown> | null;
  state: string;
  data: Record<string, unknown> | null;
}

/**
 * Appends a history entry (with the run's state after it) and records the same event in the
 * events table, in the caller's transaction.
 */
export async function addHistory(
  db: Kysely<DB>,
  hub: Pick<Hub, 'newId' | 'now'>,
  run: Pick<RunsTable, 'run_id' | 'org_id' | 'realm_id' | 'team_id' | 'notify_channels'>,
  state: string,
  e: HistoryEntry,
): Promise<void> {
  const at = hub.now();
  // A run's own notify_channels hear the events that need a person: its end, a loss, a review.
  const channelIds = NOTIFY_RUN_CHANNELS_ON.has(e.type) ? (json<string[]>(run.notify_channels) ?? []) : [];
  await db
    .insertInto('run_history')
    .values({
      id: hub.newId(),
      run_id: run.run_id,
      type: e.type,
      at,
      from_phase: e.from_phase ?? null,
      phase: e.phase ?? null,
      state,
      error: e.error ?? null,
      actor: toJson(e.actor ?? null),
      data: toJson(e.data ?? null),
    })
    .execute();
  await recordEvent(db, hub, {
    type: e.type,
    org_id: run.org_id,
    realm_id: run.realm_id,
    subject_id: run.run_id,
    payload: {
      ...(e.data ?? {}),
      run_id: run.run_id,
      team_id: run.team_id,
      state,
      phase: e.phase ?? null,
      error: e.error ?? null,
      actor: e.actor ?? null,
      ...(channelIds.length ? { channel_ids: channelIds } : {}),
    },
  });
}

/** The run events also sent to the channels named in the run's `notify_channels`. */
export const NOTIFY_RUN_CHANNELS_ON: ReadonlySet<string> = new Set([
  'run.ended',
  'run.lost',
  'review.requested',
]);

export async function listHistory(db: Kysely<DB>, runId: string): Promise<HistoryOut[]> {
  const rows = await db
    .selectFrom('run_history')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    type: r.type,
    at: r.at,
    from_phase: r.from_phase,
    phase: r.phase,
    error: r.error,
    actor: json<Record<string, unknown>>(r.actor),
    state: r.state,
    data: json<Record<string, unknown>>(r.data),
  }));
}

export const userActor = (u: { id: string; handle: string }) => ({
  type: 'user',
  user_id: u.id,
  handle: u.handle,
});
export const daemonActor = (daemonId: string) => ({ type: 'daemon', daemon_id: daemonId });
export const systemActor = { type: 'system' };
