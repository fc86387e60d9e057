/**
 * Runs every bench/*.bench.ts in sequence and prints its results. A bench module exports
 * `default: () => Promise<BenchResult[]>`; each result compares a measurement with a baseline
 * taken in the same run on the same machine, so the ratio is what to watch, not the raw numbers.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface BenchResult {
  name: string;
  unit: string;
  value: number;
  baseline: { name: string; value: number };
  /** Whether a higher value is better (throughput) or lower (latency). */
  higherIsBetter: boolean;
}

const dir = path.dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

for (const file of files) {
  const mod = (await import(pathToFileURL(path.join(dir, file)).href)) as {
    default: () => Promise<BenchResult[]>;
  };
  console.log(`\n# ${file}`);
  const started = performance.now();
  for (const r of await mod.default()) {
    const ratio = r.value / r.baseline.value;
    console.log(
      `${r.name.padEnd(44)} ${fmt(r.value).padStart(9)} ${r.unit.padEnd(8)} ` +
        `baseline (${r.baseline.name}) ${fmt(r.baseline.value)} ${r.unit}  ` +
        `ratio ${ratio.toFixed(2)}${r.higherIsBetter ? ' (of baseline throughput)' : ' (× baseline latency)'}`,
    );
  }
  console.log(`(${((performance.now() - started) / 1000).toFixed(1)} s)`);
}
