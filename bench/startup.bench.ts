/**
 * A hub restart on an existing database: from spawning `node bin/svc.js hub` (the built CLI in
 * dist/) to the first 200 of `GET /healthz`, as a supervisor restarting the hub sees it. The database
 * is made once (a first start migrates it and an organization is created through the API), then the
 * hub is started N times (`SVC_BENCH_STARTS`, default 15) on it, each stopped with SIGTERM and waited
 * for before the next. The baseline, in the same run and alternating with the hub: `node -e` with a
 * bare `node:http` server answering /healthz, polled the same way (every 2 ms a new connection).
 * `node -e 0` (spawn → exit) is in the note: the part of both that is Node starting at all.
 * The built CLI runs with its code cache, written by the first start; each round also starts the hub
 * once without it (as the first start after a build or a Node upgrade would).
 *
 * Runs the built CLI: when dist/ is missing or older than a file under src/, it runs `npm run build`
 * once first (about 30 s) and says so. On SQLite and PostgreSQL (a fresh schema, named in the URL's
 * `options` as a deployment would).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { BenchResult } from './index.js';
import { benchDatabase, benchDatabases, percentile, post, sleep } from './lib/util.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BUILT = path.join(ROOT, 'dist', 'cli.cjs');
const STARTS = Number(process.env.SVC_BENCH_STARTS ?? 15);
const ADMIN_TOKEN = 'svc_tok_bench-startup-admin-0001';
const POLL_MS = 2;

/** The newest modification time of the compiled sources (tests and the console's own tree aside). */
function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
      newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

function ensureBuilt(): void {
  if (existsSync(BUILT) && statSync(BUILT).mtimeMs >= newestSource(path.join(ROOT, 'src'))) return;
  console.error('startup bench: dist/ is missing or older than src/: running npm run build');
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** One GET /healthz on a new connection: its status, or 0 when nothing listens yet. */
function healthz(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
  });
}

interface Started {
  /** Spawn → first 200 of /healthz, ms. */
  ms: number;
  /** Spawn → the "hub ready" log line, ms (hub only). */
  readyLineMs: number | null;
}

/**
 * Spawns `args` under node, polls /healthz until a 200, then SIGTERMs it and waits for its exit.
 * Fails when the process exits first or takes more than 30 s.
 */
async function startOnce(args: string[], port: number, env: NodeJS.ProcessEnv): Promise<Started> {
  const t0 = performance.now();
  const proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let readyLineMs: number | null = null;
  let out = '';
  proc.stdout.setEncoding('utf8').on('data', (s: string) => {
    if (readyLineMs === null && s.includes('"hub ready"')) readyLineMs = performance.now() - t0;
  });
  proc.stderr.setEncoding('utf8').on('data', (s: string) => {
    out += s;
  });
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    proc.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  try {
    for (;;) {
      if (exited) throw new Error(`${args.join(' ')} exited before answering /healthz: ${out}`);
      if (performance.now() - t0 > 30_000)
        throw new Error(`${args.join(' ')}: no /healthz after 30 s: ${out}`);
      if ((await healthz(port)) === 200) break;
      await sleep(POLL_MS);
    }
    return { ms: performance.now() - t0, readyLineMs };
  } finally {
    proc.kill('SIGTERM');
    await exit;
  }
}

/** The hub's code cache (bin/svc.js names it after the Node version, the architecture and the command). */
const CACHE = `${BUILT}.${process.version}-${process.arch}.hub.cache`;

function codeCache(): Buffer | null {
  return existsSync(CACHE) ? readFileSync(CACHE) : null;
}

/** Puts `bytes` in place as the code cache, or removes it (null). */
function setCodeCache(bytes: Buffer | null): void {
  if (bytes) writeFileSync(CACHE, bytes);
  else rmSync(CACHE, { force: true });
}

async function nodeExitMs(): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const p = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    p.once('error', reject);
    p.once('exit', () => resolve());
  });
  return performance.now() - t0;
}

const BARE = `require('node:http').createServer((q, s) => s.end(q.url === '/healthz' ? '{"ok":true}' : ''))
  .listen(Number(process.env.PORT), '127.0.0.1'); process.on('SIGTERM', () => process.exit(0));`;

const p50 = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
const max = (xs: number[]) => Math.max(...xs);

