import { createHash } from 'node:crypto';
import type { PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import { statementName } from './prepared.js';
import { type RowMaker, rowMaker } from './row-maker.js';

/**
 * The PostgreSQL connection as Kysely uses it, with fewer round trips:
 *
 * - The hot queries (prepared.ts) run as named statements, which each connection parses once. So do
 *   other statements once their text has recurred (`recurringName`): the writes a transaction keeps
 *   for its commit, a claim, a report, whose shapes repeat run after run. Parsing and planning them
 *   cost PostgreSQL more than running them.
 * - A transaction's `begin` is not sent on its own: it leaves with the transaction's first statement,
 *   in one write and one reply (the extended protocol allows several statements before one Sync). A
 *   transaction that runs no statement sends nothing at all.
 * - Statements marked `WITH_NEXT` are not answered on their own: they leave with the transaction's
 *   next statement, at the latest with its `commit`, in the order they were made. They are the writes
 *   nothing waits for: those a transaction keeps until its end (src/hub/cluster/bus.ts) and guarded
 *   writes whose failure refuses the whole transaction (`expectOne` there). Should one fail,
 *   PostgreSQL skips the rest, the statement they left with reports the error, and the transaction is
 *   rolled back as for any other failed statement.
 *
 * - Statements sent `together` (together.ts) leave in one write, with the `begin` if it has not left.
 *
 * Every statement of a transaction is still answered, in order, before the next one is sent, except
 * in the cases above: the server's behaviour is that of the same statements sent one by one.
 */

/**
 * The start of a statement that travels with its transaction's next statement or its `commit`, and
 * is answered then (outside a transaction it runs at once).
 */
export const WITH_NEXT = '/* with next */ ';

/**
 * The text of a query that stands for several (together.ts): its one value is the list of
 * statements, and its rows are their rows, one list per statement.
 */
export const TOGETHER = '/* together */';

/** What `client.query` answers, as Kysely reads it. */
type Answer = Pick<pg.QueryResult, 'command' | 'rowCount' | 'rows'>;

export interface Statement {
  text: string;
  values: unknown[];
}

/** Statements a connection prepares by name beyond the hot ones (each costs the server some memory). */
const MAX_NAMED = 200;

/** Texts seen once (their second run names them), and the names of those seen again. */
const seen = new Set<string>();
const recurring = new Map<string, string>();
/** At most this many texts are remembered; past it, the record starts again. */
const MAX_TEXTS = 2_000;

/**
 * The name of a statement whose text has run before in this process, or undefined. Statements whose
 * result has a `*` are left unnamed: once a migration adds a column, PostgreSQL refuses to run a
 * statement prepared before it whose result it changes (prepared.ts names its columns for this).
 */
function recurringName(text: string): string | undefined {
  const known = recurring.get(text);
  if (known) return known;
  if (STAR.test(text.replaceAll('count(*)', ''))) return undefined;
  if (!seen.has(text)) {
    if (seen.size >= MAX_TEXTS) seen.clear();
    seen.add(text);
    return undefined;
  }
  if (recurring.size >= MAX_TEXTS) recurring.clear();
  const name = `svc_r${createHash('sha256').update(text).digest('hex').slice(0, 20)}`;
  recurring.set(text, name);
  return name;
}

/** A `*` in a result: `select *`, `returning *`, `"t".*` (`count(*)` is taken out before). */
const STAR = /(?:^|[\s,(])(?:"[^"]*"\.)?\*(?=[\s,)]|$)/;

/** The pieces of `pg` this module uses, given by the caller (the driver is loaded lazily). */
export interface PgParts {
  /** pg's result builder (pg/lib/result.js), which parses rows with `types`. */
  Result: new (
    rowMode: undefined,
    types: pg.CustomTypesConfig,
  ) => ResultBuilder;
  /** pg's result builder for a named statement, whose rows its kept shape makes (`shapedResult`). */
  Shaped: new (
    statement: string,
  ) => ResultBuilder;
  prepareValue: (value: unknown) => unknown;
  /** The type parsers every connection of the pool uses. */
  types: pg.CustomTypesConfig;
}

const PG_INT8 = 20;
const PG_NUMERIC = 1700;

/**
 * `PgParts` of the `pg` module. Its `types` are those of every hub connection: ms timestamps are
 * int8, parsed to numbers (they fit well within 2^53).
 */
export function pgParts(pgModule: typeof pg): PgParts {
  const types: pg.CustomTypesConfig = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === PG_INT8 || oid === PG_NUMERIC
        ? (v: string) => Number(v)
        : pgModule.types.getTypeParser(oid, format)) as typeof pgModule.types.getTypeParser,
  };
  const { prepareValue } = (pgModule as unknown as { utils: Pick<PgParts, 'prepareValue'> }).utils;
  const Result = pgModule.Result as unknown as PgParts['Result'];
  return { Result, Shaped: shapedResult(Result, types), prepareValue, types };
}

