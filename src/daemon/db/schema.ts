import type { Generated } from 'kysely';

/**
 * The daemon's own SQLite tables (`$SVC_DAEMON_HOME/daemon.db`). Times are integer ms, JSON is text.
 */
export interface StateTable {
  /** `daemon_id`, `realm_id`, `dispatch_key` (JWK as JSON), `hub_url`. */
  key: string;
  value: string;
  updated_at: number;
}

/** The first reply to each hub command id, so a repeated `tx_id` is answered without running again. */
export interface TxRepliesTable {
  tx_id: string;
  path: string;
  status: 'ok' | 'error';
  /** JSON: the route's `data` when ok, the error body `{code, message, details?}` otherwise. */
  reply: string;
  created_at: number;
}

/** Durable per-review queue of messages delivered by the hub, read by `hug/poll_verdict`. */
export interface HugMessagesTable {
  /** Autoincrement: the delivery order, so "oldest first" never depends on clock resolution. */
  id: Generated<number>;
  review_id: string;
  type: string;
  role: string;
  payload: string;
  created_at: number;
  /** 1 when the hub sent it (tunnel or hub-held dispatch token): only those decide a run's review. */
  from_hub: Generated<number>;
}

/** Tokens minted by `tokens/create` for remote callers while the daemon is unconnected. */
export interface LocalTokensTable {
  hash: string;
  expires_at: number;
  created_at: number;
}

/** A team version installed by the hub, with everything needed to run it offline. */
export interface InstalledTeamsTable {
  team_version_id: string;
  team_id: string;
  name: string;
  version: string;
  /** JSON: the pinned definition (phases carry agent_id / team_version_id). */
  definition: string;
  /** JSON: the child team versions it calls, recursively (TeamVersionBundle[]). */
  teams: string;
  /** JSON: every agent any of them needs, with its manifest (AgentBundle[]). */
  agents: string;
  installed_at: number;
  updated_at: number;
}

/** A directory the daemon accepted as a workspace (`id` is the hub's id when the hub registered it). */
export interface WorkspacesTable {
  id: string;
  path: string;
  name: string;
  /** JSON array of team ids assigned by the hub. */
  team_ids: string;
  created_at: number;
  updated_at: number;
}

/** A run this daemon is executing (removed when it ends); read at start to report interrupted runs. */
export interface ActiveRunsTable {
  run_id: string;
  lease_epoch: number;
  phase: string | null;
  started_at: number;
  /** The `runs/execute` body (JSON), so a run waiting for a review can wait again after a restart. */
  body: string | null;
  /** The review a `review: true` phase waits for, while it waits. */
  review_id: string | null;
  /** `{outputs, phase_outputs}` (JSON) of the run when it started waiting. */
  review_state: string | null;
}

/** An artifact file waiting to go to the hub; `file` is its copy in `<home>/artifacts/spool/`. */
export interface ArtifactUploadsTable {
  id: Generated<number>;
  run_id: string;
  phase: string;
  name: string;
  file: string;
  size: number;
  sha256: string;
  created_at: number;
}

export interface DaemonDB {
  artifact_uploads: ArtifactUploadsTable;
  active_runs: ActiveRunsTable;
  state: StateTable;
  tx_replies: TxRepliesTable;
  hug_messages: HugMessagesTable;
  local_tokens: LocalTokensTable;
  installed_teams: InstalledTeamsTable;
  workspaces: WorkspacesTable;
}
