/**
 * The run dispatch path, measured from outside: the hub (one or two processes), the daemon and this
 * load generator are separate processes, and every call goes through the public API.
 *
 * The agent is `/bin/bash` running a script that writes `$EPOCHREALTIME` (when it started) to a
 * file named after its run, and exits. The baseline, taken in the same run, spawns that same script
 * directly from this process.
 *
 * (a) Dispatch overhead: from the moment this process sends `runs/new` to the moment the agent runs,
 *     minus the time a direct spawn takes to run it (p50 and p99, one run at a time, each followed by
 *     a direct spawn so noise hits both). With one hub process, and on PostgreSQL also with two: the
 *     run created through process A, the daemon connected to process B.
 * (b) Runs per second through the whole path (runs/new → offer → claim → execute → agent → its end
 *     recorded) with 16 runs in flight, against spawning the script directly 16 at a time. A run's
 *     end is learnt from the realm's event stream (`GET /v1/realms/<id>/events`), as a client would.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { followEvents } from '../src/shared/api/event-stream.js';
import { isTerminal, type RunState } from '../src/shared/api/run-states.js';
import { mintToken } from '../src/shared/tokens.js';
import type { BenchResult } from './index.js';
import { type Child, startChild } from './lib/child.js';
import {
  benchDatabase,
  benchDatabases,
  cpuMsOf,
  nowMs,
  percentile,
  pool,
  post,
  postgresCpuMs,
} from './lib/util.js';

const LATENCY_RUNS = Number(process.env.SVC_BENCH_LATENCY_RUNS ?? 120);
const THROUGHPUT_RUNS = Number(process.env.SVC_BENCH_THROUGHPUT_RUNS ?? 320);
const IN_FLIGHT = 16;

export default async function runsBench(): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  for (const kind of await benchDatabases()) {
    // Several hub processes need PostgreSQL (docs/operations.md): SQLite runs one.
    for (const processes of kind === 'sqlite' ? [1] : ([1, 2] as const)) {
      out.push(...(await dispatchBench(kind, processes as 1 | 2)));
    }
  }
  return out;
}

/** Ends of runs, learnt from the realm's event stream. */
function followRealm(hubUrl: string, realmId: string, token: string) {
  const ended = new Map<string, RunState>();
  const waiters = new Map<string, (s: RunState) => void>();
  const abort = new AbortController();
  let opened: () => void;
  const open = new Promise<void>((r) => {
    opened = r;
  });
  const following = followEvents(`${hubUrl}/v1/realms/${realmId}/events`, {
    token,
    signal: abort.signal,
    onOpen: () => opened(),
    onEvent(e) {
      const run = e.data as { run_id: string; state: RunState };
      if (e.event !== 'state' || !isTerminal(run.state)) return false;
      ended.set(run.run_id, run.state);
      waiters.get(run.run_id)?.(run.state);
      return false;
    },
  }).catch(() => {});
  return {
    open,
    async ended(runId: string): Promise<void> {
      const state =
        ended.get(runId) ?? (await new Promise<RunState>((resolve) => waiters.set(runId, resolve)));
      waiters.delete(runId);
      if (state !== 'succeeded') throw new Error(`bench run ${runId} ended ${state}`);
    },
    async close() {
      abort.abort();
      await following;
    },
  };
}

