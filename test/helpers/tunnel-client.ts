import { once } from 'node:events';
import { WebSocket } from 'ws';
import type { Hub } from '../../src/hub/context.js';
import type { AckFrame, HelloFrame, HubFrame } from '../../src/shared/protocol.js';

/**
 * A daemon's end of the hub tunnel over a real WebSocket, for hub tests: frames arrive in a queue
 * that `next` reads in order, `ack` answers a command.
 */
export interface TunnelClient {
  ws: WebSocket;
  hello: HelloFrame;
  /** The next hub frame (after hello); fails when it is not of `type`, or after `timeoutMs`. */
  next<T extends HubFrame['type']>(type: T, timeoutMs?: number): Promise<Extract<HubFrame, { type: T }>>;
  /** The next hub frame, whatever its type. */
  nextAny(timeoutMs?: number): Promise<HubFrame>;
  ack(txId: string, result?: Partial<Omit<AckFrame, 'type' | 'tx_id'>>): void;
  /** Closes the socket and waits until it is closed. */
  close(): Promise<void>;
}

export const tunnelUrl = (hubUrl: string) => `${hubUrl.replace(/^http/, 'ws')}/v1/daemons/connect`;

/** Connects with a realm token and waits for the hello frame. */
export async function connectDaemon(
  hubUrl: string,
  token: string,
  opts: { autoPong?: boolean } = {},
): Promise<TunnelClient> {
  const ws = new WebSocket(tunnelUrl(hubUrl), {
    headers: { authorization: `Bearer ${token}` },
    autoPong: opts.autoPong ?? true,
  });
  const frames: HubFrame[] = [];
  const waiting: ((f: HubFrame) => void)[] = [];
  ws.on('message', (data) => {
    const f = JSON.parse(data.toString()) as HubFrame;
    const w = waiting.shift();
    if (w) w(f);
    else frames.push(f);
  });
  const take = (timeoutMs: number) =>
    new Promise<HubFrame>((resolve, reject) => {
      const f = frames.shift();
      if (f) return resolve(f);
      const timer = setTimeout(() => reject(new Error(`no frame within ${timeoutMs} ms`)), timeoutMs);
      waiting.push((x) => {
        clearTimeout(timer);
        resolve(x);
      });
    });
  await once(ws, 'open');
  const hello = await take(10_000);
  if (hello.type !== 'hello') throw new Error(`first frame is ${hello.type}, not hello`);
  return {
    ws,
    hello,
    async next(type, timeoutMs = 10_000) {
      const f = await take(timeoutMs);
      if (f.type !== type) throw new Error(`expected a ${type} frame, got ${JSON.stringify(f)}`);
      return f as never;
    },
    nextAny: (timeoutMs = 10_000) => take(timeoutMs),
    ack(txId, result = {}) {
      ws.send(JSON.stringify({ type: 'ack', tx_id: txId, status: 'ok', ...result }));
    },
    async close() {
      if (ws.readyState === ws.CLOSED) return;
      const closed = once(ws, 'close');
      ws.close();
      await closed;
    },
  };
}

/** `connectDaemon`, resolved once the hub holds the daemon online. */
export async function onlineDaemon(hub: Hub, hubUrl: string, token: string): Promise<TunnelClient> {
  const online = once(hub.tunnel.events, 'connected');
  const client = await connectDaemon(hubUrl, token);
  await online;
  return client;
}

/** Closes the daemon's tunnel and waits until the hub has taken it offline. */
export async function closeOnline(hub: Hub, client: TunnelClient): Promise<void> {
  const offline = once(hub.tunnel.events, 'disconnected');
  await client.close();
  await offline;
}

/**
 * The next command at `path` for the run, past the others. Each is acked, as the daemon would;
 * the one found only when `ack` (the default).
 */
export async function commandFor(client: TunnelClient, path: string, runId: string, ack = true) {
  for (;;) {
    const c = await client.next('command', 15_000);
    const body = c.body as { run_id?: string; payload?: { run_id?: string } };
    const found = c.path === path && (body.run_id ?? body.payload?.run_id) === runId;
    if (ack || !found) client.ack(c.tx_id);
    if (found) return c;
  }
}

/** Tries to open the tunnel and returns the HTTP reply that refused it. */
export async function refusedUpgrade(
  hubUrl: string,
  headers: Record<string, string>,
  path = '/v1/daemons/connect',
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected freely
): Promise<{ status: number; body: any }> {
  const ws = new WebSocket(`${hubUrl.replace(/^http/, 'ws')}${path}`, { headers });
  ws.on('error', () => {});
  const [, res] = (await once(ws, 'unexpected-response')) as [unknown, import('node:http').IncomingMessage];
  let text = '';
  for await (const chunk of res) text += chunk;
  ws.terminate();
  return { status: res.statusCode ?? 0, body: JSON.parse(text) };
}
