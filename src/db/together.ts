import { type Compilable, CompiledQuery, type Kysely } from 'kysely';
import { isPostgres } from './index.js';
import { type Statement, TOGETHER } from './pg-client.js';

/**
 * Statements that do not depend on each other's results, in one round trip: on PostgreSQL one
 * pipeline (pg-client.ts), which carries its transaction's `begin` too when that has not left yet;
 * on SQLite, where a statement costs no round trip, one after the other. Answers each statement's
 * rows, in order. A statement that fails fails the call (and on PostgreSQL the server skips those
 * after it), as it would have failed its transaction.
 */
// biome-ignore lint/suspicious/noExplicitAny: works for any schema
export async function together(db: Kysely<any>, queries: readonly Compilable[]): Promise<unknown[][]> {
  const compiled = queries.map((q) => q.compile());
  if (compiled.length === 0) return [];
  if (!isPostgres(db) || compiled.length === 1) {
    const out: unknown[][] = [];
    for (const c of compiled) out.push((await db.executeQuery(c)).rows as unknown[]);
    return out;
  }
  const statements: Statement[] = compiled.map((c) => ({ text: c.sql, values: [...c.parameters] }));
  const { rows } = await db.executeQuery(CompiledQuery.raw(TOGETHER, [statements]));
  return rows as unknown[][];
}