async function benchOn(kind: 'sqlite' | 'postgres'): Promise<BenchResult[]> {
  const db = benchDatabase(kind);
  try {
    let databaseUrl = db.url;
    if (kind === 'postgres') {
      // As a deployment names its schema: in the URL, for every connection the hub opens.
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      await client.query(`CREATE SCHEMA ${db.schema}`);
      await client.end();
      const url = new URL(db.url);
      url.searchParams.set('options', `-c search_path=${db.schema}`);
      databaseUrl = url.toString();
    }
    const port = await freePort();
    const { SVC_CLI_DIST: _dist, SVC_CLI_SOURCE: _source, ...inherited } = process.env;
    const env = {
      ...inherited,
      SVC_HOME: path.join(db.dir, 'home'),
      SVC_DATABASE_URL: databaseUrl,
      SVC_HUB_PORT: String(port),
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      SVC_LOG_LEVEL: 'info',
    };
    const hubArgs = [path.join(ROOT, 'bin', 'svc.js'), 'hub'];
    // The built CLI's code cache (docs/operations.md "Start-up") is written by this first start,
    // as by a deployment's first start after an upgrade.
    setCodeCache(null);

    // The existing database: migrated by a first start, with an organization in it.
    {
      const proc = spawn(process.execPath, hubArgs, {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      const exit = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      try {
        const until = performance.now() + 60_000;
        while ((await healthz(port)) !== 200) {
          if (proc.exitCode !== null || performance.now() > until)
            throw new Error('the first hub did not start');
          await sleep(20);
        }
        await post(
          `http://127.0.0.1:${port}/v1/orgs/new`,
          { slug: 'bench', owner: { email: 'owner@bench.test' } },
          ADMIN_TOKEN,
        );
      } finally {
        proc.kill('SIGTERM');
        await exit;
      }
    }

    const cache = codeCache();
    if (!cache) throw new Error('the first start wrote no code cache beside dist/cli.cjs');
    const hub: Started[] = [];
    const cold: number[] = [];
    const bare: number[] = [];
    const exits: number[] = [];
    // One warm-up of each (file cache), then alternating rounds. Each start without the code cache
    // writes one at its exit: the first start's is put back before each start with it.
    await startOnce(hubArgs, port, env);
    await startOnce(['-e', BARE], port, { ...env, PORT: String(port) });
    for (let i = 0; i < STARTS; i++) {
      setCodeCache(cache);
      hub.push(await startOnce(hubArgs, port, env));
      bare.push((await startOnce(['-e', BARE], port, { ...env, PORT: String(port) })).ms);
      setCodeCache(null);
      cold.push((await startOnce(hubArgs, port, env)).ms);
      exits.push(await nodeExitMs());
    }
    setCodeCache(cache);
    const ms = hub.map((h) => h.ms);
    const ready = hub.map((h) => h.readyLineMs).filter((x): x is number => x !== null);
    const note =
      `n=${STARTS} alternating; /healthz polled every ${POLL_MS} ms on a new connection; ` +
      `"hub ready" log line p50 ${p50(ready).toFixed(0)} ms; node -e 0 spawn → exit p50 ${p50(exits).toFixed(0)} ms; ` +
      `code cache ${(cache.length / 1e6).toFixed(1)} MB`;
    return [
      {
        name: `hub restart → /healthz 200, ${kind}, no code cache, p50`,
        unit: 'ms',
        value: p50(cold),
        baseline: { name: 'bare node:http server, p50', value: p50(bare) },
        higherIsBetter: false,
        note: 'the first start after a build or a Node upgrade, or with dist/ read-only',
      },
      {
        name: `hub restart → /healthz 200, ${kind}, p50`,
        unit: 'ms',
        value: p50(ms),
        baseline: { name: 'bare node:http server, p50', value: p50(bare) },
        higherIsBetter: false,
        note,
      },
      {
        name: `hub restart → /healthz 200, ${kind}, max`,
        unit: 'ms',
        value: max(ms),
        baseline: { name: 'bare node:http server, max', value: max(bare) },
        higherIsBetter: false,
        note: `n=${STARTS}`,
      },
    ];
  } finally {
    await db.cleanup();
  }
}

export default async function bench(): Promise<BenchResult[]> {
  ensureBuilt();
  const results: BenchResult[] = [];
  for (const kind of await benchDatabases()) results.push(...(await benchOn(kind)));
  return results;
}
