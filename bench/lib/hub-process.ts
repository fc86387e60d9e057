/**
 * Child process: a server measured alone (its memory, or a second hub process on a shared database).
 *
 * - `hub` (default): `startHub` with the options in `SVC_BENCH_HUB` (JSON: databaseUrl, schema,
 *   adminToken, config), exactly as `svc hub` composes it, logs silenced.
 * - `fastify`: the baseline of an HTTP route, a bare Fastify 5 server answering `SVC_BENCH_REPLY`
 *   (JSON: path, status, body) to every POST at its path.
 * - `ws`: the baseline, a bare `ws` WebSocketServer on a plain HTTP server that pings every
 *   connection every `SVC_BENCH_PING_MS` and drops one that missed a pong, and closes every
 *   connection with 1012 when it stops, as the hub does.
 *
 * Requests: `memory` (after a full GC when run with --expose-gc), `counts` (connections opened and
 * closed, and for the hub the daemons `online` in the database).
 */
import http from 'node:http';
import Fastify from 'fastify';
import { WebSocketServer } from 'ws';
import { startHub } from '../../src/hub/server.js';
import { createLogger } from '../../src/shared/logger.js';
import { SERVICE_RESTART } from '../../src/shared/protocol.js';
import { memory, serveParent } from './child.js';

const counts = { connected: 0, disconnected: 0 };

if (process.argv[2] === 'fastify') {
  const reply = JSON.parse(process.env.SVC_BENCH_REPLY ?? '{}') as {
    path: string;
    status: number;
    body: string;
  };
  const bare = Fastify();
  bare.post(reply.path, async (_req, r) =>
    r.status(reply.status).type('application/json; charset=utf-8').send(reply.body),
  );
  await bare.listen({ host: '127.0.0.1', port: 0 });
  const port = (bare.server.address() as { port: number }).port;
  serveParent({ url: `http://127.0.0.1:${port}` }, { memory: () => memory() }, () => bare.close());
} else if (process.argv[2] === 'ws') {
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true });
  const alive = new WeakMap<object, boolean>();
  server.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => {
      counts.connected++;
      alive.set(ws, true);
      ws.on('pong', () => alive.set(ws, true));
      ws.on('close', () => counts.disconnected++);
      ws.on('error', () => {});
    }),
  );
  setInterval(
    () => {
      for (const ws of wss.clients) {
        if (!alive.get(ws)) {
          ws.terminate();
          continue;
        }
        alive.set(ws, false);
        ws.ping();
      }
    },
    Number(process.env.SVC_BENCH_PING_MS ?? 15_000),
  ).unref();
  server.listen(Number(process.env.SVC_BENCH_PORT ?? 0), '127.0.0.1', () => {
    const port = (server.address() as { port: number }).port;
    serveParent(
      { url: `http://127.0.0.1:${port}` },
      { memory: () => memory(), counts: () => counts },
      async () => {
        // As a hub stops: every connection closed with 1012 (service restart), then the process ends.
        const closed = [...wss.clients].map((ws) => new Promise((resolve) => ws.once('close', resolve)));
        for (const ws of wss.clients) ws.close(SERVICE_RESTART, 'restarting');
        const late = setTimeout(() => {
          for (const ws of wss.clients) ws.terminate();
        }, 5_000);
        await Promise.all(closed);
        clearTimeout(late);
        server.close();
      },
    );
  });
} else {
  const opts = JSON.parse(process.env.SVC_BENCH_HUB ?? '{}') as {
    databaseUrl: string;
    schema?: string;
    adminToken: string;
    port?: number;
    config?: Record<string, number>;
  };
  const running = await startHub({ ...opts, log: createLogger('hub', 'silent') });
  running.hub.tunnel.events.on('connected', () => counts.connected++);
  running.hub.tunnel.events.on('disconnected', () => counts.disconnected++);
  serveParent(
    { url: running.url },
    {
      memory: () => memory(),
      async counts() {
        const online = await running.hub.db
          .selectFrom('daemons')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('status', '=', 'online')
          .executeTakeFirstOrThrow();
        return { ...counts, online: Number(online.n) };
      },
    },
    () => running.close(),
  );
}
