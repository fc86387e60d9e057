/**
 * Child process: many daemons' ends of the hub tunnel, each a real WebSocket with its realm token
 * (no agents, no local API: only what the hub sees of a daemon).
 *
 * - `connect` opens one tunnel per token (or plain WebSockets when `plain`) and waits for each
 *   hello. Each socket answers pings (ws autoPong) and pings the hub every `pingMs` like a daemon.
 *   With `claimUrl`, a daemon answers an `offer_job` command as the real daemon does: `queue/claim`
 *   over HTTP (its own keep-alive socket), or with `claimUrl: 'tunnel'` as a call over its tunnel,
 *   then the ack with `{claimed, daemon_id}`. Other commands are acked at once; the run of each
 *   `runs/execute` is counted (`executions`: run id → times executed, across all daemons).
 *   With `reconnect`, a daemon whose tunnel closes dials again as `svc daemon` does (its backoff
 *   policy, src/daemon/backoff.ts: full jitter, doubling after each failed dial).
 * - `back` waits until `n` tunnels are open (greeted) again and answers when the last one was.
 * - `hammer` makes every daemon POST claims to a URL in a loop (the same HTTP client), a baseline.
 * - `stats`, `close`, `memory`.
 */
import http from 'node:http';
import { WebSocket } from 'ws';
import {
  type BackoffOptions,
  backoffDelay,
  DEFAULT_BACKOFF,
  reconnectBackoff,
} from '../../src/daemon/backoff.js';
import { memory, serveParent } from './child.js';

interface Daemon {
  daemonId: string;
  token: string;
  ws: WebSocket | null;
  agent: http.Agent;
  timer: NodeJS.Timeout | null;
  redial: NodeJS.Timeout | null;
}

const daemons: Daemon[] = [];
/** The counters `stats` with `reset` starts again from zero. */
const counters = () => ({
  pings: 0,
  offers: 0,
  claims: 0,
  wins: 0,
  errors: 0,
  lastError: '',
  /** Dials after a tunnel closed, and those that failed. */
  redials: 0,
  failedRedials: 0,
});
const stats = {
  open: 0,
  closed: 0,
  /** When the last tunnel was greeted (epoch ms). */
  lastOpenAt: 0,
  ...counters(),
};
/** Set by `connect` with `reconnect`: how a closed tunnel is dialled again. */
let reconnect: { url: string; pingMs: number; plain: boolean; policy: BackoffOptions } | null = null;
let closing = false;
const backWaiters: { n: number; resolve: () => void }[] = [];
let claimLatencies: number[] = [];
let executions = new Map<string, number>();
/** Calls over the tunnels waiting for their reply. */
const calls = new Map<string, (body: unknown) => void>();
let nextCall = 0;

/** `queue/claim` as a call over the daemon's tunnel: the reply's body. */
function claimOverTunnel(d: Daemon, queueItemId: string): Promise<unknown> {
  const id = String(++nextCall);
  return new Promise((resolve) => {
    calls.set(id, resolve);
    d.ws?.send(
      JSON.stringify({
        type: 'call',
        id,
        op: 'queue/claim',
        body: { queue_item_id: queueItemId, daemon_id: d.daemonId },
      }),
    );
  });
}

function postJson(
  agent: http.Agent,
  url: URL,
  token: string,
  body: unknown,
): Promise<{ status: number; text: string }> {
  const buf = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': buf.length,
          authorization: `Bearer ${token}`,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(buf);
  });
}

function fail(err: unknown) {
  stats.errors++;
  stats.lastError = String(err);
}

async function onOffer(
  d: Daemon,
  claimUrl: URL | 'tunnel',
  frame: { tx_id: string; body: { queue_item_id: string } },
) {
  stats.offers++;
  const t0 = performance.now();
  let claimed = false;
  try {
    if (claimUrl === 'tunnel') {
      const body = (await claimOverTunnel(d, frame.body.queue_item_id)) as {
        ok: boolean;
        data?: { claimed: boolean };
      };
      if (!body.ok) throw new Error(`claim: ${JSON.stringify(body)}`);
      claimed = body.data?.claimed === true;
    } else {
      const r = await postJson(d.agent, claimUrl, d.token, {
        queue_item_id: frame.body.queue_item_id,
        daemon_id: d.daemonId,
      });
      if (r.status !== 200) throw new Error(`claim: HTTP ${r.status} ${r.text}`);
      claimed = (JSON.parse(r.text) as { data: { claimed: boolean } }).data.claimed;
    }
    claimLatencies.push(performance.now() - t0);
    stats.claims++;
    if (claimed) stats.wins++;
  } catch (err) {
    fail(err);
  }
  d.ws?.send(
    JSON.stringify({
      type: 'ack',
      tx_id: frame.tx_id,
      status: 'ok',
      reply: { claimed, daemon_id: d.daemonId },
    }),
  );
}

