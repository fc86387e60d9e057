/** Turns a row's values, in column order, into an object (`parsers` parse the values that are not null). */
export type RowMaker = (
  values: readonly unknown[],
  parsers?: readonly ((value: never) => unknown)[],
) => unknown;

/**
 * A function compiled for a statement's columns that makes its rows: a drivers' row object built a
 * property at a time (better-sqlite3 through V8's C++ API, pg from a dictionary-mode template) costs
 * more than the query itself for a row of fifty columns, where one object literal takes the shapes V8
 * shares. Keys are the column names as JSON string literals; a duplicate name keeps its last value,
 * as the drivers' own objects do. With `parsed`, each value that is not null goes through its
 * column's parser. Null when a name is `__proto__` (a literal's `__proto__:` would set the
 * prototype): such rows are left to the driver.
 */
export function rowMaker(names: readonly string[], parsed: boolean): RowMaker | null {
  if (names.includes('__proto__')) return null;
  const last = new Map(names.map((n, i) => [n, i]));
  const value = (i: number) => (parsed ? `v[${i}] === null ? null : p[${i}](v[${i}])` : `v[${i}]`);
  const fields = [...last].map(([n, i]) => `${JSON.stringify(n)}: ${value(i)}`).join(', ');
  return new Function('v', 'p', `return { ${fields} };`) as RowMaker;
}