/** The part of pg's result builder that a submittable drives. */
export interface ResultBuilder extends Answer {
  addFields(fields: unknown[]): void;
  parseRow(fields: unknown[]): unknown;
  addRow(row: unknown): void;
  addCommandComplete(msg: unknown): void;
}

const nothing = (command: string): Answer => ({ command, rowCount: null, rows: [] });

/** Kysely's client for one pooled connection (one per connection, kept while it lives). */
export function pipelinedClient(client: pg.PoolClient, parts: PgParts): PostgresPoolClient {
  /** In a transaction whose `begin` has not left yet. */
  let beginPending = false;
  /** In a transaction (begun on the server or not). */
  let inTransaction = false;
  /** Statements that leave with the transaction's next one (`WITH_NEXT`), in order. */
  let ahead: Statement[] = [];
  /** The connection's statements prepared by name (pg's own record, which `client.query` keeps too). */
  const parsed = (client as unknown as { connection: PgConnection }).connection;
  const nameOf = (text: string): string | undefined => {
    const hot = statementName(text);
    if (hot) return hot;
    const name = recurringName(text);
    if (!name || name in parsed.parsedStatements || name in parsed.submittedNamedStatements) return name;
    // A connection prepares at most so many statements beyond the hot ones: the rest run unnamed.
    return Object.keys(parsed.parsedStatements).length < MAX_NAMED ? name : undefined;
  };
  // A named statement goes as a pipeline of one, whose rows are made by its kept shape.
  const run = (text: string, values: unknown[]): Promise<Answer> => {
    const name = nameOf(text);
    return name
      ? pipeline([{ text, values }], [name]).then((answers) => answers[0]!)
      : client.query(text, values);
  };
  /**
   * Sends `statements` together, each under its name (`nameOf`); throws at once, having sent
   * nothing, when a value cannot be sent.
   */
  const pipeline = (
    statements: Statement[],
    names = statements.map((s) => nameOf(s.text)),
  ): Promise<Answer[]> => {
    const mapped = statements.map((s, i) => ({
      text: s.text,
      name: names[i],
      values: s.values.map(parts.prepareValue),
    }));
    return new Promise((resolve, reject) => {
      client.query(new Pipeline(mapped, parts, resolve, reject) as unknown as pg.QueryConfig);
    });
  };
  /**
   * Sends `statements` with what must leave before them: the transaction's `begin` if it has not
   * left, and the statements kept for the next one (`WITH_NEXT`). Answers the statements given.
   */
  const withPending = (statements: Statement[]): Promise<Answer[]> => {
    const before = [...(beginPending ? [BEGIN] : []), ...ahead];
    // Built first: a value that cannot be sent throws here, having sent nothing.
    const sent =
      before.length === 0
        ? pipeline(statements)
        : pipeline([...before, ...statements]).then((answers) => answers.slice(before.length));
    beginPending = false;
    ahead = [];
    return sent;
  };
  const end = (text: 'commit' | 'rollback'): Promise<Answer> => {
    const sent =
      text === 'commit' && ahead.length > 0
        ? withPending([{ text, values: [] }]).then((answers) => answers[0]!)
        : beginPending
          ? Promise.resolve(nothing(text.toUpperCase()))
          : run(text, []);
    ahead = [];
    beginPending = false;
    inTransaction = false;
    return sent;
  };
  const query = async (text: string, values: unknown[] = []): Promise<Answer> => {
    if (typeof text !== 'string') return client.query(text as unknown as pg.QueryConfig, values);
    if (text === 'begin') {
      beginPending = true;
      inTransaction = true;
      ahead = [];
      return nothing('BEGIN');
    }
    if (text === 'commit' || text === 'rollback') return end(text);
    if (text === TOGETHER) {
      const answers = await withPending(values[0] as Statement[]);
      return { command: 'SELECT', rowCount: answers.length, rows: answers.map((a) => a.rows) };
    }
    if (inTransaction && text.startsWith(WITH_NEXT)) {
      ahead.push({ text, values });
      return nothing('SELECT');
    }
    if (beginPending || ahead.length > 0) return (await withPending([{ text, values }]))[0]!;
    if (/^start transaction/i.test(text)) inTransaction = true;
    return run(text, values);
  };
  return {
    query: query as unknown as PostgresPoolClient['query'],
    release: () => {
      beginPending = false;
      inTransaction = false;
      ahead = [];
      client.release();
    },
  };
}

