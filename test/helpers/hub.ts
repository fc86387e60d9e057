import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type RunningHub, type StartHubOptions, startHub } from '../../src/hub/server.js';
import { createLogger } from '../../src/shared/logger.js';
import { mintToken } from '../../src/shared/tokens.js';
import { migratedTestDatabase, type TestDatabase } from './db.js';

export interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected freely
  body: any;
}

export interface TestHub {
  running: RunningHub;
  /** The test database, so a test can start a second hub process on it. */
  database: TestDatabase;
  url: string;
  adminToken: string;
  /** POST /v1/<op> with a JSON body and an optional bearer token. */
  call(op: string, body?: unknown, token?: string | null): Promise<Reply>;
  /** Like call, but fails the test unless the reply is ok, and returns `body`. */
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected freely
  ok(op: string, body?: unknown, token?: string | null): Promise<any>;
  /**
   * Closes this hub process and starts a new one on the same database (same options and admin
   * token), as a redeploy would; `running` and `url` then point at the new process.
   */
  restart(): Promise<void>;
  /** Starts another hub process on the same database and admin token (a second replica). */
  startAnother(opts?: Partial<StartHubOptions>): Promise<RunningHub>;
  close(): Promise<void>;
}

export async function post(url: string, body: unknown, token?: string | null): Promise<Reply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body ?? {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, body: parsed };
}

/** scrypt's cost (log2 of N) of the password hashes of test hubs. */
export const TEST_PASSWORD_COST = 10;

/** Starts a hub on a fresh test database (migrated, test/helpers/db.ts) with a known admin token. */
export async function startTestHub(opts: Partial<StartHubOptions> = {}): Promise<TestHub> {
  const db = await migratedTestDatabase();
  const adminToken = opts.adminToken ?? mintToken('user');
  // One key for every process of this test hub (restart, startAnother), as a deployment would have.
  const secretsKey = opts.secretsKey ?? randomBytes(32).toString('base64');
  // The artifact store of every process of this test hub: one folder, as a shared volume would be.
  const artifactsDir = opts.artifactsDir ?? mkdtempSync(path.join(tmpdir(), 'svc-artifacts-'));
  const startOn = (more: Partial<StartHubOptions>) =>
    startHub({
      databaseUrl: db.url,
      ...(db.schema ? { schema: db.schema } : {}),
      adminToken,
      secretsKey,
      artifactsDir,
      log: createLogger('hub', process.env.SVC_TEST_LOG ?? 'silent'),
      ...more,
      // Password hashes at scrypt's lowest cost (a thousandth of the memory, a thirtieth of the time):
      // the suite makes hundreds. A test of hashing itself names the real cost.
      config: { passwordCost: TEST_PASSWORD_COST, ...more.config },
    });
  const start = () => startOn(opts);
  const running = await start().catch(async (err) => {
    await db.cleanup();
    throw err;
  });
  const call = (op: string, body?: unknown, token: string | null = adminToken) =>
    post(`${h.url}/v1/${op}`, body, token);
  const h: TestHub = {
    running,
    database: db,
    url: running.url,
    adminToken,
    call,
    async ok(op, body, token) {
      const r = await call(op, body, token);
      if (r.body?.ok !== true) throw new Error(`${op} failed: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
    async restart() {
      await h.running.close();
      h.running = await start();
      h.url = h.running.url;
    },
    startAnother: (more = {}) => startOn(more),
    async close() {
      await h.running.close();
      await db.cleanup();
      if (!opts.artifactsDir) rmSync(artifactsDir, { recursive: true, force: true });
    },
  };
  return h;
}
