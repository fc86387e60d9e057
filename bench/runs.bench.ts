/**
 * The run dispatch path, against a same-run baseline on this machine:
 * (a) latency from the `runs/new` reply to the agent process running (the agent records the time it
 *     started), p50 and p99, vs spawning the same no-op agent directly;
 * (b) runs per second through the whole path (runs/new → offer → claim → execute → agent → reports)
 *     with a no-op agent, vs spawning and awaiting the same processes directly with the same concurrency.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startDaemon } from '../src/daemon/main.js';
import { startHub } from '../src/hub/server.js';
import { createLogger } from '../src/shared/logger.js';
import { mintToken } from '../src/shared/tokens.js';
import type { BenchResult } from './index.js';

const LATENCY_RUNS = 40;
const THROUGHPUT_RUNS = 60;
const CONCURRENCY = 8;

const nowMs = () => performance.timeOrigin + performance.now();
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function post(url: string, body: unknown, token: string) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: bench replies
  const json = (await res.json()) as any;
  if (json.ok !== true) throw new Error(`${url}: ${JSON.stringify(json)}`);
  return json;
}

export default async function runsBench(): Promise<BenchResult[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-runs-'));
  const marks = path.join(dir, 'marks');
  mkdirSync(marks);
  // The no-op agent: records when it started (same clock as ours), then exits.
  const agent = path.join(dir, 'noop.cjs');
  writeFileSync(
    agent,
    `require('fs').writeFileSync(require('path').join(${JSON.stringify(marks)}, process.env.SVC_RUN_ID || process.argv[2]), String(performance.timeOrigin + performance.now()));`,
  );
  const adminToken = mintToken('user');
  const log = createLogger('bench', 'silent');
  const hub = await startHub({ databaseUrl: path.join(dir, 'hub.db'), adminToken, log });
  const call = (op: string, body: unknown) => post(`${hub.url}/v1/${op}`, body, adminToken);
  const org = await call('orgs/new', { slug: 'bench', owner: { email: 'owner@bench.test' } });
  const orgId = org.data.org.id as string;
  const realmId = (await call('realms/list', { org_id: orgId })).data[0].id as string;
  const dt = await call('realms/create_daemon_token', { realm_id: realmId, name: 'bench' });
  const daemon = await startDaemon({
    config: {
      home: path.join(dir, 'daemon'),
      host: '127.0.0.1',
      port: 0,
      hubUrls: [hub.url],
      realmToken: dt.data.token,
    },
    log,
  });
  try {
    await new Promise<void>((resolve) =>
      daemon.link!.connected ? resolve() : daemon.link!.once('connected', () => resolve()),
    );
    await call('agents/register', {
      org_id: orgId,
      manifest: { name: 'noop', version: '1.0.0', command: [process.execPath, agent] },
    });
    await call('teams/register', {
      org_id: orgId,
      definition: { name: 'noop-team', version: '1.0.0', phases: [{ name: 'only', agent: 'noop' }] },
    });

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
        if (left.size > 0) await new Promise((r) => setTimeout(r, 10));
      }
    };
    const startRun = async () => {
      const r = await call('runs/new', { realm_id: realmId, team: 'noop-team' });
      return { id: r.data.run_id as string, repliedAt: nowMs() };
    };

    // Warm-up (JIT, prepared statements, first spawn).
    for (let i = 0; i < 3; i++) await waitEnded([(await startRun()).id]);

    // (a) latency, one run at a time.
    const lat: number[] = [];
    for (let i = 0; i < LATENCY_RUNS; i++) {
      const { id, repliedAt } = await startRun();
      await waitEnded([id]);
      lat.push(Number(readFileSync(path.join(marks, id), 'utf8')) - repliedAt);
    }
    const base: number[] = [];
    for (let i = 0; i < LATENCY_RUNS; i++) {
      const key = `direct-${i}`;
      const at = nowMs();
      const child = spawn(process.execPath, [agent, key], { stdio: 'ignore' });
      await new Promise((r) => child.on('close', r));
      base.push(Number(readFileSync(path.join(marks, key), 'utf8')) - at);
    }
    lat.sort((a, b) => a - b);
    base.sort((a, b) => a - b);

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
        while (n++ < THROUGHPUT_RUNS) {
          const child = spawn(process.execPath, [agent, `t-${n}`], { stdio: 'ignore' });
          await new Promise((r) => child.on('close', r));
        }
      }),
    );
    const spawnsPerSec = THROUGHPUT_RUNS / ((performance.now() - t1) / 1000);
    return [
      {
        name: 'runs/new reply → agent started, p50',
        unit: 'ms',
        value: percentile(lat, 50),
        baseline: { name: 'spawn → same agent started, p50', value: percentile(base, 50) },
        higherIsBetter: false,
      },
      {
        name: 'runs/new reply → agent started, p99',
        unit: 'ms',
        value: percentile(lat, 99),
        baseline: { name: 'spawn → same agent started, p99', value: percentile(base, 99) },
        higherIsBetter: false,
      },
      {
        name: `runs through the whole path (${CONCURRENCY} in flight)`,
        unit: 'runs/s',
        value: runsPerSec,
        baseline: { name: 'direct spawn + exit', value: spawnsPerSec },
        higherIsBetter: true,
      },
    ];
  } finally {
    await daemon.close();
    await hub.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
