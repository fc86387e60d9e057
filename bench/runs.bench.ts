/**
 * The run dispatch path, against a same-run baseline on this machine:
 * (a) dispatch latency: from the `runs/new` reply to the agent process running (the agent records
 *     the time it started), p50 and p99, vs spawning the same no-op agent directly (one direct spawn
 *     after each run, so noise hits both). On SQLite and PostgreSQL (`SVC_BENCH_DB` picks one), with
 *     one hub process, and with two: the run created through process A (this one), the daemon
 *     connected to process B (a child process on the same database). With two processes the offer
 *     reaches the daemon however the code delivers a command written by another process (the
 *     outbox scan, or a cross-process wake-up where there is one): this measures what the code does.
 * (b) runs per second through the whole path (runs/new → offer → claim → execute → agent → reports)
 *     with a no-op agent on SQLite and one hub, vs spawning and awaiting the same processes directly
 *     with the same concurrency.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startDaemon } from '../src/daemon/main.js';
import { startHub } from '../src/hub/server.js';
import { createLogger } from '../src/shared/logger.js';
import { mintToken } from '../src/shared/tokens.js';
import type { BenchResult } from './index.js';
import { type Child, startChild } from './lib/child.js';
import { benchDatabase, benchDatabases, nowMs, percentile, post, sleep } from './lib/util.js';

const LATENCY_RUNS = 40;
/** A configuration stops sampling after this long (at least MIN_RUNS runs), to bound slow paths. */
const LATENCY_BUDGET_MS = 25_000;
const MIN_RUNS = 10;
const THROUGHPUT_RUNS = 60;
const CONCURRENCY = 8;

export default async function runsBench(): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  for (const kind of await benchDatabases()) {
    for (const processes of [1, 2] as const) {
      out.push(...(await dispatchBench(kind, processes, kind === 'sqlite' && processes === 1)));
    }
  }
  return out;
}

