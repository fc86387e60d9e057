import type { Kysely, KyselyPlugin } from 'kysely';
import type { DB } from '../../db/index.js';
import type { TeamVersionsTable } from '../../db/schema.js';
import { clearOnWrite, keptAnswers } from '../../db/watch-writes.js';
import type { ExecuteRunBody, RunAgentManifest } from '../../shared/protocol.js';
import { agentManifests, definitionOfVersion, findTeamVersion } from './catalog.repo.js';

/**
 * The catalog reads on a run's way to its daemon, kept for at most `ttlMs`: every `runs/new` finds
 * its team version by name, and every claim builds `runs/execute` from the version's definition and
 * its agents' manifests. Registrations are rare beside runs.
 *
 * Invalidation sits beside the cache, as for the access cache: the hub's database handle carries
 * `watch`, which clears it after any write to agents or team versions, so a registration, a forced
 * re-registration or a removal made through this process applies to its next run; one made through
 * another hub process, within `ttlMs` (one second). A read that began before a clear does not keep
 * its answer (a generation count), so a write is never shadowed by a read that raced it.
 *
 * Reads on a miss go through `db`, the caller's handle or transaction. With `renewThrough` (the hub's
 * own handle), an answer asked for past half its time is answered and read again in the background
 * through that handle, so that a team in use does not make a run wait for these reads once a second.
 * Values are shared between callers and frozen: nothing may change them.
 */
export interface CatalogCache {
  /** The team version `name` (newest) or `name@version` in an org, or null. */
  teamVersion(
    db: Kysely<DB>,
    orgId: string,
    name: string,
    version: string | null,
  ): Promise<TeamVersionsTable | null>;
  /** The phases a run of this team version or agent executes (throws when not in the org). */
  definition(
    db: Kysely<DB>,
    orgId: string,
    of: { team_version_id: string | null; agent_id: string | null },
  ): Promise<ExecuteRunBody['team']>;
  /** The manifests of these agents of the org, by id (others are left out). */
  manifests(
    db: Kysely<DB>,
    orgId: string,
    agentIds: readonly string[],
  ): Promise<Record<string, RunAgentManifest>>;
  clear(): void;
  /** Entries held. */
  size(): number;
  readonly watch: KyselyPlugin;
}

export const CATALOG_CACHE_MS = 1_000;
/** Entries kept; a full cache starts again empty (a bound on memory, not an LRU). */
const MAX_ENTRIES = 10_000;

export function createCatalogCache(
  ttlMs: number = CATALOG_CACHE_MS,
  clock: () => number = Date.now,
  renewThrough?: () => Kysely<DB>,
): CatalogCache {
  const kept = keptAnswers(ttlMs, clock, MAX_ENTRIES);
  // Values are shared between callers: frozen, so that none can change them.
  const cached = <T>(key: string, db: Kysely<DB>, read: (db: Kysely<DB>) => Promise<T>) =>
    kept.get(
      key,
      async () => deepFreeze(await read(db)),
      renewThrough && (async () => deepFreeze(await read(renewThrough()))),
    );
  // Keys are JSON arrays: no name or id can make two lookups share one.
  return {
    teamVersion: (db, orgId, name, version) =>
      cached(JSON.stringify(['tv', orgId, name, version]), db, (d) =>
        findTeamVersion(d, orgId, name, version),
      ),
    definition: (db, orgId, of) =>
      cached(JSON.stringify(['def', orgId, of.team_version_id, of.agent_id]), db, (d) =>
        definitionOfVersion(d, orgId, of),
      ),
    manifests: (db, orgId, ids) => {
      const sorted = [...ids].sort();
      return cached(JSON.stringify(['agents', orgId, sorted]), db, (d) => agentManifests(d, orgId, sorted));
    },
    clear: kept.clear,
    size: kept.size,
    watch: clearOnWrite({ agents: null, team_versions: null }, kept.clear),
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
