import { type SelectQueryBuilder, sql } from 'kysely';
import { AppError } from '../../shared/errors.js';

/**
 * Cursor paging over time-ordered ids (UUID v7): the cursor is the last id of the previous page,
 * base64url-encoded so clients treat it as opaque. A list ordered by another unique column (a
 * setting's key) passes the pattern its values follow.
 */
export function decodeCursor(cursor: string | undefined, valid: RegExp = /^[0-9a-f-]{36}$/): string | null {
  if (cursor === undefined) return null;
  const v = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!valid.test(v)) {
    throw new AppError('invalid_params', 'cursor: is not a cursor from a previous page', {
      issues: [{ field: 'cursor', message: 'is not a cursor from a previous page' }],
    });
  }
  return v;
}

/** Given `limit + 1` rows, the page and the cursor of the next one. */
export function pageOf<T>(
  rows: T[],
  limit: number,
  idOf: (row: T) => string,
): { data: T[]; next_cursor: string | null } {
  if (rows.length <= limit) return { data: rows, next_cursor: null };
  const data = rows.slice(0, limit);
  return { data, next_cursor: Buffer.from(idOf(data[data.length - 1]!)).toString('base64url') };
}

/**
 * One page of a query ordered by a unique, time-ordered id column (`id` by default, or a qualified
 * `users.id` in a join): applies the cursor, the order and `limit + 1`, and returns the page.
 */
export async function keysetPage<O extends Record<string, unknown>>(
  // biome-ignore lint/suspicious/noExplicitAny: any table and selection; the column is given by name
  q: SelectQueryBuilder<any, any, O>,
  input: { limit: number; cursor?: string | undefined },
  column = 'id',
): Promise<{ data: O[]; next_cursor: string | null }> {
  const after = decodeCursor(input.cursor);
  const key = column.split('.').pop()!;
  const rows = await (after ? q.where(sql.ref(column), '>', after) : q)
    .orderBy(sql.ref(column))
    .limit(input.limit + 1)
    .execute();
  return pageOf(rows, input.limit, (r) => String(r[key]));
}
