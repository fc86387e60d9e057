import path from 'node:path';
import { z } from 'zod';
import { KEY_RULE, parseKey } from '../shared/secret-key.js';
import { ADMIN_TOKEN_RULE, parseAdminToken } from '../shared/tokens.js';

const splitKeys = (v: string) =>
  v
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');

/** Hub configuration from the environment (see docs/configuration.md). Pure: pass any env. */
const HubEnv = z.object({
  SVC_HOME: z.string().min(1).default('./.svc'),
  SVC_HUB_HOST: z.string().min(1).default('127.0.0.1'),
  SVC_HUB_PORT: z.coerce.number().int().min(0).max(65535).default(4800),
  SVC_DATABASE_URL: z
    .string()
    .min(1)
    // Any other URL (sqlite://…, sqlite:/…, file:hub.db…) would be taken for a file path and make
    // folders named after it: refused instead. A scheme has two letters at least, so that a Windows
    // path (C:\svc\hub.db) is still a path.
    .refine((v) => /^postgres(ql)?:\/\//.test(v) || !/^[a-z][a-z0-9+.-]+:/i.test(v), {
      message: 'a postgres:// URL, or the path of a SQLite file (other URLs are not read)',
    })
    .optional(),
  SVC_DB_POOL_SIZE: z.coerce.number().int().min(1).max(1000).default(10),
  // Trimmed (a secret file ends with a newline); the value itself never appears in a message.
  SVC_ADMIN_TOKEN: z
    .string()
    .transform((v, ctx) => {
      const token = parseAdminToken(v);
      if (token === null) ctx.addIssue({ code: 'custom', message: ADMIN_TOKEN_RULE });
      return token ?? z.NEVER;
    })
    .optional(),
  // Encryption at rest (docs/configuration.md): checked here, the values never appear in a message.
  SVC_SECRETS_KEY: z
    .string()
    .refine((v) => typeof parseKey(v, '') !== 'string', { message: KEY_RULE })
    .optional(),
  SVC_SECRETS_OLD_KEYS: z
    .string()
    .refine((v) => splitKeys(v).every((k) => typeof parseKey(k, '') !== 'string'), {
      message: `comma-separated keys; each ${KEY_RULE}`,
    })
    .optional(),
  SVC_HUB_ARTIFACTS: z.string().min(1).optional(),
  SVC_ARTIFACTS_MAX_BYTES: z.coerce.number().int().min(1).optional(),
  SVC_PUBLIC_URL: z.string().url().optional(),
  SVC_SMTP_URL: z.string().url().optional(),
  SVC_SMTP_FROM: z.string().min(3).default('svc <svc@localhost>'),
  // Several hub processes (docs/operations.md); unset: the defaults of HubConfig.
  SVC_OUTBOX_SCAN_MS: z.coerce.number().int().min(10).max(3_600_000).optional(),
  SVC_HUB_HEARTBEAT_MS: z.coerce.number().int().min(10).max(600_000).optional(),
  SVC_HUB_STALE_MS: z.coerce.number().int().min(30).max(3_600_000).optional(),
  SVC_OFFER_TIMEOUT_MS: z.coerce.number().int().min(10).max(86_400_000).optional(),
  SVC_REDISPATCH_MS: z.coerce.number().int().min(10).max(3_600_000).optional(),
  SVC_OFFER_FANOUT: z.coerce.number().int().min(1).max(10_000).optional(),
  SVC_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(600_000).optional(),
  SVC_RETENTION_MS: z.coerce.number().int().min(1_000).max(86_400_000).optional(),
  SVC_SCHEDULE_GRACE_MS: z.coerce.number().int().min(0).max(86_400_000).optional(),
});

/** Background timings set through the environment (ms); absent ones keep the hub's defaults. */
export interface HubTimings {
  outboxScanMs?: number;
  instanceHeartbeatMs?: number;
  instanceStaleMs?: number;
  offerTimeoutMs?: number;
  runRedispatchMs?: number;
  shutdownGraceMs?: number;
  retentionMs?: number;
  scheduleGraceMs?: number;
  /** Daemons a run is offered to at once (the least loaded). */
  offerFanout?: number;
}

