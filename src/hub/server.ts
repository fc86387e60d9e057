import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import {
  type Database,
  isPostgresUrl,
  isUniqueViolation,
  migrate,
  openDatabase,
  pgClientConfig,
} from '../db/index.js';
import { type Clock, type IdGen, uuidv7 } from '../shared/ids.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { stopWithin } from '../shared/shutdown.js';
import { ADMIN_TOKEN_RULE, hashSecret, parseAdminToken } from '../shared/tokens.js';
import { createAccessCache } from './access/access-cache.js';
import { createHubApp, createOpCaller } from './app.js';
import { registerArtifactRoutes } from './artifacts/artifacts.http.js';
import { artifactsOf } from './artifacts/artifacts.service.js';
import { folderStore } from './artifacts/store.js';
import { createPasswordGate } from './auth/password-gate.js';
import { bootstrapAdmin } from './auth/users.js';
import { CATALOG_CACHE_MS, createCatalogCache } from './catalog/catalog-cache.js';
import { createLocalBus, createPgBus } from './cluster/bus.js';
import { type Presence, startPresence } from './cluster/presence.js';
import { registerConsole } from './console.js';
import { DEFAULT_HUB_CONFIG, type Hub, type HubConfig } from './context.js';
import { createOnlineCache } from './daemons/online-cache.js';
import { createTunnel } from './daemons/tunnel.js';
import { createRulesCache, RULES_CACHE_MS } from './notifications/rules-cache.js';
import { startDeliveryWorker } from './notifications/worker.js';
import { hubOps } from './ops.js';
import { createMailer } from './orgs/mailer.js';
import type { ClusterBus } from './ports.js';
import { retentionMetrics, startRetention } from './retention/retention.background.js';
import { startReviewExpiry } from './reviews/reviews.background.js';
import { closeReviewsOfEndedRun } from './reviews/reviews.service.js';
import { freeSlotsOfEndedRun } from './runs/admission.service.js';
import { createClaimedItems } from './runs/claimed-items.js';
import { createRunMetrics } from './runs/run-metrics.js';
import { startRunsBackground } from './runs/runs.background.js';
import { registerRunStreams } from './runs/runs.stream.js';
import { createScheduler } from './schedules/schedules.background.js';
import { createCipher } from './secrets/cipher.js';
import { loadKeyRing } from './secrets/keys.js';
import { resealAll } from './secrets/reseal.js';
import { registerHooks } from './triggers/hooks.js';

export interface StartHubOptions {
  databaseUrl: string;
  /** PostgreSQL schema (tests). */
  schema?: string;
  poolSize?: number;
  host?: string;
  port?: number;
  adminToken?: string;
  smtp?: { url: string; from: string } | null;
  config?: Partial<HubConfig>;
  /**
   * SVC_HOME: the secrets key file lives here when no key is given (default: the SQLite file's
   * folder, else `./.svc`).
   */
  home?: string;
  /** SVC_SECRETS_KEY (base64, 32 bytes); unset: the key file under `home`. */
  secretsKey?: string;
  /** SVC_SECRETS_OLD_KEYS: earlier keys, accepted for reading while values are sealed again. */
  secretsOldKeys?: string[];
  /** SVC_HUB_ARTIFACTS: the artifact store's folder (default `<home>/artifacts`). */
  artifactsDir?: string;
  /** SVC_ARTIFACTS_MAX_BYTES: the largest artifact a daemon may upload (default 1 GiB). */
  artifactsMaxBytes?: number;
  log?: Logger;
  now?: Clock;
  newId?: IdGen;
}

export interface RunningHub {
  hub: Hub;
  app: FastifyInstance;
  database: Database;
  url: string;
  /** A token printed once when the first start created the site administrator. */
  bootstrapToken: string | null;
  close(): Promise<void>;
}

/**
 * Connections the kernel keeps waiting for the hub to accept them (Node's default is 511; Linux caps
 * it at `net.core.somaxconn`, 4096 by default). After a restart thousands of daemons dial within
 * seconds while the hub is busy greeting the first: a full queue drops the others' handshakes, and
 * each then waits for its retransmission (1 s, then 3 s…) instead of its turn.
 */
const LISTEN_BACKLOG = 4096;

