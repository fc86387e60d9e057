import {
  Kysely,
  type Migration,
  Migrator,
  PostgresAdapter,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  sql,
} from 'kysely';
import type pg from 'pg';
import { isSqliteFile, prepareSqliteFile, restrictSqliteFiles } from '../shared/private-files.js';
import { startCheckpointer } from './checkpointer.js';
import { migrations as hubMigrations } from './migrations/index.js';
import { type PgParts, pgParts, pipelinedClient } from './pg-client.js';
import type { DB } from './schema.js';
import { FastSqliteDialect, sqliteAddon } from './sqlite.js';

export type { DB } from './schema.js';
export type Dialect = 'sqlite' | 'postgres';

export interface Database<T = DB> {
  db: Kysely<T>;
  dialect: Dialect;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** `postgres://…` selects PostgreSQL; anything else is a SQLite file path (or `:memory:`). */
  url: string;
  /** PostgreSQL only: the schema to use (created when missing). Tests use one schema per run. */
  schema?: string;
  /** PostgreSQL pool size. */
  poolSize?: number;
  /**
   * SQLite file only: WAL checkpoints in a worker thread instead of inside the commits that cross
   * SQLite's threshold (src/db/checkpointer.ts): for the hub, whose event loop serves everyone, and
   * the daemon, whose commits are on the way of every run it starts.
   */
  checkpointInWorker?: boolean;
}

/** Whether a database handle (or a transaction of it) talks to PostgreSQL. */
// biome-ignore lint/suspicious/noExplicitAny: works for any schema
export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  return openDatabaseOf<DB>(opts);
}

/** Opens either database for any schema type (the hub's `DB`, or the daemon's own). */
export async function openDatabaseOf<T>(opts: OpenOptions): Promise<Database<T>> {
  // Each driver is loaded only when its database is opened: a process uses one of the two.
  if (isPostgresUrl(opts.url)) {
    const { default: pg } = await import('pg');
    if (opts.schema) await ensureSchema(opts.url, opts.schema);
    const parts = pgParts(pg);
    const pool = new pg.Pool({ ...pgConnection(opts), max: opts.poolSize ?? 10, types: parts.types });
    const db = new Kysely<T>({ dialect: new PostgresDialect({ pool: pipelinedPool(pool, parts) }) });
    return {
      db,
      dialect: 'postgres',
      close: async () => {
        // Kysely only destroys a driver it started: end the pool ourselves if no query ever ran.
        await db.destroy();
        if (!pool.ended) await pool.end();
      },
    };
  }
  const { default: SQLite } = await import('better-sqlite3');
  const onDisk = isSqliteFile(opts.url);
  if (onDisk) prepareSqliteFile(opts.url);
  const addon = sqliteAddon();
  const sqlite = new SQLite(opts.url, addon ? { nativeBinding: addon } : {});
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  if (onDisk) restrictSqliteFiles(opts.url);
  const checkpointer = onDisk && opts.checkpointInWorker ? startCheckpointer(sqlite, opts.url) : null;
  const db = new Kysely<T>({ dialect: new FastSqliteDialect(sqlite) });
  return {
    db,
    dialect: 'sqlite',
    close: async () => {
      await checkpointer?.stop();
      await db.destroy();
      if (sqlite.open) sqlite.close();
    },
  };
}

/** The pool as Kysely uses it: each connection's client as src/db/pg-client.ts makes it. */
function pipelinedPool(pool: pg.Pool, parts: PgParts): PostgresPool {
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  /**
   * Callers waiting for a connection. `pg`'s pool never answers those it queued (every connection
   * busy, or an idle one about to be handed over) once it ends, so a query begun just before the
   * database closes would wait forever, and the hub's stop with it: they are refused at `end`.
   */
  const waiting = new Set<(err: Error) => void>();
  return {
    async connect() {
      const client = await new Promise<pg.PoolClient>((resolve, reject) => {
        waiting.add(reject);
        pool.connect().then(
          (c) => {
            if (waiting.delete(reject)) resolve(c);
            else c.release();
          },
          (err: unknown) => {
            waiting.delete(reject);
            reject(err);
          },
        );
      });
      let wrapped = clients.get(client);
      if (!wrapped) {
        wrapped = pipelinedClient(client, parts);
        clients.set(client, wrapped);
      }
      return wrapped;
    },
    end: () => {
      for (const refuse of waiting) refuse(new Error('the database was closed'));
      waiting.clear();
      return pool.end();
    },
  };
}

