/**
 * The tunnel's hot paths, each against a same-run baseline on loopback:
 * (a) queue/claim throughput over HTTP vs a bare Fastify route answering the same JSON shape;
 * (c) claims with RACERS daemons racing over real tunnels: the hub offers items through its outbox
 *     (`offer_job` to every daemon), each daemon claims over HTTP as the real daemon does and acks;
 *     claims answered per second vs the same daemons' HTTP clients hammering the bare route;
 * (b) outbox write → daemon ack latency vs a raw WebSocket echo round trip.
 */
import { once } from 'node:events';
import Fastify from 'fastify';
import { WebSocket, WebSocketServer } from 'ws';
import { sendCommand } from '../src/hub/daemons/commands.js';
import { startHub } from '../src/hub/server.js';
import { createLogger } from '../src/shared/logger.js';
import { mintToken } from '../src/shared/tokens.js';
import { offerItem } from '../test/helpers/offers.js';
import type { BenchResult } from './index.js';
import { type Child, startChild } from './lib/child.js';
import { benchDatabase, pool } from './lib/util.js';

const CLAIM_MS = 1_500;
const CONCURRENCY = 16;
const ROUND_TRIPS = 400;
/** More than the hub can claim in CLAIM_MS, so every claim is a winning one. */
const ITEMS = 10_000;
/** Daemons racing for each offered item in (c), and the items offered. */
const RACERS = Number(process.env.SVC_BENCH_RACERS ?? 50);
const RACE_ITEMS = 100;

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
  let racers: Child | null = null;
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

    // (c) RACERS daemons over real tunnels, in a child process (their event loop is not the hub's).
    const racerTokens = await pool(RACERS, 8, async (i) => {
      const r = await api('realms/create_daemon_token', { realm_id: realmId, name: `racer-${i}` });
      return { daemon_id: r.data.daemon_id as string, token: r.data.token as string };
    });
    racers = await startChild('daemons-process.ts');
    await racers.request('connect', {
      url: `${running.url.replace(/^http/, 'ws')}/v1/daemons/connect`,
      daemons: racerTokens,
      concurrency: 10,
      pingMs: 15_000,
      claimUrl: `${running.url}/v1/queue/claim`,
    });
    const race = async (n: number) => {
      await racers!.request('stats', { reset: true });
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await offerItem(running.hub, realmId, { i });
      const deadline = Date.now() + 120_000;
      // biome-ignore lint/suspicious/noExplicitAny: child reply
      let st: any;
      for (;;) {
        st = await racers!.request('stats');
        if (st.claims + st.errors >= n * RACERS) break;
        if (Date.now() > deadline) throw new Error(`race: ${st.claims} of ${n * RACERS} claims answered`);
        await new Promise((r) => setTimeout(r, 5));
      }
      const seconds = (performance.now() - t0) / 1000;
      if (st.errors > 0) throw new Error(`race: ${st.errors} failed claims, last: ${st.lastError}`);
      if (st.wins !== n) throw new Error(`race: ${st.wins} wins for ${n} items`);
      const lat = (st.claimLatencies as number[]).sort((x, y) => x - y);
      return { claimsPerSec: st.claims / seconds, itemsPerSec: n / seconds, lat };
    };
    await race(5); // warm-up
    const raced = await race(RACE_ITEMS);
    const hammered = (await racers.request('hammer', {
      url: baseUrl,
      durationMs: 2_000,
      warmupMs: 300,
    })) as { requests: number; seconds: number };
    await racers.request('close');
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
      {
        name: `queue/claim, ${RACERS} daemons racing via tunnels`,
        unit: 'req/s',
        value: raced.claimsPerSec,
        baseline: { name: `same ${RACERS} clients, bare route`, value: hammered.requests / hammered.seconds },
        higherIsBetter: true,
        note:
          `${RACE_ITEMS} items offered through the outbox, each claimed by all ${RACERS} (one wins, checked): ` +
          `${raced.itemsPerSec.toFixed(1)} items/s; claim p50 ${percentile(raced.lat, 50).toFixed(1)} ms, ` +
          `p99 ${percentile(raced.lat, 99).toFixed(1)} ms; counts offer, ack and claim work`,
      },
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
    await racers?.close();
    await new Promise<void>((resolve) => (echo ? echo.close(() => resolve()) : resolve()));
    await baseline.close();
    await running.close();
    await db.cleanup();
  }
}
