import path from 'node:path';
import { z } from 'zod';
import { DEFAULT_SHUTDOWN_GRACE_MS } from '../shared/shutdown.js';

/**
 * Daemon configuration from the environment. Pure: pass any env (tests pass plain objects).
 * Without `SVC_HUB_URL` and `SVC_REALM_TOKEN` the daemon serves its local API unconnected.
 */
const HubUrl = z
  .string()
  .trim()
  .min(1)
  .refine((u) => /^https?:\/\/[^\s/]+/.test(u), 'must be an http:// or https:// URL');

/** `artifacts.max_bytes`: the largest artifact an agent may save (1 GiB). */
export const DEFAULT_ARTIFACTS_MAX_BYTES = 1024 ** 3;

const DaemonEnv = z.object({
  SVC_HOME: z.string().min(1).default('./.svc'),
  SVC_DAEMON_HOME: z.string().min(1).optional(),
  SVC_DAEMON_HOST: z.string().min(1).default('127.0.0.1'),
  SVC_DAEMON_PORT: z.coerce.number().int().min(0).max(65535).default(4900),
  SVC_HUB_URL: z.string().optional(),
  SVC_REALM_TOKEN: z
    .string()
    .trim()
    .regex(/^svc_dt_/, 'must be a realm token (svc_dt_…)')
    .optional(),
  SVC_ARTIFACTS_MAX_BYTES: z.coerce.number().int().min(1).default(DEFAULT_ARTIFACTS_MAX_BYTES),
  SVC_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(DEFAULT_SHUTDOWN_GRACE_MS),
});

export interface DaemonConfig {
  /** Directory holding `daemon.db`. */
  home: string;
  host: string;
  port: number;
  /** Hub base URLs in failover order (no trailing slash); empty when unconnected. */
  hubUrls: string[];
  realmToken: string | null;
  /** After SIGTERM, in-flight requests may finish this long; then open connections are cut. */
  shutdownGraceMs: number;
  /** SVC_ARTIFACTS_MAX_BYTES (`artifacts.max_bytes`): the largest artifact an agent may save. */
  artifactsMaxBytes: number;
}

export function validateDaemonConfig(env: Record<string, string | undefined>): {
  config: DaemonConfig | null;
  errors: string[];
} {
  const clean = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = DaemonEnv.safeParse(clean);
  if (!parsed.success) {
    return { config: null, errors: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
  }
  const e = parsed.data;
  const errors: string[] = [];
  const hubUrls: string[] = [];
  for (const raw of (e.SVC_HUB_URL ?? '').split(',')) {
    if (raw.trim() === '') continue;
    const u = HubUrl.safeParse(raw);
    if (u.success) hubUrls.push(u.data.replace(/\/+$/, ''));
    else
      errors.push(`SVC_HUB_URL: ${JSON.stringify(raw.trim())} ${u.error.issues[0]?.message ?? 'is invalid'}`);
  }
  if (errors.length) return { config: null, errors };
  return {
    errors: [],
    config: {
      home: e.SVC_DAEMON_HOME ?? path.join(e.SVC_HOME, 'daemon'),
      host: e.SVC_DAEMON_HOST,
      port: e.SVC_DAEMON_PORT,
      hubUrls,
      realmToken: e.SVC_REALM_TOKEN ?? null,
      shutdownGraceMs: e.SVC_SHUTDOWN_GRACE_MS,
      artifactsMaxBytes: e.SVC_ARTIFACTS_MAX_BYTES,
    },
  };
}

/** True when the daemon has what it needs to keep a tunnel to a hub. */
export const hubConfigured = (c: Pick<DaemonConfig, 'hubUrls' | 'realmToken'>): boolean =>
  c.hubUrls.length > 0 && c.realmToken !== null;
