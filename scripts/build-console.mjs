#!/usr/bin/env node
// Builds the web console (src/console) with esbuild: one minified ES module and one stylesheet with
// content-hashed names, a hashed icon, and an index.html that names them (no inline script or style,
// so the hub's Content-Security-Policy can forbid both). `node scripts/build-console.mjs` writes
// dist/console/ (part of `npm run build`); the hub imports `buildConsole` to build into memory when it
// runs from the sources (src/hub/console.ts). See docs/console.md.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = path.join(ROOT, 'src', 'console');

export const CONTENT_TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

const hashOf = (buf) => createHash('sha256').update(buf).digest('hex').slice(0, 12);

/**
 * Builds the console in memory. Returns `Map<url path, Buffer>`: `/index.html` and `/assets/…` files
 * whose names carry a hash of their content (cacheable forever).
 */
export async function buildConsole() {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: { console: path.join(SRC, 'main.tsx') },
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
    platform: 'browser',
    tsconfig: path.join(SRC, 'tsconfig.json'),
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    outdir: path.join(ROOT, 'dist', 'console', 'assets'),
    write: false,
    metafile: true,
    logLevel: 'silent',
    legalComments: 'none',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const files = new Map();
  const outBase = path.join(ROOT, 'dist', 'console');
  let js = null;
  let css = null;
  for (const f of result.outputFiles) {
    const url = `/${path.relative(outBase, f.path).split(path.sep).join('/')}`;
    files.set(url, Buffer.from(f.contents));
    if (url.endsWith('.js')) js = url;
    if (url.endsWith('.css')) css = url;
  }
  if (!js || !css) throw new Error('the console build produced no script or no stylesheet');
  const iconBody = readFileSync(path.join(SRC, 'icon.svg'));
  const icon = `/assets/icon-${hashOf(iconBody)}.svg`;
  files.set(icon, iconBody);
  const html = readFileSync(path.join(SRC, 'index.html'), 'utf8')
    .replace('%JS%', js)
    .replace('%CSS%', css)
    .replace('%ICON%', icon);
  files.set('/index.html', Buffer.from(html));
  return files;
}

/** Writes the build to `outDir` (default dist/console), replacing what was there. */
export async function writeConsole(outDir = path.join(ROOT, 'dist', 'console'), built = undefined) {
  const files = built ?? (await buildConsole());
  rmSync(outDir, { recursive: true, force: true });
  for (const [url, body] of files) {
    const file = path.join(outDir, ...url.split('/').filter(Boolean));
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, body);
  }
  return { outDir, files };
}

// Run as a script (also through a link to it, as in the suite's tree).
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const started = Date.now();
  const { outDir, files } = await writeConsole(process.argv[2] ? path.resolve(process.argv[2]) : undefined);
  let bytes = 0;
  for (const b of files.values()) bytes += b.length;
  console.log(
    `console: ${files.size} files, ${(bytes / 1024).toFixed(1)} KiB in ${path.relative(process.cwd(), outDir) || '.'} (${Date.now() - started} ms)`,
  );
}
