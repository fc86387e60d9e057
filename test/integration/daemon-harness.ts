import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type RunningDaemon, type StartDaemonOptions, startDaemon } from '../../src/daemon/main.js';
import { createLogger } from '../../src/shared/logger.js';
import type { Reply } from '../helpers/hub.js';

/** A fresh daemon home directory, removed by `cleanup`. */
export function daemonHome(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-daemon-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export type DaemonTestOptions = Omit<Partial<StartDaemonOptions>, 'config'> & {
  config?: Partial<StartDaemonOptions['config']>;
};

/** Starts a daemon on 127.0.0.1, port 0, with fast reconnects and a silent log. */
export function startTestDaemon(home: string, opts: DaemonTestOptions = {}): Promise<RunningDaemon> {
  return startDaemon({
    log: createLogger('daemon', process.env.SVC_TEST_LOG ?? 'silent'),
    backoff: { baseMs: 20, capMs: 200 },
    ...opts,
    config: { host: '127.0.0.1', port: 0, ...opts.config, home },
  });
}

/** Resolves once the daemon's hub link has applied a `hello` (at once when it already has). */
export async function whenConnected(d: RunningDaemon): Promise<void> {
  if (!d.link) throw new Error('daemon has no hub link');
  if (d.link.connected) return;
  await once(d.link, 'connected');
}

export interface RawRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/**
 * An HTTP request with exactly the headers given (node:http, so Host and Origin can be set freely;
 * `host` defaults to the URL's). Answers status and parsed JSON body.
 */
export function request(url: string, req: RawRequest = {}): Promise<Reply> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: u.hostname.replace(/^\[|\]$/g, ''),
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: req.method ?? 'POST',
        headers: { host: u.host, ...req.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {}
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on('error', reject);
      },
    );
    r.on('error', reject);
    r.end(req.body);
  });
}

/** POST /v1/<path> with a JSON body, optional bearer token and extra headers. */
export function call(
  base: string,
  op: string,
  body: unknown = {},
  opts: { token?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  return request(`${base}/v1/${op}`, {
    headers: {
      'content-type': 'application/json',
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...opts.headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/**
 * A free TCP port to start a server on (bound, then released). Only for a server the test starts on
 * it itself; a port meant to stay unreachable is `refusingPort`.
 */
export async function freePort(): Promise<number> {
  const net = await import('node:net');
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const addr = srv.address();
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  if (!addr || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}

/**
 * A URL where nothing answers, held for the test's lifetime: a listener that resets every
 * connection at once. A released port could be taken by another test or program meanwhile.
 */
export async function refusingUrl(): Promise<{ url: string; close(): Promise<void> }> {
  const net = await import('node:net');
  const srv = net.createServer((socket) => socket.resetAndDestroy());
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => srv.close(() => resolve())),
  };
}
