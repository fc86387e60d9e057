#!/usr/bin/env node
// Transpiles the repository's TypeScript for the test suite, file by file with esbuild (types
// stripped, no bundling, no type-check: `npm run check` does that), into .test-dist/, a tree shaped
// like the repository itself:
//   src/, test/, scripts/   each .ts compiled to .js (with an inline source map, so stack traces name
//                           the .ts lines under --enable-source-maps); every other file is a link,
//                           and so are the .ts files a test reads as text (AS_TEXT)
//   bin, docs, examples     links to the repository's folders
//   src/console/            the built web console (index.html, assets/), where the hub looks for it
//                           when it runs compiled, as dist/console/ is for dist/ (src/hub/console.ts);
//                           beside the console's modules, compiled for their unit tests
//   bundle/                 the CLI bundled as `npm run build` bundles dist/ (cli.cjs, console/):
//                           the `svc` every test starts (scripts/test.mjs)
// Paths the code finds relative to itself (examples/ from src/cli/commands/dev.ts, bin/svc.js from
// test/helpers/cli.ts, docs/ for screenshots) therefore resolve as in the repository, and packages
// resolve from the repository's node_modules above. scripts/test.mjs builds it at the start of every
// suite run and runs the test files from it in plain node: loading modules through tsx's hooks costs
// each test file's process about a second and a half of CPU, and each `svc` the tests start about
// half a second. `node scripts/transpile.mjs` builds it alone.
import { mkdirSync, readdirSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildCli } from './build-cli.mjs';
import { writeConsole } from './build-console.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const TREE = path.join(ROOT, '.test-dist');
const COMPILED = ['src', 'test', 'scripts'];
const LINKED = ['bin', 'docs', 'examples'];
/** Only compiled there: its page and styles are the build's input (index.html holds placeholders). */
const CONSOLE = `src${path.sep}console${path.sep}`;
/**
 * TypeScript that tests read as text, linked beside its .js: the API module, which tsc checks against
 * openapi-typescript's types and whose generated requests.gen.ts is compared (openapi-types.test.ts).
 * Nowhere else: the CLI finds its commands by listing src/cli/commands/, .ts or .js.
 */
const AS_TEXT = `src${path.sep}shared${path.sep}api${path.sep}`;

/** Every file under `dir`, relative to the repository. */
function filesUnder(dir) {
  const out = [];
  for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(rel));
    else out.push(rel);
  }
  return out;
}

/**
 * Writes the tree to .test-dist/, replacing it whole: it is built beside and renamed into place, so a
 * process starting meanwhile (another suite run in the same checkout) never reads half-written files.
 */
export async function transpile() {
  const esbuild = await import('esbuild');
  const fresh = `${TREE}.${process.pid}`;
  rmSync(fresh, { recursive: true, force: true });
  // First, as writeConsole empties the folder it writes.
  const { files: consoleFiles } = await writeConsole(path.join(fresh, 'src', 'console'));
  const sources = [];
  for (const file of COMPILED.flatMap(filesUnder)) {
    const isTs = /\.tsx?$/.test(file) && !file.endsWith('.d.ts');
    if (isTs) sources.push(path.join(ROOT, file));
    if (file.startsWith(CONSOLE) || (isTs && !file.startsWith(AS_TEXT))) continue;
    mkdirSync(path.dirname(path.join(fresh, file)), { recursive: true });
    symlinkSync(path.join(ROOT, file), path.join(fresh, file));
  }
  for (const dir of LINKED) symlinkSync(path.join(ROOT, dir), path.join(fresh, dir));
  await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: sources,
    outbase: ROOT,
    outdir: fresh,
    bundle: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Only the console's .tsx files have JSX; they are compiled for completeness, never run in node.
    jsx: 'automatic',
    jsxImportSource: 'preact',
    sourcemap: 'inline',
    logLevel: 'silent',
  });
  // The CLI as users run it, bundled from the same sources as `npm run build` bundles dist/, with
  // the same console: every `svc` the suite starts runs it (scripts/test.mjs).
  const bundle = path.join(fresh, 'bundle');
  await buildCli(bundle, { quiet: true });
  await writeConsole(path.join(bundle, 'console'), consoleFiles);
  const old = `${TREE}.old.${process.pid}`;
  try {
    renameSync(TREE, old);
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
  }
  renameSync(fresh, TREE);
  rmSync(old, { recursive: true, force: true });
  return { tree: TREE, bundle: path.join(TREE, 'bundle'), modules: sources.length };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = Date.now();
  const { tree, modules } = await transpile();
  console.log(
    `${modules} modules, the console and the CLI's bundle in ${path.relative(process.cwd(), tree)} (${Date.now() - started} ms)`,
  );
}
