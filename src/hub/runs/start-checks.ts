import type { WorkspacesTable } from '../../db/schema.js';
import { conflict, invalidParams } from '../../shared/errors.js';
import { countsAsRealmMember } from '../access/access.service.js';
import { userByHandle } from '../auth/users.js';
import { daemonsThatMayRun } from '../catalog/installs.service.js';
import type { Hub } from '../context.js';
import { runDefinition } from './dispatch.service.js';
import type { RunSeed } from './new-runs.js';
import { json } from './run.mapper.js';

/** What a new run must satisfy before it is written: where it may run, who may review it. */

/** The team version or agent a run executes. */
export type RunTarget = Pick<
  RunSeed,
  'team_id' | 'team_version_id' | 'agent_id' | 'base_name' | 'execution_type'
>;

export const issue = (field: string, message: string) => invalidParams([{ field, message }]);

/**
 * A run in a workspace: its team version installed on the workspace's daemon and its team assigned
 * to the workspace (a single-agent run: a team using the agent), else `conflict` naming what is
 * missing and the command that fixes it.
 */
export async function requireAllowedIn(
  hub: Hub,
  ws: Pick<WorkspacesTable, 'id' | 'name' | 'daemon_id' | 'realm_id' | 'team_ids'>,
  target: RunTarget,
): Promise<void> {
  const installed = await daemonsThatMayRun(
    hub.db,
    { realm_id: ws.realm_id, team_version_id: target.team_version_id, agent_id: target.agent_id },
    { daemonIds: [ws.daemon_id] },
  );
  const assigned = new Set(json<string[]>(ws.team_ids) ?? []);
  if (installed.some((i) => assigned.has(i.team_id))) return;
  const what = await describeTarget(hub, target);
  const daemon = await hub.db
    .selectFrom('daemons as d')
    .innerJoin('realms as r', 'r.id', 'd.realm_id')
    .select(['d.name', 'r.name as realm_name'])
    .where('d.id', '=', ws.daemon_id)
    .executeTakeFirstOrThrow();
  const realmOpt = daemon.realm_name === 'default' ? '' : ` --realm ${daemon.realm_name}`;
  const details = {
    workspace_id: ws.id,
    daemon_id: ws.daemon_id,
    team_id: target.team_id,
    team_version_id: target.team_version_id,
    agent_id: target.agent_id,
  };
  if (installed.length === 0) {
    const fix =
      target.execution_type === 'team'
        ? `run \`svc teams install ${what.ref} --daemon ${daemon.name}${realmOpt}\``
        : `install a team that uses it: \`svc teams install TEAM --daemon ${daemon.name}${realmOpt}\``;
    throw conflict(`${what.label} is not installed on daemon ${daemon.name}: ${fix}`, {
      ...details,
      missing: 'install',
    });
  }
  const names = await teamNames(hub, [...assigned, installed[0]!.team_id]);
  const fix = `run \`svc workspaces assign-teams ${ws.id} ${names.join(' ')}\``;
  const team = target.execution_type === 'team' ? `team ${target.base_name}` : `no team using ${what.label}`;
  throw conflict(`${team} is not assigned to workspace ${ws.name}: ${fix}`, {
    ...details,
    missing: 'assignment',
  });
}

/** A run target in words: `team NAME@VERSION` or `agent NAME@VERSION`, and its `NAME@VERSION`. */
async function describeTarget(hub: Hub, target: RunTarget): Promise<{ label: string; ref: string }> {
  const row = target.team_version_id
    ? await hub.db
        .selectFrom('team_versions')
        .select(['name', 'version'])
        .where('id', '=', target.team_version_id)
        .executeTakeFirst()
    : await hub.db
        .selectFrom('agents')
        .select(['name', 'version'])
        .where('id', '=', target.agent_id!)
        .executeTakeFirst();
  const ref = row ? `${row.name}@${row.version}` : target.base_name;
  return { label: `${target.execution_type} ${ref}`, ref };
}

/** The names of teams by team id, in the order given (one per team). */
async function teamNames(hub: Hub, teamIds: string[]): Promise<string[]> {
  const ids = [...new Set(teamIds)];
  const rows = await hub.db
    .selectFrom('team_versions')
    .select(['team_id', 'name'])
    .distinct()
    .where('team_id', 'in', ids)
    .execute();
  const name = new Map(rows.map((r) => [r.team_id, r.name]));
  return ids.map((id) => name.get(id) ?? id);
}

/** `reviewers`: phases of the run, handles of realm members (site and org admins included). */
export async function checkReviewers(
  hub: Hub,
  realm: { id: string; org_id: string },
  target: RunTarget,
  reviewers: Record<string, string[]>,
): Promise<Record<string, string[]>> {
  const phases = new Set(
    (await runDefinition(hub.db, { ...target, org_id: realm.org_id })).phases.map((p) => p.name),
  );
  const out: Record<string, string[]> = {};
  for (const [phase, handles] of Object.entries(reviewers)) {
    if (!phases.has(phase)) throw issue(`reviewers.${phase}`, 'is not a phase of this run');
    for (const handle of handles) {
      const u = await userByHandle(hub.db, handle);
      if (!u || !(await countsAsRealmMember(hub, u, realm))) {
        throw issue(`reviewers.${phase}`, `"${handle}" is not a member of this realm`);
      }
    }
    out[phase] = [...new Set(handles)];
  }
  return out;
}
