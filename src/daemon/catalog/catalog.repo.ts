import type { Kysely } from 'kysely';
import type { AgentBundle, TeamInstallCommand, TeamVersionBundle } from '../../shared/protocol-catalog.js';
import type { DaemonDB, InstalledTeamsTable, WorkspacesTable } from '../db/schema.js';

/** An installed team version with everything needed to run it: child teams and agent manifests. */
export interface InstalledTeam {
  team_version_id: string;
  team_id: string;
  name: string;
  version: string;
  /** The pinned definition: each phase has `agent_id` (a key of `agents`) or `team_version_id`. */
  definition: TeamVersionBundle['definition'];
  /** Child team versions by team_version_id (recursively: every team any phase calls). */
  teams: Record<string, TeamVersionBundle>;
  /** Agents by agent id, with their normalized manifests (command, env, timeout_ms…). */
  agents: Record<string, AgentBundle>;
  installed_at: number;
}

export async function saveInstalledTeam(db: Kysely<DaemonDB>, cmd: TeamInstallCommand, now: number) {
  const tv = cmd.team_version;
  const values = {
    team_id: tv.team_id,
    name: tv.name,
    version: tv.version,
    definition: JSON.stringify(tv.definition),
    teams: JSON.stringify(cmd.teams),
    agents: JSON.stringify(cmd.agents),
    updated_at: now,
  };
  await db
    .insertInto('installed_teams')
    .values({ team_version_id: tv.id, installed_at: now, ...values })
    .onConflict((oc) => oc.column('team_version_id').doUpdateSet(values))
    .execute();
}

export async function removeInstalledTeam(db: Kysely<DaemonDB>, teamVersionId: string): Promise<boolean> {
  const r = await db
    .deleteFrom('installed_teams')
    .where('team_version_id', '=', teamVersionId)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

function toInstalled(row: InstalledTeamsTable): InstalledTeam {
  const teams = JSON.parse(row.teams) as TeamVersionBundle[];
  const agents = JSON.parse(row.agents) as AgentBundle[];
  return {
    team_version_id: row.team_version_id,
    team_id: row.team_id,
    name: row.name,
    version: row.version,
    definition: JSON.parse(row.definition) as TeamVersionBundle['definition'],
    teams: Object.fromEntries(teams.map((t) => [t.id, t])),
    agents: Object.fromEntries(agents.map((a) => [a.id, a])),
    installed_at: row.installed_at,
  };
}

/**
 * Loads an installed team version with its child teams and agent manifests, or null. A team
 * version installed only as a child of another installed team is found too (with the parent's
 * agents and child teams), so the runner can start nested runs without asking the hub.
 */
export async function loadInstalledTeam(
  db: Kysely<DaemonDB>,
  teamVersionId: string,
): Promise<InstalledTeam | null> {
  const row = await db
    .selectFrom('installed_teams')
    .selectAll()
    .where('team_version_id', '=', teamVersionId)
    .executeTakeFirst();
  if (row) return toInstalled(row);
  for (const parent of await db.selectFrom('installed_teams').selectAll().execute()) {
    const p = toInstalled(parent);
    const child = p.teams[teamVersionId];
    if (child) {
      return {
        ...p,
        team_version_id: child.id,
        team_id: child.team_id,
        name: child.name,
        version: child.version,
        definition: child.definition,
      };
    }
  }
  return null;
}

export async function listInstalledTeams(db: Kysely<DaemonDB>) {
  const rows = await db
    .selectFrom('installed_teams')
    .selectAll()
    .orderBy('name')
    .orderBy('version')
    .execute();
  return rows.map((r) => {
    const t = toInstalled(r);
    return {
      team_version_id: t.team_version_id,
      team_id: t.team_id,
      name: t.name,
      version: t.version,
      phases: t.definition.phases.map((p) => p.name),
      agents: Object.values(t.agents).map((a) => `${a.name}@${a.version}`),
      teams: Object.values(t.teams).map((c) => `${c.name}@${c.version}`),
      installed_at: t.installed_at,
    };
  });
}

export function workspaceOut(w: WorkspacesTable) {
  return {
    id: w.id,
    path: w.path,
    name: w.name,
    team_ids: JSON.parse(w.team_ids) as string[],
    created_at: w.created_at,
    updated_at: w.updated_at,
  };
}

/** A workspace of this daemon by id or path, or undefined. */
export function findWorkspace(
  db: Kysely<DaemonDB>,
  by: { id?: string | undefined; path?: string | undefined },
) {
  let q = db.selectFrom('workspaces').selectAll();
  if (by.id !== undefined) q = q.where('id', '=', by.id);
  if (by.path !== undefined) q = q.where('path', '=', by.path);
  return q.executeTakeFirst();
}
