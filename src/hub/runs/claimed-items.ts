import type { RunsTable } from '../../db/schema.js';

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
 *
 * The claims of one offer arrive together (it went to up to three daemons at once), so this process
 * decides the claims of an item one at a time (`oneAtATime`): a claim that arrives while another
 * claim of the same item is being decided waits for it, and once that one has won, is answered from
 * here. Otherwise every claim of the offer would reach the database at once, and the losers would wait
 * there for the winner's row locks, each in a transaction of its own. The database still decides
 * every claim that reaches it; this only spares it the ones already decided.
 *
 * It also keeps the runs this process offered lately, as written, by their items (`offered`): the
 * first claim of such an item can be made ahead of its answer (dispatch.service.ts `claimAhead`),
 * with the run's hand-over built from that row. An offer another hub process wrote comes to the
 * process holding its daemon with its run in the notice (src/hub/cluster/bus.ts `outboxNotice`),
 * kept here as it is passed on; one whose run did not fit the notice is claimed as any other (a
 * read of the run as the offer went out cost as much as the round trip it saved). The database
 * checks that the row is still what the claim found, so an entry that is out of date costs a refused
 * transaction, never a wrong hand-over. An entry is forgotten as it is taken, and the oldest past
 * `maxOffered`; a run whose row is larger than `MAX_OFFERED_CHARS` (its inputs, mostly) is not kept,
 * so that the entries weigh a few megabytes at most.
 *
 * In the same way it keeps the runs this process handed over to a daemon or applied a report of, as
 * written (`held`): the next report of such a run, which comes through this process with the daemon's
 * tunnel, is applied from that row instead of a read of it (runs/daemon.service.ts). Its write checks
 * every column a report reads (runs.repo.ts `mustMoveRow`), so a row another process changed since
 * (a cancel, a lease lost) refuses the transaction, and the report is applied again from a read.
 */
export interface ClaimedItems {
  /** `daemon` won `itemId` (called once the claim has committed). */
  won(itemId: string, daemon: { id: string; realm_id: string }): void;
  /** Whether `daemon` has lost `itemId` for certain: another daemon of its realm holds it. */
  lostBy(itemId: string, daemon: { id: string; realm_id: string }): boolean;
  /** Runs `decide` once every claim of `itemId` that came before it through this process is decided. */
  oneAtATime<T>(itemId: string, decide: () => Promise<T>): Promise<T>;
  /** This process offered `run` (`offered`, with its queue item), once that has committed. */
  offered(run: RunsTable): void;
  /** The run offered with `itemId` through this process, if kept; forgotten as it is taken. */
  takeOffered(itemId: string): RunsTable | undefined;
  /** This process wrote `run` (a daemon holds it), once that has committed. */
  held(run: RunsTable): void;
  /** The run as this process last wrote it, if kept; forgotten as it is taken. */
  takeHeld(runId: string): RunsTable | undefined;
}

/** The largest row kept as offered, in characters of its text columns (about a notice's size). */
const MAX_OFFERED_CHARS = 8_000;

/** The characters of a row's text columns. */
function charsOf(run: RunsTable): number {
  let n = 0;
  for (const v of Object.values(run)) if (typeof v === 'string') n += v.length;
  return n;
}

export interface ClaimedItemsOptions {
  /** Claimed items remembered at most. */
  max?: number;
  /** Offered runs kept at most. */
  maxOffered?: number;
  /** Held runs kept at most. */
  maxHeld?: number;
}

export function createClaimedItems(opts: ClaimedItemsOptions = {}): ClaimedItems {
  const { max = 10_000, maxOffered = 1_000, maxHeld = 2_000 } = opts;
  const items = new Map<string, { daemonId: string; realmId: string }>();
  const offered = new Map<string, RunsTable>();
  const held = new Map<string, RunsTable>();
  /** Keeps `run` under `key`, as the newest entry, unless it is too large; the oldest past `most` go. */
  const keep = (kept: Map<string, RunsTable>, key: string, run: RunsTable, most: number) => {
    kept.delete(key);
    if (charsOf(run) > MAX_OFFERED_CHARS) return;
    kept.set(key, run);
    if (kept.size > most) kept.delete(kept.keys().next().value!);
  };
  const take = (kept: Map<string, RunsTable>, key: string) => {
    const run = kept.get(key);
    kept.delete(key);
    return run;
  };
  /** Per item being decided: the end of its last claim's decision. */
  const deciding = new Map<string, Promise<unknown>>();
  return {
    won(itemId, daemon) {
      items.set(itemId, { daemonId: daemon.id, realmId: daemon.realm_id });
      if (items.size > max) items.delete(items.keys().next().value!);
    },
    lostBy(itemId, daemon) {
      const holder = items.get(itemId);
      return holder !== undefined && holder.realmId === daemon.realm_id && holder.daemonId !== daemon.id;
    },
    oneAtATime(itemId, decide) {
      const before = deciding.get(itemId);
      const mine = before ? before.then(decide, decide) : decide();
      const settled = mine.then(
        () => {},
        () => {},
      );
      deciding.set(itemId, settled);
      void settled.then(() => {
        if (deciding.get(itemId) === settled) deciding.delete(itemId);
      });
      return mine;
    },
    offered: (run) => keep(offered, run.queue_item_id!, run, maxOffered),
    takeOffered: (itemId) => take(offered, itemId),
    held: (run) => keep(held, run.run_id, run, maxHeld),
    takeHeld: (runId) => take(held, runId),
  };
}
