import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../../../test/helpers/until.js';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * A real HTTP receiver on 127.0.0.1 for delivery tests. Each request gets the next status of
 * `plan` (then `fallback`); `next()` resolves with the next request (already received or future),
 * so tests await deliveries instead of sleeping.
 */
export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  plan: number[];
  fallback: number;
  next(): Promise<Received>;
  close(): Promise<void>;
}

export async function startReceiver(plan: number[] = [], fallback = 200): Promise<Receiver> {
  const received: Received[] = [];
  let consumed = 0;
  const waiting: ((r: Received) => void)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(r);
      res.statusCode = rec.plan.shift() ?? rec.fallback;
      res.end('ok');
      const w = waiting.shift();
      if (w) {
        consumed++;
        w(r);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const rec: Receiver = {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    plan,
    fallback,
    next() {
      if (consumed < received.length) return Promise.resolve(received[consumed++]!);
      return new Promise((resolve) => waiting.push(resolve));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return rec;
}

/** Waits for a condition the hub reaches asynchronously (a recorded outcome), polling briefly. */
export function eventually<T>(
  probe: () => Promise<T | undefined | null | false>,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  return until(what, probe, timeoutMs);
}
