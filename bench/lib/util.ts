import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { dropSchema } from '../../src/db/index.js';

/** PostgreSQL for the benches (trust auth); `SVC_BENCH_PG_URL` or the test suite's `SVC_TEST_PG_URL`. */
export const PG_URL =
  process.env.SVC_BENCH_PG_URL ?? process.env.SVC_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Which databases a bench covers: `SVC_BENCH_DB=sqlite|postgres` picks one, default both (PostgreSQL
 * only when it answers; a bench then says so on stderr rather than fail).
 */
export async function benchDatabases(): Promise<('sqlite' | 'postgres')[]> {
  const only = process.env.SVC_BENCH_DB;
  if (only === 'sqlite' || only === 'postgres') return [only];
  if (await postgresVersion()) return ['sqlite', 'postgres'];
  console.error(`PostgreSQL at ${PG_URL} does not answer: SQLite only`);
  return ['sqlite'];
}

/** Wall-clock ms with sub-ms precision, comparable between processes on one machine. */
export const nowMs = () => performance.timeOrigin + performance.now();

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux; 10 ms resolution). */
export function cpuMsOf(pid: number): number {
  try {
    // The fields after the command name, which is in parentheses and may hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** Linux's USER_HZ: /proc counts CPU time in these ticks. */
const CLOCK_TICKS = 100;

/** CPU time (ms) of every PostgreSQL server process on this machine, for a bench's share of it. */
export function postgresCpuMs(): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += cpuMsOf(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Connections kept open between a bench's calls, as a client that calls often keeps them: the
 * measured path starts when the request is written, not with a TCP handshake.
 */
const keepAlive = new http.Agent({ keepAlive: true });

/**
 * POST a JSON body; fails unless the reply is `{ok: true}`. Through `node:http`, not `fetch`: on
 * this machine a `fetch` round trip costs 0.5–0.8 ms of client work against 0.1–0.15 ms, and the
 * dispatch bench counts from the moment the request is sent.
 */
// biome-ignore lint/suspicious/noExplicitAny: bench replies
export function post(url: string, body: unknown, token?: string): Promise<any> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: keepAlive,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        let reply = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          reply += chunk;
        });
        res.on('error', reject);
        res.on('end', () => {
          try {
            const json = JSON.parse(reply);
            if (json.ok !== true) throw new Error(`${url}: ${res.statusCode} ${reply}`);
            resolve(json);
          } catch (err) {
            reject(err);
          }
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** Runs `fn(i)` for i in [0, n) with at most `concurrency` at a time; results in order. */
export async function pool<T>(n: number, concurrency: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

/** A fresh database for one bench: a SQLite file in a temporary directory, or a PostgreSQL schema. */
export interface BenchDatabase {
  kind: 'sqlite' | 'postgres';
  url: string;
  schema?: string;
  /** A directory for the bench's other files (removed by cleanup). */
  dir: string;
  cleanup(): Promise<void>;
}

export function benchDatabase(kind: 'sqlite' | 'postgres'): BenchDatabase {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-'));
  if (kind === 'postgres') {
    const schema = `bench_${randomBytes(6).toString('hex')}`;
    return {
      kind,
      url: PG_URL,
      schema,
      dir,
      async cleanup() {
        await dropSchema(PG_URL, schema);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  return {
    kind,
    url: path.join(dir, 'hub.db'),
    dir,
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

export async function postgresVersion(): Promise<string | null> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    const r = await client.query<{ server_version: string }>('SHOW server_version');
    return r.rows[0]?.server_version ?? null;
  } catch {
    return null;
  } finally {
    await client.end().catch(() => {});
  }
}

export interface Machine {
  cpu: string;
  cores: number;
  ramGiB: number;
  node: string;
  postgres: string | null;
  os: string;
  date: string;
  /** The 1-minute load average when the run started: above the core count, others share the CPUs. */
  load: number;
}

export async function machine(): Promise<Machine> {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    ramGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    postgres: await postgresVersion(),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    load: Math.round(os.loadavg()[0]! * 10) / 10,
    date: `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  };
}
