/**
 * The tunnel's hot paths, each against a same-run baseline on loopback:
 * (a) queue/claim throughput over HTTP vs a bare Fastify route answering the same JSON shape;
 * (c) the claim race: RACERS daemons on real tunnels (a child process), every one eligible (the team
 *     installed), and runs created through `runs/new` by 16 clients (this process) on a hub in a
 *     child process. Each run is offered as the product does (to at most 3 daemons, the least loaded
 *     first); a daemon claims with a call over its tunnel, as `svc daemon` does, and acks. Runs
 *     claimed per second (from the first `runs/new` to the last claim) vs the same daemons' HTTP
 *     clients hammering a bare route, claim latency (offer received → claim answered) p50/p99, and
 *     the check that no run was executed twice (`runs/execute` frames counted per run);
 * (b) outbox write → daemon ack latency vs a raw WebSocket echo round trip.
 */
import { once } from 'node:events';
import Fastify from 'fastify';
import { WebSocket, WebSocketServer } from 'ws';
import { sendCommand } from '../src/hub/daemons/commands.js';
import { startHub } from '../src/hub/server.js';
import { createLogger } from '../src/shared/logger.js';
import { mintToken } from '../src/shared/tokens.js';
import type { BenchResult } from './index.js';
import { type Child, startChild } from './lib/child.js';
import { benchDatabase, cpuMsOf, pool } from './lib/util.js';

const CLAIM_MS = 1_500;
const CONCURRENCY = 16;
const ROUND_TRIPS = 400;
/** More than the hub can claim in CLAIM_MS, so every claim is a winning one. */
const ITEMS = 10_000;
/** Daemons racing for each offered item in (c), and the items offered. */
const RACERS = Number(process.env.SVC_BENCH_RACERS ?? 50);
const RACE_RUNS = Number(process.env.SVC_BENCH_RACE_RUNS ?? 2_000);
/** Runs raced first and not counted: the hub's code is compiled by then, as the baseline's is by its warm-up. */
const RACE_WARMUP = Number(process.env.SVC_BENCH_RACE_WARMUP ?? 1_000);

async function post(url: string, body: unknown, token: string) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: bench replies
  const json = (await res.json()) as any;
  if (json.ok !== true) throw new Error(`${url}: ${JSON.stringify(json)}`);
  return json;
}

