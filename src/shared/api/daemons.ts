import { z } from 'zod';
import { ms } from './envelope.js';

/** Daemons, their workspaces and team installations, settings and mesh adapters (docs/api.md). */

export const Daemon = z.strictObject({
  id: z.string(),
  realm_id: z.string(),
  name: z.string(),
  status: z.enum(['online', 'offline']),
  last_seen_at: ms.nullable(),
  created_at: ms,
});
export type Daemon = z.infer<typeof Daemon>;

/** A short-lived token for calling a daemon directly (docs/security.md "Dispatch tokens"). */
export const DispatchToken = z.strictObject({ token: z.string(), expires_at: ms });

export const Workspace = z.strictObject({
  id: z.string(),
  daemon_id: z.string(),
  realm_id: z.string(),
  path: z.string(),
  name: z.string(),
  team_ids: z.array(z.string()),
  status: z.enum(['pending', 'ready', 'failed']),
  error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
  created_at: ms,
  updated_at: ms,
});
export type Workspace = z.infer<typeof Workspace>;

/** `workspaces/assign_teams`: the workspace and the command sent to its daemon. */
export const WorkspaceAssigned = Workspace.extend({ tx_id: z.string() });

/** A team version on a daemon; `pending` is the command still waiting for the daemon's answer. */
export const TeamInstall = z.strictObject({
  id: z.string(),
  daemon_id: z.string(),
  realm_id: z.string(),
  team_id: z.string(),
  team_version_id: z.string(),
  status: z.enum(['installed', 'uninstalled']),
  pending: z.enum(['install', 'uninstall']).nullable(),
  tx_id: z.string().nullable(),
  /** Why the daemon refused the last command. */
  error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
  installed_at: ms.nullable(),
  uninstalled_at: ms.nullable(),
  updated_at: ms,
});
export type TeamInstall = z.infer<typeof TeamInstall>;

/** `teams/install`, `teams/uninstall`: done now, or pending until the daemon answers. */
export const InstallChange = z.strictObject({
  status: z.enum(['installed', 'uninstalled', 'pending']),
  tx_id: z.string().nullable(),
  install: TeamInstall.nullable(),
});
export type InstallChange = z.infer<typeof InstallChange>;

export const Setting = z.strictObject({
  daemon_id: z.string(),
  key: z.string(),
  value: z.string(),
  updated_at: ms,
});
export type Setting = z.infer<typeof Setting>;

export const MeshAdapter = z.strictObject({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  settings: z.array(
    z.strictObject({
      key: z.string(),
      label: z.string(),
      type: z.enum(['string', 'secret', 'url', 'boolean']),
      required: z.boolean(),
    }),
  ),
  enabled: z.boolean(),
});
export type MeshAdapter = z.infer<typeof MeshAdapter>;