const BEGIN: Statement = { text: 'begin', values: [] };

/** A column of a RowDescription message, as pg reads it. */
interface Field {
  name: string;
  dataTypeID: number;
  format?: string;
}

/** The rows of a named statement: their columns, each column's parser, the function that makes them. */
interface Shape {
  fields: readonly Field[];
  parsers: ((value: string) => unknown)[];
  make: RowMaker;
}

/**
 * Shapes by statement name: a name stands for one text on every connection of the process. pg builds
 * a result's parsers and a dictionary-mode template for every execution (the server describes each
 * one's columns), then copies the template for each row: 30 µs for one row of fifty columns here,
 * against 2 µs with the shape kept and a row maker compiled once (row-maker.ts).
 */
const shapes = new Map<string, Shape>();
/** Shapes kept at most; past it, the record starts again. */
const MAX_SHAPES = 2_000;

function shapeOf(name: string, fields: readonly Field[], types: pg.CustomTypesConfig): Shape | null {
  const kept = shapes.get(name);
  // A migration may have changed a column's type: the columns are compared, not trusted.
  if (kept && sameFields(kept.fields, fields)) return kept;
  if (fields.some((f) => f.format === 'binary')) return null;
  const make = rowMaker(
    fields.map((f) => f.name),
    true,
  );
  if (!make) return null;
  const parsers = fields.map((f) => types.getTypeParser(f.dataTypeID, 'text') as (value: string) => unknown);
  if (shapes.size >= MAX_SHAPES) shapes.clear();
  const shape = { fields, parsers, make };
  shapes.set(name, shape);
  return shape;
}

function sameFields(a: readonly Field[], b: readonly Field[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i]!.name !== b[i]!.name || a[i]!.dataTypeID !== b[i]!.dataTypeID || a[i]!.format !== b[i]!.format)
      return false;
  }
  return true;
}

/** pg's result builder, for a named statement: rows made by its kept shape (pg's way without one). */
function shapedResult(Base: PgParts['Result'], types: pg.CustomTypesConfig): PgParts['Shaped'] {
  return class extends Base {
    private shape: Shape | null = null;
    constructor(private readonly statement: string) {
      super(undefined, types);
    }
    override addFields(fields: unknown[]): void {
      this.shape = shapeOf(this.statement, fields as Field[], types);
      if (this.shape) (this as unknown as { fields: unknown[] }).fields = fields;
      else super.addFields(fields);
    }
    override parseRow(values: unknown[]): unknown {
      return this.shape ? this.shape.make(values, this.shape.parsers) : super.parseRow(values);
    }
  };
}

