import type { Kysely } from 'kysely';
import { type DB, isUniqueViolation } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import type { RunState } from '../../shared/api/run-states.js';
import { AppError, conflict, notFound } from '../../shared/errors.js';
import type { AppendLogsBody, RenewLeaseBody, RunReportBody, StartChildBody } from '../../shared/protocol.js';
import type { DaemonActor } from '../access/actor.js';
import type { Hub } from '../context.js';
import { cancelOpenReviews } from '../reviews/reviews.repo.js';
import { dispatchRun } from './runs.dispatch.js';
import {
  addHistory,
  daemonActor,
  json,
  leaseMsOf,
  loadRun,
  maxCallDepthOf,
  type PendingControl,
  runOut,
  systemActor,
} from './runs.repo.js';
import { insertRun, moveRun, notifyParent } from './runs.service.js';

/**
 * Daemon-side calls (realm token). Each carries the run's lease epoch: the daemon holding the
 * current epoch is the only one whose report, renewal or logs are accepted (fencing).
 */

const LIVE: RunState[] = ['queued', 'offered', 'running', 'awaiting_input'];

/** The run, if this daemon holds its current epoch; else not_found / forbidden / conflict. */
async function heldRun(db: Kysely<DB>, actor: DaemonActor, runId: string, epoch: number): Promise<RunsTable> {
  const run = await loadRun(db, runId);
  if (!run || run.realm_id !== actor.daemon.realm_id) throw notFound('run');
  if (run.daemon_id !== actor.daemon.id || run.lease_epoch !== epoch) {
    throw conflict('this daemon no longer holds the run (stale lease epoch)', {
      lease_epoch: run.lease_epoch,
      state: run.state,
    });
  }
  return run;
}

const moveFor: Partial<Record<RunReportBody['event'], RunState>> = {
  started: 'running',
  awaiting_input: 'awaiting_input',
  'input.received': 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** Events that name where they come from (the state machine alone would allow more). */
const eventFrom: Partial<Record<RunReportBody['event'], RunState[]>> = {
  started: ['queued', 'offered'],
  'input.received': ['awaiting_input'],
  awaiting_input: ['running'],
};

/** `runs/report`: a state move or a phase step, with its history entry. */
export async function reportRun(hub: Hub, actor: DaemonActor, input: RunReportBody) {
  const leaseMs = await leaseMsOf(hub);
  const wake = await hub.db.transaction().execute(async (trx) => {
    const run = await heldRun(trx, actor, input.run_id, input.lease_epoch);
    const now = hub.now();
    const to = moveFor[input.event];
    const outputs = json<Record<string, unknown>>(run.outputs) ?? {};
    const list: string[] = [];
    if (to === undefined) {
      // phase.started / phase.completed: the run must be running.
      if (run.state !== 'running') {
        throw conflict(`${input.event} is not allowed while the run is ${run.state}`, { state: run.state });
      }
      if (!input.phase) throw conflict(`${input.event} needs a phase`);
      const set: Partial<RunsTable> = { updated_at: now, lease_expires_at: now + leaseMs };
      if (input.event === 'phase.started') {
        set.current_phase = input.phase;
        set.current_pid = input.pid ?? null;
      } else {
        outputs[input.phase] = input.outputs ?? {};
        set.outputs = JSON.stringify(outputs);
        set.current_pid = null;
      }
      const res = await trx
        .updateTable('runs')
        .set(set)
        .where('run_id', '=', run.run_id)
        .where('state', '=', 'running')
        .where('lease_epoch', '=', run.lease_epoch)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) throw conflict('the run changed meanwhile');
      await addHistory(trx, hub, run, run.state, {
        type: input.event,
        from_phase: input.event === 'phase.started' ? run.current_phase : null,
        phase: input.phase,
        actor: daemonActor(actor.daemon.id),
      });
      return list;
    }
    // A retried `started` (the hub committed the first one but its reply was lost, say because the
    // process died) changes nothing: this daemon holds this epoch, so the run is already its.
    if (input.event === 'started' && (run.state === 'running' || run.state === 'awaiting_input')) return list;
    const from = eventFrom[input.event];
    if (from && !from.includes(run.state as RunState)) {
      throw conflict(`${input.event} is not allowed while the run is ${run.state}`, { state: run.state });
    }
    const set: Partial<RunsTable> = { updated_at: now };
    if (to === 'running' || to === 'awaiting_input') set.lease_expires_at = now + leaseMs;
    const terminal = to === 'succeeded' || to === 'failed' || to === 'cancelled';
    if (terminal) {
      set.completed_at = now;
      set.current_pid = null;
      set.pending_control = null;
      set.error =
        to === 'failed' ? (input.error ?? 'failed') : to === 'cancelled' ? (input.error ?? null) : null;
      if (input.outputs && typeof input.outputs === 'object' && !Array.isArray(input.outputs)) {
        set.outputs = JSON.stringify({ ...outputs, ...(input.outputs as Record<string, unknown>) });
      }
      if (to === 'failed' && input.phase) set.current_phase = input.phase;
    }
    const pc = json<PendingControl>(run.pending_control);
    const resumed = input.event === 'started' && pc?.type === 'resume';
    if (resumed) set.pending_control = null;
    if (!(await moveRun(trx, run, to, set))) throw conflict('the run changed meanwhile');
    const who = daemonActor(actor.daemon.id);
    if (input.event === 'started') {
      await addHistory(trx, hub, run, to, {
        type: resumed ? 'run.resumed' : 'run.started',
        phase: run.current_phase,
        actor: resumed ? { type: 'user', user_id: pc!.requested_by } : who,
      });
    } else if (terminal) {
      if (pc?.type === 'cancel' && run.control_tx_id !== null) {
        // The daemon ended the run before its ack of the cancel command was processed: the end is
        // the acknowledgement (the ack that follows finds nothing to do).
        await trx.updateTable('runs').set({ control_tx_id: null }).where('run_id', '=', run.run_id).execute();
        await addHistory(trx, hub, run, run.state, {
          type: 'run.cancel_acknowledged',
          phase: run.current_phase,
          actor: who,
        });
      }
      await addHistory(trx, hub, run, to, {
        type: 'run.ended',
        phase: input.phase ?? run.current_phase,
        error: set.error ?? null,
        actor: who,
      });
      const p = await notifyParent(trx, hub, { ...run, ...set, state: to } as RunsTable, to);
      if (p) list.push(p);
    } else {
      await addHistory(trx, hub, run, to, {
        type: input.event === 'awaiting_input' ? 'run.awaiting_input' : 'run.input_received',
        phase: input.phase ?? run.current_phase,
        actor: who,
      });
    }
    return list;
  });
  for (const d of wake) hub.tunnel.wake(d);
  const run = (await loadRun(hub.db, input.run_id))!;
  return {
    run_id: run.run_id,
    state: run.state,
    lease_epoch: run.lease_epoch,
    lease_expires_at: run.lease_expires_at,
  };
}

