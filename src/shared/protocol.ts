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
 *
 * Liveness uses WebSocket ping/pong frames, not JSON frames.
 * Delivery is at-least-once: the hub keeps every command in a durable outbox until it is acked and
 * sends unacked ones again after a reconnect; the daemon's durable tx_id store returns the first
 * reply for a repeated tx_id without running the command again.
 */
import { z } from 'zod';

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
});
export type CommandFrame = z.infer<typeof CommandFrame>;

export const AclFrame = z.object({ type: z.literal('acl'), acl: z.array(AclEntry) });
export type AclFrame = z.infer<typeof AclFrame>;

export const HubFrame = z.discriminatedUnion('type', [HelloFrame, CommandFrame, AclFrame]);
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

export const DaemonFrame = z.discriminatedUnion('type', [AckFrame]);
export type DaemonFrame = z.infer<typeof DaemonFrame>;

/** The daemon API's version, shown in its OpenAPI document. */
export const DAEMON_API_VERSION = '1.13.5';
