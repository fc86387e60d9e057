import path from 'node:path';
import { type HubSettings, validateHubConfig } from '../config/hub.js';
import { isPostgresUrl } from '../db/index.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { type RunningHub, startHub } from './server.js';

/** The environment did not validate; `errors` are one line each (`SVC_HUB_PORT: …`). */
export class HubConfigError extends Error {
  constructor(readonly errors: string[]) {
    super(`invalid hub configuration: ${errors.join('; ')}`);
    this.name = 'HubConfigError';
  }
}

export interface LaunchOptions {
  log: Logger;
  /** Relative paths (SVC_HOME, a SQLite file) are resolved against it. */
  cwd?: string;
}

/**
 * Starts a hub from validated settings: a relative SQLite path is resolved against `cwd` (its
 * folder is created 0700 when missing, the files are 0600: src/shared/private-files.ts), and a busy
 * port gets a message a person can act on.
 */
export async function launchHub(settings: HubSettings, opts: LaunchOptions): Promise<RunningHub> {
  const cwd = opts.cwd ?? process.cwd();
  let databaseUrl = settings.databaseUrl;
  if (!isPostgresUrl(databaseUrl) && databaseUrl !== ':memory:') {
    databaseUrl = path.resolve(cwd, databaseUrl);
  }
  try {
    return await startHub({
      databaseUrl,
      poolSize: settings.poolSize,
      host: settings.host,
      port: settings.port,
      ...(settings.adminToken ? { adminToken: settings.adminToken } : {}),
      home: path.resolve(cwd, settings.home),
      ...(settings.secretsKey ? { secretsKey: settings.secretsKey } : {}),
      secretsOldKeys: settings.secretsOldKeys,
      artifactsDir: settings.artifactsDir,
      ...(settings.artifactsMaxBytes ? { artifactsMaxBytes: settings.artifactsMaxBytes } : {}),
      smtp: settings.smtp,
      config: { publicUrl: settings.publicUrl, ...settings.timings },
      log: opts.log,
    });
  } catch (err) {
    if ((err as { code?: string }).code === 'EADDRINUSE') {
      throw new Error(
        `${settings.host}:${settings.port} is already in use (another hub?); set SVC_HUB_PORT to another port`,
      );
    }
    throw err;
  }
}

export interface RunHubOptions {
  /** Resolves when the hub should stop (the CLI passes SIGTERM/SIGINT). */
  shutdown: Promise<unknown>;
  cwd?: string;
  /** Where the one-time bootstrap token is printed (not the logs: it is a secret). */
  stderr?: { write(s: string): unknown };
  log?: Logger;
}

/**
 * `svc hub`: config from the environment → database → server, JSON logs, and a graceful stop
 * (server, then database) when `shutdown` resolves. Throws HubConfigError on a bad environment.
 */
export async function runHub(env: Record<string, string | undefined>, opts: RunHubOptions): Promise<void> {
  const { config, errors } = validateHubConfig(env);
  if (!config) throw new HubConfigError(errors);
  const log = opts.log ?? createLogger('hub', env.SVC_LOG_LEVEL ?? 'info');
  const running = await launchHub(config, { log, ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  if (running.bootstrapToken) {
    (opts.stderr ?? process.stderr).write(
      `\nCreated the site administrator "admin". Its token is shown only this once:\n\n  ${running.bootstrapToken}\n\n` +
        'Keep it safe (or set SVC_ADMIN_TOKEN to choose the token yourself).\n\n',
    );
  }
  log.info(
    { url: running.url, database: running.database.dialect, public_url: config.publicUrl },
    'hub ready',
  );
  const signal = await opts.shutdown;
  log.info({ signal }, 'hub stopping');
  await running.close();
  log.info('hub stopped');
}
