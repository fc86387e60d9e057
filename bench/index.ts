/**
 * `npm run bench [-- FILTER…] [-- --write-docs]`: runs every bench/*.bench.ts (or those whose file
 * name contains a FILTER, e.g. `idle`, `runs`) in sequence and prints a table per file. A bench
 * module exports `default: () => Promise<BenchResult[]>`; each result compares a measurement with
 * a baseline taken in the same run on the same machine, so the ratio is what to watch, not the raw
 * numbers. `--write-docs` also writes each file's table, with the machine it ran on, into
 * docs/benchmarks.md (the sections of benches not run are kept).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Machine, machine } from './lib/util.js';

export interface BenchResult {
  name: string;
  unit: string;
  value: number;
  baseline: { name: string; value: number };
  /** Whether a higher value is better (throughput) or lower (latency, memory). */
  higherIsBetter: boolean;
  /** Anything a reader needs to trust or read the number (sample size, a caveat). */
  note?: string;
}

const dir = path.dirname(fileURLToPath(import.meta.url));
const DOCS = path.join(dir, '..', 'docs', 'benchmarks.md');
const args = process.argv.slice(2);
const writeDocs = args.includes('--write-docs');
const filters = args.filter((a) => !a.startsWith('--'));
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

const fmt = (n: number) =>
  !Number.isFinite(n)
    ? String(n)
    : Math.abs(n) >= 100
      ? Math.round(n).toLocaleString('en-US')
      : Math.abs(n) >= 10
        ? n.toFixed(1)
        : n.toFixed(2);
const ratioOf = (r: BenchResult) =>
  `${(r.value / r.baseline.value).toFixed(2)} (${r.higherIsBetter ? 'higher' : 'lower'} is better)`;

function printTable(results: BenchResult[]) {
  const rows = results.map((r) => [
    r.name,
    `${fmt(r.value)} ${r.unit}`,
    `${r.baseline.name}: ${fmt(r.baseline.value)} ${r.unit}`,
    ratioOf(r),
  ]);
  const head = ['benchmark', 'value', 'baseline (same run)', 'ratio'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 1 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ');
  console.log(line(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
  for (const r of results) if (r.note) console.log(`  · ${r.name}: ${r.note}`);
}

function markdownSection(file: string, results: BenchResult[], m: Machine, seconds: number): string {
  const esc = (s: string) => s.replaceAll('|', '\\|');
  return [
    `<!-- bench:${file} -->`,
    `### ${file}`,
    '',
    `${m.date}; ${m.cpu}, ${m.cores} cores, ${m.ramGiB} GiB RAM, Node ${m.node}, ` +
      `PostgreSQL ${m.postgres ?? 'unavailable'}, ${m.os}; load average ${m.load} at the start; took ${seconds.toFixed(0)} s.`,
    '',
    '| benchmark | value | baseline (same run) | ratio | note |',
    '|---|--:|---|--:|---|',
    ...results.map(
      (r) =>
        `| ${esc(r.name)} | ${fmt(r.value)} ${r.unit} | ${esc(r.baseline.name)}: ${fmt(r.baseline.value)} ${r.unit} ` +
        `| ${ratioOf(r)} | ${esc(r.note ?? '')} |`,
    ),
    `<!-- /bench:${file} -->`,
  ].join('\n');
}

/** Replaces (or adds) each file's section between the generated markers of docs/benchmarks.md. */
function updateDocs(sections: Map<string, string>) {
  const START = '<!-- bench:generated:start -->';
  const END = '<!-- bench:generated:end -->';
  let text = readFileSync(DOCS, 'utf8');
  if (!text.includes(START) || !text.includes(END)) text = `${text.trimEnd()}\n\n${START}\n${END}\n`;
  const [before, rest] = text.split(START) as [string, string];
  const [generated, after] = rest.split(END) as [string, string];
  const all = new Map<string, string>();
  for (const m of generated.matchAll(/<!-- bench:(\S+) -->[\s\S]*?<!-- \/bench:\1 -->/g))
    all.set(m[1]!, m[0]);
  for (const [file, s] of sections) all.set(file, s);
  const body = [...all.keys()]
    .sort()
    .map((k) => all.get(k)!)
    .join('\n\n');
  writeFileSync(DOCS, `${before}${START}\n\n${body}\n\n${END}${after}`);
}

const m = await machine();
console.log(
  `${m.date}: ${m.cpu}, ${m.cores} cores, ${m.ramGiB} GiB RAM, Node ${m.node}, ` +
    `PostgreSQL ${m.postgres ?? 'unavailable'}, load average ${m.load}`,
);
const sections = new Map<string, string>();
let failed = false;
for (const file of files) {
  const mod = (await import(pathToFileURL(path.join(dir, file)).href)) as {
    default: () => Promise<BenchResult[]>;
  };
  console.log(`\n# ${file}`);
  const started = performance.now();
  try {
    const results = await mod.default();
    const seconds = (performance.now() - started) / 1000;
    printTable(results);
    console.log(`(${seconds.toFixed(1)} s)`);
    sections.set(file, markdownSection(file, results, m, seconds));
  } catch (err) {
    failed = true;
    console.error(`${file} failed:`, err);
  }
}
if (writeDocs && sections.size > 0) {
  updateDocs(sections);
  console.log(`\nwrote ${path.relative(process.cwd(), DOCS)}`);
}
// Pools, agents and timers of a bench must not keep the run alive once every result is in.
process.exit(failed ? 1 : 0);