/**
 * Settings for one dedicated PostgreSQL client outside the pool (the hub's LISTEN connection), with
 * the same schema as `openDatabase(opts)`.
 */
export function pgClientConfig(opts: Pick<OpenOptions, 'url' | 'schema'>): pg.ClientConfig {
  return {
    ...pgConnection(opts),
  };
}

/**
 * Where to connect and the session settings of every connection: those the URL names
 * (`?options=-c%20name%3Dvalue`, as libpq reads them) and the schema as `search_path`. node-postgres
 * lets the URL's `options` win over the config's, so they move from the URL into the config.
 */
function pgConnection(opts: Pick<OpenOptions, 'url' | 'schema'>): {
  connectionString: string;
  options?: string;
} {
  const url = new URL(opts.url);
  const parts = url.searchParams.getAll('options');
  url.searchParams.delete('options');
  if (opts.schema) parts.push(`-c search_path=${quoteIdent(opts.schema)}`);
  const options = parts.filter(Boolean).join(' ');
  return { connectionString: url.toString(), ...(options ? { options } : {}) };
}

function quoteIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`invalid schema name: ${name}`);
  return name;
}

async function ensureSchema(url: string, schema: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
  } catch (err) {
    // Two processes creating it at the same moment: IF NOT EXISTS does not cover that race.
    if (!isUniqueViolation(err)) throw err;
  } finally {
    await client.end();
  }
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  } finally {
    await client.end();
  }
}

/**
 * Applies every pending migration (the hub's by default; the daemon passes its own set).
 * Safe with several processes: Kysely takes a lock.
 */
export async function migrate(
  // biome-ignore lint/suspicious/noExplicitAny: works for any schema
  db: Kysely<any>,
  migrations: Record<string, Migration> = hubMigrations,
): Promise<void> {
  if (await upToDate(db, migrations)) return;
  // Kysely looks for its own tables in every schema unless told which one: on PostgreSQL, name the
  // connection's schema, or a database holding other schemas (one per test file) fools it.
  const migrationTableSchema = isPostgres(db)
    ? (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]?.s
    : undefined;
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    ...(migrationTableSchema ? { migrationTableSchema } : {}),
  });
  let outcome = await migrator.migrateToLatest();
  // Kysely's introspection reads the catalog of every schema in the database; a schema dropped at
  // that moment (another tenant's, a parallel test file's) fails it with invalid_schema_name (3F000),
  // or undefined_table (42P01) for one of its tables. Nothing was applied then: try again.
  const raced = () =>
    !outcome.results?.some((r) => r.status !== 'NotExecuted') &&
    ['3F000', '42P01'].includes(String((outcome.error as { code?: unknown } | undefined)?.code));
  for (let retry = 0; retry < 3 && raced(); retry++) {
    outcome = await migrator.migrateToLatest();
  }
  const { error, results } = outcome;
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${String(error)}`);
  }
}

/**
 * Whether exactly these migrations are applied: one query, where the migrator would introspect the
 * catalog and take its lock (a restart on a current database). Anything else (no table yet, a
 * migration missing, one this code does not know) is left to the migrator, which says what is wrong.
 */
// biome-ignore lint/suspicious/noExplicitAny: works for any schema
async function upToDate(db: Kysely<any>, migrations: Record<string, Migration>): Promise<boolean> {
  let applied: string[];
  try {
    applied = (await sql<{ name: string }>`select name from kysely_migration`.execute(db)).rows.map(
      (r) => r.name,
    );
  } catch {
    return false;
  }
  const known = new Set(Object.keys(migrations));
  return applied.length === known.size && applied.every((name) => known.has(name));
}

/** True when the error is a unique-constraint violation on either database. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export const toBool = (v: number | boolean | null | undefined): boolean => v === 1 || v === true;
export const fromBool = (v: boolean): number => (v ? 1 : 0);

/**
 * Runs a conditional UPDATE (or DELETE) and answers whether it touched exactly one row: the way a
 * guarded move tells that it won (the row was still as expected) or lost (it changed meanwhile).
 */
export async function updateOne(q: {
  executeTakeFirst(): Promise<{ numUpdatedRows?: bigint; numDeletedRows?: bigint }>;
}): Promise<boolean> {
  const res = await q.executeTakeFirst();
  return Number(res.numUpdatedRows ?? res.numDeletedRows ?? 0) === 1;
}
