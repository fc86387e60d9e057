import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import type { Hub, Tx } from '../context.js';
import { inTx } from '../daemons/commands.js';
import { daemonOnline } from '../daemons/daemons.repo.js';
import { requestCancel, terminateIn } from './control.service.js';
import { transition } from './lifecycle.js';
import { withdrawQueueItem } from './queue.repo.js';
import { forceTerminateOf, json, type PendingControl, systemActor } from './run.mapper.js';
import { LIVE, type RunGuard } from './runs.repo.js';

/**
 * Run deadlines (CONTRACT.md §11), run by the re-dispatch pass of every hub process:
 * - `queue_timeout_ms`: a run still `queued` at its `queue_deadline_at` fails with `queue_timeout`;
 * - `timeout_ms`: a run not ended at its `run_deadline_at` is cancelled with `run_timeout` (through
 *   its daemon when one holds it), and terminated when that cancel made it eligible for
 *   force-terminate (its daemon went away, its lease expired, or the cancel waited over 60 s); the
 *   lease sweeper does the same for a run past its deadline whose lease expired.
 * Each move is a conditional UPDATE, so with several processes exactly one of them makes it.
 */

export const QUEUE_TIMEOUT = 'queue_timeout';
export const RUN_TIMEOUT = 'run_timeout';

const BATCH = 200;

function pastQueueDeadline(db: Kysely<DB>, now: number) {
  return db
    .selectFrom('runs')
    .selectAll()
    .where('state', '=', 'queued')
    .where('queue_deadline_at', '<=', now)
    .limit(BATCH)
    .execute();
}

function pastRunDeadline(db: Kysely<DB>, now: number) {
  return db
    .selectFrom('runs')
    .selectAll()
    .where('state', 'in', LIVE)
    .where('run_deadline_at', '<=', now)
    .limit(BATCH)
    .execute();
}

/** Whether the run is past its run deadline (`timeout_ms`). */
export const pastItsDeadline = (r: Pick<RunsTable, 'run_deadline_at'>, now: number) =>
  r.run_deadline_at !== null && r.run_deadline_at <= now;

/**
 * Ends a run past its run deadline whose daemon cannot confirm the cancel (gone, its lease
 * expired, or silent): `terminated` with `run_timeout`, an open offer withdrawn. The lease sweeper
 * calls it too, with its guard, so a timed-out run whose lease runs out is not merely `lost`.
 * False when the run moved meanwhile.
 */
export async function terminateTimedOut(tx: Tx, r: RunsTable, guard?: RunGuard): Promise<boolean> {
  const ok = await terminateIn(tx, r, { actor: systemActor, user_id: null }, RUN_TIMEOUT, {
    error: RUN_TIMEOUT,
    ...(guard ? { guard } : {}),
  });
  if (ok && r.queue_item_id) await withdrawQueueItem(tx.db, r.queue_item_id, 'offered');
  return ok;
}

export interface DeadlineResult {
  queue_timeouts: number;
  run_timeouts: number;
  terminated: number;
}

export async function sweepDeadlines(hub: Hub): Promise<DeadlineResult> {
  const out: DeadlineResult = { queue_timeouts: 0, run_timeouts: 0, terminated: 0 };
  const now = hub.now();
  for (const r of await pastQueueDeadline(hub.db, now)) {
    const moved = await inTx(hub, (tx) =>
      transition(tx, r, 'failed', {
        set: { error: QUEUE_TIMEOUT, waiting_for: null },
        history: { error: QUEUE_TIMEOUT, actor: systemActor },
      }),
    );
    if (moved) out.queue_timeouts++;
  }
  for (const r of await pastRunDeadline(hub.db, now)) {
    if (json<PendingControl>(r.pending_control)?.type === 'cancel') {
      // Cancelled already: terminated once its daemon cannot confirm.
      if (!forceTerminateOf(r, await daemonOnline(hub.db, r.daemon_id), now).eligible) continue;
      if (await inTx(hub, (tx) => terminateTimedOut(tx, r))) out.terminated++;
      continue;
    }
    try {
      await requestCancel(hub, r, { actor: systemActor, user_id: null }, RUN_TIMEOUT, RUN_TIMEOUT);
      out.run_timeouts++;
    } catch (err) {
      // Another process, the daemon or a person moved it first: the next pass looks again.
      hub.log.debug({ err, run_id: r.run_id }, 'run deadline: the run moved meanwhile');
    }
  }
  return out;
}