/**
 * Several statements in one write, each Parse/Bind/Describe/Execute, and one Sync: one reply. A
 * `pg` submittable (the interface pg-cursor uses): the client routes the server's messages here.
 * The first error ends it (the server skips the rest until the Sync).
 */
class Pipeline {
  private readonly results: ResultBuilder[];
  private index = 0;
  private failed: unknown = null;
  /** Called when the pipeline's reply has arrived (set by `submit`). */
  private done = () => {};

  constructor(
    private readonly statements: readonly (Statement & { name: string | undefined })[],
    parts: PgParts,
    private readonly resolve: (answers: Answer[]) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.results = statements.map((s) =>
      s.name ? new parts.Shaped(s.name) : new parts.Result(undefined, parts.types),
    );
  }

  submit(connection: PgConnection): void {
    // The statements this pipeline parses, in order: each ParseComplete is the next one's, and pg's
    // record of the connection's named statements learns of those (as `client.query` does for its
    // own). The pipeline ends at its reply, or at an error (pg then sends it nothing more): those
    // the server skipped after an error were never prepared.
    const parsing: { name: string; text: string }[] = [];
    const onParsed = () => {
      const s = parsing.shift();
      if (!s?.name) return;
      connection.parsedStatements[s.name] = s.text;
      delete connection.submittedNamedStatements[s.name];
    };
    connection.on('parseComplete', onParsed);
    this.done = () => {
      connection.off('parseComplete', onParsed);
      for (const s of parsing) if (s.name) delete connection.submittedNamedStatements[s.name];
      parsing.length = 0;
    };
    connection.stream.cork?.();
    try {
      for (const s of this.statements) {
        const name = s.name ?? '';
        if (!name || !(name in connection.parsedStatements || name in connection.submittedNamedStatements)) {
          connection.parse({ text: s.text, name, types: [] });
          parsing.push({ name, text: s.text });
          if (name) connection.submittedNamedStatements[name] = s.text;
        }
        connection.bind({ portal: '', statement: name, values: s.values });
        connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '', rows: 0 });
      }
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
  }

  handleRowDescription(msg: { fields: unknown[] }): void {
    this.results[this.index]?.addFields(msg.fields);
  }

  handleDataRow(msg: { fields: unknown[] }): void {
    const result = this.results[this.index];
    if (!result || this.failed) return;
    try {
      result.addRow(result.parseRow(msg.fields));
    } catch (err) {
      this.failed = err;
    }
  }

  handleCommandComplete(msg: unknown): void {
    this.results[this.index]?.addCommandComplete(msg);
    this.index++;
  }

  handleEmptyQuery(): void {
    this.index++;
  }

  handleError(err: unknown): void {
    this.done();
    this.reject(err);
  }

  handleReadyForQuery(): void {
    this.done();
    if (this.failed) this.reject(this.failed);
    else this.resolve(this.results);
  }

  handlePortalSuspended(): void {}
  handleCopyInResponse(connection: PgConnection): void {
    connection.sendCopyFail('no COPY in a pipeline');
  }
  handleCopyData(): void {}
}

/** The protocol writer of a `pg` connection (pg/lib/connection.js), as a submittable drives it. */
interface PgConnection {
  stream: { cork?(): void; uncork?(): void };
  /** Named statements prepared on this connection, and those sent but not yet confirmed (name → text). */
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  on(event: 'parseComplete', listener: () => void): void;
  off(event: 'parseComplete', listener: () => void): void;
  parse(m: { text: string; name: string; types: unknown[] }): void;
  bind(m: { portal: string; statement: string; values: unknown[] }): void;
  describe(m: { type: 'P'; name: string }): void;
  execute(m: { portal: string; rows: number }): void;
  sync(): void;
  sendCopyFail(message: string): void;
}
