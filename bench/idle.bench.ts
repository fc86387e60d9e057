/**
 * Idle daemons one hub process holds: the hub runs alone in a child process (`startHub`, SQLite, or
 * PostgreSQL with SVC_BENCH_DB=postgres); CLIENT_PROCESSES other children open IDLE_DAEMONS real
 * tunnels with realm tokens made through `realms/create_daemon_token`, each answering the hub's pings
 * and pinging the hub like a daemon. They stay idle for two heartbeat rounds (the hub's ping interval
 * is set to PING_MS for the bench; 15 s by default), which must drop none of them. Then the hub's RSS and heap
 * (after a full GC) are compared with those before the connections: MB per 1,000 connections. Before
 * that first measure, WARMUP connections are opened and closed on each server, so that the code a
 * process compiles for its first connections is not counted as memory per connection.
 * Baseline: the same number of connections to a bare `ws` server (pinging alike) in its own process.
 *
 * Then the reconnect storm: the server process is stopped (SIGTERM-like: the hub closes every tunnel)
 * and a new one started on the same port at once; every client dials again with the daemon's own
 * policy (src/daemon/backoff.ts: full jitter from 0–500 ms, doubling after a failed dial), and the
 * time until the last one is greeted again is measured, from the stop and from the new process's
 * readiness. The hub must then hold every daemon online (dispatchable). Same for the bare server.
 *
 * Last, the connection rate in RATE_ROUNDS alternating rounds (hub, then bare server, each time every
 * daemon from a fresh client process, then all closed), on the processes the storms started. The
 * printed rate is the round whose hub/bare ratio is the median of all rounds (the first connect of
 * each hold included), so that the machine's drift between the two servers' turns weighs less.
 */
import { mintToken } from '../src/shared/tokens.js';
import type { BenchResult } from './index.js';
import { type Child, startChild } from './lib/child.js';
import { benchDatabase, cpuMsOf, percentile, pool, post, sleep } from './lib/util.js';

const IDLE_DAEMONS = Number(process.env.SVC_BENCH_IDLE_DAEMONS ?? 5_000);
const PING_MS = 5_000;
/** Two full heartbeat rounds: every connection was pinged, and checked for its pong, at least once. */
const HOLD_MS = 2 * PING_MS + 1_500;
const CONNECT_CONCURRENCY = 50;
/** Alternating rounds of the connection rate, hub then bare server, after the storms. */
const RATE_ROUNDS = Number(process.env.SVC_BENCH_RATE_ROUNDS ?? 4);
/** Connections opened and closed before the first measure. */
const WARMUP = Math.min(200, IDLE_DAEMONS);
/**
 * Processes the daemons' ends are split over (SVC_BENCH_CLIENT_PROCESSES): daemons run on many
 * machines, and one process alone, opening 19,000 tunnels one handshake at a time, is slower than
 * the servers measured (the bare server too). The handshakes at a time are split over them as well.
 */
const CLIENT_PROCESSES = Math.max(1, Number(process.env.SVC_BENCH_CLIENT_PROCESSES ?? 2));
const FD_LIMIT = IDLE_DAEMONS + 1_024;
const CLIENT_FD_LIMIT = Math.ceil(IDLE_DAEMONS / CLIENT_PROCESSES) + 1_024;

interface Mem {
  rss: number;
  heapUsed: number;
}
interface Held {
  before: Mem;
  after: Mem;
  connectMs: number;
  pings: number;
  /** The server's CPU time while the connections opened (ms). */
  connectCpuMs: number;
  /** The reconnect storm: stop → all back, new process ready → all back (ms), dials made. */
  storm: { totalMs: number; afterReadyMs: number; redials: number; failed: number };
  /** The server process after the restart. */
  server: Child;
}

type DaemonRef = { daemon_id: string; token: string };
interface ClientStats {
  open: number;
  closed: number;
  pings: number;
  redials: number;
  failedRedials: number;
  lastError: string;
}

/**
 * The daemons' ends, split over CLIENT_PROCESSES fresh processes (bench/lib/daemons-process.ts): each
 * takes every n-th daemon and its share of the handshakes at a time; their answers are summed.
 */
