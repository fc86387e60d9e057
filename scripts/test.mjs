#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with node's test runner (through tsx), on the database
// named by SVC_TEST_DB (sqlite or postgres). Extra arguments filter files by substring.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';

const filters = process.argv.slice(2);
const files = [];
function walk(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name.endsWith('.test.ts') && (filters.length === 0 || filters.some((f) => p.includes(f))))
      files.push(p);
  }
}
walk('src');
walk('test');
files.sort();
const db = process.env.SVC_TEST_DB ?? 'sqlite';
console.log(`# ${files.length} test files on ${db}`);
// test/helpers/leaks.ts fails a test file that leaves a socket, server, child process, timer or
// database file open when its tests are done, names it, and ends that file's process.
const r = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--import',
    './test/helpers/leaks.ts',
    '--test',
    '--test-concurrency=2',
    '--test-reporter=spec',
    ...files,
  ],
  {
    stdio: 'inherit',
    env: { ...process.env, SVC_TEST_DB: db, SVC_LOG_LEVEL: process.env.SVC_LOG_LEVEL ?? 'silent' },
  },
);
process.exit(r.status ?? 1);