async function dispatchBench(kind: 'sqlite' | 'postgres', processes: 1 | 2): Promise<BenchResult[]> {
  const db = benchDatabase(kind);
  const marks = path.join(db.dir, 'marks');
  mkdirSync(marks);
  const agent = path.join(db.dir, 'stamp.sh');
  writeFileSync(agent, `printf '%s' "$EPOCHREALTIME" > ${JSON.stringify(marks)}/"$SVC_RUN_ID"\n`);
  const stampOf = (key: string) => Number(readFileSync(path.join(marks, key), 'utf8')) * 1000;
  const adminToken = mintToken('user');
  const hubOpts = { databaseUrl: db.url, ...(db.schema ? { schema: db.schema } : {}), adminToken };
  const env = { SVC_BENCH_HUB: JSON.stringify(hubOpts) };
  const children: Child[] = [];
  let stream: ReturnType<typeof followRealm> | null = null;
  try {
    const a = await startChild('hub-process.ts', { env });
    children.push(a);
    const b = processes === 2 ? await startChild('hub-process.ts', { env }) : a;
    if (b !== a) children.push(b);
    const hubUrl = a.hello.url as string;
    const call = (op: string, body: unknown) => post(`${hubUrl}/v1/${op}`, body, adminToken);
    const org = await call('orgs/new', { slug: 'bench', owner: { email: 'owner@bench.test' } });
    const orgId = org.data.org.id as string;
    const realmId = (await call('realms/list', { org_id: orgId })).data[0].id as string;
    const dt = await call('realms/create_daemon_token', { realm_id: realmId, name: 'bench' });
    const daemon = await startChild('daemon-process.ts', {
      env: {
        SVC_BENCH_DAEMON: JSON.stringify({
          home: path.join(db.dir, 'daemon'),
          hubUrls: [b.hello.url],
          realmToken: dt.data.token,
        }),
      },
    });
    children.push(daemon);
    await call('agents/register', {
      org_id: orgId,
      manifest: { name: 'stamp', version: '1.0.0', command: ['/bin/bash', agent] },
    });
    const team = await call('teams/register', {
      org_id: orgId,
      definition: { name: 'stamp-team', version: '1.0.0', phases: [{ name: 'only', agent: 'stamp' }] },
    });
    await call('teams/install', { team_version_id: team.data.id, daemon_id: dt.data.daemon_id });
    stream = followRealm(hubUrl, realmId, adminToken);
    await stream.open;
    const realm = stream;

    /**
     * One run through the whole path: its id, when it was asked for, when `runs/new` answered (its
     * transaction committed), and when its end was seen.
     */
    type Asked = { id: string; asked: number; answered: number; seen: number };
    const run = async (): Promise<Asked> => {
      const asked = nowMs();
      const r = await call('runs/new', { realm_id: realmId, team: 'stamp-team' });
      const answered = nowMs();
      const id = r.data.run_id as string;
      await realm.ended(id);
      return { id, asked, answered, seen: nowMs() };
    };
    /** A run's steps (ms): from its history (the hub's clock), the agent's stamp and this process's clock. */
    const stepsOf = async ({ id, asked, answered, seen }: Asked) => {
      const r = await call('runs/get_by_id', { run_id: id, with_history: true });
      const at = (type: string) =>
        (r.data.history as { type: string; at: number }[]).find((e) => e.type === type)?.at;
      const points: [string, number | undefined][] = [
        ['runs/new sent', asked],
        ['queued', at('run.queued')],
        ['offered', at('run.offered')],
        ['answered', answered],
        ['claimed', at('run.claimed') ?? at('run.assigned')],
        ['started', at('run.started')],
        ['agent running', stampOf(id)],
        ['ended', at('run.ended')],
        ['seen by the stream', seen],
      ];
      const steps: [string, number][] = [];
      for (let k = 1; k < points.length; k++) {
        const [from, a] = points[k - 1]!;
        const [to, b] = points[k]!;
        if (a !== undefined && b !== undefined) steps.push([`${from} → ${to}`, b - a]);
      }
      return steps;
    };
    /** Where the runs' time went: each step's median over (at most 60 of) them. */
    const stepMedians = async (runs: Asked[]) => {
      const steps = new Map<string, number[]>();
      await pool(Math.min(60, runs.length), 4, async (i) => {
        const run = runs[Math.floor((i * runs.length) / Math.min(60, runs.length))]!;
        for (const [key, ms] of await stepsOf(run)) steps.set(key, [...(steps.get(key) ?? []), ms]);
      });
      return [...steps]
        .map(
          ([k, xs]) =>
            `${k} ${percentile(
              xs.sort((x, y) => x - y),
              50,
            ).toFixed(1)}`,
        )
        .join(', ');
    };
    const direct = (key: string) => {
      const at = nowMs();
      const child = spawn('/bin/bash', [agent], {
        stdio: 'ignore',
        env: { ...process.env, SVC_RUN_ID: key },
      });
      return new Promise<number>((resolve, reject) => {
        child.on('error', reject);
        child.on('close', () => resolve(at));
      });
    };

    // Warm-up: JIT, prepared statements, the first spawns.
    for (let i = 0; i < 5; i++) await run();

    // (a) one run at a time, each followed by one direct spawn.
    const lat: number[] = [];
    const base: number[] = [];
    const ids: Asked[] = [];
    for (let i = 0; i < LATENCY_RUNS; i++) {
      const one = await run();
      ids.push(one);
      lat.push(stampOf(one.id) - one.asked);
      const key = `direct-${i}`;
      const at = await direct(key);
      base.push(stampOf(key) - at);
    }
    const breakdown = await stepMedians(ids);
    // Each run minus the direct spawn right after it: the overhead's own spread, where the row's
    // difference of two percentiles can even be negative when the direct spawns' tail is the worse.
    const overheads = lat.map((x, i) => x - base[i]!);
    const slowest = overheads.indexOf(Math.max(...overheads));
    const slowestSteps = (await stepsOf(ids[slowest]!)).map(([k, ms]) => `${k} ${ms.toFixed(1)}`).join(', ');
    const paired = [...overheads].sort((x, y) => x - y);
    lat.sort((x, y) => x - y);
    base.sort((x, y) => x - y);
    const setup =
      processes === 1 ? `${kind}, 1 hub process` : `${kind}, 2 hub processes (run via A, daemon on B)`;
    const results: BenchResult[] = ([50, 99] as const).map((p) => {
      const spawnP = percentile(base, p);
      return {
        name: `dispatch overhead, ${setup}, p${p}`,
        unit: 'ms',
        value: percentile(lat, p) - spawnP,
        baseline: { name: `direct spawn → agent running, p${p}`, value: spawnP },
        higherIsBetter: false,
        note:
          `runs/new sent → agent running p${p} ${percentile(lat, p).toFixed(2)} ms, minus the direct spawn's; ` +
          `p${p} of each run minus the direct spawn after it: ${percentile(paired, p).toFixed(2)} ms; ` +
          `n=${lat.length}${p === 99 && lat.length < 100 ? ' (p99 of fewer than 100 runs is about their maximum)' : ''}` +
          (p === 50
            ? `; step medians (ms, history at 1 ms resolution): ${breakdown}`
            : `; the slowest run (${overheads[slowest]!.toFixed(1)} ms over its direct spawn): ${slowestSteps}`),
      };
    });

    // (b) throughput, IN_FLIGHT runs at a time, against direct spawns IN_FLIGHT at a time. The CPU
    // time each process spent on it, per run, does not move with the machine's other load as the
    // rate does.
    const hubs = [...new Set([a, b])];
    const cpu = () => ({
      hub: hubs.reduce((sum, h) => sum + cpuMsOf(h.pid), 0),
      daemon: cpuMsOf(daemon.pid),
      client: ((u) => (u.user + u.system) / 1000)(process.cpuUsage()),
      postgres: kind === 'postgres' ? postgresCpuMs() : 0,
    });
    const cpu0 = cpu();
    const t0 = performance.now();
    const loaded = await pool(THROUGHPUT_RUNS, IN_FLIGHT, () => run());
    const runsPerSec = THROUGHPUT_RUNS / ((performance.now() - t0) / 1000);
    const cpu1 = cpu();
    const perRun = (k: keyof typeof cpu0) => ((cpu1[k] - cpu0[k]) / THROUGHPUT_RUNS).toFixed(2);
    const cpuNote =
      `CPU per run: hub ${perRun('hub')} ms, daemon ${perRun('daemon')} ms, this client ${perRun('client')} ms` +
      (kind === 'postgres' ? `, PostgreSQL ${perRun('postgres')} ms` : '');
    const t1 = performance.now();
    await pool(THROUGHPUT_RUNS, IN_FLIGHT, (i) => direct(`t-${i}`));
    const spawnsPerSec = THROUGHPUT_RUNS / ((performance.now() - t1) / 1000);
    results.push({
      name: `runs through the whole path, ${setup} (${IN_FLIGHT} in flight)`,
      unit: 'runs/s',
      value: runsPerSec,
      baseline: { name: `direct spawn + exit, ${IN_FLIGHT} at a time`, value: spawnsPerSec },
      higherIsBetter: true,
      note:
        `${THROUGHPUT_RUNS} runs; a run's end learnt from the realm's event stream; ${cpuNote}; ` +
        `step medians under load (ms): ${await stepMedians(loaded.slice(THROUGHPUT_RUNS / 4, (3 * THROUGHPUT_RUNS) / 4))}`,
    });
    return results;
  } finally {
    await stream?.close();
    for (const c of children.reverse()) await c.close();
    await db.cleanup();
  }
}
