/**
 * The hub↔daemon protocol, in one place: both sides import these schemas.
 *
 * Tunnel: the daemon opens a WebSocket to the hub at `GET /v1/daemons/connect` with
 * `Authorization: Bearer svc_dt_…` (no token → HTTP 401). Frames are JSON text.
 *
 *   hub → daemon   hello    first frame: the daemon's id, the dispatch public key, the realm ACL
 *   hub → daemon   command  one outbox entry: {tx_id, path, body, token}; `token` is a dispatch JWT
 *   hub → daemon   acl      the realm ACL changed
 *   daemon → hub   ack      the command's result: {tx_id, status: ok|error, reply|error}
 *   daemon → hub   call     a hub operation, as `POST /v1/<op>` with the realm token: {id, op, body}
 *   hub → daemon   reply    the call's answer: {id, status, body}, the HTTP status and body it would get
 *
 * Calls travel over the tunnel only when the hello lists `calls` in `features` (a hub that does not
 * ignores the frame); a daemon uses HTTP otherwise, and whenever the tunnel is down.
 * Liveness uses WebSocket ping/pong frames, not JSON frames.
 * Delivery is at-least-once: the hub keeps every command in a durable outbox until it is acked and
 * sends unacked ones again after a reconnect; the daemon's durable tx_id store returns the first
 * reply for a repeated tx_id without running the command again.
 */
import { z } from 'zod';

/**
 * The close code of every tunnel when a hub process stops (RFC 6455 "service restart"): daemons
 * expect it back within seconds and keep their reconnect delays short (src/daemon/backoff.ts).
 */
export const SERVICE_RESTART = 1012;

export const AclEntry = z.object({
  user_id: z.string(),
  handle: z.string(),
  role: z.enum(['member', 'operator', 'admin']),
});
export type AclEntry = z.infer<typeof AclEntry>;

export const HelloFrame = z.object({
  type: z.literal('hello'),
  daemon_id: z.string(),
  realm_id: z.string(),
  /** Public JWK (EdDSA/Ed25519) that verifies the hub's dispatch tokens. */
  dispatch_key: z.record(z.string(), z.unknown()),
  acl: z.array(AclEntry),
  /** What this hub serves beyond the first protocol: `calls` (hub operations over the tunnel). */
  features: z.array(z.string()).optional(),
});
export type HelloFrame = z.infer<typeof HelloFrame>;

export const CommandFrame = z.object({
  type: z.literal('command'),
  tx_id: z.string().min(1),
  /** Daemon route without the /v1/ prefix, e.g. `offer_job`, `hug/deliver`. */
  path: z.string().min(1),
  body: z.unknown(),
  /** Dispatch JWT for this daemon (aud = daemon id). */
  token: z.string(),
  /**
   * The command's first send, by the hub process that wrote it, right after its transaction: no daemon
   * process can have answered this tx_id before, unless a redelivery overtook this frame on its way,
   * which only this daemon process can have received. The daemon then skips reading its tx_id store
   * (src/daemon/router.ts). Redeliveries never carry it.
   */
  first: z.literal(true).optional(),
});
export type CommandFrame = z.infer<typeof CommandFrame>;

export const AclFrame = z.object({ type: z.literal('acl'), acl: z.array(AclEntry) });
export type AclFrame = z.infer<typeof AclFrame>;

export const ReplyFrame = z.object({
  type: z.literal('reply'),
  id: z.string().min(1),
  status: z.number().int(),
  body: z.unknown(),
});
export type ReplyFrame = z.infer<typeof ReplyFrame>;

export const HubFrame = z.discriminatedUnion('type', [HelloFrame, CommandFrame, AclFrame, ReplyFrame]);
export type HubFrame = z.infer<typeof HubFrame>;

export const DaemonErrorBody = z.object({
  code: z.string(),
  message: z.string(),
  details: z.unknown().optional(),
});

export const AckFrame = z.object({
  type: z.literal('ack'),
  tx_id: z.string().min(1),
  status: z.enum(['ok', 'error']),
  /** The route's `data` on success. */
  reply: z.unknown().optional(),
  /** The route's error on failure (daemon error shape's `error`). */
  error: DaemonErrorBody.optional(),
});
export type AckFrame = z.infer<typeof AckFrame>;

export const CallFrame = z.object({
  type: z.literal('call'),
  /** The daemon's id for this call, echoed by the reply. */
  id: z.string().min(1).max(64),
  op: z.string().min(1).max(200),
  body: z.unknown(),
});
export type CallFrame = z.infer<typeof CallFrame>;