async function startClients() {
  const kids = await Promise.all(
    Array.from({ length: CLIENT_PROCESSES }, () =>
      startChild('daemons-process.ts', { fdLimit: CLIENT_FD_LIMIT }),
    ),
  );
  const share = <T>(xs: readonly T[], i: number) => xs.filter((_, j) => j % kids.length === i);
  return {
    /**
     * Opens a tunnel for each of `daemons` (plain WebSockets to the bare server), CONNECT_CONCURRENCY
     * handshakes at a time in all, pinging every PING_MS; with `reconnect`, a closed one dials again.
     * `ms`: from the request until the last client process had all of its own.
     */
    async connect(
      url: string,
      daemons: readonly DaemonRef[],
      plain: boolean,
      reconnect = false,
    ): Promise<{ ms: number }> {
      const concurrency = Math.ceil(CONNECT_CONCURRENCY / kids.length);
      const t0 = performance.now();
      await Promise.all(
        kids.map((k, i) =>
          k.request(
            'connect',
            { url, daemons: share(daemons, i), concurrency, pingMs: PING_MS, plain, reconnect },
            240_000,
          ),
        ),
      );
      return { ms: performance.now() - t0 };
    },
    async stats(reset = false): Promise<ClientStats> {
      const all = (await Promise.all(kids.map((k) => k.request('stats', { reset })))) as ClientStats[];
      const sum = (k: Exclude<keyof ClientStats, 'lastError'>) => all.reduce((n, x) => n + x[k], 0);
      return {
        open: sum('open'),
        closed: sum('closed'),
        pings: sum('pings'),
        redials: sum('redials'),
        failedRedials: sum('failedRedials'),
        lastError: all.map((x) => x.lastError).find((e) => e) ?? '',
      };
    },
    /** When the last of `daemons` was greeted again (epoch ms), once every one is. */
    async back(daemons: readonly DaemonRef[]): Promise<number> {
      const at = await Promise.all(
        kids.map((k, i) => k.request('back', { n: share(daemons, i).length }, 300_000)),
      );
      return Math.max(...at.map((a) => (a as { lastOpenAt: number }).lastOpenAt));
    },
    async close(): Promise<void> {
      await Promise.all(kids.map((k) => k.close()));
    },
  };
}

/** Opens the connections from fresh client processes, holds them, and measures the server. */
async function hold(
  server: Child,
  url: string,
  daemons: { daemon_id: string; token: string }[],
  plain: boolean,
  restart: (old: Child) => Promise<Child>,
): Promise<Held> {
  // Warm-up: a few connections opened and closed, so that the code compiled for the first
  // connections (a one-time cost of the process, not of each connection) is in `before`.
  const warm = await startClients();
  try {
    await warm.connect(url, daemons.slice(0, WARMUP), plain);
  } finally {
    await warm.close();
  }
  while ((await server.request('counts')).disconnected < WARMUP) await sleep(50);
  const warmedUp = (await server.request('counts')) as { disconnected: number };
  const clients = await startClients();
  try {
    const before = (await server.request('memory')) as Mem;
    const cpu0 = cpuMsOf(server.pid);
    const c = await clients.connect(url, daemons, plain, true);
    const connectCpuMs = cpuMsOf(server.pid) - cpu0;
    await clients.stats(true);
    await sleep(HOLD_MS);
    const st = await clients.stats();
    const counts = await server.request('counts');
    if (st.open !== daemons.length || st.closed !== 0 || counts.disconnected !== warmedUp.disconnected) {
      throw new Error(
        `${plain ? 'ws' : 'hub'}: ${st.open} of ${daemons.length} open, ${st.closed} closed by the server ` +
          `(${counts.disconnected - warmedUp.disconnected} seen by it); last client error: ${st.lastError}`,
      );
    }
    if (!plain && counts.online !== daemons.length) {
      throw new Error(`hub: ${counts.online} daemons online of ${daemons.length}`);
    }
    const after = (await server.request('memory')) as Mem;

    const stopAt = Date.now();
    const fresh = await restart(server);
    const readyAt = Date.now();
    const lastOpenAt = await clients.back(daemons);
    const dials = await clients.stats();
    if (!plain) {
      const { online } = await fresh.request('counts');
      if (online !== daemons.length)
        throw new Error(`hub after the storm: ${online} online of ${daemons.length}`);
    }
    return {
      before,
      after,
      connectMs: c.ms,
      connectCpuMs,
      pings: st.pings,
      storm: {
        totalMs: lastOpenAt - stopAt,
        afterReadyMs: lastOpenAt - readyAt,
        redials: dials.redials,
        failed: dials.failedRedials,
      },
      server: fresh,
    };
  } finally {
    await clients.close();
  }
}

