#!/usr/bin/env node
// The `svc` executable: runs the built CLI (dist/cli.cjs, npm run build), or the TypeScript sources
// through tsx in a checkout that has not been built (or when SVC_CLI_SOURCE=1, so that a stale dist/
// is never what runs). SVC_CLI_DIST=<dir> runs another build, <dir>/cli.cjs, or else <dir>/cli/index.js
// of a tree laid out like src/ in JavaScript: the suite's fresh transpile of the sources
// (scripts/transpile.mjs, see README.md "Development").
//
// The bundle runs with V8's code cache (docs/operations.md "Start-up"): its compiled code is kept in
// dist/cli.cjs.<node>-<arch>.<kind>.cache beside it (kind: hub, daemon, dev, or cli for the other
// commands), written when a run ends if the cache was missing or unusable, or after a long run that
// compiled more than it holds, so that the next start does not parse 4 MB of JavaScript again. Only
// whoever may write dist/ may write it; when dist/ is read-only, nothing is kept.
//
// A CommonJS script (bin/package.json), so that Node starts it without its ES module loader: about
// 10 ms of every start here.
'use strict';
const { existsSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } = require('node:fs');
const { createRequire } = require('node:module');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const vm = require('node:vm');

/** A run this long (ms) may replace a usable code cache with a fuller one. */
const LONG_RUN_MS = 2000;

const tree = process.env.SVC_CLI_DIST;
const bundle = tree ? path.resolve(tree, 'cli.cjs') : path.join(__dirname, '..', 'dist', 'cli.cjs');
if (tree && !existsSync(bundle)) {
  import(pathToFileURL(path.resolve(tree, 'cli', 'index.js')).href);
} else if (tree || (existsSync(bundle) && process.env.SVC_CLI_SOURCE !== '1')) {
  runCached(bundle);
} else {
  import('tsx/esm/api').then(({ register }) => {
    register();
    return import(pathToFileURL(path.join(__dirname, '..', 'src', 'cli', 'index.ts')).href);
  });
}

/**
 * Which cache a command uses: each server has its own, and the other commands share one, so that a
 * short command run first after a build (which compiles little of the servers' code) does not leave
 * the hub or the daemon a cache that lacks most of theirs.
 */
function cacheKind(args) {
  const command = args.find((a) => !a.startsWith('-'));
  return command === 'hub' || command === 'daemon' || command === 'dev' ? command : 'cli';
}

/**
 * Runs a CommonJS file as `require` would, with its compiled code cached beside it. The build writes
 * it in ASCII (scripts/build-cli.mjs), which latin1 reads as a plain copy: a third of UTF-8's time.
 * The cache starts with the file's identity (inode, size, modification time in ns): V8 itself checks
 * only the source's length, so a rebuilt or edited bundle of the same length would otherwise run the
 * old code.
 */
function runCached(file) {
  const cacheFile = `${file}.${process.version}-${process.arch}.${cacheKind(process.argv.slice(2))}.cache`;
  const st = statSync(file, { bigint: true });
  const key = Buffer.from(`${st.ino}:${st.size}:${st.mtimeNs}\n`);
  let cached;
  try {
    const raw = readFileSync(cacheFile);
    if (raw.subarray(0, key.length).equals(key)) cached = raw.subarray(key.length);
  } catch {
    cached = undefined;
  }
  const wrapper = `(function (exports, require, module, __filename, __dirname) {${readFileSync(file, 'latin1')}\n})`;
  const script = new vm.Script(wrapper, { filename: file, cachedData: cached });
  const stale = cached === undefined || script.cachedDataRejected === true;
  process.once('exit', () => {
    // Making the cache costs about 20 ms: a short run (most commands) only replaces a missing or
    // unusable one; a long one (hub, daemon, a watch) also one that holds less than it compiled.
    if (!stale && performance.now() < LONG_RUN_MS) return;
    try {
      const data = script.createCachedData();
      if (!stale && data.length <= cached.length * 1.05) return;
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      writeFileSync(tmp, Buffer.concat([key, data]), { mode: 0o644 });
      try {
        renameSync(tmp, cacheFile);
      } catch {
        unlinkSync(tmp);
      }
    } catch {
      // dist/ is read-only or full: the next start compiles as this one did.
    }
  });
  const module = { exports: {}, filename: file, id: '.', loaded: false };
  script.runInThisContext()(module.exports, createRequire(file), module, file, path.dirname(file));
}
