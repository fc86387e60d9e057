import { z } from 'zod';
import { invalidParams } from '../../shared/errors.js';
import type { Hub } from '../context.js';
import { id } from '../http/op.js';
import { resolveTarget } from '../runs/create.service.js';
import { loadWorkspace } from '../workspaces/workspaces.repo.js';

/**
 * What a schedule or a trigger starts: a team (`team` NAME or NAME@VERSION, or `team_id`) or one
 * `agent`, with an optional workspace and inputs, given as `runs/new` takes them. The reference is
 * kept as given and resolved again at every start (a team by name runs its newest version then).
 */
export const targetFields = {
  team_id: id.optional(),
  team: z.string().min(1).max(201).optional(),
  agent: z.string().min(1).max(201).optional(),
  workspace_id: id.nullable().optional(),
  inputs: z.record(z.string(), z.unknown()).optional(),
};

export interface TargetInput {
  team_id?: string | undefined;
  team?: string | undefined;
  agent?: string | undefined;
  workspace_id?: string | null | undefined;
}

export interface Target {
  target: { team_id?: string; team?: string; agent?: string };
  team_id: string | null;
  agent_id: string | null;
  workspace_id: string | null;
}

/** Checks the target now (it exists in the org, the workspace is in the realm) and answers what to keep. */
export async function checkTarget(
  hub: Hub,
  realm: { id: string; org_id: string },
  input: TargetInput,
): Promise<Target> {
  const given = [input.team_id, input.team, input.agent].filter((v) => v !== undefined).length;
  if (given !== 1) {
    throw invalidParams([{ field: 'team', message: 'give exactly one of team, team_id or agent' }]);
  }
  const target = input.agent
    ? { agent: input.agent }
    : input.team
      ? { team: input.team }
      : { team_id: input.team_id! };
  const resolved = await resolveTarget(hub, realm.org_id, target);
  let workspaceId: string | null = null;
  if (input.workspace_id) {
    const ws = await loadWorkspace(hub, input.workspace_id);
    if (ws.realm_id !== realm.id) {
      throw invalidParams([{ field: 'workspace_id', message: 'is not a workspace of this realm' }]);
    }
    workspaceId = ws.id;
  }
  return { target, team_id: resolved.team_id, agent_id: resolved.agent_id, workspace_id: workspaceId };
}

/**
 * An update's change of target: a new team or agent, or another workspace, checked like a new one.
 * Answers the columns to set (none when the update names neither).
 */
export async function retarget(
  hub: Hub,
  row: { realm_id: string; org_id: string; target: string; workspace_id: string | null },
  input: TargetInput,
): Promise<Partial<Omit<Target, 'target'> & { target: string }>> {
  const newTarget = input.team !== undefined || input.team_id !== undefined || input.agent !== undefined;
  if (!newTarget && input.workspace_id === undefined) return {};
  const t = await checkTarget(
    hub,
    { id: row.realm_id, org_id: row.org_id },
    {
      ...(newTarget ? input : (JSON.parse(row.target) as TargetInput)),
      workspace_id: input.workspace_id === undefined ? row.workspace_id : input.workspace_id,
    },
  );
  return {
    target: JSON.stringify(t.target),
    team_id: t.team_id,
    agent_id: t.agent_id,
    workspace_id: t.workspace_id,
  };
}
