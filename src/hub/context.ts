import type { Kysely } from 'kysely';
import type { DB, Dialect } from '../db/index.js';
import type { RunsTable } from '../db/schema.js';
import type { RunState } from '../shared/api/run-states.js';
import type { Clock, IdGen } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import { DEFAULT_PASSWORD_COST } from '../shared/password.js';
import { DEFAULT_SHUTDOWN_GRACE_MS } from '../shared/shutdown.js';
import type { AccessCache } from './access/access-cache.js';
import type { CatalogCache } from './catalog/catalog-cache.js';
import type { OnlineCache } from './daemons/online-cache.js';
import type { RulesCache } from './notifications/rules-cache.js';
import type { Cipher, Mailer, PasswordGate, Tunnel } from './ports.js';
import type { ClaimedItems } from './runs/claimed-items.js';
import type { RunMetrics } from './runs/run-metrics.js';

/** Everything a hub service needs from the outside world, passed in (never imported). */
export interface Hub {
  db: Kysely<DB>;
  dialect: Dialect;
  log: Logger;
  now: Clock;
  newId: IdGen;
  mailer: Mailer | null;
  config: HubConfig;
  /** Password hashing (scrypt) of this process: bounded concurrency and waiting list. */
  passwords: PasswordGate;
  /** Encryption at rest of secrets (src/hub/secrets/cipher.ts). */
  cipher: Cipher;
  /** This process's daemon connections, command delivery and dispatch keys (src/hub/daemons/). */
  tunnel: Tunnel;
  /**
   * Work other features do in the transaction where a run ends (reviews close), composed in
   * server.ts so that the runs feature does not depend on them.
   */
  runEnded: readonly RunEndedHook[];
  /** Token → actor, realm, (user, realm) → role, kept for at most a second (src/hub/access/access-cache.ts). */
  access: AccessCache;
  /** Each organization's notification rules, kept for at most a second (src/hub/notifications/rules-cache.ts). */
  rules: RulesCache;
  /** Team versions by name, run definitions and agents' manifests, kept for at most a second (src/hub/catalog/catalog-cache.ts). */
  catalog: CatalogCache;
  /** Whether daemons connected to other hub processes are online, as runs show it, kept for at most a second (src/hub/daemons/online-cache.ts). */
  online: OnlineCache;
  /** The run queue's metrics in this process (src/hub/runs/run-metrics.ts). */
  runMetrics: RunMetrics;
  /** Queue items claimed through this process, so that the losing claims need no transaction (src/hub/runs/claimed-items.ts). */
  claims: ClaimedItems;
}

/**
 * One transaction of a change, with the daemon commands it causes: `command` writes one in the
 * outbox in this transaction, and the tunnel sends it once the transaction has committed
 * (src/hub/daemons/commands.ts, `inTx`).
 */
export interface Tx {
  db: Kysely<DB>;
  hub: Hub;
  /**
   * Writes a command for a daemon with this transaction; answers its tx_id. `offered`: the run an
   * `offer_job` offers, as written, for the hub process that passes the offer on (never sent to the
   * daemon): its claim can then be made ahead (src/hub/runs/claimed-items.ts).
   */
  command(daemonId: string, path: string, body: unknown, opts?: { offered?: RunsTable }): Promise<string>;
  /** Runs `fn` once the transaction has committed (not on a rollback); its failure is logged. */
  afterCommit(fn: () => Promise<unknown>): void;
}

/** Called in the transaction where a run reaches a terminal state. */
export type RunEndedHook = (tx: Tx, run: RunsTable, state: RunState) => Promise<void>;

