import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  SelectQueryNode,
  SqliteDialect,
} from 'kysely';

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

class FastSqliteConnection implements DatabaseConnection {
  readonly #db: SqliteDatabase;
  readonly #cache = new Map<string, Statement>();
  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  #prepare(sql: string): Statement {
    let stmt = this.#cache.get(sql);
    if (stmt) {
      // Refresh recency (Map keeps insertion order: the first key is the least recently used).
      this.#cache.delete(sql);
    } else {
      stmt = this.#db.prepare(sql);
      if (this.#cache.size >= STATEMENT_CACHE_SIZE) this.#cache.delete(this.#cache.keys().next().value!);
    }
    this.#cache.set(sql, stmt);
    return stmt;
  }

  executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const stmt = this.#prepare(compiled.sql);
    const params = compiled.parameters as unknown[];
    if (stmt.reader) return Promise.resolve({ rows: stmt.all(params) as R[] });
    const { changes, lastInsertRowid } = stmt.run(params);
    return Promise.resolve({
      numAffectedRows: BigInt(changes),
      insertId: BigInt(lastInsertRowid),
      rows: [],
    });
  }

  async *streamQuery<R>(compiled: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(compiled.query)) throw new Error('SQLite only streams select queries');
    for (const row of this.#prepare(compiled.sql).iterate(compiled.parameters as unknown[])) {
      yield { rows: [row as R] };
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
