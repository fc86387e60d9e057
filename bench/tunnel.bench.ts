/**
 * The tunnel's two hot paths, each against a same-run baseline on loopback:
 * (a) queue/claim throughput over HTTP vs a bare Fastify route answering the same JSON shape;
 * (b) outbox write → daemon ack latency vs a raw WebSocket echo round trip.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { WebSocket, WebSocketServer } from 'ws';
import { sendCommand } from '../src/hub/daemons/outbox.service.js';
import { startHub } from '../src/hub/server.js';
import { createLogger } from '../src/shared/logger.js';
import { mintToken } from '../src/shared/tokens.js';
import type { BenchResult } from './index.js';

const CLAIM_MS = 1_500;
const CONCURRENCY = 16;
const ROUND_TRIPS = 400;
/** More than the hub can claim in CLAIM_MS, so every claim is a winning one. */
const ITEMS = 10_000;

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
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-'));
  const adminToken = mintToken('user');
  const running = await startHub({
    databaseUrl: process.env.SVC_BENCH_DATABASE_URL ?? path.join(dir, 'hub.db'),
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
    await new Promise<void>((resolve) => (echo ? echo.close(() => resolve()) : resolve()));
    await baseline.close();
    await running.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
