/**
 * Queue items this process saw claimed (its own winning claims), so that the other daemons' claims
 * of the same offer are answered `claimed: false` without a transaction: an offer goes to up to three
 * daemons, and two of them lose.
 *
 * Exact, not a cache with a lifetime: an item once claimed is never offered again (it can only be
 * withdrawn, and a withdrawn item also answers `claimed: false`). Only a daemon of the item's realm is
 * answered from here (another realm's gets the database's `not_found`), and never the winner itself
 * (a retried claim is answered with its run). The oldest entries are forgotten past `max`; claims of a
 * forgotten item, or of one claimed through another hub process, go to the database as before.
 */
export interface ClaimedItems {
  /** `daemon` won `itemId` (called once the claim has committed). */
  won(itemId: string, daemon: { id: string; realm_id: string }): void;
  /** Whether `daemon` has lost `itemId` for certain: another daemon of its realm holds it. */
  lostBy(itemId: string, daemon: { id: string; realm_id: string }): boolean;
}

export function createClaimedItems(max = 10_000): ClaimedItems {
  const items = new Map<string, { daemonId: string; realmId: string }>();
  return {
    won(itemId, daemon) {
      items.set(itemId, { daemonId: daemon.id, realmId: daemon.realm_id });
      if (items.size > max) items.delete(items.keys().next().value!);
    },
    lostBy(itemId, daemon) {
      const holder = items.get(itemId);
      return holder !== undefined && holder.realmId === daemon.realm_id && holder.daemonId !== daemon.id;
    },
  };
}