async function dispatchBench(
  kind: 'sqlite' | 'postgres',
  processes: 1 | 2,
  withThroughput: boolean,
): Promise<BenchResult[]> {
  const db = benchDatabase(kind);
  const marks = path.join(db.dir, 'marks');
  mkdirSync(marks);
  // The no-op agent: records when it started (same clock as ours), then exits.
  const agent = path.join(db.dir, 'noop.cjs');
  writeFileSync(
    agent,
    `require('fs').writeFileSync(require('path').join(${JSON.stringify(marks)}, process.env.SVC_RUN_ID || process.argv[2]), String(performance.timeOrigin + performance.now()));`,
  );
  const adminToken = mintToken('user');
  const log = createLogger('bench', 'silent');
  const dbOpts = { databaseUrl: db.url, ...(db.schema ? { schema: db.schema } : {}), adminToken };
  const hub = await startHub({ ...dbOpts, log });
  let other: Child | null = null;
  let daemon: Awaited<ReturnType<typeof startDaemon>> | null = null;
  try {
    if (processes === 2) {
      other = await startChild('hub-process.ts', { env: { SVC_BENCH_HUB: JSON.stringify(dbOpts) } });
    }
    const call = (op: string, body: unknown) => post(`${hub.url}/v1/${op}`, body, adminToken);
    const org = await call('orgs/new', { slug: 'bench', owner: { email: 'owner@bench.test' } });
    const orgId = org.data.org.id as string;
    const realmId = (await call('realms/list', { org_id: orgId })).data[0].id as string;
    const dt = await call('realms/create_daemon_token', { realm_id: realmId, name: 'bench' });
    daemon = await startDaemon({
      config: {
        home: path.join(db.dir, 'daemon'),
        host: '127.0.0.1',
        port: 0,
        hubUrls: [other ? (other.hello.url as string) : hub.url],
        realmToken: dt.data.token,
      },
      log,
    });
    const link = daemon.link!;
    await new Promise<void>((resolve) =>
      link.connected ? resolve() : link.once('connected', () => resolve()),
    );
    await call('agents/register', {
      org_id: orgId,
      manifest: { name: 'noop', version: '1.0.0', command: [process.execPath, agent] },
    });
    const team = await call('teams/register', {
      org_id: orgId,
      definition: { name: 'noop-team', version: '1.0.0', phases: [{ name: 'only', agent: 'noop' }] },
    });
    // A run goes only to a daemon with its team installed.
    await call('teams/install', { team_version_id: team.data.id, daemon_id: dt.data.daemon_id });

    const waitEnded = async (ids: string[]) => {
      const left = new Set(ids);
      while (left.size > 0) {
        for (const id of [...left]) {
          const r = await call('runs/get_by_id', { run_id: id });
          if (['succeeded', 'failed', 'cancelled', 'terminated', 'lost'].includes(r.data.state)) {
            if (r.data.state !== 'succeeded')
              throw new Error(`bench run ${id} ${r.data.state}: ${r.data.error}`);
            left.delete(id);
          }
        }
        if (left.size > 0) await sleep(10);
      }
    };
    const startRun = async () => {
      const r = await call('runs/new', { realm_id: realmId, team: 'noop-team' });
      return { id: r.data.run_id as string, repliedAt: nowMs() };
    };
    const spawnAgent = async (key: string) => {
      const child = spawn(process.execPath, [agent, key], { stdio: 'ignore' });
      await new Promise((r) => child.on('close', r));
    };

    // Warm-up (JIT, prepared statements, first spawn).
    for (let i = 0; i < 3; i++) await waitEnded([(await startRun()).id]);

    // (a) latency, one run at a time, each followed by one direct spawn.
    const lat: number[] = [];
    const base: number[] = [];
    const started = performance.now();
    for (let i = 0; i < LATENCY_RUNS; i++) {
      if (i >= MIN_RUNS && performance.now() - started > LATENCY_BUDGET_MS) break;
      const { id, repliedAt } = await startRun();
      await waitEnded([id]);
      lat.push(Number(readFileSync(path.join(marks, id), 'utf8')) - repliedAt);
      const key = `direct-${i}`;
      const at = nowMs();
      await spawnAgent(key);
      base.push(Number(readFileSync(path.join(marks, key), 'utf8')) - at);
    }
    lat.sort((a, b) => a - b);
    base.sort((a, b) => a - b);
    const setup =
      processes === 1 ? `${kind}, 1 hub process` : `${kind}, 2 hub processes (run via A, daemon on B)`;
    const caveat =
      processes === 2 && kind === 'sqlite'
        ? '; SQLite with two processes is not a supported deployment (docs/operations.md), shown for comparison'
        : '';
    const results: BenchResult[] = ([50, 99] as const).map((p) => ({
      name: `runs/new reply → agent started, ${setup}, p${p}`,
      unit: 'ms',
      value: percentile(lat, p),
      baseline: { name: `spawn → same agent started, p${p}`, value: percentile(base, p) },
      higherIsBetter: false,
      note: `n=${lat.length}${p === 99 && lat.length < 100 ? ' (p99 of fewer than 100 runs is about their maximum)' : ''}${caveat}`,
    }));

    if (withThroughput) {
      // (b) throughput with CONCURRENCY runs in flight.
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next++ < THROUGHPUT_RUNS) await waitEnded([(await startRun()).id]);
        }),
      );
      const runsPerSec = THROUGHPUT_RUNS / ((performance.now() - t0) / 1000);
      let n = 0;
      const t1 = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (n++ < THROUGHPUT_RUNS) await spawnAgent(`t-${n}`);
        }),
      );
      const spawnsPerSec = THROUGHPUT_RUNS / ((performance.now() - t1) / 1000);
      results.push({
        name: `runs through the whole path, ${setup} (${CONCURRENCY} in flight)`,
        unit: 'runs/s',
        value: runsPerSec,
        baseline: { name: 'direct spawn + exit', value: spawnsPerSec },
        higherIsBetter: true,
        note: `${THROUGHPUT_RUNS} runs`,
      });
    }
    return results;
  } finally {
    await daemon?.close();
    await other?.close();
    await hub.close();
    await db.cleanup();
  }
}