export const DaemonFrame = z.discriminatedUnion('type', [AckFrame, CallFrame]);
export type DaemonFrame = z.infer<typeof DaemonFrame>;

/** The daemon API's version, shown in its OpenAPI document. */
export const DAEMON_API_VERSION = '1.13.5';

// ── Runs (src/hub/runs/, src/daemon/runner/) ─────────────────────────────────────────────────────

/** A phase of a pinned team definition (references pinned to `name@version` and a row id). */
export const RunPhase = z.looseObject({
  name: z.string().min(1),
  agent: z.string().optional(),
  agent_id: z.string().optional(),
  team: z.string().optional(),
  team_version_id: z.string().optional(),
  foreach: z.string().optional(),
  max_parallel: z.number().int().min(1).optional(),
  inputs: z.record(z.string(), z.unknown()).optional(),
  /** A human gate after the phase (src/hub/reviews/): the daemon asks for a review and waits. */
  review: z.boolean().optional(),
  review_timeout_ms: z.number().int().min(1).optional(),
  review_max_rounds: z.number().int().min(1).optional(),
});
export type RunPhase = z.infer<typeof RunPhase>;

/** An agent manifest as the daemon needs it to start the agent. */
export const RunAgentManifest = z.looseObject({
  name: z.string(),
  version: z.string(),
  agent_type: z.string().default('exec'),
  command: z.array(z.string()).min(1),
  env: z.record(z.string(), z.string()).default({}),
  timeout_ms: z.number().int().min(1).default(600_000),
  /** Names of the secrets the agent needs; their values come in the execute body's `secrets`. */
  secrets: z.array(z.string()).default([]),
});
export type RunAgentManifest = z.infer<typeof RunAgentManifest>;

/**
 * hub → daemon `runs/execute`: everything the daemon needs to run the phases, so the runner does
 * not depend on installed-team storage. `start_phase` is where a resumed run continues; `outputs`
 * are the outputs of the phases already done (phase name → outputs).
 */
export const ExecuteRunBody = z.looseObject({
  run_id: z.string().min(1),
  lease_epoch: z.number().int().min(1),
  lease_ms: z.number().int().min(100),
  execution_type: z.enum(['team', 'agent']),
  team: z.object({
    name: z.string(),
    version: z.string(),
    team_version_id: z.string().nullable(),
    phases: z.array(RunPhase).min(1),
  }),
  /** agent_id → manifest, for every agent phase of the definition. */
  agents: z.record(z.string(), RunAgentManifest),
  start_phase: z.string().nullable(),
  inputs: z.record(z.string(), z.unknown()),
  outputs: z.record(z.string(), z.unknown()),
  /** The workspace directory; null: the daemon uses a per-run directory under its home. */
  workspace_path: z.string().nullable(),
  call_depth: z.number().int().min(0),
  /**
   * Values of the secrets the run's agents name (realm values over organization values); a name
   * with no value is absent. Kept in memory only by the daemon, never stored.
   */
  secrets: z.record(z.string(), z.string()).optional(),
  tx_id: z.string().optional(),
});
export type ExecuteRunBody = z.infer<typeof ExecuteRunBody>;

/** hub → daemon `runs/cancel`: stop the run (SIGTERM, then SIGKILL) and report `cancelled`. */
export const CancelRunBody = z.looseObject({
  run_id: z.string().min(1),
  lease_epoch: z.number().int().min(0),
  reason: z.string().nullable().optional(),
  tx_id: z.string().optional(),
});
export type CancelRunBody = z.infer<typeof CancelRunBody>;

/** hub → daemon `runs/child_ended`: a child run of one of this daemon's runs reached an end. */
export const ChildEndedBody = z.looseObject({
  run_id: z.string().min(1),
  child_run_id: z.string().min(1),
  state: z.string(),
  outputs: z.record(z.string(), z.unknown()),
  error: z.unknown().optional(),
  tx_id: z.string().optional(),
});
export type ChildEndedBody = z.infer<typeof ChildEndedBody>;

export const RUN_REPORT_EVENTS = [
  'started',
  'phase.started',
  'phase.completed',
  'awaiting_input',
  'input.received',
  'succeeded',
  'failed',
  'cancelled',
] as const;

