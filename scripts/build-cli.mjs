#!/usr/bin/env node
// Builds dist/cli.cjs for `bin/svc.js`: the CLI with every command and package bundled by esbuild
// into one CommonJS file, so that a start (a hub restart above all) reads one file instead of about a
// thousand modules. One CommonJS file, because Node 20 can cache the compiled code of a script
// (`vm.Script` cachedData, bin/svc.js) but not of ES modules: with the cache, a start no longer parses
// the bundle. Commands and each `await import()` stay lazy: their modules run when first reached.
// Native and optional packages stay outside (pg-native, ws's optional helpers, esbuild, which only
// the sources use), and so does nodemailer, which no start reads. better-sqlite3's JavaScript is
// bundled: its compiled addon is loaded from node_modules by src/db/index.ts; of zod's
// locales only English is bundled. `import.meta.url` keeps its meaning: every module's is the
// URL its file would have in an unbundled dist/ (dist/hub/console.js…), so the paths modules find
// relative to themselves (dist/console/, examples/) are the same as from the sources.
// A CommonJS package loaded with `await import()` gives only its default export in the bundle (Node
// gives named ones too): write `const { default: yaml } = await import('yaml')`.
// Type checking is `tsc` (npm run build runs it first; npm run check too).
import { realpathSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = path.join(ROOT, 'src');
const OUT = path.join(ROOT, 'dist');
const EXTERNAL = [
  'pg-native',
  'bufferutil',
  'utf-8-validate',
  'esbuild',
  // Loaded at the first e-mail a hub sends (src/hub/orgs/mailer.ts): half a megabyte that every start
  // would otherwise read, from node_modules like better-sqlite3.
  'nodemailer',
  '@fastify/ajv-compiler',
  '@fastify/fast-json-stringify-compiler',
];
const PLACEHOLDER = /"__svc_module_url__:([^"]+)"/g;

/** Each source module's `import.meta.url`, as a placeholder naming its unbundled path under dist/. */
const moduleUrls = {
  name: 'module-urls',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      const { readFile } = await import('node:fs/promises');
      const text = await readFile(args.path, 'utf8');
      if (!text.includes('import.meta.url') || !args.path.startsWith(SRC)) return undefined;
      const rel = path.relative(SRC, args.path).replace(/\.ts$/, '.js').split(path.sep).join('/');
      return {
        contents: text.replaceAll('import.meta.url', JSON.stringify(`__svc_module_url__:${rel}`)),
        loader: 'ts',
      };
    });
  },
};

/**
 * pg asks at load whether it runs in a Cloudflare Worker: without a global `navigator` (Node 20 has
 * none), it builds a fetch `Response`, which loads Node's whole fetch implementation (undici): 20–40 ms
 * of every hub start on PostgreSQL. In the bundle, its module sees a `navigator` of its own that
 * answers at once; nothing else changes.
 */
const pgRuntimeCheck = {
  name: 'pg-runtime-check',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]stream\.js$/ }, async (args) => {
      const { readFile } = await import('node:fs/promises');
      const text = await readFile(args.path, 'utf8');
      if (!text.includes('function isCloudflareRuntime()')) {
        console.warn(`build-cli: ${args.path} no longer has isCloudflareRuntime(); left as it is`);
        return undefined;
      }
      return { contents: `const navigator = { userAgent: 'Node.js' };\n${text}`, loader: 'js' };
    });
  },
};

/**
 * zod's namespace `z` re-exports every locale (`z.locales`), so a bundle that uses `z` holds all of
 * them: 400 kB of messages in 63 locales, read at every start. svc speaks English, which zod sets
 * itself (from its own module, not this index): `z.locales` keeps only `en`.
 */
const zodLocales = {
  name: 'zod-locales',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: 'export { default as en } from "./en.js";\n',
      resolveDir: path.dirname(args.path),
      loader: 'js',
    }));
  },
};

/** Writes the bundle into `out` (dist/ by default; the suite builds one of its own), emptied first. */
export async function buildCli(out = OUT, { quiet = false } = {}) {
  const started = performance.now();
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: [path.join(SRC, 'cli', 'index.ts')],
    outfile: path.join(out, 'cli.cjs'),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    // `import()` of an external package becomes `require`: the script runs without an ES module
    // loader of its own (bin/svc.js).
    supported: { 'dynamic-import': false },
    sourcemap: 'linked',
    external: EXTERNAL,
    write: false,
    logLevel: 'warning',
    plugins: [moduleUrls, pgRuntimeCheck, zodLocales],
  });
  rmSync(out, { recursive: true, force: true });
  const { mkdirSync, writeFileSync } = await import('node:fs');
  for (const file of result.outputFiles) {
    let text = file.text;
    if (file.path.endsWith('.cjs')) {
      // ASCII only, so that bin/svc.js reads it as latin1 (a copy) rather than decoding UTF-8 (a
      // third of the time): esbuild escapes strings and names, the rest are comments of packages.
      text = text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      text = text.replace(
        PLACEHOLDER,
        (_, rel) =>
          `new URL(${JSON.stringify(`./${rel}`)}, require("node:url").pathToFileURL(__filename)).href`,
      );
    }
    mkdirSync(path.dirname(file.path), { recursive: true });
    writeFileSync(file.path, text);
  }
  if (quiet) return;
  const size = result.outputFiles.find((f) => f.path.endsWith('.cjs')).contents.length;
  console.log(
    `cli: ${path.relative(ROOT, path.join(out, 'cli.cjs'))}, ${(size / 1e6).toFixed(1)} MB (${Math.round(performance.now() - started)} ms)`,
  );
}

// Run as a script (also through a link to it, as in the suite's tree).
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  await buildCli(process.argv[2] ? path.resolve(process.argv[2]) : undefined);
}
