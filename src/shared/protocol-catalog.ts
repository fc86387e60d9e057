/**
 * Bodies of the hub→daemon catalog commands (teams/install, teams/uninstall, workspaces/register,
 * workspaces/assign_teams), shared by the hub that writes them and the daemon routes that parse
 * them. Part of the protocol of ./protocol.ts, kept in its own file so features do not collide.
 */
import { z } from 'zod';

const id = z.string().min(1).max(200);

/** A pinned team version as the hub stores it (`definition` phases carry agent_id/team_version_id). */
export const TeamVersionBundle = z.object({
  id,
  team_id: id,
  name: z.string().min(1),
  version: z.string().min(1),
  definition: z.looseObject({
    phases: z.array(
      z.looseObject({
        name: z.string().min(1),
        agent_id: id.optional(),
        team_version_id: id.optional(),
      }),
    ),
  }),
});
export type TeamVersionBundle = z.infer<typeof TeamVersionBundle>;

/** A pinned agent version with its normalized manifest (command, env, timeout_ms, …). */
export const AgentBundle = z.object({
  id,
  name: z.string().min(1),
  version: z.string().min(1),
  agent_type: z.string().min(1),
  manifest: z.record(z.string(), z.unknown()),
});
export type AgentBundle = z.infer<typeof AgentBundle>;

/**
 * `teams/install`: the team version, every child team version it calls (recursively) and every
 * agent any of them needs, so the daemon can run it without asking the hub.
 */
export const TeamInstallCommand = z.object({
  tx_id: z.string().min(1).optional(),
  team_version: TeamVersionBundle,
  teams: z.array(TeamVersionBundle).max(1000).default([]),
  agents: z.array(AgentBundle).max(5000),
});
export type TeamInstallCommand = z.infer<typeof TeamInstallCommand>;

export const TeamUninstallCommand = z.object({
  tx_id: z.string().min(1).optional(),
  team_version_id: id,
});

/** `workspaces/register`: `id` is the hub's workspace id (absent when a local caller registers). */
export const WorkspaceRegisterCommand = z.object({
  tx_id: z.string().min(1).optional(),
  id: id.optional(),
  path: z.string().min(1).max(4096),
  name: z.string().min(1).max(200).optional(),
});

export const WorkspaceAssignTeamsCommand = z.object({
  tx_id: z.string().min(1).optional(),
  workspace_id: id.optional(),
  path: z.string().min(1).max(4096).optional(),
  team_ids: z.array(id).max(500),
});
