import type { Kysely } from 'kysely';
import { ZodError, type z } from 'zod';
import type { DAEMON_REPLIES, DaemonRoutePath } from '../shared/api/daemon.js';
import type { Clock } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import { merged } from '../shared/merged.js';
import type { Caller } from './caller.js';
import type { DaemonConfig } from './config.js';
import type { DaemonDB } from './db/schema.js';
import { DaemonError, type PayloadIssue } from './errors.js';
import type { HubApi } from './hub-api.js';
import type { DaemonIdentity } from './identity.js';
import { ROUTE_ACCESS, type RouteRule, routeRefusal } from './route-access.js';
import type { Runner } from './runner/runner.js';
import { findTxReply, type StoredReply, saveTxReply } from './tx-replies.repo.js';

/**
 * One router for both ways in: `POST /v1/<path>` over HTTP and `{tx_id, path, body}` commands over
 * the hub tunnel both call `dispatch`. A route is `{path, input, handler}`; the router validates the
 * body, runs the handler and, when the call carries a `tx_id`, stores the first reply (success or
 * error) so a repeated `tx_id` is answered from the store without running again — across restarts.
 */

/** What every handler may use. The outside world comes in here, never through imports. */
export interface DaemonContext {
  db: Kysely<DaemonDB>;
  config: DaemonConfig;
  identity: DaemonIdentity;
  hub: HubApi;
  log: Logger;
  now: Clock;
  /** Executes runs (src/daemon/runner/); absent in tests that build a bare router. */
  runner?: Runner;
}

export interface RouteContext extends DaemonContext {
  caller: Caller;
  /** The call's tx_id, when it has one. */
  txId: string | undefined;
}

/** The `data` of a route's reply: typed by the API module for its paths (src/shared/api/daemon.ts). */
export type RouteData<P extends string> = P extends DaemonRoutePath
  ? z.input<(typeof DAEMON_REPLIES)[P]>
  : unknown;

export interface Route<S extends z.ZodType = z.ZodType, P extends string = string> {
  /** Path without the `/v1/` prefix, e.g. `hug/poll_verdict`. */
  path: P;
  summary: string;
  input: S;
  /**
   * Default true: the handler's writes (through `ctx.db`) and the stored tx_id reply commit in one
   * SQLite transaction. Set false when the handler calls the hub, so no transaction is held open
   * over the network; the reply is then stored right after the handler returns.
   */
  transactional?: boolean;
  /** Returns the reply's `data`; throws `DaemonError` for an expected failure. */
  handler(ctx: RouteContext, input: z.output<S>): Promise<RouteData<P>>;
}

/** Declares a route with its input type inferred from the schema and its reply from the API module. */
export function route<S extends z.ZodType, P extends string>(def: Route<S, P>): Route {
  return def as unknown as Route;
}

export interface DispatchResult {
  reply: StoredReply;
  /** True when the reply came from the tx_id store (the handler did not run). */
  replayed: boolean;
}

export interface Router {
  readonly routes: readonly Route[];
  has(path: string): boolean;
  /**
   * `first`: the hub's first send of the command (`CommandFrame.first`), answered without reading the
   * tx_id store unless this process has seen its tx_id already.
   */
  dispatch(
    path: string,
    body: unknown,
    caller: Caller,
    opts?: { txId?: string; first?: boolean },
  ): Promise<DispatchResult>;
}

/** The tx_id of a call: the command frame's, else a non-empty string `tx_id` in the body. */
export function txIdOf(body: unknown, explicit?: string): string | undefined {
  if (explicit) return explicit;
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const t = (body as { tx_id?: unknown }).tx_id;
    if (typeof t === 'string' && t.length > 0) return t;
  }
  return undefined;
}

export function payloadIssues(err: ZodError): PayloadIssue[] {
  return err.issues.map((i) => ({
    path: i.path.length ? i.path.map(String).join('.') : '(body)',
    message: i.message,
  }));
}

/**
 * The tx_ids a router remembers having dispatched. A first send is overtaken by a redelivery only
 * when the hub stalls between its commit and that send for longer than its resend interval, so the
 * two arrive seconds apart at most, far fewer commands apart than this.
 */
