import { createHash } from 'node:crypto';
import {
  type CompiledQuery,
  createQueryId,
  DeleteQueryNode,
  InsertQueryNode,
  type Kysely,
  type OperationNodeSource,
  PostgresAdapter,
  type RawBuilder,
  sql,
  UpdateQueryNode,
} from 'kysely';

/**
 * Hot queries, compiled once. `prepared(build)` builds its query with stand-ins for the arguments
 * the first time it runs on a database, keeps the SQL, and afterwards only binds new values: no query
 * building and no compiling per call. On PostgreSQL the statement is also prepared by name on each
 * connection (see `statementName`), so the server parses and plans it once per connection.
 *
 * For queries of one fixed shape: every argument is a plain value bound as a parameter (a list of
 * any length goes through `oneOf`; no clauses that depend on an argument), and the columns are
 * named, not `selectAll` (a statement prepared as `select *` fails on PostgreSQL once a migration
 * adds a column). A write run with `execute` is shown to the database's plugins at each call, as a
 * built query is, so that the caches cleared by writes (src/db/watch-writes.ts) see it; a write sent
 * otherwise (src/db/together.ts, a transaction's kept writes) must be to a table no cache watches. A
 * query whose shape varies is one prepared query per shape, kept by the caller (`preparedQuery` with
 * an explicit arity: runs.repo.ts `moveOf`).
 */

/**
 * Every column of a table, by name (`allColumns<RunsTable>()(['run_id', …])`): a list that misses
 * a column of `T` does not compile, so a prepared query selecting it reads whole rows as `select *`
 * would.
 */
export function allColumns<T>() {
  return <const C extends readonly (keyof T & string)[]>(
    columns: C &
      ([Exclude<keyof T, C[number]>] extends [never] ? unknown : { missing: Exclude<keyof T, C[number]> }),
  ): C => columns;
}

/**
 * `column` equals one of `values`, a list of any length bound as one parameter, so that a prepared
 * query keeps one shape: `= any($1)` on PostgreSQL (an array), `in (select value from json_each(?))`
 * on SQLite (the list as JSON text, which `prepared` binds for it).
 */
export function oneOf<D>(db: Kysely<D>, column: string, values: readonly string[]): RawBuilder<boolean> {
  return db.getExecutor().adapter instanceof PostgresAdapter
    ? sql<boolean>`${sql.ref(column)} = any(${values})`
    : sql<boolean>`${sql.ref(column)} in (select value from json_each(${values}))`;
}

/**
 * The members of a JSON object bound as one parameter, as rows of `key` and `value` (text), so that a
 * prepared statement of one shape can pair values (`update … from entriesOf(…) as e where id = e.key`):
 * `jsonb_each_text` on PostgreSQL, `json_each` on SQLite. The caller passes the object as JSON text.
 */
export function entriesOf<D>(db: Kysely<D>, json: string): RawBuilder<{ key: string; value: string }> {
  return db.getExecutor().adapter instanceof PostgresAdapter
    ? sql`jsonb_each_text(cast(${json} as jsonb))`
    : sql`json_each(${json})`;
}

/** Stands for the argument at `index` while the query is built. */
class Arg {
  constructor(readonly index: number) {}
}

interface Template {
  compiled: CompiledQuery;
  /** Per parameter: the index of the argument bound there, or -1 for a constant of the query. */
  slots: number[];
  /** SQLite binds no lists: a list argument (`oneOf`) is bound as JSON text. */
  listsAsJson: boolean;
  /** An insert, update or delete: shown to the plugins at each run. */
  write: boolean;
  /**
   * PostgreSQL: the text between its placeholders `$1`…`$n`, which appear once each and in order, to
   * number them from elsewhere (`BoundQuery.pgText`); undefined when the text is not of that form.
   */
  between?: string[] | undefined;
}

/** SQL text → statement name, for the hot queries compiled on PostgreSQL. */
const names = new Map<string, string>();

/** The name a prepared PostgreSQL statement has on every connection (undefined: run it unnamed). */
export function statementName(sqlText: string): string | undefined {
  return names.get(sqlText);
}

