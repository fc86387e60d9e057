#!/usr/bin/env node
// Builds dist/ for `bin/svc.js`: the CLI and every command bundled with esbuild, packages included,
// so that starting `svc` (a hub restart above all) loads a few files instead of about a thousand
// modules one by one: Node 20 has no compile cache, and its ES module loader pays per file.
//
// Layout: dist/cli/index.js and dist/cli/commands/<name>.js are the entry points (the CLI still finds
// its commands by listing that folder and loads only the one being run); code they share is in
// dist/chunks/, and each `await import()` of the sources stays a separate chunk loaded when reached.
// Native and optional packages stay outside (better-sqlite3, pg-native, ws's optional helpers,
// esbuild, which only the sources use). `import.meta.url` keeps its meaning: every module's is the
// URL its file would have in an unbundled dist/ (dist/hub/console.js…), so the paths modules find
// relative to themselves (dist/console/, examples/, dist/cli/commands/) are the same as before.
// A CommonJS package loaded with `await import()` gives only its default export in the bundle (Node
// gives named ones too): write `const { default: yaml } = await import('yaml')`.
// Type checking is `tsc` (npm run build runs it first; npm run check too).
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = path.join(ROOT, 'src');
const OUT = path.join(ROOT, 'dist');
const EXTERNAL = [
  'better-sqlite3',
  'pg-native',
  'bufferutil',
  'utf-8-validate',
  'esbuild',
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

export async function buildCli() {
  const started = performance.now();
  const commands = path.join(SRC, 'cli', 'commands');
  const entryPoints = [
    path.join(SRC, 'cli', 'index.ts'),
    ...readdirSync(commands)
      .filter((f) => /^[a-z][a-z0-9-]*\.ts$/.test(f) && !f.endsWith('.test.ts'))
      .map((f) => path.join(commands, f)),
  ];
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints,
    outbase: SRC,
    outdir: OUT,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    external: EXTERNAL,
    write: false,
    logLevel: 'warning',
    plugins: [moduleUrls, pgRuntimeCheck],
    // CommonJS packages call require() for Node's own modules and the externals.
    banner: {
      js: "import { createRequire as __svcRequire } from 'node:module';\nconst require = __svcRequire(import.meta.url);",
    },
  });
  rmSync(OUT, { recursive: true, force: true });
  const { mkdirSync, writeFileSync } = await import('node:fs');
  for (const file of result.outputFiles) {
    let text = file.text;
    if (file.path.endsWith('.js')) {
      const dir = path.dirname(file.path);
      text = text.replace(PLACEHOLDER, (_, rel) => {
        let to = path.relative(dir, path.join(OUT, rel)).split(path.sep).join('/');
        if (!to.startsWith('.')) to = `./${to}`;
        return `new URL(${JSON.stringify(to)}, import.meta.url).href`;
      });
    }
    mkdirSync(path.dirname(file.path), { recursive: true });
    writeFileSync(file.path, text);
  }
  const js = result.outputFiles.filter((f) => f.path.endsWith('.js')).length;
  console.log(`cli: ${js} files in dist (${Math.round(performance.now() - started)} ms)`);
}

if (import.meta.url === `file://${process.argv[1]}`) await buildCli();
