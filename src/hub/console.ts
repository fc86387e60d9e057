import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../shared/logger.js';

/**
 * The web console (src/console, docs/console.md) served by the hub at `/`: index.html and content-
 * hashed assets from an in-memory map. Running from dist/ (after `npm run build`) the map is read from
 * dist/console/; running from the sources (tsx: tests, `svc dev` in a fresh clone) it is built with
 * esbuild in memory on the first request, so the console always matches the code that serves it.
 * The console uses only the public API; these routes serve files and nothing else.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

interface Asset {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  etag: string;
  /** Content-hashed: cacheable forever. index.html is not. */
  immutable: boolean;
}

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const BUILD_SCRIPT = fileURLToPath(new URL('../../scripts/build-console.mjs', import.meta.url));
const DIST_DIR = fileURLToPath(new URL('../console/', import.meta.url));

function toAssets(files: Map<string, Buffer>): Map<string, Asset> {
  const out = new Map<string, Asset>();
  for (const [url, body] of files) {
    const type = CONTENT_TYPES[path.extname(url)] ?? 'application/octet-stream';
    const compressible = /^(text\/|image\/svg)/.test(type) && body.length > 512;
    out.set(url, {
      body,
      gzip: compressible ? gzipSync(body, { level: 9 }) : null,
      type,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      immutable: url !== '/index.html',
    });
  }
  return out;
}

function readDir(dir: string, prefix = ''): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) for (const [k, v] of readDir(p, `${prefix}/${e.name}`)) files.set(k, v);
    else files.set(`${prefix}/${e.name}`, readFileSync(p));
  }
  return files;
}

/** Where the console comes from: built from src/console (sources), dist/console, or nowhere. */
export function consoleSource(): 'sources' | 'dist' | 'missing' {
  if (FROM_SOURCES) return 'sources';
  return existsSync(path.join(DIST_DIR, 'index.html')) ? 'dist' : 'missing';
}

async function load(): Promise<Map<string, Asset> | null> {
  const source = consoleSource();
  if (source === 'missing') return null;
  if (source === 'dist') return toAssets(readDir(DIST_DIR));
  const mod = (await import(pathToFileURL(BUILD_SCRIPT).href)) as {
    buildConsole(): Promise<Map<string, Buffer>>;
  };
  return toAssets(await mod.buildConsole());
}

// One build per process, shared by every hub it starts; a failed build is tried again next time.
let loading: Promise<Map<string, Asset> | null> | null = null;
export function consoleAssets(): Promise<Map<string, Asset> | null> {
  if (!loading) {
    loading = load();
    loading.catch(() => {
      loading = null;
    });
  }
  return loading;
}

function securityHeaders(reply: FastifyReply): void {
  void reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cross-origin-resource-policy', 'same-origin');
}

/** Registers `GET /`, `/index.html` and `/assets/*` on the hub's app. Nothing else changes. */
export function registerConsole(app: FastifyInstance, log: Logger): void {
  const serve = async (req: FastifyRequest, reply: FastifyReply, url: string) => {
    let assets: Map<string, Asset> | null;
    try {
      assets = await consoleAssets();
    } catch (err) {
      log.error({ err }, 'the console could not be built');
      securityHeaders(reply);
      return reply
        .status(503)
        .header('cache-control', 'no-store')
        .type('text/plain; charset=utf-8')
        .send(`The console could not be built: ${(err as Error).message}\n`);
    }
    if (!assets) {
      if (url !== '/index.html') return reply.callNotFound();
      securityHeaders(reply);
      return reply
        .status(404)
        .header('cache-control', 'no-store')
        .type('text/plain; charset=utf-8')
        .send('The console is not built: run `npm run build` (the API is at /v1/).\n');
    }
    const a = assets.get(url);
    if (!a) return reply.callNotFound();
    securityHeaders(reply);
    void reply
      .header('cache-control', a.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .header('etag', a.etag)
      .header('vary', 'accept-encoding')
      .type(a.type);
    if (req.headers['if-none-match'] === a.etag) return reply.status(304).send();
    const gzip = a.gzip && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    if (gzip) void reply.header('content-encoding', 'gzip');
    return reply.send(gzip ? a.gzip : a.body);
  };
  app.get('/', (req, reply) => serve(req, reply, '/index.html'));
  app.get('/index.html', (req, reply) => serve(req, reply, '/index.html'));
  app.get('/assets/*', (req, reply) => {
    const rest = (req.params as { '*': string })['*'];
    // Only the names the build made: no dot segments, no encoded separators.
    if (!/^[A-Za-z0-9._-]+$/.test(rest) || rest.startsWith('.')) return reply.callNotFound();
    return serve(req, reply, `/assets/${rest}`);
  });
}