export interface HubSettings {
  home: string;
  host: string;
  port: number;
  databaseUrl: string;
  poolSize: number;
  adminToken: string | undefined;
  /** SVC_SECRETS_KEY; unset: the key file `SVC_HOME/secrets.key`. */
  secretsKey: string | undefined;
  secretsOldKeys: string[];
  /** SVC_HUB_ARTIFACTS: the artifact store's folder (default `SVC_HOME/artifacts`). */
  artifactsDir: string;
  /** SVC_ARTIFACTS_MAX_BYTES (`artifacts.max_bytes`): the largest artifact accepted. */
  artifactsMaxBytes: number | undefined;
  publicUrl: string;
  smtp: { url: string; from: string } | null;
  timings: HubTimings;
}

export function validateHubConfig(env: Record<string, string | undefined>): {
  config: HubSettings | null;
  errors: string[];
} {
  const parsed = HubEnv.safeParse(env);
  if (!parsed.success) {
    return { config: null, errors: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
  }
  const e = parsed.data;
  const timings: HubTimings = {
    ...(e.SVC_OUTBOX_SCAN_MS !== undefined ? { outboxScanMs: e.SVC_OUTBOX_SCAN_MS } : {}),
    ...(e.SVC_HUB_HEARTBEAT_MS !== undefined ? { instanceHeartbeatMs: e.SVC_HUB_HEARTBEAT_MS } : {}),
    ...(e.SVC_HUB_STALE_MS !== undefined ? { instanceStaleMs: e.SVC_HUB_STALE_MS } : {}),
    ...(e.SVC_OFFER_TIMEOUT_MS !== undefined ? { offerTimeoutMs: e.SVC_OFFER_TIMEOUT_MS } : {}),
    ...(e.SVC_REDISPATCH_MS !== undefined ? { runRedispatchMs: e.SVC_REDISPATCH_MS } : {}),
    ...(e.SVC_SHUTDOWN_GRACE_MS !== undefined ? { shutdownGraceMs: e.SVC_SHUTDOWN_GRACE_MS } : {}),
    ...(e.SVC_RETENTION_MS !== undefined ? { retentionMs: e.SVC_RETENTION_MS } : {}),
    ...(e.SVC_SCHEDULE_GRACE_MS !== undefined ? { scheduleGraceMs: e.SVC_SCHEDULE_GRACE_MS } : {}),
    ...(e.SVC_OFFER_FANOUT !== undefined ? { offerFanout: e.SVC_OFFER_FANOUT } : {}),
  };
  // A process must miss several heartbeats before the others presume it dead.
  const beat = timings.instanceHeartbeatMs ?? 5_000;
  const stale = timings.instanceStaleMs ?? 30_000;
  if (stale < 3 * beat) {
    return {
      config: null,
      errors: [`SVC_HUB_STALE_MS: must be at least 3 × SVC_HUB_HEARTBEAT_MS (${3 * beat}), got ${stale}`],
    };
  }
  return {
    errors: [],
    config: {
      home: e.SVC_HOME,
      host: e.SVC_HUB_HOST,
      port: e.SVC_HUB_PORT,
      databaseUrl: e.SVC_DATABASE_URL ?? path.join(e.SVC_HOME, 'hub.db'),
      poolSize: e.SVC_DB_POOL_SIZE,
      adminToken: e.SVC_ADMIN_TOKEN,
      secretsKey: e.SVC_SECRETS_KEY?.trim() || undefined,
      secretsOldKeys: splitKeys(e.SVC_SECRETS_OLD_KEYS ?? ''),
      artifactsDir: e.SVC_HUB_ARTIFACTS ?? path.join(e.SVC_HOME, 'artifacts'),
      artifactsMaxBytes: e.SVC_ARTIFACTS_MAX_BYTES,
      publicUrl: e.SVC_PUBLIC_URL ?? `http://${e.SVC_HUB_HOST}:${e.SVC_HUB_PORT}`,
      smtp: e.SVC_SMTP_URL ? { url: e.SVC_SMTP_URL, from: e.SVC_SMTP_FROM } : null,
      timings,
    },
  };
}