const SEEN_TX_IDS = 50_000;

export function createRouter(
  ctx: DaemonContext,
  routes: readonly Route[],
  access: Readonly<Record<string, RouteRule>> = ROUTE_ACCESS,
): Router {
  const byPath = new Map<string, Route>();
  for (const r of routes) {
    if (byPath.has(r.path)) throw new Error(`duplicate daemon route: ${r.path}`);
    if (!access[r.path]) throw new Error(`daemon route ${r.path} has no row in the route access table`);
    byPath.set(r.path, r);
  }
  // A repeated tx_id that arrives while the first is still running waits for the first's reply.
  const inFlight = new Map<string, Promise<DispatchResult>>();
  // The tx_ids this process dispatched, the latest SEEN_TX_IDS of them: a command's first send that
  // arrives after a redelivery of it (see `dispatch`) is found here.
  const seen = new Set<string>();
  const see = (txId: string) => {
    seen.add(txId);
    if (seen.size > SEEN_TX_IDS) seen.delete(seen.values().next().value!);
  };

  const toError = (err: unknown, path: string): DaemonError => {
    if (err instanceof DaemonError) return err;
    if (err instanceof ZodError) {
      return new DaemonError('PAYLOAD_INVALID', 'request body does not match the schema', payloadIssues(err));
    }
    ctx.log.error({ err, path }, 'unexpected error in daemon route');
    return new DaemonError('INTERNAL_ERROR', 'internal error');
  };

  async function run(path: string, body: unknown, caller: Caller, txId: string | undefined) {
    const r = byPath.get(path);
    if (!r) return fail(new DaemonError('NOT_FOUND', `no daemon operation at ${path}`));
    const refused = routeRefusal(access[path]!, caller);
    if (refused) return fail(refused);
    const parsed = r.input.safeParse(body === undefined ? {} : body);
    if (!parsed.success) return fail(toError(parsed.error, path));
    const rctx: RouteContext = merged(ctx, { caller, txId });
    try {
      if (r.transactional === false) {
        const data = await r.handler(rctx, parsed.data);
        const reply: StoredReply = { ok: true, data: data ?? null };
        if (txId) await saveTxReply(ctx.db, txId, path, reply, ctx.now());
        return reply;
      }
      return await ctx.db.transaction().execute(async (trx) => {
        const data = await r.handler({ ...rctx, db: trx }, parsed.data);
        const reply: StoredReply = { ok: true, data: data ?? null };
        if (txId) await saveTxReply(trx, txId, path, reply, ctx.now());
        return reply;
      });
    } catch (err) {
      return fail(toError(err, path));
    }

    // The effect (if any) was rolled back; the error is still the tx_id's first reply.
    async function fail(error: DaemonError): Promise<StoredReply> {
      const reply: StoredReply = { ok: false, error };
      if (txId) await saveTxReply(ctx.db, txId, path, reply, ctx.now());
      return reply;
    }
  }

  return {
    routes: [...byPath.values()],
    has: (path) => byPath.has(path),
    async dispatch(path, body, caller, opts = {}) {
      const txId = txIdOf(body, opts.txId);
      if (!txId) return { reply: await run(path, body, caller, undefined), replayed: false };
      const pending = inFlight.get(txId);
      if (pending) return { reply: (await pending).reply, replayed: true };
      // A command's first send cannot have been answered by an earlier daemon process: any earlier
      // delivery of it reached this one, and is in `seen`. Every other call reads the store, which
      // holds the replies of earlier processes too.
      const unseen = opts.first === true && !seen.has(txId);
      see(txId);
      // Registered before the first await, so a concurrent repeat always finds it.
      const p = (async (): Promise<DispatchResult> => {
        const stored = unseen ? null : await findTxReply(ctx.db, txId);
        if (stored) return { reply: stored, replayed: true };
        return { reply: await run(path, body, caller, txId), replayed: false };
      })();
      inFlight.set(txId, p);
      try {
        return await p;
      } finally {
        inFlight.delete(txId);
      }
    },
  };
}
