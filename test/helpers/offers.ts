import type { Hub } from '../../src/hub/context.js';
import { inTx } from '../../src/hub/daemons/commands.js';
import { onlineDaemonIds } from '../../src/hub/daemons/daemons.repo.js';
import type { OfferJobBody } from '../../src/hub/runs/dispatch.service.js';
import { newQueueItem, RUN_ITEM_KIND } from '../../src/hub/runs/queue.repo.js';

/**
 * A queue item offered to every online daemon of a realm, in random order, with no run behind it:
 * for tests (and benchmarks) of the claim race alone. Runs are offered the same way by
 * dispatch.service.ts (to the least loaded daemons, ties in random order).
 */
export async function offerItem(
  hub: Hub,
  realmId: string,
  payload: unknown,
): Promise<{ queue_item_id: string; offers: { daemon_id: string; tx_id: string }[] }> {
  const id = hub.newId();
  const offers = await inTx(hub, async (tx) => {
    await newQueueItem(tx.db, { id, realm_id: realmId, payload, created_at: hub.now() }).execute();
    const out: { daemon_id: string; tx_id: string }[] = [];
    const daemons = await onlineDaemonIds(tx.db, realmId);
    const shuffled = daemons
      .map((d) => ({ d, k: Math.random() }))
      .sort((a, b) => a.k - b.k)
      .map((x) => x.d);
    for (const d of shuffled) {
      const body: OfferJobBody = { queue_item_id: id, daemon_id: d, kind: RUN_ITEM_KIND, payload };
      out.push({ daemon_id: d, tx_id: await tx.command(d, 'offer_job', body) });
    }
    return out;
  });
  return { queue_item_id: id, offers };
}
