import type { Kysely, KyselyPlugin } from 'kysely';
import type { DB } from '../../db/index.js';
import { clearOnWrite, keptAnswers } from '../../db/watch-writes.js';
import { daemonOnline } from './daemons.repo.js';

/**
 * Whether a daemon connected to another hub process is online, as a run shown by this process tells
 * it (its `force_terminate` trigger or blocker): every run a realm's event stream sends and every run
 * `runs/list` answers asks, and with several hub processes the daemon's tunnel is mostly on another
 * one. A daemon connected to the asking process is known without this cache (`daemonShownOnline` in
 * await-command.ts); for the others the database's answer is kept for at most `ttlMs`.
 *
 * Invalidation sits beside the cache, as for the access cache: the hub's database handle carries
 * `watch`, which clears it after any write to a daemon's status or removal, so a change made through
 * this process is seen at once; one made through another process (a daemon connecting there, its
 * tunnel dropping), within `ttlMs`. Decisions that must not act on an answer a second old
 * (`runs/force_terminate`, the deadline sweep) read the database.
 */
export interface OnlineCache {
  isOnline(db: Kysely<DB>, daemonId: string): Promise<boolean>;
  clear(): void;
  /** Entries held. */
  size(): number;
  readonly watch: KyselyPlugin;
}

export const ONLINE_CACHE_MS = 1_000;
/** Entries kept; a full cache starts again empty (a bound on memory, not an LRU). */
const MAX_ENTRIES = 20_000;

export function createOnlineCache(
  ttlMs: number = ONLINE_CACHE_MS,
  clock: () => number = Date.now,
): OnlineCache {
  const kept = keptAnswers(ttlMs, clock, MAX_ENTRIES);
  return {
    isOnline: (db, daemonId) => kept.get(daemonId, () => daemonOnline(db, daemonId)),
    clear: kept.clear,
    size: kept.size,
    watch: clearOnWrite({ daemons: ['status', 'revoked_at'] }, kept.clear),
  };
}
