import { forbidden, notFound } from '../../shared/errors.js';
import type { DaemonActor } from '../access/actor.js';
import type { Hub } from '../context.js';
import { enqueueCommand } from './outbox.repo.js';

/**
 * The work queue: an item is offered (`offer_job`) to every connected daemon of its realm and
 * the first `queue/claim` wins. The runs feature builds on it.
 */

/** Body of the `offer_job` command (spec: POST /v1/offer_job on the daemon). */
export interface OfferJobBody {
  queue_item_id: string;
  daemon_id: string;
  kind: string;
  payload: unknown;
  tx_id?: string;
}

/**
 * Creates a queue item and offers it to every online daemon of the realm (one `offer_job` command
 * each, written in the same transaction). Daemons online on another hub process get it through
 * that process's outbox scan.
 */
export async function offerItem(
  hub: Hub,
  realmId: string,
  kind: string,
  payload: unknown,
): Promise<{ queue_item_id: string; offers: { daemon_id: string; tx_id: string }[] }> {
  const queueItemId = hub.newId();
  const offers = await hub.db.transaction().execute(async (trx) => {
    await trx
      .insertInto('queue_items')
      .values({
        id: queueItemId,
        realm_id: realmId,
        kind,
        payload: JSON.stringify(payload ?? null),
        status: 'offered',
        claimed_by: null,
        claimed_at: null,
        created_at: hub.now(),
      })
      .execute();
    const daemons = await trx
      .selectFrom('daemons')
      .select('id')
      .where('realm_id', '=', realmId)
      .where('status', '=', 'online')
      .where('revoked_at', 'is', null)
      .orderBy('id')
      .execute();
    const out: { daemon_id: string; tx_id: string }[] = [];
    for (const d of daemons) {
      const body: OfferJobBody = { queue_item_id: queueItemId, daemon_id: d.id, kind, payload };
      out.push({ daemon_id: d.id, tx_id: await enqueueCommand(trx, hub, d.id, 'offer_job', body) });
    }
    return out;
  });
  for (const o of offers) hub.tunnel.wake(o.daemon_id);
  return { queue_item_id: queueItemId, offers };
}

/**
 * A daemon claims a queue item for itself. Atomic on both databases: one conditional UPDATE, and
 * the affected row count says who won. A daemon that already holds the item gets `claimed: true`
 * again (a retried claim must not lose the work).
 */
export async function claimItem(
  hub: Hub,
  actor: DaemonActor,
  input: { queue_item_id: string; daemon_id: string },
): Promise<{ claimed: boolean; queue_item_id: string }> {
  if (input.daemon_id !== actor.daemon.id) throw forbidden('a daemon may only claim for itself');
  const res = await hub.db
    .updateTable('queue_items')
    .set({ status: 'claimed', claimed_by: actor.daemon.id, claimed_at: hub.now() })
    .where('id', '=', input.queue_item_id)
    .where('realm_id', '=', actor.daemon.realm_id)
    .where('status', '=', 'offered')
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 1) return { claimed: true, queue_item_id: input.queue_item_id };
  // Lost, unknown, another realm's, or already ours: only now read the item to say which.
  const item = await hub.db
    .selectFrom('queue_items')
    .select(['id', 'realm_id', 'status', 'claimed_by'])
    .where('id', '=', input.queue_item_id)
    .executeTakeFirst();
  if (!item || item.realm_id !== actor.daemon.realm_id) throw notFound('queue item');
  // A withdrawn item (src/hub/runs/runs.redispatch.ts) belongs to nobody, its old claimer included.
  return {
    claimed: item.status === 'claimed' && item.claimed_by === actor.daemon.id,
    queue_item_id: item.id,
  };
}