function open(
  d: Daemon,
  url: string,
  plain: boolean,
  pingMs: number,
  claimUrl: URL | 'tunnel' | null,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, plain ? {} : { headers: { authorization: `Bearer ${d.token}` } });
    d.ws = ws;
    let greeted = false;
    const greet = () => {
      if (greeted) return;
      greeted = true;
      stats.open++;
      stats.lastOpenAt = Date.now();
      for (const w of backWaiters.filter((x) => stats.open >= x.n)) {
        backWaiters.splice(backWaiters.indexOf(w), 1);
        w.resolve();
      }
      d.timer = setInterval(() => ws.readyState === ws.OPEN && ws.ping(), pingMs);
      resolve();
    };
    ws.on('open', () => plain && greet());
    ws.on('ping', () => stats.pings++);
    ws.on('message', (data) => {
      const f = JSON.parse(data.toString()) as {
        type: string;
        tx_id: string;
        path: string;
        body: never;
        id: string;
      };
      if (f.type === 'hello') return greet();
      if (f.type === 'reply') {
        calls.get(f.id)?.(f.body);
        calls.delete(f.id);
        return;
      }
      if (f.type !== 'command') return;
      if (f.path === 'offer_job' && claimUrl) return void onOffer(d, claimUrl, f);
      if (f.path === 'runs/execute') {
        const runId = (f.body as { run_id: string }).run_id;
        executions.set(runId, (executions.get(runId) ?? 0) + 1);
      }
      ws.send(JSON.stringify({ type: 'ack', tx_id: f.tx_id, status: 'ok', reply: {} }));
    });
    ws.on('error', (err) => {
      fail(err);
      if (!greeted) reject(err);
    });
    ws.on('close', (code) => {
      if (d.timer) clearInterval(d.timer);
      if (!greeted) return reject(new Error('closed before the hello'));
      stats.open--;
      stats.closed++;
      if (reconnect && !closing) redial(d, 0, claimUrl, code);
    });
  });
}

/** Dials a closed tunnel again after the daemon's backoff delay for this attempt. */
function redial(d: Daemon, attempt: number, claimUrl: URL | 'tunnel' | null, closeCode: number) {
  const r = reconnect!;
  d.redial = setTimeout(
    () => {
      d.redial = null;
      if (closing) return;
      stats.redials++;
      open(d, r.url, r.plain, r.pingMs, claimUrl).catch(() => {
        stats.failedRedials++;
        redial(d, attempt + 1, claimUrl, closeCode);
      });
    },
    backoffDelay(attempt, reconnectBackoff(r.policy, closeCode)),
  );
}

interface ConnectRequest {
  url: string;
  daemons: { daemon_id: string; token: string }[];
  concurrency: number;
  pingMs: number;
  plain?: boolean;
  claimUrl?: string;
  /** Dial again when a tunnel closes (the daemon's policy, or this one). */
  reconnect?: boolean | Partial<BackoffOptions>;
}

async function connect(r: ConnectRequest) {
  const start = performance.now();
  const list = r.daemons.map((x) => ({
    daemonId: x.daemon_id,
    token: x.token,
    ws: null,
    agent: new http.Agent({ keepAlive: true, maxSockets: 1 }),
    timer: null,
    redial: null,
  }));
  closing = false;
  reconnect = r.reconnect
    ? {
        url: r.url,
        pingMs: r.pingMs,
        plain: r.plain === true,
        policy: { ...DEFAULT_BACKOFF, ...(r.reconnect === true ? {} : r.reconnect) },
      }
    : null;
  daemons.push(...list);
  const claimUrl = r.claimUrl === 'tunnel' ? 'tunnel' : r.claimUrl ? new URL(r.claimUrl) : null;
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(r.concurrency, list.length) }, async () => {
      while (next < list.length) await open(list[next++]!, r.url, r.plain === true, r.pingMs, claimUrl);
    }),
  );
  return { open: stats.open, ms: performance.now() - start };
}

async function hammer(r: { url: string; durationMs: number; warmupMs: number }) {
  const url = new URL(r.url);
  const latencies: number[] = [];
  const measureFrom = performance.now() + r.warmupMs;
  const until = measureFrom + r.durationMs;
  let i = 0;
  await Promise.all(
    daemons.map(async (d) => {
      while (performance.now() < until) {
        const t0 = performance.now();
        try {
          const res = await postJson(d.agent, url, d.token, {
            queue_item_id: `item-${i++}`,
            daemon_id: d.daemonId,
          });
          if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
        } catch (err) {
          fail(err);
        }
        const t1 = performance.now();
        if (t1 >= measureFrom && t1 <= until) latencies.push(t1 - t0);
      }
    }),
  );
  return { requests: latencies.length, seconds: r.durationMs / 1000, latencies };
}

async function closeAll() {
  closing = true;
  await Promise.all(
    daemons.map(
      (d) =>
        new Promise<void>((resolve) => {
          d.agent.destroy();
          if (d.timer) clearInterval(d.timer);
          if (d.redial) clearTimeout(d.redial);
          if (!d.ws || d.ws.readyState === d.ws.CLOSED) return resolve();
          d.ws.once('close', () => resolve());
          d.ws.terminate();
        }),
    ),
  );
  daemons.length = 0;
}

serveParent(
  {},
  {
    connect: (msg) => connect(msg as ConnectRequest),
    hammer: (msg) => hammer(msg),
    back: (msg: { n: number }) =>
      new Promise<{ lastOpenAt: number }>((resolve) => {
        const done = () => resolve({ lastOpenAt: stats.lastOpenAt });
        if (stats.open >= msg.n) done();
        else backWaiters.push({ n: msg.n, resolve: done });
      }),
    stats: (msg: { reset?: boolean }) => {
      const runs = [...executions.values()];
      const out = {
        ...stats,
        claimLatencies,
        executed: runs.length,
        executedTwice: runs.filter((n) => n > 1).length,
      };
      if (msg.reset) {
        claimLatencies = [];
        executions = new Map();
        Object.assign(stats, counters());
      }
      return out;
    },
    close: () => closeAll(),
    memory: () => memory(),
  },
  closeAll,
);
