/** The catalog (agents, team versions), team installations and workspaces. */

export interface AgentsTable {
  id: string;
  org_id: string;
  name: string;
  version: string;
  description: string;
  agent_type: string;
  /** The normalized manifest as JSON. */
  manifest: string;
  is_system: number;
  created_at: number;
  updated_at: number;
}

export interface TeamVersionsTable {
  id: string;
  /** Stable across versions of one team name in one org. */
  team_id: string;
  org_id: string;
  name: string;
  version: string;
  description: string;
  /** The normalized definition as JSON, with every reference pinned to a version. */
  definition: string;
  created_at: number;
  updated_at: number;
}

/**
 * A team version on a daemon. `status` is the state the daemon last confirmed (a row whose first
 * install is not confirmed yet is `uninstalled` with `installed_at` null); `pending_action` and
 * `pending_tx_id` name the command still waiting for the daemon's ack.
 */
export interface TeamInstallsTable {
  id: string;
  daemon_id: string;
  realm_id: string;
  team_version_id: string;
  team_id: string;
  status: 'installed' | 'uninstalled';
  pending_action: 'install' | 'uninstall' | null;
  pending_tx_id: string | null;
  /** JSON `{code, message}`: why the daemon refused the last command. */
  last_error: string | null;
  installed_at: number | null;
  uninstalled_at: number | null;
  created_at: number;
  updated_at: number;
}

/** A directory on a daemon's machine where runs execute, as its daemon checked it (or will: `pending`). */
export interface WorkspacesTable {
  id: string;
  daemon_id: string;
  realm_id: string;
  path: string;
  name: string;
  /** JSON array of team ids (`team_versions.team_id`) assigned to the workspace. */
  team_ids: string;
  /** `pending` until the daemon checked the path, then `ready` or `failed`. */
  status: 'pending' | 'ready' | 'failed';
  /** The daemon's refusal (JSON `{code, message}`) of a `failed` workspace. */
  error: string | null;
  /** The `workspaces/register` command a `pending` workspace waits for. */
  pending_tx_id: string | null;
  created_at: number;
  updated_at: number;
}