/**
 * `runs/renew_lease`: renews every lease this daemon still holds. Leases it no longer holds (older
 * epoch, ended run) are refused: the reply is then `conflict` with `details.refused`, the others
 * are renewed all the same.
 */
export async function renewLeases(hub: Hub, actor: DaemonActor, input: RenewLeaseBody) {
  const leaseMs = await leaseMsOf(hub);
  const now = hub.now();
  const renewed: string[] = [];
  const refused: { run_id: string; reason: string }[] = [];
  for (const r of input.runs) {
    const res = await hub.db
      .updateTable('runs')
      .set({ lease_expires_at: now + leaseMs })
      .where('run_id', '=', r.run_id)
      .where('realm_id', '=', actor.daemon.realm_id)
      .where('daemon_id', '=', actor.daemon.id)
      .where('lease_epoch', '=', r.lease_epoch)
      .where('state', 'in', LIVE)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1) renewed.push(r.run_id);
    else refused.push({ run_id: r.run_id, reason: 'not held by this daemon with this lease epoch' });
  }
  if (refused.length > 0) {
    throw conflict(`${refused.length} lease(s) are no longer held by this daemon`, { renewed, refused });
  }
  return { renewed, lease_expires_at: now + leaseMs };
}

/** `runs/append_logs`: appends a batch of lines, numbered after the run's last one. */
export async function appendLogs(hub: Hub, actor: DaemonActor, input: AppendLogsBody) {
  return hub.db.transaction().execute(async (trx) => {
    const run = await heldRun(trx, actor, input.run_id, input.lease_epoch);
    const last = await trx
      .selectFrom('run_logs')
      .select((eb) => eb.fn.max('seq').as('seq'))
      .where('run_id', '=', run.run_id)
      .executeTakeFirst();
    let seq = Number(last?.seq ?? 0);
    const now = hub.now();
    if (input.lines.length > 0) {
      await trx
        .insertInto('run_logs')
        .values(
          input.lines.map((l) => ({
            run_id: run.run_id,
            seq: ++seq,
            at: l.at ?? now,
            stream: l.stream,
            phase: l.phase ?? null,
            text: l.text,
          })),
        )
        .execute();
    }
    return { appended: input.lines.length, last_seq: seq };
  });
}

/**
 * `runs/start_child`: a `team:` phase of a run this daemon holds starts a child run (same realm and
 * workspace, `call_depth` + 1, capped by `runs.max_call_depth`).
 */
