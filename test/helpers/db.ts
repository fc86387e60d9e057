import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dropSchema } from '../../src/db/index.js';

/**
 * The database a test uses: `SVC_TEST_DB=sqlite` (default) gives a fresh SQLite file,
 * `SVC_TEST_DB=postgres` a fresh schema on `SVC_TEST_PG_URL`, so parallel runs never collide.
 */
export const TEST_DB = process.env.SVC_TEST_DB === 'postgres' ? 'postgres' : 'sqlite';
/**
 * The suite's connections commit without waiting for the WAL flush (`synchronous_commit=off`): tests
 * kill hub and daemon processes, never the database server, and a commit PostgreSQL has accepted
 * survives any client's death either way; what it saves is a disk flush per commit.
 */
export const PG_URL =
  process.env.SVC_TEST_PG_URL ??
  'postgres://postgres@127.0.0.1:5432/test?options=-c%20synchronous_commit%3Doff';

export interface TestDatabase {
  url: string;
  schema?: string;
  cleanup(): Promise<void>;
}

export function testDatabase(): TestDatabase {
  if (TEST_DB === 'postgres') {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    return { url: PG_URL, schema, cleanup: () => dropSchema(PG_URL, schema) };
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-test-'));
  return {
    url: path.join(dir, 'hub.db'),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}
