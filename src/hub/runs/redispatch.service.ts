import { settleInstalls } from '../catalog/installs.service.js';
import type { Hub } from '../context.js';
import { inTx, Rollback, rolledBack } from '../daemons/commands.js';
import { admitAllWaiting } from './admission.service.js';
import { type DeadlineResult, sweepDeadlines } from './deadlines.service.js';
import { dispatchRun, handOver } from './dispatch.service.js';
import { transition } from './lifecycle.js';
import { withdrawQueueItem } from './queue.repo.js';
import { json, type PendingControl, systemActor } from './run.mapper.js';
import { staleOffers, staleQueued, unstartedAssigned } from './runs.repo.js';
import { leaseMsOf } from './settings.js';

/**
 * The re-dispatch pass (each hub process, every `runRedispatchMs`): runs that dispatch left waiting
 * go back to it, so no run depends on one process staying alive or one daemon coming back.
 *
 * 1. `offered`, nobody claimed the offer within `offerTimeoutMs` (the offered daemons went away or
 *    refused): the queue item is withdrawn and the run is `queued` again, then dispatched afresh.
 * 2. `offered`, the item was claimed but the run never moved to the claimer: handed to the claimer
 *    if it is online, else as in 1.
 * 3. `assigned` to a daemon that never reported `started` before its lease expired (it died after
 *    claiming): `queued` again with a new lease epoch, so a late start from that daemon is refused
 *    (fencing), then dispatched afresh. Not a run with a pending cancel: that one waits for
 *    runs/force_terminate (eligible, its daemon being gone).
 * 4. `queued` for longer than one pass: dispatched (safety net; dispatch is conditional, so racing
 *    runs/new or a daemon connecting is harmless). Runs in concurrency groups: every group with
 *    queued runs, page after page, admits them in queue order while it has free slots
 *    (admission.service.ts).
 * 5. Deadlines: `queue_timeout_ms` and `timeout_ms` (deadlines.service.ts).
 *
 * Every move is conditional and in one transaction, so several processes may run the pass at once:
 * one of them moves a run, the others find it moved. Runs in a workspace wait for their workspace's
 * daemon (no other daemon may take them).
 */

export interface RedispatchResult {
  /** Runs moved back to `queued` (cases 1 to 3). */
  requeued: number;
  /** Claimed items handed to their claimer (case 2). */
  handed: number;
  /** Dispatch attempts on queued runs (case 4, and after each requeue). */
  dispatched: number;
  /** Waiting runs of concurrency groups that took a free slot (case 4). */
  admitted: number;
  /** Case 5. */
  deadlines: DeadlineResult;
}

const BATCH = 200;
/** Queued runs may have no eligible daemon for a long time: look at a few per pass. */
const QUEUED_BATCH = 50;

export async function redispatchRuns(hub: Hub): Promise<RedispatchResult> {
  const out: RedispatchResult = {
    requeued: 0,
    handed: 0,
    dispatched: 0,
    admitted: 0,
    deadlines: { queue_timeouts: 0, run_timeouts: 0, terminated: 0 },
  };
  const now = hub.now();
  const leaseMs = await leaseMsOf(hub);
  const requeued = async (runId: string) => {
    out.requeued++;
    await dispatchRun(hub, runId);
    out.dispatched++;
  };

  // 1 and 2: offers that nobody (or a claimer that went away) turned into a held run.
  for (const r of await staleOffers(hub.db, now - hub.config.offerTimeoutMs, BATCH)) {
    if (r.item_status === 'claimed' && r.claimer_status === 'online' && r.claimed_by) {
      const claimer = r.claimed_by;
      if (await inTx(hub, (tx) => handOver(tx, r.item_id, claimer, leaseMs))) out.handed++;
      continue;
    }
    const error =
      r.item_status === 'offered'
        ? `no daemon claimed the offer within ${hub.config.offerTimeoutMs} ms; offered again`
        : `daemon ${r.claimed_by} claimed the offer but went away before taking the run; offered again`;
    const moved = await inTx(hub, async (tx) => {
      // A claim won meanwhile (or another process withdrew it): nothing to do.
      if (!(await withdrawQueueItem(tx.db, r.item_id, r.item_status as 'offered' | 'claimed'))) return false;
      const back = await transition(tx, r, 'queued', {
        set: { queue_item_id: null },
        guard: (q) => q.where('queue_item_id', '=', r.item_id),
        history: { error, actor: systemActor },
      });
      if (!back) throw new Rollback();
      return true;
    }).catch(rolledBack);
    if (moved) await requeued(r.run_id);
  }

  // 3: assigned, never started, lease expired.
  for (const r of await unstartedAssigned(hub.db, now, BATCH)) {
    // Someone asked to cancel it: it must not start elsewhere (runs/force_terminate ends it).
    if (json<PendingControl>(r.pending_control)?.type === 'cancel') continue;
    const moved = await inTx(hub, async (tx) => {
      const back = await transition(tx, r, 'queued', {
        set: {
          daemon_id: null,
          queue_item_id: null,
          lease_epoch: r.lease_epoch + 1,
          lease_expires_at: hub.now(),
          current_pid: null,
        },
        guard: (q) => q.where('lease_expires_at', '<', now),
        history: {
          error: `daemon ${r.daemon_id} took the run but did not start it before its lease expired; offered again`,
          actor: systemActor,
        },
      });
      if (back && r.queue_item_id) await withdrawQueueItem(tx.db, r.queue_item_id);
      return back;
    });
    if (moved) await requeued(r.run_id);
  }

  // 4: queued runs that no dispatch picked up (the process that should have died first, say), in
  // realms where some daemon is online. Installs acked to another process are settled first.
  await settleInstalls(hub);
  for (const r of await staleQueued(hub.db, now - hub.config.runRedispatchMs, QUEUED_BATCH)) {
    await dispatchRun(hub, r.run_id);
    out.dispatched++;
  }
  out.admitted = await admitAllWaiting(hub);

  // 5: deadlines.
  out.deadlines = await sweepDeadlines(hub);
  return out;
}
