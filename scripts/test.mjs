#!/usr/bin/env node
// The test suite: every *.test.ts under src/ and test/ with node's test runner, two files at a time,
// each in a process of its own, on the database named by SVC_TEST_DB (sqlite or postgres). Extra
// arguments keep the files whose path contains one of them (`node scripts/test.mjs cli-runs`).
//
// How a run goes, and what keeps it fast without making it shorter:
// - The sources are transpiled first (scripts/transpile.mjs, about two seconds) into .test-dist/, a
//   tree shaped like the repository, and the test files run from there in plain node with source maps
//   on: loading through tsx's hooks instead costs each file's process about 1.5 s of CPU. Failures
//   name the .ts lines. Every `svc` the tests start runs a bundle of the same sources, built into
//   the tree as `npm run build` builds dist/ (bin/svc.js with SVC_CLI_DIST, see test/helpers/cli.ts),
//   never a stale dist/: a hub or daemon it starts is ready in a third of the time the unbundled
//   modules take, and the suite starts many. A single file still runs on its own
//   from the sources: `node --import tsx --import ./test/helpers/leaks.ts --test <file>`.
// - A test hub starts on a database copied from a migrated template instead of migrating a fresh one
//   (test/helpers/db.ts `migratedTestDatabase`): a SQLite file copy, or on PostgreSQL a database
//   cloned by CREATE DATABASE … TEMPLATE.
// - Test hubs hash passwords at scrypt's lowest cost (test/helpers/hub.ts `TEST_PASSWORD_COST`): the
//   suite makes some 700 hashes, which at the real cost took a minute and a half of CPU.
// - test/helpers/leaks.ts fails a file that leaves a socket, server, child process, timer or database
//   file open when its tests are done, names it, and ends that file's process.
// - At the end the slowest files are listed with their times (scripts/test-times.mjs); SVC_TEST_TIMES=
//   <file> writes every file's time as JSON, to compare runs (on the same database and machine load).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { transpile } from './transpile.mjs';

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
const started = Date.now();
const { tree, bundle } = await transpile();
const rel = path.relative('.', tree);
console.log(
  `# ${files.length} test files on ${db}, transpiled into ${rel} and the CLI bundled in ${Date.now() - started} ms`,
);
const r = spawnSync(
  process.execPath,
  [
    '--enable-source-maps',
    '--import',
    `./${rel}/test/helpers/leaks.js`,
    '--test',
    '--test-concurrency=2',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=./scripts/test-times.mjs',
    '--test-reporter-destination=stdout',
    ...files.map((f) => path.join(rel, f.replace(/\.ts$/, '.js'))),
  ],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      SVC_TEST_DB: db,
      // SVC_TEST_CLI_DIST=dist runs the tests' `svc` from the build instead (npm run build first),
      // SVC_TEST_CLI_DIST=.test-dist/src from the transpiled modules, unbundled.
      SVC_TEST_CLI_DIST: process.env.SVC_TEST_CLI_DIST ? path.resolve(process.env.SVC_TEST_CLI_DIST) : bundle,
      SVC_LOG_LEVEL: process.env.SVC_LOG_LEVEL ?? 'silent',
    },
  },
);
process.exit(r.status ?? 1);
