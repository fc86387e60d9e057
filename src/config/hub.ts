import path from 'node:path';
import { z } from 'zod';

/** Hub configuration from the environment (see docs/configuration.md). Pure: pass any env. */
const HubEnv = z.object({
  SVC_HOME: z.string().min(1).default('./.svc'),
  SVC_HUB_HOST: z.string().min(1).default('127.0.0.1'),
  SVC_HUB_PORT: z.coerce.number().int().min(0).max(65535).default(4800),
  SVC_DATABASE_URL: z.string().min(1).optional(),
  SVC_DB_POOL_SIZE: z.coerce.number().int().min(1).max(1000).default(10),
  SVC_ADMIN_TOKEN: z.string().min(1).optional(),
  SVC_PUBLIC_URL: z.string().url().optional(),
  SVC_SMTP_URL: z.string().url().optional(),
  SVC_SMTP_FROM: z.string().min(3).default('svc <svc@localhost>'),
});

export interface HubSettings {
  home: string;
  host: string;
  port: number;
  databaseUrl: string;
  poolSize: number;
  adminToken: string | undefined;
  publicUrl: string;
  smtp: { url: string; from: string } | null;
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
  return {
    errors: [],
    config: {
      home: e.SVC_HOME,
      host: e.SVC_HUB_HOST,
      port: e.SVC_HUB_PORT,
      databaseUrl: e.SVC_DATABASE_URL ?? path.join(e.SVC_HOME, 'hub.db'),
      poolSize: e.SVC_DB_POOL_SIZE,
      adminToken: e.SVC_ADMIN_TOKEN,
      publicUrl: e.SVC_PUBLIC_URL ?? `http://${e.SVC_HUB_HOST}:${e.SVC_HUB_PORT}`,
      smtp: e.SVC_SMTP_URL ? { url: e.SVC_SMTP_URL, from: e.SVC_SMTP_FROM } : null,
    },
  };
}
