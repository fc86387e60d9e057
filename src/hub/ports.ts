import type { EventEmitter } from 'node:events';
import type { FastifyInstance } from 'fastify';
import type { CryptoKey, JWK } from 'jose';
import type { RunsTable } from '../db/schema.js';

/**
 * The interfaces of what the hub's context (context.ts) holds besides the database: the tunnel to
 * daemons and the cluster bus under it, password hashing, e-mail. They sit at the bottom of the hub
 * so that everything can name them; their implementations (daemons/tunnel.ts, cluster/bus.ts,
 * auth/password-gate.ts, orgs/mailer.ts) import them from here.
 */

// ── Encryption at rest (src/hub/secrets/cipher.ts) ─────────────────────────────────────────────

/**
 * Seals and opens the hub's secrets at rest (AES-256-GCM under the configured key ring). A sealed
 * value is text carrying the id of the key that sealed it.
 */
export interface Cipher {
  /** The id of the key new values are sealed under. */
  readonly keyId: string;
  seal(plain: string): string;
  /** Throws when the value is not sealed or its key is unknown. */
  open(sealed: string): string;
  /** Opens a sealed value; a value written before encryption at rest (plain text) comes back as it is. */
  reveal(value: string): string;
  isSealed(value: string): boolean;
  /** Sealed under the current key. */
  isCurrent(value: string): boolean;
  /** What every value sealed under the current key starts with (for SQL `LIKE`). */
  currentPrefix(): string;
}

/**
 * The field of a command body stored in the outbox that holds secrets sealed as one JSON object
 * (`runs/execute`, src/hub/secrets/resolve.ts). The tunnel opens it into `secrets` just before the
 * frame leaves, so the table never holds them in clear.
 */
export const SEALED_SECRETS_FIELD = 'secrets_sealed';

// ── The tunnel (src/hub/daemons/) ───────────────────────────────────────────────────────────────

export interface DispatchKeys {
  privateKey: CryptoKey;
  /** Public JWK with `alg`, `use` and `kid`: what daemons get in the hello frame. */
  publicJwk: JWK;
  kid: string;
}

/** A command's acknowledgement by its daemon. */
export interface CommandResult {
  tx_id: string;
  daemon_id: string;
  status: 'ok' | 'error';
  reply: unknown;
  error: { code: string; message: string; details?: unknown } | null;
}

/**
 * Runs a hub operation as `POST /v1/<op>` would, for a caller that is not HTTP (a daemon's call over
 * its tunnel): the status and the JSON body the HTTP reply would have.
 */
export type OpCaller = (
  authorization: string,
  op: string,
  body: unknown,
  ip: string,
) => Promise<{ status: number; body: unknown }>;

/** A command as a notice of the cluster bus carries it: its frame's fields (see NewCommand). */
export interface NoticedCommand extends Pick<NewCommand, 'tx_id' | 'path' | 'body'> {
  /** When it was written (a connection opened since has it from the outbox). */
  written_at: number;
  /** An offer's run, as written, when the notice has room for it (`Tx.command`'s `offered`). */
  offered?: RunsTable;
}

/** A command just written to the outbox: its frame's fields, and when it counts as sent (or null). */
export interface NewCommand {
  tx_id: string;
  path: string;
  /** The body as stored (JSON text). */
  body: string;
  last_sent_at: number | null;
  /** False for an offer sent without an outbox row (src/hub/daemons/commands.ts): its ack is only told, not recorded. */
  stored: boolean;
}

export interface TunnelEventMap {
  /** A daemon is online on this process: hello sent, pending commands on their way. */
  /** `online_at`: when the hub recorded the daemon online (what dispatch from then on sees). */
  connected: [{ daemon_id: string; connection_id: string; online_at: number }];
  /** A daemon's connection to this process closed and the daemon was marked offline. */
  disconnected: [{ daemon_id: string; connection_id: string }];
  /** A command was acknowledged for the first time (`path`: the command's). */
  ack: [CommandResult & { path: string }];
}

/**
 * The hub side of the hub↔daemon tunnel, for one hub process: the daemons connected here, command
 * delivery from the durable outbox, ACL pushes, heartbeats and the dispatch key.
 *
 * Several hub processes may share one database. A command written by any process reaches its
 * daemon through the outbox: at once when the daemon is connected to the writing process
 * (`wake`), through the cluster bus otherwise (PostgreSQL NOTIFY at commit, src/hub/cluster/bus.ts),
 * and by the periodic scan of the process that holds the connection (the safety net). ACL pushes,
 * disconnects and acks reach the other processes through the same bus.
 */
