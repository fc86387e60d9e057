import type { RunsTable } from '../../db/schema.js';
import { isTerminal } from '../../shared/api/run-states.js';
import type { Actor as HistoryActor } from '../../shared/api/runs.js';
import { AppError, conflict } from '../../shared/errors.js';
import type { Actor } from '../access/actor.js';
import type { Hub, Tx } from '../context.js';
import { daemonReachable } from '../daemons/await-command.js';
import { inTx } from '../daemons/commands.js';
import { rejoinGroups } from './concurrency.js';
import { dispatchRun } from './dispatch.service.js';
import { addHistory } from './history.repo.js';
import { mustTransition, RUN_CHANGED, transition } from './lifecycle.js';
import { withdrawQueueItem } from './queue.repo.js';
import { managedRun, showRunNow } from './read.service.js';
import { forceTerminateOf, json, type PendingControl, userActor } from './run.mapper.js';
import { liveChildren, type RunGuard, updateRunRow } from './runs.repo.js';

/** People acting on runs: cancel, resume and force-terminate. */

/** The daemon command of a cancel: its ack clears the run's pending control (daemon.service.ts). */
export const CANCEL_COMMAND = 'runs/cancel';

/** `runs/cancel`: at once when no daemon holds the run, else through the daemon (pending_control). */
export async function cancelRun(hub: Hub, actor: Actor | null, runId: string, reason: string | null) {
  const { run, user } = await managedRun(hub, actor, runId, 'runs.manage');
  await requestCancel(hub, run, { actor: userActor(user.user), user_id: user.user.id }, reason);
  // Children still running are cancelled too.
  for (const c of await liveChildren(hub.db, run.run_id)) {
    try {
      await cancelRun(hub, actor, c.run_id, reason);
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'conflict')) throw err;
    }
  }
  return showRunNow(hub, run.run_id);
}

/**
 * Cancels one run for an authorised requester (a person, or a schedule replacing its previous run):
 * at once when no daemon holds it, else through its daemon (pending_control).
 */
export async function requestCancel(
  hub: Hub,
  run: RunsTable,
  by: { actor: HistoryActor; user_id: string | null },
  reason: string | null,
  /** The run's `error` once cancelled (a deadline: `run_timeout`). */
  error: string | null = null,
): Promise<void> {
  const who = by.actor;
  if (isTerminal(run.state)) throw conflict(`the run is already ${run.state}`, { state: run.state });
  if (json<PendingControl>(run.pending_control)?.type === 'cancel') return;
  const requested = { type: 'run.cancel_requested', phase: run.current_phase, actor: who, error: reason };
  await inTx(hub, async (tx) => {
    if (run.daemon_id === null) {
      // Nobody holds it: cancelled now. An open offer is withdrawn so a late claim wins nothing.
      if (run.queue_item_id) await withdrawQueueItem(tx.db, run.queue_item_id, 'offered');
      await addHistory(tx.db, hub, run, run.state, requested);
      await mustTransition(tx, run, 'cancelled', {
        set: { pending_control: null, ...(error ? { error } : {}) },
        history: { error: reason },
      });
      return;
    }
    const txId = await tx.command(run.daemon_id, CANCEL_COMMAND, {
      run_id: run.run_id,
      lease_epoch: run.lease_epoch,
      reason,
    });
    const control: PendingControl = {
      type: 'cancel',
      tx_id: txId,
      requested_by: by.user_id,
      requested_at: hub.now(),
    };
    const set = {
      pending_control: JSON.stringify(control),
      control_tx_id: txId,
      updated_at: hub.now(),
      ...(error ? { error } : {}),
    };
    // One cancel at a time: two requests at once (two hub processes) send one command.
    if (!(await updateRunRow(tx.db, run, set, (q) => q.where('control_tx_id', 'is', null)))) {
      throw conflict(RUN_CHANGED);
    }
    await addHistory(tx.db, hub, run, run.state, requested);
  });
}

/** `runs/resume`: a failed, cancelled or lost run goes back to `queued` and continues from its current phase. */
export async function resumeRun(hub: Hub, actor: Actor | null, runId: string) {
  const { run, user } = await managedRun(hub, actor, runId, 'runs.manage');
  const control: PendingControl = {
    type: 'resume',
    tx_id: hub.newId(),
    requested_by: user.user.id,
    requested_at: hub.now(),
  };
  await inTx(hub, async (tx) => {
    await mustTransition(tx, run, 'queued', {
      set: {
        daemon_id: null,
        queue_item_id: null,
        error: null,
        completed_at: null,
        // A resumed run's new lines are kept until it ends again and ages (retention.logs_days).
        logs_pruned_at: null,
        current_pid: null,
        pending_control: JSON.stringify(control),
        control_tx_id: null,
        // Its deadlines were the first attempt's.
        queue_deadline_at: null,
        run_deadline_at: null,
        waiting_for: null,
      },
      history: { type: 'run.resume_requested', actor: userActor(user.user) },
    });
    // Back in its concurrency groups: it waits for, and takes, their slots again.
    await rejoinGroups(tx.db, run);
  });
  await dispatchRun(hub, run.run_id);
  return showRunNow(hub, run.run_id);
}

/** `runs/force_terminate`: only when `force_terminate.eligible`; otherwise `conflict` with the blocker. */
export async function forceTerminate(hub: Hub, actor: Actor | null, runId: string, reason: string) {
  const { run, user } = await managedRun(hub, actor, runId, 'runs.terminate');
  // The daemon's status as the database has it now, not as a run view may show it.
  const online = run.daemon_id !== null && (await daemonReachable(hub, run.daemon_id));
  const eligibility = forceTerminateOf(run, online, hub.now());
  if (!eligibility.eligible) {
    throw conflict(`the run cannot be force-terminated: ${eligibility.blocker}`, {
      blocker: eligibility.blocker,
    });
  }
  await inTx(hub, (tx) =>
    terminateIn(tx, run, { user_id: user.user.id, actor: userActor(user.user) }, reason).then((moved) => {
      if (!moved) throw conflict(RUN_CHANGED);
    }),
  );
  return showRunNow(hub, run.run_id);
}

/**
 * Ends a run as `terminated` in the caller's transaction (runs/force_terminate, or the deadlines
 * when a timed-out run's daemon does not confirm the cancel: then with its `error` and `guard`).
 * False when it moved meanwhile.
 */
export async function terminateIn(
  tx: Tx,
  run: RunsTable,
  by: { actor: HistoryActor; user_id: string | null },
  reason: string,
  more: { error?: string; guard?: RunGuard } = {},
): Promise<boolean> {
  // A new epoch fences the old holder: its late reports are refused.
  const moved = await transition(tx, run, 'terminated', {
    set: {
      terminated_at: tx.hub.now(),
      terminated_by_user_id: by.user_id,
      terminated_reason: reason,
      pending_control: null,
      lease_epoch: run.lease_epoch + 1,
      ...(more.error ? { error: more.error } : {}),
    },
    ...(more.guard ? { guard: more.guard } : {}),
    history: { error: reason, actor: by.actor },
  });
  // If its daemon comes back, it stops whatever is left of the run.
  if (moved && run.daemon_id) {
    await tx.command(run.daemon_id, 'runs/cancel', {
      run_id: run.run_id,
      lease_epoch: run.lease_epoch,
      reason: 'terminated',
    });
  }
  return moved;
}
