/** Daemons, hub processes, settings, events, the command outbox, the run queue and signing keys. */

export interface DaemonsTable {
  id: string;
  realm_id: string;
  name: string;
  token_hash: string;
  hint: string;
  status: 'online' | 'offline';
  last_seen_at: number | null;
  created_at: number;
  revoked_at: number | null;
  /** The tunnel connection that made it online (optional: older literal rows omit it). */
  connection_id?: string | null;
  /** The hub process (`hub_instances.id`) holding that connection (optional like connection_id). */
  hub_instance_id?: string | null;
}

/**
 * One running hub process (src/hub/cluster/presence.ts). A process whose heartbeat is stale is
 * presumed dead: its row is removed and its daemons are marked offline.
 */
export interface HubInstancesTable {
  id: string;
  host: string;
  pid: number;
  started_at: number;
  heartbeat_at: number;
}

export interface SettingsTable {
  daemon_id: string;
  key: string;
  value: string;
  updated_at: number;
}

export interface EventsTable {
  id: string;
  type: string;
  org_id: string | null;
  realm_id: string | null;
  subject_id: string | null;
  payload: string;
  created_at: number;
}

/** A command for a daemon, kept until the daemon acknowledges it (the tunnel's durable outbox). */
export interface CommandOutboxTable {
  tx_id: string;
  daemon_id: string;
  /** Daemon route without /v1/, e.g. `offer_job`. */
  path: string;
  /** JSON. */
  body: string;
  status: 'pending' | 'acked';
  ack_status: 'ok' | 'error' | null;
  /** JSON: the route's `data` (ack ok). */
  reply: string | null;
  /** JSON: the daemon's error `{code, message, details?}` (ack error). */
  error: string | null;
  created_at: number;
  /** Delivery order: increases with every command written by a hub process (µs-like, see outbox.repo). */
  seq: number;
  last_sent_at: number | null;
  acked_at: number | null;
  attempts: number;
}

/** Work offered to the daemons of a realm; the first `queue/claim` wins. */
export interface QueueItemsTable {
  id: string;
  realm_id: string;
  kind: string;
  /** JSON. */
  payload: string;
  /** `withdrawn`: the offer was taken back (nobody claimed it in time, or the claimer went away). */
  status: 'offered' | 'claimed' | 'withdrawn';
  claimed_by: string | null;
  claimed_at: number | null;
  created_at: number;
}

/** The hub's signing keys (JWK JSON), created once and shared by every hub process. */
export interface HubKeysTable {
  id: string;
  alg: string;
  public_jwk: string;
  private_jwk: string;
  created_at: number;
}
