import type { TeamVersionsTable } from '../../db/schema.js';
import type { TeamVersion } from '../../shared/api/catalog.js';
import { AppError } from '../../shared/errors.js';
import type { Hub } from '../context.js';
import { findAgent, findTeamVersion } from './catalog.repo.js';
import { type PinnedDefinition, type PinnedPhase, parseRef, type TeamDefinition } from './manifest.js';

/** A phase after registration: references pinned to a version and to the row they resolved to. */

const bad = (message: string) => new AppError('bad_request', message);

/**
 * Resolves every phase's `agent` / `team` reference in the org and pins it (`writer` → `writer@1.2.0`
 * with `agent_id`), then refuses a definition whose team calls lead back to itself.
 */
export async function pinDefinition(hub: Hub, orgId: string, def: TeamDefinition): Promise<PinnedDefinition> {
  const phases: PinnedPhase[] = [];
  for (const phase of def.phases) {
    // The row ids come only from resolving the reference in this org, never from the definition.
    const { agent_id: _agentId, team_version_id: _teamVersionId, ...p } = phase as PinnedPhase;
    if (p.agent !== undefined) {
      const ref = parseRef(p.agent);
      const agent = await findAgent(hub.db, orgId, ref.name, ref.version);
      if (!agent) throw bad(`phase "${p.name}": agent ${p.agent} is not registered in this organization`);
      phases.push({ ...p, agent: `${agent.name}@${agent.version}`, agent_id: agent.id });
    } else {
      const ref = parseRef(p.team!);
      if (ref.name === def.name && (ref.version === null || ref.version === def.version)) {
        throw bad(`phase "${p.name}": team ${def.name} cannot call itself`);
      }
      const team = await findTeamVersion(hub.db, orgId, ref.name, ref.version);
      if (!team) throw bad(`phase "${p.name}": team ${p.team} is not registered in this organization`);
      phases.push({ ...p, team: `${team.name}@${team.version}`, team_version_id: team.id });
    }
  }
  await refuseCycles(hub, orgId, def, phases);
  return { ...def, phases };
}

/** Walks the pinned team calls (within the org); reaching the team being registered is a cycle. */
async function refuseCycles(
  hub: Hub,
  orgId: string,
  def: TeamDefinition,
  phases: PinnedPhase[],
): Promise<void> {
  const self = `${def.name}@${def.version}`;
  const seen = new Set<string>();
  const walk = async (tvId: string, path: string[]): Promise<void> => {
    if (seen.has(tvId)) return;
    seen.add(tvId);
    const tv = await hub.db
      .selectFrom('team_versions')
      .selectAll()
      .where('id', '=', tvId)
      .where('org_id', '=', orgId)
      .executeTakeFirst();
    if (!tv) return;
    const here = `${tv.name}@${tv.version}`;
    if (here === self) throw bad(`team calls form a cycle: ${[...path, here].join(' → ')}`);
    for (const p of (JSON.parse(tv.definition) as PinnedDefinition).phases) {
      if (p.team_version_id) await walk(p.team_version_id, [...path, here]);
    }
  };
  for (const p of phases) if (p.team_version_id) await walk(p.team_version_id, [self]);
}

export function teamOut(tv: TeamVersionsTable): TeamVersion {
  return {
    id: tv.id,
    team_id: tv.team_id,
    team_version_id: tv.id,
    org_id: tv.org_id,
    name: tv.name,
    version: tv.version,
    description: tv.description,
    definition: JSON.parse(tv.definition) as PinnedDefinition,
    created_at: tv.created_at,
    updated_at: tv.updated_at,
  };
}
