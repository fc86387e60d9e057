import type { Hub } from '../context.js';
import { dispatchRun, runClaimed } from './runs.dispatch.js';
import { addHistory, json, type PendingControl, systemActor } from './runs.repo.js';

/**
 * The re-dispatch pass (each hub process, every `runRedispatchMs`): runs that dispatch left waiting
 * go back to it, so no run depends on one process staying alive or one daemon coming back.
 *
 * 1. `offered`, nobody claimed the offer within `offerTimeoutMs` (the offered daemons went away or
 *    refused): the queue item is withdrawn and the run is `queued` again, then dispatched afresh.
 * 2. `offered`, the item was claimed but the run never moved to the claimer (the hub process that
 *    took the claim died in between): handed to the claimer if it is online, else as in 1.
 * 3. `offered` and held by a daemon that never reported `started` before its lease expired (it died
 *    after claiming): `queued` again with a new lease epoch, so a late start from that daemon is
 *    refused (fencing), then dispatched afresh. Not a run with a pending cancel: that one waits for
 *    runs/force_terminate (eligible, its daemon being gone).
 * 4. `queued` with no daemon for longer than one pass: dispatched (safety net; dispatch is
 *    conditional, so racing runs/new or a daemon connecting is harmless).
 *
 * Every move is a conditional UPDATE in one transaction, so several processes may run the pass at
 * once: one of them moves a run, the others find it moved. Runs in a workspace wait for their
 * workspace's daemon (no other daemon may take them) and are not touched here.
 */

export interface RedispatchResult {
  /** Runs moved back to `queued` (cases 1 to 3). */
  requeued: number;
  /** Claimed items handed to their claimer (case 2). */
  handed: number;
  /** Dispatch attempts on queued runs (case 4, and after each requeue). */
  dispatched: number;
}

const BATCH = 200;
/** Queued runs may have no eligible daemon for a long time: look at a few per pass. */
const QUEUED_BATCH = 50;