/** One event of a run, as the daemon reports it (`runs/report`). */
export const RunReportEvent = z.object({
  event: z.enum(RUN_REPORT_EVENTS),
  phase: z.string().min(1).max(200).optional(),
  error: z.string().max(10_000).optional(),
  /** A phase's outputs: an object, or a list (a `foreach` phase); an agent's scalar arrives as `{value}`. */
  outputs: z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional(),
  pid: z.number().int().min(1).optional(),
});
export type RunReportEvent = z.infer<typeof RunReportEvent>;

/** The most events one `runs/report` carries in `next`. */
export const REPORT_NEXT_MAX = 4;

/**
 * daemon → hub `runs/report` (realm token): an event, and in `next` the events that follow it, which
 * the hub applies in order in the same transaction (a run's start with its first phase's, its last
 * phase's end with its own). The reply's `applied` counts them; a hub that answers without it took
 * the first event only (it predates `next`), and the daemon then sends the others one at a time.
 */
export const RunReportBody = RunReportEvent.extend({
  run_id: z.string().min(1),
  lease_epoch: z.number().int().min(0),
  next: z.array(RunReportEvent).max(REPORT_NEXT_MAX).optional(),
});
export type RunReportBody = z.infer<typeof RunReportBody>;

/** daemon → hub `runs/renew_lease`. */
export const RenewLeaseBody = z.object({
  runs: z.array(z.object({ run_id: z.string().min(1), lease_epoch: z.number().int().min(0) })).max(1000),
});
export type RenewLeaseBody = z.infer<typeof RenewLeaseBody>;

export const RunLogLine = z.object({
  stream: z.enum(['stdout', 'stderr', 'system']),
  text: z.string().max(65_536),
  at: z.number().int().optional(),
  phase: z.string().max(200).nullable().optional(),
});
export type RunLogLine = z.infer<typeof RunLogLine>;

/** daemon → hub `runs/append_logs`. */
export const AppendLogsBody = z.object({
  run_id: z.string().min(1),
  lease_epoch: z.number().int().min(0),
  lines: z.array(RunLogLine).max(5000),
});
export type AppendLogsBody = z.infer<typeof AppendLogsBody>;

/** daemon → hub `runs/start_child`: a `team:` phase starts a child run. */
export const StartChildBody = z.object({
  parent_run_id: z.string().min(1),
  lease_epoch: z.number().int().min(0),
  parent_phase: z.string().min(1).max(200),
  team_version_id: z.string().min(1),
  inputs: z.record(z.string(), z.unknown()).default({}),
  iteration_key: z.string().max(500).nullable().default(null),
});
export type StartChildBody = z.infer<typeof StartChildBody>;

// ── Reviews (src/hub/reviews/, src/daemon/hug/, the runner's review wait) ───────────────────────

export const REVIEW_KINDS = ['phase', 'agent'] as const;

/**
 * daemon → hub `reviews/request` (realm token): the run goes to `awaiting_input` and a review opens.
 * `kind` `phase`: the runner asks after a `review: true` phase; `agent`: an agent asked through the
 * daemon's `hug/request`. `lease_epoch` fences a daemon that lost the run (default: the run's own,
 * when this daemon holds it).
 */
/** At most this many lines of a phase's log go with its review, and at most this many characters. */
export const LOG_EXCERPT_LINES = 40;
export const LOG_EXCERPT_MAX = 16_384;

export const ReviewRequestBody = z.object({
  run_id: z.string().min(1).max(200),
  lease_epoch: z.number().int().min(0).optional(),
  phase: z.string().min(1).max(200),
  summary: z.string().min(1).max(65_536),
  kind: z.enum(REVIEW_KINDS).optional(),
  /** A `review: true` phase's outputs, shown to the reviewer. */
  outputs: z.record(z.string(), z.unknown()).optional(),
  /** The last lines of the phase's log. */
  log_excerpt: z.string().max(LOG_EXCERPT_MAX).optional(),
});
export type ReviewRequestBody = z.infer<typeof ReviewRequestBody>;

/**
 * The payload of a review message the hub delivers (`hug/deliver`): type `verdict` (role `reviewer`,
 * or `system` for an expiry) or `comment`. `run_continues` is false when the verdict ended the run
 * (reject, expiry, request_changes past the phase's round limit).
 */
export interface ReviewMessagePayload {
  action: 'approve' | 'reject' | 'request_changes' | 'comment' | 'expired';
  comment: string | null;
  actor: string | null;
  review_id: string;
  round: number;
  run_continues: boolean;
}
