import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Clock } from '../shared/ids.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { DEFAULT_SHUTDOWN_GRACE_MS, stopWithin } from '../shared/shutdown.js';
import type { BackoffOptions } from './backoff.js';
import type { Caller } from './caller.js';
import { type DaemonConfig, DEFAULT_ARTIFACTS_MAX_BYTES, hubConfigured } from './config.js';
import { createCredentialChecker } from './credentials.js';
import { openDaemonDatabase } from './db/open.js';
import type { DaemonDB } from './db/schema.js';
import { createHubApi } from './hub-api.js';
import { HubLink, type WebSocketFactory } from './hub-link.js';
import { DaemonIdentity } from './identity.js';
import { ROUTE_ACCESS, type RouteRule } from './route-access.js';
import { createRouter, type DaemonContext, type DispatchResult, type Route, type Router } from './router.js';
import { daemonRoutes } from './routes.js';
import { Runner } from './runner/runner.js';
import { agentUrlOf, createDaemonApp, listenForAgents } from './server.js';
import { pruneTxReplies } from './tx-replies.repo.js';

const WEEK = 7 * 24 * 60 * 60 * 1000;

export interface StartDaemonOptions {
  /** From `validateDaemonConfig(env)`; `home` is required, the rest has the documented defaults. */
  config: Partial<DaemonConfig> & { home: string };
  log?: Logger;
  now?: Clock;
  /** Opens the tunnel's WebSocket (default: `ws` with the realm token header). */
  createWebSocket?: WebSocketFactory;
  /** Used for the daemon's HTTP calls to the hub (queue/claim, auth/whoami). */
  fetch?: typeof fetch;
  /** Reconnect backoff (default base 500 ms, cap 30 s, full jitter). */
  backoff?: Partial<BackoffOptions>;
  random?: () => number;
  heartbeatMs?: number;
  /** How long the hub's answer about a `svc_tok_` is cached (default 30 s). */
  whoamiTtlMs?: number;
  /** The route table (default: every daemon route). */
  routes?: readonly Route[];
  /** Rows for routes beyond the daemon's own (added to src/daemon/route-access.ts's table). */
  access?: Readonly<Record<string, RouteRule>>;
  /** Stored tx_id replies older than this are pruned at start (default 7 days). */
  txRetentionMs?: number;
  /** Run executor options (SIGTERM → SIGKILL grace, log upload interval). */
  runner?: { killGraceMs?: number; logFlushMs?: number };
}

export interface RunningDaemon {
  /** `http://host:port` of the local API. */
  url: string;
  /** The loopback URL the daemon's agents get as SVC_DAEMON_URL. */
  agentUrl: string;
  port: number;
  config: DaemonConfig;
  app: FastifyInstance;
  db: Kysely<DaemonDB>;
  identity: DaemonIdentity;
  router: Router;
  /** The hub tunnel; null when no hub URL and realm token are configured. */
  link: HubLink | null;
  /** The id the hub gave this daemon (persisted), or null. */
  daemonId(): string | null;
  /** Connected mode: a hub is configured and its dispatch key is known. */
  connected(): boolean;
  /** Runs a route as the given caller (default: local), exactly as HTTP and hub commands do. */
  dispatch(path: string, body: unknown, caller?: Caller): Promise<DispatchResult>;
  /** The run executor. */
  runner: Runner;
  /** Stops the runs (agents killed), closes the tunnel, the HTTP server and the database, in that order. */
  close(): Promise<void>;
}

export const DEFAULT_DAEMON_CONFIG: Omit<DaemonConfig, 'home'> = {
  host: '127.0.0.1',
  port: 4900,
  hubUrls: [],
  realmToken: null,
  shutdownGraceMs: DEFAULT_SHUTDOWN_GRACE_MS,
  artifactsMaxBytes: DEFAULT_ARTIFACTS_MAX_BYTES,
};