/** Claims per second: CONCURRENCY workers claiming distinct items for CLAIM_MS. */
async function claimRate(url: string, token: string, daemonId: string, items: string[]): Promise<number> {
  let next = 0;
  let done = 0;
  const until = performance.now() + CLAIM_MS;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until && next < items.length) {
        await post(url, { queue_item_id: items[next++], daemon_id: daemonId }, token);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** (c): see the top of the file. */
async function claimRace(kind: 'sqlite' | 'postgres'): Promise<BenchResult[]> {
  const db = benchDatabase(kind);
  const adminToken = mintToken('user');
  const hubOpts = { databaseUrl: db.url, ...(db.schema ? { schema: db.schema } : {}), adminToken };
  let hub: Child | null = null;
  let racers: Child | null = null;
  try {
    hub = await startChild('hub-process.ts', { env: { SVC_BENCH_HUB: JSON.stringify(hubOpts) } });
    const url = hub.hello.url as string;
    const api = (op: string, body: unknown) => post(`${url}/v1/${op}`, body, adminToken);
    const org = await api('orgs/new', { slug: 'race', owner: { email: 'owner@bench.test' } });
    const orgId = org.data.org.id as string;
    const realmId = (await api('realms/list', { org_id: orgId })).data[0].id as string;
    await api('agents/register', {
      org_id: orgId,
      manifest: { name: 'noop', version: '1.0.0', command: ['/bin/true'] },
    });
    const team = await api('teams/register', {
      org_id: orgId,
      definition: { name: 'race', version: '1.0.0', phases: [{ name: 'only', agent: 'noop' }] },
    });
    const tokens = await pool(RACERS, 8, async (i) => {
      const r = await api('realms/create_daemon_token', { realm_id: realmId, name: `racer-${i}` });
      return { daemon_id: r.data.daemon_id as string, token: r.data.token as string };
    });
    racers = await startChild('daemons-process.ts');
    await racers.request('connect', {
      url: `${url.replace(/^http/, 'ws')}/v1/daemons/connect`,
      daemons: tokens,
      concurrency: 10,
      pingMs: 15_000,
      claimUrl: 'tunnel',
    });
    // Every racer confirms the install (it acks the command), so every one may take the runs.
    await pool(RACERS, 8, (i) =>
      api('teams/install', { team_version_id: team.data.id, daemon_id: tokens[i]!.daemon_id }),
    );
    for (;;) {
      const installs = await api('teams/list_installs', { realm_id: realmId, limit: 500 });
      if (installs.data.filter((x: { status: string }) => x.status === 'installed').length >= RACERS) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const race = async (n: number) => {
      await racers!.request('stats', { reset: true });
      const t0 = performance.now();
      const hubCpu0 = cpuMsOf(hub!.pid);
      await pool(n, 16, () => api('runs/new', { realm_id: realmId, team: 'race' }));
      const deadline = Date.now() + 120_000;
      // biome-ignore lint/suspicious/noExplicitAny: child reply
      let st: any;
      for (;;) {
        st = await racers!.request('stats');
        if (st.wins >= n || st.errors > 0) break;
        if (Date.now() > deadline) throw new Error(`race: ${st.wins} of ${n} runs claimed`);
        await new Promise((r) => setTimeout(r, 5));
      }
      const seconds = (performance.now() - t0) / 1000;
      const hubCpuPerRun = (cpuMsOf(hub!.pid) - hubCpu0) / n;
      if (st.errors > 0) throw new Error(`race: ${st.errors} failed claims, last: ${st.lastError}`);
      if (st.wins !== n) throw new Error(`race: ${st.wins} wins for ${n} runs`);
      if (st.executedTwice > 0) throw new Error(`race: ${st.executedTwice} runs executed twice`);
      const lat = (st.claimLatencies as number[]).sort((x, y) => x - y);
      return {
        runsPerSec: n / seconds,
        hubCpuPerRun,
        claims: st.claims as number,
        executed: st.executed as number,
        lat,
      };
    };
    await race(RACE_WARMUP);
    const r = await race(RACE_RUNS);
    // The baseline: the same daemons' HTTP clients posting to a bare route.
    const bare = Fastify();
    bare.post('/v1/queue/claim', async (req) => ({
      ok: true,
      data: { claimed: true, queue_item_id: (req.body as { queue_item_id: string }).queue_item_id },
    }));
    await bare.listen({ host: '127.0.0.1', port: 0 });
    const hammered = (await racers.request('hammer', {
      url: `http://127.0.0.1:${(bare.server.address() as { port: number }).port}/v1/queue/claim`,
      durationMs: 2_000,
      warmupMs: 300,
    })) as { requests: number; seconds: number; latencies: number[] };
    await bare.close();
    const bareLat = hammered.latencies.sort((x, y) => x - y);
    const setup = `${RACERS} eligible daemons, ${kind}`;
    return [
      {
        name: `runs offered and claimed over tunnels, ${setup}`,
        unit: 'runs/s',
        value: r.runsPerSec,
        baseline: {
          name: `same ${RACERS} daemons' clients, bare route`,
          value: hammered.requests / hammered.seconds,
        },
        higherIsBetter: true,
        note:
          `${RACE_RUNS} runs through runs/new (16 clients), each offered to ≤ 3 daemons: ${r.claims} claims, ` +
          `every run executed once (${r.executed} checked); the hub's CPU per run ` +
          `${(r.hubCpuPerRun * 1000).toFixed(0)} µs (${((r.hubCpuPerRun * r.runsPerSec) / 10).toFixed(0)} % of a core)`,
      },
      ...([50, 99] as const).map((p) => ({
        name: `claim (offer received → claim answered), ${setup}, p${p}`,
        unit: 'ms',
        value: percentile(r.lat, p),
        baseline: { name: `bare route round trip p${p}`, value: percentile(bareLat, p) },
        higherIsBetter: false,
        note: `n=${r.lat.length}`,
      })),
    ];
  } finally {
    await racers?.close();
    await hub?.close();
    await db.cleanup();
  }
}

export default async function tunnelBench(): Promise<BenchResult[]> {
  // SQLite unless SVC_BENCH_DB=postgres (a fresh schema, dropped at the end).
  const db = benchDatabase(process.env.SVC_BENCH_DB === 'postgres' ? 'postgres' : 'sqlite');
  const adminToken = mintToken('user');
  const running = await startHub({
    databaseUrl: db.url,
    ...(db.schema ? { schema: db.schema } : {}),
    adminToken,
    log: createLogger('hub', 'silent'),
  });
  const baseline = Fastify();
  let echo: WebSocketServer | null = null;
  const sockets: WebSocket[] = [];
  try {
    const api = (op: string, body: unknown, token = adminToken) =>
      post(`${running.url}/v1/${op}`, body, token);
    const org = await api('orgs/new', { slug: `bench-${Date.now()}`, owner: { email: 'owner@bench.test' } });
    const owner = await api(
      'invites/accept',
      { code: org.data.owner_invite.code, password: 'bench password' },
      '',
    );
    const realms = await api('realms/list', { org_id: org.data.org.id }, owner.data.token);
    const realmId = realms.data[0].id as string;
    const dt = await api('realms/create_daemon_token', { realm_id: realmId, name: 'bench' });
    const { daemon_id: daemonId, token } = dt.data as { daemon_id: string; token: string };

    // (a) claims per second, and the baseline route answering the same shape.
    const items: string[] = [];
    for (let i = 0; i < ITEMS; i += 500) {
      const rows = Array.from({ length: 500 }, () => ({
        id: running.hub.newId(),
        realm_id: realmId,
        kind: 'bench',
        payload: '{}',
        status: 'offered' as const,
        claimed_by: null,
        claimed_at: null,
        created_at: Date.now(),
      }));
      await running.hub.db.insertInto('queue_items').values(rows).execute();
      items.push(...rows.map((r) => r.id));
    }
    baseline.post('/v1/queue/claim', async (req) => ({
      ok: true,
      data: { claimed: true, queue_item_id: (req.body as { queue_item_id: string }).queue_item_id },
    }));
    await baseline.listen({ host: '127.0.0.1', port: 0 });
    const baseUrl = `http://127.0.0.1:${(baseline.server.address() as { port: number }).port}/v1/queue/claim`;
    const baseRate = await claimRate(baseUrl, token, daemonId, items);
    const hubRate = await claimRate(`${running.url}/v1/queue/claim`, token, daemonId, items);

    // (c) the claim race, on a hub of its own in a child process.
    const raced = await claimRace(db.kind);
    // (b) outbox write → ack latency through a daemon that acks at once.
    const daemon = new WebSocket(`${running.url.replace(/^http/, 'ws')}/v1/daemons/connect`, {
      headers: { authorization: `Bearer ${token}` },
    });
    sockets.push(daemon);
    daemon.on('message', (data) => {
      const f = JSON.parse(data.toString()) as { type: string; tx_id?: string };
      if (f.type === 'command')
        daemon.send(JSON.stringify({ type: 'ack', tx_id: f.tx_id, status: 'ok', reply: {} }));
    });
    await once(running.hub.tunnel.events, 'connected');
    const hubLat: number[] = [];
    for (let i = 0; i < ROUND_TRIPS; i++) {
      const t0 = performance.now();
      const txId = await sendCommand(running.hub, daemonId, 'bench/echo', { i });
      await running.hub.tunnel.waitForAck(txId, 10_000);
      hubLat.push(performance.now() - t0);
    }

    echo = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    echo.on('connection', (ws) => ws.on('message', (data) => ws.send(data)));
    await once(echo, 'listening');
    const client = new WebSocket(`ws://127.0.0.1:${(echo.address() as { port: number }).port}`);
    sockets.push(client);
    await once(client, 'open');
    const echoLat: number[] = [];
    for (let i = 0; i < ROUND_TRIPS; i++) {
      const t0 = performance.now();
      client.send(JSON.stringify({ type: 'command', tx_id: String(i), path: 'bench/echo', body: { i } }));
      await once(client, 'message');
      echoLat.push(performance.now() - t0);
    }
    hubLat.sort((x, y) => x - y);
    echoLat.sort((x, y) => x - y);

    return [
      {
        name: 'queue/claim over HTTP',
        unit: 'req/s',
        value: hubRate,
        baseline: { name: 'bare Fastify route', value: baseRate },
        higherIsBetter: true,
        note: `${CONCURRENCY} concurrent in-process clients, one daemon, distinct items`,
      },
      ...raced,
      ...([50, 99] as const).map((p) => ({
        name: `outbox write → daemon ack, p${p}`,
        unit: 'ms',
        value: percentile(hubLat, p),
        baseline: { name: `raw ws echo p${p}`, value: percentile(echoLat, p) },
        higherIsBetter: false,
      })),
    ];
  } finally {
    for (const s of sockets) s.terminate();
    await new Promise<void>((resolve) => (echo ? echo.close(() => resolve()) : resolve()));
    await baseline.close();
    await running.close();
    await db.cleanup();
  }
}