export interface Tunnel {
  readonly keys: DispatchKeys;
  /** This hub process (`hub_instances.id`, recorded on the daemons connected here). */
  readonly instanceId: string;
  /** The cluster bus this tunnel listens on (local on SQLite). */
  readonly bus: ClusterBus;
  /** `connected`, `disconnected`, `ack` (see TunnelEventMap). In-process only. */
  readonly events: EventEmitter<TunnelEventMap>;
  /** True when the daemon has a live, greeted connection to this process. */
  isConnected(daemonId: string): boolean;
  /**
   * Sends the daemon's pending commands now, if it is connected here. Call after committing. With
   * `command`, one that another process wrote and whose notice carried it (cluster/bus.ts): sent
   * from the notice, without reading the outbox, when the connection has no delivery under way.
   */
  wake(daemonId: string, command?: NoticedCommand): void;
  /**
   * Whether a command written now for this daemon can go straight to its connection here once
   * committed (the connection is greeted and has no delivery under way): write it with `sentAt`
   * (outbox.repo.ts) and pass it to `sendNow` after the commit.
   */
  canSendNow(daemonId: string): boolean;
  /**
   * Sends committed commands from memory, without reading the outbox. One the daemon's current
   * connection would not get from a delivery (written after it opened) is sent; the others are
   * that connection's delivery's to send.
   */
  sendNow(daemonId: string, commands: readonly NewCommand[]): void;
  /**
   * Pushes the current ACL to the connected daemons of a realm, or of every realm of an org, here
   * and (through the bus) on every other hub process.
   */
  pushAcl(scope: { realmId?: string; orgId?: string }): Promise<void>;
  /** Closes the daemon's connection, on whichever hub process holds it (e.g. its token was revoked). */
  disconnect(daemonId: string, reason: string): void;
  /** Closes every connection to this process (the daemons reconnect, here or elsewhere). */
  disconnectAll(reason: string): void;
  /**
   * Resolves when the command is acked (at once if it was already), also when its daemon is
   * connected to another hub process; rejects after `timeoutMs`.
   */
  waitForAck(txId: string, timeoutMs?: number): Promise<CommandResult>;
  /**
   * Serves `GET /v1/daemons/connect` on the app's server and starts the timers; `calls` answers the
   * hub operations daemons call over their tunnel.
   */
  attach(app: FastifyInstance, calls: OpCaller): void;
  /** Stops the timers and closes every connection (waiting for their bookkeeping). Idempotent. */
  close(): Promise<void>;
}

// ── The cluster bus (src/hub/cluster/bus.ts) ────────────────────────────────────────────────────

/** Control messages between hub processes (channel `svc_hub`). */
export type BusMessage =
  | { type: 'acl'; realm_id?: string; org_id?: string }
  | { type: 'disconnect'; daemon_id: string; reason: string }
  | { type: 'watch'; tx_id: string }
  | { type: 'ack'; tx_id: string };

export interface BusHandlers {
  /**
   * A command was written for this daemon (by any process, this one included); `command` when the
   * notice carried it (written by another process, and small enough).
   */
  wake(daemonId: string, command?: NoticedCommand): void;
  /** A control message from another process. */
  message(msg: BusMessage): void;
  /** The LISTEN connection is (again) in place: notifications may have been missed meanwhile. */
  resync(): void;
}

export interface BusEventMap {
  /** The LISTEN connection is up (first time or after a reconnect). */
  connected: [];
  /** The LISTEN connection dropped; a reconnect is scheduled. */
  disconnected: [];
}

export interface ClusterBus {
  readonly kind: 'local' | 'postgres';
  /** True while notifications can arrive (always for the local bus). */
  readonly listening: boolean;
  readonly events: EventEmitter<BusEventMap>;
  /** Starts listening. PostgreSQL: resolves once LISTEN is in place, throws if it cannot be. */
  start(handlers: BusHandlers): Promise<void>;
  /** Sends a control message to every other hub process (no-op on the local bus). */
  publish(msg: BusMessage): Promise<void>;
  /** Stops listening. Idempotent. */
  close(): Promise<void>;
}

// ── Password hashing (src/hub/auth/password-gate.ts) ───────────────────────────────────────────

export interface PasswordGate {
  run<T>(work: () => Promise<T>): Promise<T>;
  stats(): PasswordGateStats;
}

export interface PasswordGateStats {
  running: number;
  waiting: number;
  /** The most hashes that ever ran at once in this process. */
  peak: number;
  /** Calls answered rate_limited because the waiting list was full. */
  refused: number;
}

// ── E-mail (src/hub/orgs/mailer.ts) ────────────────────────────────────────────────────────────

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends e-mail in the background: `send` never throws and never blocks the caller. */
export interface Mailer {
  send(mail: Mail): Promise<boolean>;
  close(): void;
}
