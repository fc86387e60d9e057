import { createRequire } from 'node:module';
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  SelectQueryNode,
  SqliteDialect,
} from 'kysely';
import { type RowMaker, rowMaker } from './row-maker.js';

let addon: string | null | undefined;

/**
 * The path of better-sqlite3's compiled addon, or undefined where it is not at its usual place (the
 * package then looks for it itself). Every connection names it to the package (`nativeBinding`), the
 * checkpoint worker's too: that skips the `bindings` module's search of a dozen folders, and the CLI
 * bundle holds the package's JavaScript (scripts/build-cli.mjs), which would otherwise look for the
 * addon beside the bundle.
 */
export function sqliteAddon(): string | undefined {
  if (addon === undefined) {
    try {
      addon = createRequire(import.meta.url).resolve('better-sqlite3/build/Release/better_sqlite3.node');
    } catch {
      addon = null;
    }
  }
  return addon ?? undefined;
}

/**
 * Kysely's SQLite dialect with a driver tuned for a busy hub:
 * - a FIFO lock on the single connection (Kysely's own mutex wakes every waiter on each release, which
 *   turns thousands of concurrent queries into quadratic work);
 * - a cache of prepared statements (better-sqlite3 statements are reusable; preparing is the costly part).
 * Everything else (SQL, transactions, savepoints) behaves as Kysely's driver.
 */
export class FastSqliteDialect extends SqliteDialect {
  readonly #db: SqliteDatabase;
  constructor(db: SqliteDatabase) {
    super({ database: db });
    this.#db = db;
  }
  override createDriver(): Driver {
    return new FastSqliteDriver(this.#db);
  }
}

class FifoLock {
  #held = false;
  readonly #waiters: (() => void)[] = [];
  acquire(): Promise<void> {
    if (!this.#held) {
      this.#held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#held = false;
  }
}

const STATEMENT_CACHE_SIZE = 500;

/** A prepared statement, with the function that turns a row of a reader into an object. */
interface Prepared {
  stmt: Statement;
  row: RowMaker | null;
}

/**
 * A reader's rows are read as arrays and made into objects by a function compiled for its columns
 * (row-maker.ts): better-sqlite3 builds each row object through V8's C++ API one property at a time.
 */
function readerRows(stmt: Statement): RowMaker | null {
  const make = rowMaker(
    stmt.columns().map((c) => c.name),
    false,
  );
  if (make) stmt.raw(true);
  return make;
}

class FastSqliteConnection implements DatabaseConnection {
  readonly #db: SqliteDatabase;
  readonly #cache = new Map<string, Prepared>();
  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  #prepare(sql: string): Prepared {
    let p = this.#cache.get(sql);
    if (p) {
      // Refresh recency (Map keeps insertion order: the first key is the least recently used).
      this.#cache.delete(sql);
    } else {
      const stmt = this.#db.prepare(sql);
      p = { stmt, row: stmt.reader ? readerRows(stmt) : null };
      if (this.#cache.size >= STATEMENT_CACHE_SIZE) this.#cache.delete(this.#cache.keys().next().value!);
    }
    this.#cache.set(sql, p);
    return p;
  }

  executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const { stmt, row } = this.#prepare(compiled.sql);
    const params = compiled.parameters as unknown[];
    if (stmt.reader) {
      const rows = stmt.all(params) as R[];
      if (row) for (let i = 0; i < rows.length; i++) rows[i] = row(rows[i] as unknown[]) as R;
      return Promise.resolve({ rows });
    }
    const { changes, lastInsertRowid } = stmt.run(params);
    return Promise.resolve({
      numAffectedRows: BigInt(changes),
      insertId: BigInt(lastInsertRowid),
      rows: [],
    });
  }

  async *streamQuery<R>(compiled: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(compiled.query)) throw new Error('SQLite only streams select queries');
    const { stmt, row } = this.#prepare(compiled.sql);
    for (const values of stmt.iterate(compiled.parameters as unknown[])) {
      yield { rows: [(row ? row(values as unknown[]) : values) as R] };
    }
  }
}

class FastSqliteDriver implements Driver {
  readonly #db: SqliteDatabase;
  readonly #lock = new FifoLock();
  readonly #connection: FastSqliteConnection;
  constructor(db: SqliteDatabase) {
    this.#db = db;
    this.#connection = new FastSqliteConnection(db);
  }
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    await this.#lock.acquire();
    return this.#connection;
  }
  async beginTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw('begin'));
  }
  async commitTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw('commit'));
  }
  async rollbackTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw('rollback'));
  }
  async releaseConnection(): Promise<void> {
    this.#lock.release();
  }
  async destroy(): Promise<void> {
    this.#db.close();
  }
}
