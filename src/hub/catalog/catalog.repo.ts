import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import { allColumns, prepared } from '../../db/prepared.js';
import type { TeamVersionsTable } from '../../db/schema.js';
import type { ExecuteRunBody, RunAgentManifest, RunPhase } from '../../shared/protocol.js';
import type { PinnedDefinition } from './manifest.js';
import { newest } from './versions.js';

/**
 * Catalog lookups other features use (SQL). Every query is bounded to one organization: an id
 * never reaches another organization's agent or team.
 */

/** The agent `name` (newest version) or `name@version` in an org, or null. */
export async function findAgent(db: Kysely<DB>, orgId: string, name: string, version: string | null) {
  const rows = await db
    .selectFrom('agents')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('name', '=', name)
    .$if(version !== null, (q) => q.where('version', '=', version!))
    .execute();
  return newest(rows);
}

const TEAM_VERSION_COLUMNS = allColumns<TeamVersionsTable>()([
  'id',
  'team_id',
  'org_id',
  'name',
  'version',
  'description',
  'definition',
  'created_at',
  'updated_at',
]);

// Every runs/new names its team: these two are prepared once (src/db/prepared.ts).
const versionsNamed = prepared((db: Kysely<DB>, orgId: string, name: string) =>
  db
    .selectFrom('team_versions')
    .select(TEAM_VERSION_COLUMNS)
    .where('org_id', '=', orgId)
    .where('name', '=', name),
);
const versionNamed = prepared((db: Kysely<DB>, orgId: string, name: string, version: string) =>
  db
    .selectFrom('team_versions')
    .select(TEAM_VERSION_COLUMNS)
    .where('org_id', '=', orgId)
    .where('name', '=', name)
    .where('version', '=', version),
);

/** The team version `name` (newest) or `name@version` in an org, or null. */
export async function findTeamVersion(
  db: Kysely<DB>,
  orgId: string,
  name: string,
  version: string | null,
): Promise<TeamVersionsTable | null> {
  return newest(
    version === null ? await versionsNamed(db, orgId, name) : await versionNamed(db, orgId, name, version),
  );
}

/** A team version of the org by id, or undefined. */
export function teamVersionInOrg(db: Kysely<DB>, orgId: string, teamVersionId: string) {
  return db
    .selectFrom('team_versions')
    .selectAll()
    .where('id', '=', teamVersionId)
    .where('org_id', '=', orgId)
    .executeTakeFirst();
}

/** Team versions of the org whose team id or own id is `id` (a team, or one version of it). */
export function teamVersionsById(db: Kysely<DB>, orgId: string, id: string) {
  return db
    .selectFrom('team_versions')
    .select(['id', 'team_id', 'name', 'version', 'org_id', 'definition'])
    .where('org_id', '=', orgId)
    .where((eb) => eb.or([eb('team_id', '=', id), eb('id', '=', id)]))
    .execute();
}

/**
 * The phases a run executes: a team version's, or one phase running a single agent. Throws when
 * the row is not in the organization.
 */
export async function definitionOfVersion(
  db: Kysely<DB>,
  orgId: string,
  of: { team_version_id: string | null; agent_id: string | null },
): Promise<ExecuteRunBody['team']> {
  if (of.team_version_id) {
    const tv = await db
      .selectFrom('team_versions')
      .selectAll()
      .where('id', '=', of.team_version_id)
      .where('org_id', '=', orgId)
      .executeTakeFirstOrThrow();
    const def = JSON.parse(tv.definition) as PinnedDefinition;
    return { name: tv.name, version: tv.version, team_version_id: tv.id, phases: def.phases as RunPhase[] };
  }
  const agent = await db
    .selectFrom('agents')
    .selectAll()
    .where('id', '=', of.agent_id!)
    .where('org_id', '=', orgId)
    .executeTakeFirstOrThrow();
  return {
    name: agent.name,
    version: agent.version,
    team_version_id: null,
    phases: [{ name: agent.name, agent: `${agent.name}@${agent.version}`, agent_id: agent.id }],
  };
}

/** The manifests of these agents of the org, by id (others are left out). */
export async function agentManifests(
  db: Kysely<DB>,
  orgId: string,
  agentIds: string[],
): Promise<Record<string, RunAgentManifest>> {
  const out: Record<string, RunAgentManifest> = {};
  if (agentIds.length === 0) return out;
  const rows = await db
    .selectFrom('agents')
    .select(['id', 'manifest'])
    .where('id', 'in', agentIds)
    .where('org_id', '=', orgId)
    .execute();
  for (const a of rows) {
    const m = JSON.parse(a.manifest) as RunAgentManifest;
    // Manifests registered before secrets existed have no list.
    out[a.id] = { ...m, secrets: m.secrets ?? [] };
  }
  return out;
}