/** Composes config → database → router → HTTP server → hub link. Only the CLI exits the process. */
export async function startDaemon(opts: StartDaemonOptions): Promise<RunningDaemon> {
  const config: DaemonConfig = { ...DEFAULT_DAEMON_CONFIG, ...opts.config };
  const log = opts.log ?? createLogger('daemon');
  const now = opts.now ?? Date.now;
  const database = await openDaemonDatabase(config.home);
  let app: FastifyInstance | null = null;
  let agentListener: { url: string; close(): Promise<void> } | null = null;
  try {
    const db = database.db;
    await pruneTxReplies(db, now() - (opts.txRetentionMs ?? WEEK));
    const identity = await DaemonIdentity.load(db);
    const withHub = hubConfigured(config);
    let link: HubLink | null = null;
    const hub = createHubApi({
      urls: () => {
        const current = link?.currentUrl;
        return current ? [current, ...config.hubUrls.filter((u) => u !== current)] : config.hubUrls;
      },
      realmToken: config.realmToken,
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
      tunnel: (op, body) => link?.call(op, body) ?? null,
    });
    const runner = new Runner({ db, hub, log, now, home: config.home, ...opts.runner });
    const ctx: DaemonContext = { db, config, identity, hub, log, now, runner };
    const router = createRouter(ctx, opts.routes ?? daemonRoutes, { ...ROUTE_ACCESS, ...opts.access });
    const connected = () => withHub && identity.dispatchKey !== null;
    const checkCredential = createCredentialChecker({
      db,
      identity,
      hub,
      now,
      log,
      ...(opts.whoamiTtlMs !== undefined ? { whoamiTtlMs: opts.whoamiTtlMs } : {}),
    });
    const artifacts = {
      maxBytes: config.artifactsMaxBytes,
      folderOf: (runId: string) => runner.artifactsDirOf(runId),
    };
    app = createDaemonApp({ ctx, router, checkCredential, connected, log, artifacts });
    await app.listen({ host: config.host, port: config.port });
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : config.port;
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    const agentUrl = agentUrlOf(config.host, port);
    if (agentUrl === null) agentListener = await listenForAgents(app, port);
    runner.daemonUrl = agentUrl ?? agentListener!.url;

    if (withHub) {
      link = new HubLink({
        urls: config.hubUrls,
        realmToken: config.realmToken!,
        identity,
        router,
        log,
        now,
        ...(opts.createWebSocket ? { createWebSocket: opts.createWebSocket } : {}),
        ...(opts.backoff ? { backoff: opts.backoff } : {}),
        ...(opts.random ? { random: opts.random } : {}),
        ...(opts.heartbeatMs ? { heartbeatMs: opts.heartbeatMs } : {}),
      });
      // Runs interrupted by a stop of this daemon are reported failed once the hub is reachable.
      // Artifacts a previous process left in the spool go to the hub.
      const recover = () => {
        runner.artifacts.start();
        void runner.recover().catch((err) => log.warn({ err }, 'could not report interrupted runs'));
      };
      link.on('connected', recover);
      link.start();
    }
    log.info({ url, hub: withHub ? config.hubUrls : null }, 'daemon listening');

    const server = app;
    let closing: Promise<void> | null = null;
    return {
      url,
      agentUrl: runner.daemonUrl,
      port,
      config,
      app: server,
      db,
      identity,
      router,
      link,
      runner,
      daemonId: () => identity.daemonId,
      connected,
      dispatch: (path, body, caller = { kind: 'local' }) => router.dispatch(path, body, caller),
      close() {
        // Agents are stopped at once (the hub sees their runs interrupted); requests in flight get the
        // grace period, then their connections are cut, so a stop always ends.
        closing ??= stopWithin({
          what: 'daemon',
          log,
          graceMs: config.shutdownGraceMs,
          graceful: async () => {
            await runner.close();
            await link?.close();
            await agentListener?.close();
            await server.close();
            await database.close();
          },
          force: () => server.server.closeAllConnections(),
        }).then(() => undefined);
        return closing;
      },
    };
  } catch (err) {
    await agentListener?.close();
    await app?.close();
    await database.close();
    throw err;
  }
}