/** One round of the rate: every daemon connects from fresh client processes, then all close. */
async function connectRound(
  server: Child,
  url: string,
  daemons: { daemon_id: string; token: string }[],
  plain: boolean,
): Promise<{ ms: number; cpuMs: number }> {
  await allClosed(server);
  const clients = await startClients();
  try {
    const cpu0 = cpuMsOf(server.pid);
    const c = await clients.connect(url, daemons, plain);
    return { ms: c.ms, cpuMs: cpuMsOf(server.pid) - cpu0 };
  } finally {
    await clients.close();
    await allClosed(server);
  }
}

/** Until the server has seen every connection it saw open close (the hub: each daemon marked offline). */
async function allClosed(server: Child): Promise<void> {
  for (;;) {
    const { connected, disconnected } = (await server.request('counts')) as {
      connected: number;
      disconnected: number;
    };
    if (disconnected >= connected) return;
    await sleep(50);
  }
}

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

export default async function idleBench(): Promise<BenchResult[]> {
  const db = benchDatabase(process.env.SVC_BENCH_DB === 'postgres' ? 'postgres' : 'sqlite');
  const adminToken = mintToken('user');
  let hub: Child | null = null;
  let ws: Child | null = null;
  try {
    const startHubChild = (port = 0) =>
      startChild('hub-process.ts', {
        nodeArgs: ['--expose-gc'],
        fdLimit: FD_LIMIT,
        env: {
          SVC_BENCH_HUB: JSON.stringify({
            databaseUrl: db.url,
            ...(db.schema ? { schema: db.schema } : {}),
            adminToken,
            port,
            config: { tunnelPingMs: PING_MS },
          }),
        },
      });
    // The tokens are made through one hub process; a fresh one holds the connections, so its memory
    // before them is a started hub's, not one still holding the pages of 5,000 API calls.
    hub = await startHubChild();
    let hubUrl = hub.hello.url as string;
    const api = (op: string, body: unknown) => post(`${hubUrl}/v1/${op}`, body, adminToken);
    const org = await api('orgs/new', { slug: 'bench', owner: { email: 'owner@bench.test' } });
    const realmId = (await api('realms/list', { org_id: org.data.org.id })).data[0].id as string;
    const t0 = performance.now();
    const daemons = await pool(IDLE_DAEMONS, 16, async (i) => {
      const r = await api('realms/create_daemon_token', { realm_id: realmId, name: `idle-${i}` });
      return { daemon_id: r.data.daemon_id as string, token: r.data.token as string };
    });
    const tokensS = (performance.now() - t0) / 1000;
    await hub.close();
    hub = await startHubChild();
    hubUrl = hub.hello.url as string;
    const tunnel = `${hubUrl.replace(/^http/, 'ws')}/v1/daemons/connect`;
    const hubPort = Number(new URL(hubUrl).port);
    const h = await hold(hub, tunnel, daemons, false, async (old) => {
      hub = null;
      await old.close();
      hub = await startHubChild(hubPort);
      return hub;
    });

    const startWs = (port = 0) =>
      startChild('hub-process.ts', {
        args: ['ws'],
        nodeArgs: ['--expose-gc'],
        fdLimit: FD_LIMIT,
        env: { SVC_BENCH_PING_MS: String(PING_MS), SVC_BENCH_PORT: String(port) },
      });
    ws = await startWs();
    const wsUrl = ws.hello.url as string;
    const wsTunnel = wsUrl.replace(/^http/, 'ws');
    const b = await hold(ws, wsTunnel, daemons, true, async (old) => {
      ws = null;
      await old.close();
      ws = await startWs(Number(new URL(wsUrl).port));
      return ws;
    });
    // The rate in alternating rounds, both servers up (the processes the storms started): the machine's
    // drift between the two servers' turns weighs less than in one connect each.
    const rounds: { hub: { ms: number; cpuMs: number }; ws: { ms: number; cpuMs: number } }[] = [];
    for (let r = 0; r < RATE_ROUNDS; r++) {
      rounds.push({
        hub: await connectRound(h.server, tunnel, daemons, false),
        ws: await connectRound(b.server, wsTunnel, daemons, true),
      });
    }

    const n = IDLE_DAEMONS;
    const hubRates = [h.connectMs, ...rounds.map((r) => r.hub.ms)].map((ms) => n / (ms / 1000));
    const wsRates = [b.connectMs, ...rounds.map((r) => r.ws.ms)].map((ms) => n / (ms / 1000));
    // A round's two connects are seconds apart: the ratio of the median round, not the
    // ratio of two medians taken from different rounds.
    const pairs = hubRates
      .map((hub, i) => ({ hub, ws: wsRates[i]! }))
      .sort((x, y) => x.hub / x.ws - y.hub / y.ws);
    const middle = pairs[Math.floor((pairs.length - 1) / 2)]!;
    const hubCpu = [h.connectCpuMs, ...rounds.map((r) => r.hub.cpuMs)];
    const wsCpu = [b.connectCpuMs, ...rounds.map((r) => r.ws.cpuMs)];
    const perK = (x: Held, k: keyof Mem) => ((x.after[k] - x.before[k]) / n) * 1000;
    const mb = (bytes: number) => bytes / 2 ** 20;
    const bytesEach = (x: Held, k: keyof Mem) => Math.round((x.after[k] - x.before[k]) / n);
    const setup = `${n.toLocaleString('en-US')} idle daemons, ${db.kind}`;
    const heartbeat = `heartbeats every ${PING_MS / 1000} s both ways, held ${HOLD_MS / 1000} s, none dropped`;
    return [
      {
        name: `hub RSS per 1,000 idle daemons (${setup})`,
        unit: 'MB',
        value: mb(perK(h, 'rss')),
        baseline: { name: 'bare ws server, same connections', value: mb(perK(b, 'rss')) },
        higherIsBetter: false,
        note:
          `${bytesEach(h, 'rss').toLocaleString('en-US')} vs ${bytesEach(b, 'rss').toLocaleString('en-US')} bytes/connection; ` +
          `hub RSS ${mb(h.before.rss).toFixed(0)} → ${mb(h.after.rss).toFixed(0)} MB, ws ${mb(b.before.rss).toFixed(0)} → ${mb(b.after.rss).toFixed(0)} MB; ${heartbeat}`,
      },
      {
        name: `hub heap per 1,000 idle daemons (${setup})`,
        unit: 'MB',
        value: mb(perK(h, 'heapUsed')),
        baseline: { name: 'bare ws server, same connections', value: mb(perK(b, 'heapUsed')) },
        higherIsBetter: false,
        note: `${bytesEach(h, 'heapUsed').toLocaleString('en-US')} vs ${bytesEach(b, 'heapUsed').toLocaleString('en-US')} bytes/connection (V8 heap used after a full GC)`,
      },
      {
        name: `daemon connections opened (${setup})`,
        unit: 'conn/s',
        value: middle.hub,
        baseline: { name: 'bare ws server', value: middle.ws },
        higherIsBetter: true,
        note:
          `the round of the median ratio of ${hubRates.length} (the first on a fresh process, then ${RATE_ROUNDS} alternating, hub then ws); ` +
          `ratio per round ${hubRates.map((x, i) => (x / wsRates[i]!).toFixed(2)).join(', ')}; ` +
          `${CONNECT_CONCURRENCY} handshakes at a time; hub: token check, daemon online + daemon.connected event, hello with the ACL; ` +
          `${n.toLocaleString('en-US')} realm tokens made through the API in ${tokensS.toFixed(1)} s; ` +
          `pings seen per daemon while held: ${(h.pings / n).toFixed(1)} (ws: ${(b.pings / n).toFixed(1)}); ` +
          `the server's CPU per connection while they opened, median (steadier than the rates on a shared machine): ` +
          `hub ${Math.round((median(hubCpu) / n) * 1000)} µs, ws ${Math.round((median(wsCpu) / n) * 1000)} µs`,
      },
      {
        name: `reconnect storm: server stopped → every daemon back (${setup})`,
        unit: 's',
        value: h.storm.totalMs / 1000,
        baseline: { name: 'bare ws server restarted', value: b.storm.totalMs / 1000 },
        higherIsBetter: false,
        note:
          `the daemon's backoff (full jitter from 0–500 ms, doubling per failed dial up to 5 s after a 1012 close); from the new process ready: ` +
          `hub ${(h.storm.afterReadyMs / 1000).toFixed(2)} s, ws ${(b.storm.afterReadyMs / 1000).toFixed(2)} s; ` +
          `dials ${h.storm.redials.toLocaleString('en-US')} (${h.storm.failed.toLocaleString('en-US')} failed), ` +
          `ws ${b.storm.redials.toLocaleString('en-US')} (${b.storm.failed.toLocaleString('en-US')} failed); ` +
          'every daemon online in the hub database after it',
      },
    ];
  } finally {
    await hub?.close();
    await ws?.close();
    await db.cleanup();
  }
}