/**
 * A hot query bound to its arguments: to run, to send with others (src/db/together.ts), or, as a
 * write nothing reads back, to keep for its transaction's commit (src/hub/cluster/bus.ts
 * `writeThenNotify`, which on PostgreSQL builds it into one statement with the others).
 */
export interface BoundQuery<R> extends OperationNodeSource {
  compile(): CompiledQuery<R>;
  execute(): Promise<R[]>;
  /**
   * PostgreSQL: its text with the parameters numbered from `$first`, to make part of a larger
   * statement (a transaction's kept writes, src/hub/cluster/bus.ts) without building it again.
   */
  pgText?(first: number): { text: string; parameters: unknown[] };
}

/** The text around the placeholders `$1`…`$count`, when each appears once and in order. */
function textBetween(sqlText: string, count: number): string[] | undefined {
  const found = sqlText.match(/\$\d+/g) ?? [];
  if (found.length !== count || found.some((p, i) => p !== `$${i + 1}`)) return undefined;
  return sqlText.split(/\$\d+/);
}

/**
 * `prepared`'s query without running it: compiled once, bound at each call. `arity`: how many
 * arguments follow the database (by default, those `build` declares).
 */
export function preparedQuery<D, A extends unknown[], R>(
  build: (db: Kysely<D>, ...args: A) => { compile(): CompiledQuery<R> } & OperationNodeSource,
  arity = build.length - 1,
): (db: Kysely<D>, ...args: A) => BoundQuery<R> {
  // One template per database dialect: a transaction shares its database's adapter.
  const templates = new WeakMap<object, Template>();
  const compile = (db: Kysely<D>): Template => {
    const standIns = Array.from({ length: arity }, (_, i) => new Arg(i)) as A;
    const compiled = build(db, ...standIns).compile();
    const slots = compiled.parameters.map((p) => (p instanceof Arg ? p.index : -1));
    if (new Set(slots.filter((s) => s >= 0)).size !== arity) {
      throw new Error(`prepared query binds some argument other than as a parameter: ${compiled.sql}`);
    }
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    if (postgres) {
      names.set(compiled.sql, `svc_${createHash('sha256').update(compiled.sql).digest('hex').slice(0, 20)}`);
    }
    return {
      compiled,
      slots,
      listsAsJson: !postgres,
      write: isWrite(compiled),
      between: postgres ? textBetween(compiled.sql, compiled.parameters.length) : undefined,
    };
  };
  return (db, ...args) => {
    const adapter = db.getExecutor().adapter;
    let t = templates.get(adapter);
    if (!t) {
      t = compile(db);
      templates.set(adapter, t);
    }
    const { compiled, slots, listsAsJson, write, between } = t;
    const parameters = slots.map((s, i) => {
      if (s < 0) return compiled.parameters[i];
      const arg = args[s];
      return listsAsJson && Array.isArray(arg) ? JSON.stringify(arg) : arg;
    });
    const bound: CompiledQuery<R> = { ...compiled, parameters };
    return {
      compile: () => bound,
      execute: async () => {
        if (!write) return (await db.executeQuery<R>(bound)).rows;
        // As if built now: the plugins see the write before it runs and its result after.
        const queryId = createQueryId();
        db.getExecutor().transformQuery(compiled.query, queryId);
        return (await db.executeQuery<R>({ ...bound, queryId })).rows;
      },
      toOperationNode: () => build(db, ...args).toOperationNode(),
      ...(between && {
        pgText: (first: number) => ({
          text: between.reduce((text, part, i) => `${text}$${first + i - 1}${part}`),
          parameters,
        }),
      }),
    };
  };
}

const isWrite = (q: CompiledQuery) =>
  UpdateQueryNode.is(q.query) || InsertQueryNode.is(q.query) || DeleteQueryNode.is(q.query);

export function prepared<D, A extends unknown[], R>(
  build: (db: Kysely<D>, ...args: A) => { compile(): CompiledQuery<R> } & OperationNodeSource,
): (db: Kysely<D>, ...args: A) => Promise<R[]> {
  const query = preparedQuery(build);
  return async (db, ...args) => query(db, ...args).execute();
}
