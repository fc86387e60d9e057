// A reporter for node's test runner (scripts/test.mjs adds it beside the spec reporter): once the
// suite is done it prints the slowest test files, each with its wall time from the start of its
// process to its end, and writes every file's time as JSON to SVC_TEST_TIMES when that names a file.
// Compare such lists like with like: the same database, the same machine load (`uptime`).
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const SHOWN = 12;

/** The test file's own path: scripts/test.mjs runs its compiled copy in .test-dist/. */
const sourceOf = (file) =>
  path
    .relative(process.cwd(), file)
    .replace(/^\.test-dist\//, '')
    .replace(/\.js$/, '.ts');

export default async function* times(source) {
  const files = [];
  for await (const event of source) {
    const d = event.data;
    // Each test file is one subtest of the run, named by its path, at nesting 0.
    if (event.type === 'test:complete' && d.nesting === 0 && d.file && d.name === d.file)
      files.push({ file: sourceOf(d.file), ms: Math.round(d.details.duration_ms) });
  }
  files.sort((a, b) => b.ms - a.ms);
  if (process.env.SVC_TEST_TIMES)
    writeFileSync(process.env.SVC_TEST_TIMES, `${JSON.stringify(files, null, 1)}\n`);
  const total = files.reduce((s, f) => s + f.ms, 0);
  yield `\n# the slowest of ${files.length} test files (${(total / 1000).toFixed(0)} s in all, two at a time):\n`;
  for (const f of files.slice(0, SHOWN)) yield `#   ${(f.ms / 1000).toFixed(1).padStart(6)} s  ${f.file}\n`;
}