export async function startChild(hub: Hub, actor: DaemonActor, input: StartChildBody) {
  const parent = await heldRun(hub.db, actor, input.parent_run_id, input.lease_epoch);
  if (parent.state !== 'running')
    throw conflict(`the parent run is ${parent.state}`, { state: parent.state });
  const maxDepth = await maxCallDepthOf(hub);
  const depth = parent.call_depth + 1;
  if (depth > maxDepth) {
    throw new AppError(
      'bad_request',
      `call depth ${depth} exceeds runs.max_call_depth (${maxDepth}): phase "${input.parent_phase}" cannot start another child run`,
      { call_depth: depth, max_call_depth: maxDepth },
    );
  }
  const tv = await hub.db
    .selectFrom('team_versions')
    .selectAll()
    .where('id', '=', input.team_version_id)
    .where('org_id', '=', parent.org_id)
    .executeTakeFirst();
  if (!tv) throw notFound('team version');
  const parentTeam = parent.team_version_id
    ? await hub.db
        .selectFrom('team_versions')
        .select('name')
        .where('id', '=', parent.team_version_id)
        .where('org_id', '=', parent.org_id)
        .executeTakeFirst()
    : undefined;
  const step = `${parentTeam?.name ?? parent.run_name}/${input.parent_phase}`;
  // A daemon that retries (its reply was lost) gets the child it already has; a resumed parent runs
  // under a new lease epoch and so starts fresh children.
  const childKey = `${parent.run_id}#${parent.lease_epoch}#${input.parent_phase}#${input.iteration_key ?? ''}`;
  const existing = async () =>
    hub.db.selectFrom('runs').selectAll().where('child_key', '=', childKey).executeTakeFirst();
  const already = await existing();
  if (already) return { run: runOut(already, true, hub.now()), created: false };
  let child: RunsTable;
  try {
    child = await hub.db.transaction().execute((trx) =>
      insertRun(
        trx,
        hub,
        {
          org_id: parent.org_id,
          realm_id: parent.realm_id,
          workspace_id: parent.workspace_id,
          workspace_path: parent.workspace_path,
          team_id: tv.team_id,
          team_version_id: tv.id,
          agent_id: null,
          execution_type: 'team',
          run_name:
            input.iteration_key === null
              ? `${parent.run_name}/${input.parent_phase}`
              : `${parent.run_name}/${input.parent_phase}[${input.iteration_key}]`,
          base_name: tv.name,
          inputs: input.inputs,
          reviewers: null,
          notify_channels: json(parent.notify_channels),
          external_id: null,
          context_labels: json(parent.context_labels),
          parent_run_id: parent.run_id,
          parent_phase: input.parent_phase,
          root_run_id: parent.root_run_id ?? parent.run_id,
          call_path: [...(json<string[]>(parent.call_path) ?? []), step],
          call_depth: depth,
          iteration_key: input.iteration_key,
          child_key: childKey,
          created_by_user_id: parent.created_by_user_id,
        },
        daemonActor(actor.daemon.id),
      ),
    );
  } catch (err) {
    const raced = isUniqueViolation(err) ? await existing() : undefined;
    if (!raced) throw err;
    return { run: runOut(raced, true, hub.now()), created: false };
  }
  await dispatchRun(hub, child.run_id);
  return { run: runOut((await loadRun(hub.db, child.run_id))!, true, hub.now()), created: true };
}

/** The daemon acked a cancel command: the control is no longer pending (history shows it). */
export async function onCommandAck(hub: Hub, txId: string, status: 'ok' | 'error'): Promise<void> {
  const run = await hub.db
    .selectFrom('runs')
    .selectAll()
    .where('control_tx_id', '=', txId)
    .executeTakeFirst();
  if (!run) return;
  await hub.db.transaction().execute(async (trx) => {
    const res = await trx
      .updateTable('runs')
      .set({ pending_control: null, control_tx_id: null, updated_at: hub.now() })
      .where('run_id', '=', run.run_id)
      .where('control_tx_id', '=', txId)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return;
    await addHistory(trx, hub, run, run.state, {
      type: 'run.cancel_acknowledged',
      phase: run.current_phase,
      actor: run.daemon_id ? daemonActor(run.daemon_id) : systemActor,
      error: status === 'error' ? 'the daemon refused the cancel command' : null,
    });
  });
}

/**
 * The lease sweeper's pass: a running run whose lease expired becomes `lost` (`state_lost_at`,
 * `run.lost`). One conditional UPDATE per run, so several hub processes may sweep at once.
 */
export async function sweepLeases(hub: Hub): Promise<number> {
  const now = hub.now();
  const expired = await hub.db
    .selectFrom('runs')
    .selectAll()
    .where('state', 'in', ['running', 'awaiting_input'])
    .where('lease_expires_at', '<', now)
    .limit(500)
    .execute();
  let lost = 0;
  for (const run of expired) {
    const wake = await hub.db.transaction().execute(async (trx) => {
      const res = await trx
        .updateTable('runs')
        .set({ state: 'lost', state_lost_at: now, current_pid: null, updated_at: now })
        .where('run_id', '=', run.run_id)
        .where('state', '=', run.state)
        .where('lease_epoch', '=', run.lease_epoch)
        .where('lease_expires_at', '<', now)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) return null;
      lost++;
      await cancelOpenReviews(trx, run.run_id, now);
      await addHistory(trx, hub, run, 'lost', {
        type: 'run.lost',
        phase: run.current_phase,
        error: 'the lease expired: its daemon stopped renewing it',
        actor: systemActor,
      });
      return notifyParent(trx, hub, { ...run, state: 'lost' }, 'lost');
    });
    if (wake) hub.tunnel.wake(wake);
  }
  return lost;
}
