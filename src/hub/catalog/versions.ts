import semver from 'semver';
import { isUniqueViolation } from '../../db/index.js';
import { conflict } from '../../shared/errors.js';

/** Newest first: semantic versions by precedence, others after them by natural order, descending. */
export function compareVersionsDesc(a: string, b: string): number {
  const va = semver.valid(a) ?? semver.valid(semver.coerce(a));
  const vb = semver.valid(b) ?? semver.valid(semver.coerce(b));
  if (va && vb) {
    const c = semver.rcompare(va, vb);
    if (c !== 0) return c;
  } else if (va || vb) {
    return va ? -1 : 1;
  }
  return b.localeCompare(a, 'en', { numeric: true });
}

/**
 * Registers one (org, name, version): insert, and on the unique constraint either refuse
 * (`conflict`) or, with `force`, overwrite. Returns whether a new row was created. The database's
 * unique constraint decides races, so two concurrent registrations never both create.
 */
export async function registerVersion(
  what: string,
  force: boolean,
  insert: () => Promise<void>,
  overwrite: () => Promise<number>,
): Promise<boolean> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await insert();
      return true;
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      if (!force) throw conflict(`${what} is already registered; use force to overwrite it`);
      if ((await overwrite()) > 0) return false;
      // Removed between our insert and update: try again.
    }
  }
  throw conflict(`${what} changed concurrently; try again`);
}

/** Offset cursors for lists sorted in memory (catalog lists are sorted by version precedence). */
export function offsetPage<T>(rows: T[], limit: number, cursor: string | undefined) {
  const start = cursor ? Number(Buffer.from(cursor, 'base64url').toString('utf8').replace(/^o:/, '')) : 0;
  const from = Number.isInteger(start) && start >= 0 ? start : 0;
  const data = rows.slice(from, from + limit);
  const next = from + limit < rows.length ? Buffer.from(`o:${from + limit}`).toString('base64url') : null;
  return { data, next_cursor: next };
}

/** Sorts catalog rows by name, newest version first within a name. */
export function byNameNewestFirst<T extends { name: string; version: string }>(rows: T[]): T[] {
  return rows.sort((a, b) => a.name.localeCompare(b.name) || compareVersionsDesc(a.version, b.version));
}

/** The newest of some versions of one name, or null. */
export function newest<T extends { version: string }>(rows: T[]): T | null {
  return rows.sort((a, b) => compareVersionsDesc(a.version, b.version))[0] ?? null;
}
