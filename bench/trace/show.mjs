#!/usr/bin/env node
// Reads the stamps bench/trace/preload.cjs wrote ($SVC_TRACE_DIR, default /tmp/svc-trace).
//   node bench/trace/show.mjs run N [PID…]   the steps of the N-th `runs/new` (from its request to the
//                                            next one), in time order, across the processes given
//                                            (default: every file), each with its time from the request
//   node bench/trace/show.mjs statements PID  each statement of one process: count, total ms, rows
//                                            per read (SQLite), text
//   node bench/trace/show.mjs trips PID RUNS  one process's PostgreSQL round trips (a pipeline is one)
//                                            and statements per run, by the statements they carry
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.env.SVC_TRACE_DIR ?? '/tmp/svc-trace';
const [what, ...rest] = process.argv.slice(2);
const pidsOf = (given) =>
  given.length > 0
    ? given
    : readdirSync(dir)
        .map((f) => /^trace\.(\d+)\.json$/.exec(f)?.[1])
        .filter(Boolean);
const stampsOf = (pid) =>
  JSON.parse(readFileSync(path.join(dir, `trace.${pid}.json`), 'utf8')).map((s) => [pid, ...s]);

if (what === 'run') {
  const [n, ...pids] = rest;
  const stamps = pidsOf(pids)
    .flatMap(stampsOf)
    .sort((a, b) => a[2] - b[2]);
  const starts = stamps.flatMap((s, i) => (s[1] === 'req' && s[4] === '/v1/runs/new' ? [i] : []));
  const first = starts[Number(n ?? 0)];
  if (first === undefined) throw new Error(`no runs/new number ${n} (${starts.length} in all)`);
  const t0 = stamps[first][2];
  for (const [pid, kind, start, end, text] of stamps.slice(first, starts[Number(n) + 1] ?? stamps.length)) {
    const took = end ? ` (${(end - start).toFixed(2)} ms)` : '';
    console.log(`${(start - t0).toFixed(2).padStart(8)} ${pid} ${kind.padEnd(5)} ${text}${took}`);
  }
} else if (what === 'statements') {
  const counts = new Map();
  for (const [, kind, start, end, text, rows] of stampsOf(rest[0])) {
    if (kind !== 'pg' && kind !== 'sql') continue;
    const c = counts.get(text) ?? { n: 0, ms: 0, rows: 0, reads: 0 };
    c.n++;
    c.ms += end - start;
    if (rows !== undefined) {
      c.rows += rows;
      c.reads++;
    }
    counts.set(text, c);
  }
  console.log('  count     total  rows/read  text');
  for (const [text, c] of [...counts].sort((a, b) => b[1].ms - a[1].ms).slice(0, 40)) {
    const rows = c.reads ? (c.rows / c.reads).toFixed(1) : '';
    console.log(`${String(c.n).padStart(7)} ${c.ms.toFixed(1).padStart(9)} ms ${rows.padStart(6)}  ${text}`);
  }
} else if (what === 'trips') {
  const [pid, runs] = rest;
  const per = (n) => (n / Number(runs)).toFixed(2);
  const shapes = new Map();
  let trips = 0;
  let statements = 0;
  for (const [, kind, , , text] of stampsOf(pid)) {
    if (kind !== 'pg') continue;
    const parts = text.startsWith('pipeline ') ? text.slice('pipeline '.length).split(' | ') : [text];
    trips++;
    statements += parts.length;
    const shape = parts.map((p) => p.replace('/* with next */ ', '').slice(0, 28)).join(' | ');
    const c = shapes.get(shape) ?? { trips: 0, statements: 0 };
    c.trips++;
    c.statements += parts.length;
    shapes.set(shape, c);
  }
  console.log(
    `${per(trips)} round trips and ${per(statements)} statements per run (${trips} and ${statements})`,
  );
  console.log(' trips/run  statements  shape');
  for (const [shape, c] of [...shapes].sort((a, b) => b[1].trips - a[1].trips).slice(0, 25)) {
    console.log(`${per(c.trips).padStart(10)} ${String(c.statements).padStart(11)}  ${shape.slice(0, 120)}`);
  }
} else {
  console.error('usage: show.mjs run N [PID…] | show.mjs statements PID | show.mjs trips PID RUNS');
  process.exit(2);
}
