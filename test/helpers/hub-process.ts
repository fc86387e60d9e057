import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startCli } from './cli.js';
import type { TestHub } from './hub.js';

export interface HubProcess {
  url: string;
  close(): Promise<void>;
}

/**
 * A second hub process on a test hub's PostgreSQL schema: a real `svc hub` child process with the
 * same admin token and secrets key (`secretsKey`: the one the test hub was started with).
 */
export async function startHubProcess(h: TestHub, secretsKey: string): Promise<HubProcess> {
  const { url, schema } = h.database;
  if (!schema) throw new Error('a second hub process needs PostgreSQL');
  const home = mkdtempSync(path.join(tmpdir(), 'svc-hub-process-'));
  const databaseUrl = `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const hub = startCli(['hub'], {
    env: {
      SVC_HOME: home,
      SVC_DATABASE_URL: databaseUrl,
      SVC_HUB_PORT: '0',
      SVC_ADMIN_TOKEN: h.adminToken,
      SVC_SECRETS_KEY: secretsKey,
      SVC_LOG_LEVEL: 'info',
    },
  });
  const close = async () => {
    await hub.stop('SIGTERM');
    rmSync(home, { recursive: true, force: true });
  };
  try {
    const ready = await hub.waitFor(/"url":"([^"]+)"[^\n]*"msg":"hub ready"/);
    return { url: ready[1]!, close };
  } catch (err) {
    await close();
    throw err;
  }
}
