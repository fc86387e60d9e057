import type { KyselyPlugin, RootOperationNode } from 'kysely';
import type { OrgsTable, RealmsTable } from '../../db/schema.js';
import {
  clearOnWrite,
  keptAnswers,
  type Schedule,
  type WatchedTables,
  writesTo,
} from '../../db/watch-writes.js';
import type { OrgRole, RealmRole } from '../../shared/permissions.js';
import type { Actor } from './actor.js';

/** A realm with its organization, as every realm-scoped operation loads it. */
export type RealmWithOrg = RealmsTable & { org: OrgsTable };

/**
 * What every authenticated request asks before its own query: who holds this token, what is the
 * realm (and its org), which role the user has there. Each method answers what it kept, or what
 * `load` reads (and keeps; a load that throws keeps nothing, so an unknown token or realm is read
 * each time). An answer is kept for at most `ttlMs`; one asked for past half its time is read again
 * in the background, so that a token or realm in use does not make a request wait for its reads
 * once a second. `load` must read through the hub's own handle, not a transaction's.
 *
 * Invalidation sits beside the cache: the hub's database handle carries `watch`, which clears the
 * whole cache after any write that can change an answer (a token or realm token revoked, a member
 * added, removed or given another role, a group changed, an org or realm deleted, a site
 * administrator named). A change made through this process is therefore seen by its next request;
 * one made through another hub process, within `ttlMs` (one second: a revoked token, a removed member
 * or a lowered role is refused by every process within a second). Such changes are rare, so clearing
 * everything is cheaper than tracking which entries they touch.
 */
export interface AccessCache {
  token(hash: string, load: () => Promise<Actor>): Promise<Actor>;
  realm(realmId: string, load: () => Promise<RealmWithOrg>): Promise<RealmWithOrg>;
  realmRole(
    userId: string,
    realmId: string,
    load: () => Promise<RealmRole | null>,
  ): Promise<RealmRole | null>;
  orgRole(userId: string, orgId: string, load: () => Promise<OrgRole | null>): Promise<OrgRole | null>;
  clear(): void;
  /** Entries held (expired ones until they are swept). */
  size(): number;
  /** Kysely plugin for the hub's database handle: clears the cache after writes that matter. */
  readonly watch: KyselyPlugin;
}

export const ACCESS_CACHE_MS = 1_000;
/** Entries kept; a full cache starts again empty (a bound on memory, not an LRU). */
const MAX_ENTRIES = 20_000;

/**
 * Tables whose writes can change an answer (a token's `last_used_at` or a daemon's `last_seen_at`
 * change nothing).
 */
const WATCHED: WatchedTables = {
  tokens: ['revoked_at', 'expires_at', 'token_hash', 'user_id'],
  daemons: ['revoked_at', 'token_hash', 'realm_id'],
  users: null,
  orgs: null,
  realms: null,
  org_members: null,
  realm_members: null,
  groups: null,
  group_members: null,
};

/**
 * Entries expire by the wall clock (not the hub's injectable clock): the bound is real time.
 * `clock` and `schedule` are for tests of expiry and sweeping.
 */
export function createAccessCache(
  ttlMs: number = ACCESS_CACHE_MS,
  clock: () => number = Date.now,
  schedule?: Schedule,
): AccessCache {
  const kept = keptAnswers(ttlMs, clock, MAX_ENTRIES, schedule);
  // Keys are a kind and ids (hashes, uuids), which hold no space.
  return {
    token: (hash, load) => kept.get(`t ${hash}`, load, load),
    realm: (realmId, load) => kept.get(`r ${realmId}`, load, load),
    realmRole: (userId, realmId, load) => kept.get(`rr ${userId} ${realmId}`, load, load),
    orgRole: (userId, orgId, load) => kept.get(`or ${userId} ${orgId}`, load, load),
    clear: kept.clear,
    size: kept.size,
    watch: clearOnWrite(WATCHED, kept.clear),
  };
}

/** Whether a query writes something that `WATCHED` says can change an access answer. */
export function changesAccess(node: RootOperationNode): boolean {
  return writesTo(node, WATCHED);
}