export async function redispatchRuns(hub: Hub): Promise<RedispatchResult> {
  const out: RedispatchResult = { requeued: 0, handed: 0, dispatched: 0 };
  const now = hub.now();
  const offerCutoff = now - hub.config.offerTimeoutMs;

  // 1 and 2: offers that nobody (or a claimer that went away) turned into a held run.
  const waiting = await hub.db
    .selectFrom('runs')
    .innerJoin('queue_items as q', 'q.id', 'runs.queue_item_id')
    .leftJoin('daemons as d', 'd.id', 'q.claimed_by')
    .select([
      'runs.run_id',
      'runs.lease_epoch',
      'runs.org_id',
      'runs.realm_id',
      'runs.team_id',
      'runs.notify_channels',
      'runs.current_phase',
      'q.id as item_id',
      'q.status as item_status',
      'q.claimed_by',
      'd.status as claimer_status',
    ])
    .where('runs.state', '=', 'offered')
    .where('runs.daemon_id', 'is', null)
    .where((eb) =>
      eb.or([
        eb.and([eb('q.status', '=', 'offered'), eb('q.created_at', '<', offerCutoff)]),
        eb.and([eb('q.status', '=', 'claimed'), eb('q.claimed_at', '<', offerCutoff)]),
      ]),
    )
    .orderBy('runs.run_id')
    .limit(BATCH)
    .execute();
  for (const r of waiting) {
    if (r.item_status === 'claimed' && r.claimer_status === 'online' && r.claimed_by) {
      if (await runClaimed(hub, r.item_id, r.claimed_by)) out.handed++;
      continue;
    }
    const reason =
      r.item_status === 'offered'
        ? `no daemon claimed the offer within ${hub.config.offerTimeoutMs} ms; offered again`
        : `daemon ${r.claimed_by} claimed the offer but went away before taking the run; offered again`;
    const moved = await hub.db
      .transaction()
      .execute(async (trx) => {
        const at = hub.now();
        const item = await trx
          .updateTable('queue_items')
          .set({ status: 'withdrawn' })
          .where('id', '=', r.item_id)
          .where('status', '=', r.item_status)
          .executeTakeFirst();
        // A claim won meanwhile (or another process withdrew it): nothing to do.
        if (Number(item.numUpdatedRows) !== 1) return false;
        const res = await trx
          .updateTable('runs')
          .set({ state: 'queued', queue_item_id: null, updated_at: at })
          .where('run_id', '=', r.run_id)
          .where('state', '=', 'offered')
          .where('daemon_id', 'is', null)
          .where('queue_item_id', '=', r.item_id)
          .where('lease_epoch', '=', r.lease_epoch)
          .executeTakeFirst();
        if (Number(res.numUpdatedRows) !== 1) throw new Rollback();
        await addHistory(trx, hub, r, 'queued', {
          type: 'run.queued',
          phase: r.current_phase,
          error: reason,
          actor: systemActor,
        });
        return true;
      })
      .catch(rolledBack);
    if (!moved) continue;
    out.requeued++;
    await dispatchRun(hub, r.run_id);
    out.dispatched++;
  }

  // 3: claimed, never started, lease expired.
  const unstarted = await hub.db
    .selectFrom('runs')
    .select([
      'run_id',
      'lease_epoch',
      'daemon_id',
      'queue_item_id',
      'org_id',
      'realm_id',
      'team_id',
      'notify_channels',
      'current_phase',
      'pending_control',
    ])
    .where('state', '=', 'offered')
    .where('daemon_id', 'is not', null)
    .where('lease_expires_at', '<', now)
    .orderBy('run_id')
    .limit(BATCH)
    .execute();
  for (const r of unstarted) {
    // Someone asked to cancel it: it must not start elsewhere (runs/force_terminate ends it).
    if (json<PendingControl>(r.pending_control)?.type === 'cancel') continue;
    const moved = await hub.db.transaction().execute(async (trx) => {
      const at = hub.now();
      const res = await trx
        .updateTable('runs')
        .set({
          state: 'queued',
          daemon_id: null,
          queue_item_id: null,
          lease_epoch: r.lease_epoch + 1,
          lease_expires_at: at,
          current_pid: null,
          updated_at: at,
        })
        .where('run_id', '=', r.run_id)
        .where('state', '=', 'offered')
        .where('daemon_id', '=', r.daemon_id!)
        .where('lease_epoch', '=', r.lease_epoch)
        .where('lease_expires_at', '<', now)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) return false;
      if (r.queue_item_id) {
        await trx
          .updateTable('queue_items')
          .set({ status: 'withdrawn' })
          .where('id', '=', r.queue_item_id)
          .execute();
      }
      await addHistory(trx, hub, r, 'queued', {
        type: 'run.queued',
        phase: r.current_phase,
        error: `daemon ${r.daemon_id} took the run but did not start it before its lease expired; offered again`,
        actor: systemActor,
      });
      return true;
    });
    if (!moved) continue;
    out.requeued++;
    await dispatchRun(hub, r.run_id);
    out.dispatched++;
  }

  // 4: queued runs that no dispatch picked up (the process that should have died first, say), in
  // realms where some daemon is online.
  const queued = await hub.db
    .selectFrom('runs')
    .select('run_id')
    .where('state', '=', 'queued')
    .where('daemon_id', 'is', null)
    .where('updated_at', '<', now - hub.config.runRedispatchMs)
    .where(({ or, eb, exists, selectFrom }) =>
      or([
        eb('workspace_id', 'is not', null),
        exists(
          selectFrom('daemons as d')
            .select('d.id')
            .whereRef('d.realm_id', '=', 'runs.realm_id')
            .where('d.status', '=', 'online')
            .where('d.revoked_at', 'is', null),
        ),
      ]),
    )
    .orderBy('updated_at')
    .limit(QUEUED_BATCH)
    .execute();
  for (const r of queued) {
    await dispatchRun(hub, r.run_id);
    out.dispatched++;
  }
  return out;
}

/** Thrown inside a transaction to roll it back when a second conditional write finds nothing. */
class Rollback extends Error {}

function rolledBack(err: unknown): false {
  if (err instanceof Rollback) return false;
  throw err;
}
