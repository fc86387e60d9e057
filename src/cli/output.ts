/**
 * Human output: aligned tables and key/value records, small and dependency-free. `--json` bypasses
 * all of this and prints the hub's reply as it came.
 */

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

/** `col('ID', 'id')` or `col('OWNER', (o) => o.owner.email)`. */
export function col<T>(header: string, key: keyof T | ((row: T) => unknown)): Column<T> {
  return { header, value: typeof key === 'function' ? key : (row: T) => row[key] };
}

/** One cell: `-` for nothing, times in UTC for `*_at` fields (see `time`), no line breaks. */
export function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v).replace(/[\r\n\t]+/g, ' ');
}

/** Integer milliseconds (or an ISO string) as `2024-05-01 12:00:00Z`; nothing as `-`. */
export function time(v: unknown): string {
  if (v === null || v === undefined) return '-';
  const d = new Date(typeof v === 'number' || typeof v === 'string' ? v : Number.NaN);
  if (Number.isNaN(d.getTime())) return cell(v);
  return `${d.toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** Columns padded to their widest cell, separated by two spaces, no trailing blanks. */
export function formatTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const grid = [columns.map((c) => c.header), ...rows.map((r) => columns.map((c) => cell(c.value(r))))];
  const widths = columns.map((_, i) => Math.max(...grid.map((line) => line[i]!.length)));
  return grid
    .map((line) =>
      line
        .map((v, i) => (i === line.length - 1 ? v : v.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}

/** Labels and values, the labels padded: for one record (`get`, `whoami`). */
export function formatRecord(fields: readonly (readonly [string, unknown])[]): string {
  const width = Math.max(0, ...fields.map(([k]) => k.length));
  return fields
    .map(([k, v]) => `${`${k}:`.padEnd(width + 1)}  ${cell(v)}`.trimEnd())
    .join('\n')
    .concat('\n');
}