/** Where the secrets key file goes when neither SVC_HOME nor a key is given. */
function defaultHome(databaseUrl: string): string {
  return isPostgresUrl(databaseUrl) || databaseUrl === ':memory:' ? './.svc' : path.dirname(databaseUrl);
}

/** Composes config → database (migrated) → app → listening server. */
export async function startHub(opts: StartHubOptions): Promise<RunningHub> {
  const log = opts.log ?? createLogger('hub');
  const adminToken = opts.adminToken === undefined ? undefined : parseAdminToken(opts.adminToken);
  if (adminToken === null) throw new Error(`SVC_ADMIN_TOKEN: ${ADMIN_TOKEN_RULE}`);
  const config: HubConfig = {
    ...DEFAULT_HUB_CONFIG,
    ...opts.config,
    adminTokenHash: adminToken === undefined ? null : hashSecret(adminToken),
  };
  const database = await openDatabase({
    url: opts.databaseUrl,
    ...(opts.schema ? { schema: opts.schema } : {}),
    ...(opts.poolSize ? { poolSize: opts.poolSize } : {}),
    checkpointInWorker: true,
  });
  let bus: ClusterBus | null = null;
  let presence: Presence | null = null;
  try {
    await migrate(database.db);
    // Encryption at rest (src/hub/secrets/): every secret is sealed under the current key before
    // anything reads one (plain values from before, values under a rotated-out key).
    const cipher = createCipher(
      loadKeyRing({
        key: opts.secretsKey,
        oldKeys: opts.secretsOldKeys,
        home: opts.home ?? defaultHome(opts.databaseUrl),
      }),
    );
    const resealed = await resealAll(database.db, cipher);
    if (resealed > 0) log.info({ resealed, key_id: cipher.keyId }, 'secrets sealed under the current key');
    // Authentication, roles, notification rules, the catalog reads of dispatch and the status of
    // daemons on other processes are cached; the handle's plugins clear each cache on the writes
    // that matter to it.
    const access = createAccessCache();
    // The rules and the catalog's answers in use are read again in the background through the hub's handle.
    const rules = createRulesCache(RULES_CACHE_MS, Date.now, () => base.db);
    const catalog = createCatalogCache(CATALOG_CACHE_MS, Date.now, () => base.db);
    const daemonsOnline = createOnlineCache();
    // The scheduler wakes when a schedule is written through this process.
    const scheduler = createScheduler();
    const base: Omit<Hub, 'tunnel'> = {
      db: database.db
        .withPlugin(access.watch)
        .withPlugin(rules.watch)
        .withPlugin(catalog.watch)
        .withPlugin(daemonsOnline.watch)
        .withPlugin(scheduler.watch),
      access,
      rules,
      catalog,
      online: daemonsOnline,
      dialect: database.dialect,
      log,
      now: opts.now ?? Date.now,
      newId: opts.newId ?? (() => uuidv7()),
      mailer: opts.smtp ? createMailer(opts.smtp, log) : null,
      config,
      cipher,
      passwords: createPasswordGate({ concurrency: config.passwordConcurrency, queue: config.passwordQueue }),
      // What other features do when a run ends (src/hub/runs/lifecycle.ts): open reviews close, and
      // runs waiting for its concurrency slots start.
      runEnded: [closeReviewsOfEndedRun, freeSlotsOfEndedRun],
      runMetrics: createRunMetrics(),
      claims: createClaimedItems(),
    };
    // Several hub processes (src/hub/cluster/): wake-ups through PostgreSQL LISTEN/NOTIFY, presence.
    const instanceId = base.newId();
    bus =
      database.dialect === 'postgres'
        ? createPgBus({
            db: database.db,
            client: pgClientConfig({
              url: opts.databaseUrl,
              ...(opts.schema ? { schema: opts.schema } : {}),
            }),
            instanceId,
            log,
            pingMs: base.config.instanceHeartbeatMs,
          })
        : createLocalBus();
    const hub: Hub = { ...base, tunnel: await createTunnel(base, { bus, instanceId }) };
    presence = await startPresence(hub);
    // Several processes starting at once race to create the administrator and its token: a loser
    // looks again (each retry finds one more row in place).
    const bootstrap = async (attempt: number): Promise<string | null> =>
      bootstrapAdmin(hub, adminToken).catch((err) => {
        if (!isUniqueViolation(err) || attempt >= 5) throw err;
        return bootstrap(attempt + 1);
      });
    const bootstrapToken = await bootstrap(1);
    // Lines of background jobs (started below, once the server listens) for /metrics.
    const metrics: (() => string[])[] = [];
    const app = createHubApp(hub, hubOps, { metrics });
    // The web console at / (src/hub/console.ts): static files; it talks to the API like any client.
    registerConsole(app, log);
    // Live updates of runs as server-sent events (src/hub/runs/runs.stream.ts).
    registerRunStreams(app, hub);
    // Incoming webhooks of triggers (src/hub/triggers/): POST /v1/hooks/<id>, raw body, signed.
    registerHooks(app, hub);
    // Artifacts of runs (src/hub/artifacts/): daemon uploads, downloads; the store is a folder.
    const artifactsDir =
      opts.artifactsDir ?? path.join(opts.home ?? defaultHome(opts.databaseUrl), 'artifacts');
    const artifacts = artifactsOf(artifactsDir, folderStore(artifactsDir), opts.artifactsMaxBytes);
    registerArtifactRoutes(app, hub, artifacts);
    // The daemon tunnel; Fastify's close runs the tunnel's close first (preClose hook).
    hub.tunnel.attach(app, createOpCaller(hub, hubOps));
    try {
      await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0, backlog: LISTEN_BACKLOG });
    } catch (err) {
      await app.close();
      throw err;
    }
    // Notification delivery (src/hub/notifications/): polls the durable outbox until close.
    const notifier = startDeliveryWorker(hub);
    // Runs (src/hub/runs/): lease sweeper, dispatch when a daemon connects, cancel acks.
    const stopRuns = startRunsBackground(hub, hub.config.runSweepMs);
    // Reviews (src/hub/reviews/): open reviews past their deadline expire, as often as the sweeper runs.
    const stopReviews = startReviewExpiry(hub, hub.config.runSweepMs);
    // Retention (src/hub/retention/): old runs, logs, acknowledged commands and deliveries go.
    const retention = startRetention(hub, hub.config.retentionMs, hub.config.retentionBatch, artifacts.store);
    metrics.push(() => retentionMetrics(retention.removed()));
    metrics.push(() => hub.runMetrics.lines());
    // Schedules (src/hub/schedules/): fires each scheduled time once, sleeping until the next one.
    const stopScheduler = scheduler.start(hub);
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : opts.port;
    const url = `http://${opts.host ?? '127.0.0.1'}:${port}`;
    return {
      hub,
      app,
      database,
      url,
      bootstrapToken,
      async close() {
        // In-flight requests, deliveries and tunnel bookkeeping get the grace period; then open
        // connections are cut and the pools ended, so a stop always ends (docs/operations.md).
        // Every step runs once, in order, even when an earlier one fails; a step that hangs (a
        // background pass waiting on a database that went away) is left behind when the grace
        // period ends and the steps after it still run: whatever stays open keeps a process alive.
        const steps: [string, () => unknown][] = [
          ['scheduler', stopScheduler],
          ['runs background', stopRuns],
          ['review expiry', stopReviews],
          ['retention', () => retention.stop()],
          ['delivery worker', () => notifier.close()],
          ['http server', () => app.close()],
          ['presence', () => presence?.stop()],
          ['mailer', () => hub.mailer?.close()],
          ['database', () => database.close()],
        ];
        const runSteps = async () => {
          for (let step = steps.shift(); step; step = steps.shift()) {
            try {
              await step[1]();
            } catch (err) {
              log.error({ err }, `hub: ${step[0]} failed while stopping`);
            }
          }
        };
        await stopWithin({
          what: 'hub',
          log,
          graceMs: hub.config.shutdownGraceMs,
          graceful: runSteps,
          // Requests still running keep their connections: cut them, so the server closes; the
          // steps not yet taken run now.
          force: async () => {
            app.server.closeAllConnections();
            await runSteps();
          },
        });
      },
    };
  } catch (err) {
    await presence?.stop().catch(() => {});
    await bus?.close();
    await database.close();
    throw err;
  }
}
