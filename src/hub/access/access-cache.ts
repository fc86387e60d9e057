import type { KyselyPlugin, RootOperationNode } from 'kysely';
import type { OrgsTable, RealmsTable } from '../../db/schema.js';
import { clearOnWrite, type WatchedTables, writesTo } from '../../db/watch-writes.js';
import type { OrgRole, RealmRole } from '../../shared/permissions.js';
import type { Actor } from './actor.js';

/**
 * What every authenticated request asks before its own query: who holds this token, what is the
 * realm (and its org), which role the user has there. Answers are kept for at most `ttlMs`.
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
  token(hash: string): Actor | undefined;
  putToken(hash: string, actor: Actor): void;
  realm(realmId: string): (RealmsTable & { org: OrgsTable }) | undefined;
  putRealm(realm: RealmsTable & { org: OrgsTable }): void;
  realmRole(userId: string, realmId: string): RealmRole | null | undefined;
  putRealmRole(userId: string, realmId: string, role: RealmRole | null): void;
  orgRole(userId: string, orgId: string): OrgRole | null | undefined;
  putOrgRole(userId: string, orgId: string, role: OrgRole | null): void;
  clear(): void;
  /** Entries held, in all maps (expired ones until they are swept). */
  size(): number;
  /** Kysely plugin for the hub's database handle: clears the cache after writes that matter. */
  readonly watch: KyselyPlugin;
}

export const ACCESS_CACHE_MS = 1_000;
/**
 * Entries per map; a full map starts again empty (a bound on memory, not an LRU). Expired entries
 * are also swept, at most once per `ttlMs` when entries are put, and by a timer `ttlMs` after the
 * last put, so that callers seen once (thousands of daemons opening their tunnels, then idle) are not
 * kept.
 */
const MAX_ENTRIES = 20_000;

/** Runs `fn` once after `ms` without keeping the process alive. */
export type Schedule = (fn: () => void, ms: number) => void;
const unrefTimer: Schedule = (fn, ms) => void setTimeout(fn, ms).unref();

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
 * `clock` is for tests of expiry.
 */
export function createAccessCache(
  ttlMs: number = ACCESS_CACHE_MS,
  clock: () => number = Date.now,
  schedule: Schedule = unrefTimer,
): AccessCache {
  const tokens = new Map<string, { value: Actor; until: number }>();
  const realms = new Map<string, { value: RealmsTable & { org: OrgsTable }; until: number }>();
  const realmRoles = new Map<string, { value: RealmRole | null; until: number }>();
  const orgRoles = new Map<string, { value: OrgRole | null; until: number }>();
  const maps = [tokens, realms, realmRoles, orgRoles];

  function get<T>(map: Map<string, { value: T; until: number }>, key: string): T | undefined {
    const hit = map.get(key);
    if (!hit) return undefined;
    if (hit.until > clock()) return hit.value;
    map.delete(key);
    return undefined;
  }
  let sweepAt = 0;
  let sweepScheduled = false;
  function sweep(now: number): void {
    sweepAt = now + ttlMs;
    for (const m of maps) for (const [k, hit] of m) if (hit.until <= now) m.delete(k);
  }
  // After the last put, entries would otherwise stay until the next one: a timer sweeps them once
  // they have expired, and stops when nothing is left.
  function sweepLater(): void {
    if (sweepScheduled) return;
    sweepScheduled = true;
    schedule(() => {
      sweepScheduled = false;
      sweep(clock());
      if (maps.some((m) => m.size > 0)) sweepLater();
    }, ttlMs);
  }
  function put<T>(map: Map<string, { value: T; until: number }>, key: string, value: T): void {
    const now = clock();
    if (now >= sweepAt) sweep(now);
    if (map.size >= MAX_ENTRIES) map.clear();
    map.set(key, { value, until: now + ttlMs });
    sweepLater();
  }
  const clear = () => {
    for (const m of maps) m.clear();
  };

  return {
    token: (hash) => get(tokens, hash),
    putToken: (hash, actor) => put(tokens, hash, actor),
    realm: (realmId) => get(realms, realmId),
    putRealm: (realm) => put(realms, realm.id, realm),
    realmRole: (userId, realmId) => get(realmRoles, `${userId} ${realmId}`),
    putRealmRole: (userId, realmId, role) => put(realmRoles, `${userId} ${realmId}`, role),
    orgRole: (userId, orgId) => get(orgRoles, `${userId} ${orgId}`),
    putOrgRole: (userId, orgId, role) => put(orgRoles, `${userId} ${orgId}`, role),
    clear,
    size: () => maps.reduce((n, m) => n + m.size, 0),
    watch: clearOnWrite(WATCHED, clear),
  };
}

/** Whether a query writes something that `WATCHED` says can change an access answer. */
export function changesAccess(node: RootOperationNode): boolean {
  return writesTo(node, WATCHED);
}