export interface HubConfig {
  /** Public URL of the hub, used in invitation e-mails. */
  publicUrl: string;
  /** After SIGTERM, in-flight work may finish this long; then what is left is cut. */
  shutdownGraceMs: number;
  /** Session tokens from auth/sign_in and invites/accept live this long. */
  sessionTtlMs: number;
  /** Invitations expire after this long. */
  inviteTtlMs: number;
  /**
   * SHA-256 of the configured SVC_ADMIN_TOKEN (null: none). An operator-chosen value has no
   * checksum, so authentication recognises it by this hash before looking it up.
   */
  adminTokenHash: string | null;
  /** Failed sign-ins are counted over a sliding window this long. */
  signInWindowMs: number;
  /** Failed sign-ins per account (e-mail address) within the window; the next attempt is rate_limited. */
  signInAccountLimit: number;
  /** Failed sign-ins per client address (IPv6: per /64) within the window. */
  signInAddressLimit: number;
  /** Password hashes computed at once by one process. */
  passwordConcurrency: number;
  /** Password checks that may wait for a free slot; beyond, rate_limited. */
  passwordQueue: number;
  /** scrypt's cost of new password hashes, log2 of N (src/shared/password.ts): 15; the tests use 10. */
  passwordCost: number;
  /** Tunnel heartbeat: a WebSocket ping this often; a peer that has not answered by the next one is dropped. */
  tunnelPingMs: number;
  /**
   * The outbox scan (safety net) runs this often. Commands normally go out at once: on wake in the
   * writing process, and on PostgreSQL through NOTIFY to the process holding the daemon.
   */
  outboxScanMs: number;
  /** An unacknowledged command is sent again when it was last sent this long ago. */
  outboxResendMs: number;
  /**
   * A command sent from its notice (another process wrote it) is recorded as sent this long after,
   * unless its ack came first, which is the rule: the ack's record is then its one write.
   */
  outboxSentRecordMs: number;
  /**
   * Acks nothing waits for wait this long for others, then are recorded together; an ack something
   * waits for (`waitForAck`) is recorded at once, with those before it, and so are a closing
   * connection's.
   */
  ackWindowMs: number;
  /**
   * An event stream reads again at once when its run or realm changes (on any hub process); this
   * often at the least, in case a notification was lost.
   */
  streamPollMs: number;
  /**
   * After a step, an event stream waits at least this long before the next one: the changes made
   * meanwhile are read and sent together (a busy realm costs each open stream a read per batch, not
   * per commit).
   */
  streamBatchMs: number;
  /** Dispatch tokens live this long (at most 5 minutes). */
  dispatchTokenTtlMs: number;
  /** The run lease sweeper runs this often. */
  runSweepMs: number;
  /** Runs re-dispatch pass (src/hub/runs/redispatch.service.ts) runs this often. */
  runRedispatchMs: number;
  /** An offer nobody claimed (or whose claimer went away) for this long goes back to dispatch. */
  offerTimeoutMs: number;
  /**
   * A run waiting for a daemon is offered to at most this many eligible daemons at once, the least
   * loaded first (fewest runs held); if none claims it within offerTimeoutMs it is offered again.
   */
  offerFanout: number;
  /** Each hub process records a heartbeat this often (src/hub/cluster/presence.ts). */
  instanceHeartbeatMs: number;
  /** A hub process whose heartbeat is older than this is presumed dead: its daemons go offline. */
  instanceStaleMs: number;
  /** Notification delivery worker (src/hub/notifications/worker.ts): the outbox is polled this often. */
  notifyPollMs: number;
  /** Deliveries claimed per poll (per hub process). */
  notifyBatchSize: number;
  /** Per-destination timeout of one attempt (DNS, connect, reply). */
  notifyTimeoutMs: number;
  /** Backoff before the n-th retry: between half and all of min(cap, base · 2^(n-1)). */
  notifyRetryBaseMs: number;
  notifyRetryCapMs: number;
  /** Attempts per delivery before it fails for good (counts as one permanent failure of the channel). */
  notifyMaxAttempts: number;
  /** A claimed delivery is another process's to retry when its claimer has not finished by then. */
  notifyLeaseMs: number;
  /** A channel is disabled after this many consecutive permanently failed deliveries. */
  notifyDisableAfter: number;
  /** The retention job (src/hub/retention/) runs this often in each hub process. */
  retentionMs: number;
  /** Rows per retention batch (each batch is one short transaction). */
  retentionBatch: number;
  /**
   * A scheduled time the hub reaches within this long is on time; an older one was missed (the hub
   * was down) and the schedule's catch_up decides whether it runs.
   */
  scheduleGraceMs: number;
  /** The scheduler sleeps until the next due time, but never longer than this (changes made elsewhere). */
  scheduleMaxSleepMs: number;
}

export const DEFAULT_HUB_CONFIG: HubConfig = {
  publicUrl: 'http://127.0.0.1:4800',
  shutdownGraceMs: DEFAULT_SHUTDOWN_GRACE_MS,
  sessionTtlMs: 12 * 60 * 60 * 1000,
  inviteTtlMs: 7 * 24 * 60 * 60 * 1000,
  adminTokenHash: null,
  signInWindowMs: 15 * 60 * 1000,
  signInAccountLimit: 10,
  signInAddressLimit: 100,
  passwordConcurrency: 2,
  passwordQueue: 32,
  passwordCost: DEFAULT_PASSWORD_COST,
  tunnelPingMs: 15_000,
  outboxScanMs: 2_000,
  outboxResendMs: 30_000,
  outboxSentRecordMs: 200,
  ackWindowMs: 100,
  streamPollMs: 2_000,
  streamBatchMs: 10,
  dispatchTokenTtlMs: 5 * 60 * 1000,
  runSweepMs: 1_000,
  runRedispatchMs: 5_000,
  offerTimeoutMs: 30_000,
  offerFanout: 3,
  instanceHeartbeatMs: 5_000,
  instanceStaleMs: 30_000,
  notifyPollMs: 1_000,
  notifyBatchSize: 20,
  notifyTimeoutMs: 10_000,
  notifyRetryBaseMs: 5_000,
  notifyRetryCapMs: 15 * 60 * 1000,
  notifyMaxAttempts: 10,
  notifyLeaseMs: 60_000,
  notifyDisableAfter: 5,
  retentionMs: 5 * 60 * 1000,
  retentionBatch: 500,
  scheduleGraceMs: 60_000,
  scheduleMaxSleepMs: 1_000,
};
