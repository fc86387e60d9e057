import { createHash, randomBytes } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { dropSchema, migrate, openDatabase } from '../../src/db/index.js';

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

/** An empty database (a migration test, or processes that migrate it themselves). */
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

/**
 * A database with every migration already applied, copied from a template instead of migrated.
 * The template is made once per set of migrations, by the first test that needs it, and kept: its
 * name carries a hash of src/db/ (the migrations and the code that applies them), so a changed
 * migration gets a new template and a stale one is never used. The hub still runs its migrations at
 * start, and finds nothing to do.
 * - SQLite: a file in the temporary folder, copied.
 * - PostgreSQL: a database `svc_tpl_<hash>` on the server of SVC_TEST_PG_URL (the role needs
 *   CREATEDB), cloned by `CREATE DATABASE … TEMPLATE` into one database per test, `svc_t_<random>`,
 *   whose tables are in the schema `svc_test`, dropped by `cleanup`. Measured per test hub (start,
 *   20 calls, close, cleanup; load average 14): 0.2 s of the server's CPU and 1.5 s instead of 0.5 s
 *   and 2.8 to 4.3 s with a fresh schema migrated (DDL of some forty tables) and dropped.
 */
export async function migratedTestDatabase(): Promise<TestDatabase> {
  if (TEST_DB === 'postgres') {
    const template = await pgTemplate();
    const name = `svc_t_${randomBytes(6).toString('hex')}`;
    await onServer((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
    return {
      url: pgUrlOf(name),
      schema: PG_TEMPLATE_SCHEMA,
      // Not WITH (FORCE): PostgreSQL waits up to 5 s for the sessions of closed and killed processes
      // to end, and a connection a test still holds open fails the drop instead of being cut.
      cleanup: async () => {
        await onServer((c) => c.query(`DROP DATABASE IF EXISTS ${name}`));
      },
    };
  }
  const template = await sqliteTemplate();
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-test-'));
  const url = path.join(dir, 'hub.db');
  copyFileSync(template, url);
  return { url, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
}

const PG_TEMPLATE_SCHEMA = 'svc_test';

/** A hash of what decides the migrated schema: every module of src/db/ (tests aside). */
function migrationsHash(): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      // The sources, or in .test-dist/ (scripts/transpile.mjs) the sources and their compiled modules.
      else if (/\.[jt]s$/.test(e.name) && !/\.test\.[jt]s$/.test(e.name))
        hash.update(e.name).update(readFileSync(p));
    }
  };
  walk(fileURLToPath(new URL('../../src/db/', import.meta.url)));
  return hash.digest('hex').slice(0, 16);
}

let templateMade: Promise<string> | null = null;

/** Made once per process (the first call builds it when no process has yet). */
function once(make: () => Promise<string>): Promise<string> {
  templateMade ??= make().catch((err) => {
    templateMade = null;
    throw err;
  });
  return templateMade;
}

function sqliteTemplate(): Promise<string> {
  return once(async () => {
    const file = path.join(tmpdir(), `svc-test-template-${migrationsHash()}.db`);
    if (existsSync(file)) return file;
    // Built under a name of its own and renamed into place: nobody ever copies a half-made one.
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-test-template-'));
    try {
      const building = path.join(dir, 'hub.db');
      const d = await openDatabase({ url: building });
      try {
        await migrate(d.db);
      } finally {
        await d.close();
      }
      renameSync(building, file);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return file;
  });
}

function pgUrlOf(database: string): string {
  const url = new URL(PG_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

/** One statement on the server of SVC_TEST_PG_URL, on a connection of its own. */
async function onServer<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function pgTemplate(): Promise<string> {
  return once(async () => {
    const name = `svc_tpl_${migrationsHash()}`;
    const exists = await onServer((c) => c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]));
    if (exists.rowCount) return name;
    // Built under a name of its own and renamed into place: nobody ever clones a half-made one.
    const building = `${name}_${randomBytes(4).toString('hex')}`;
    await onServer((c) => c.query(`CREATE DATABASE ${building}`));
    try {
      const d = await openDatabase({ url: pgUrlOf(building), schema: PG_TEMPLATE_SCHEMA });
      try {
        await migrate(d.db);
      } finally {
        await d.close();
      }
      await onServer((c) => c.query(`ALTER DATABASE ${building} RENAME TO ${name}`));
    } catch (err) {
      await onServer((c) => c.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`));
      // Another test process made the same template meanwhile (duplicate_database): use that one.
      if ((err as { code?: string }).code !== '42P04') throw err;
    }
    return name;
  });
}
