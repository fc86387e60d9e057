import http from 'node:http';
import https from 'node:https';
import { checkDestination, type LookupAll, pinnedLookup, RefusedDestination, systemLookup } from './ssrf.js';

export interface SendRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  allowPrivate: boolean;
  /** Aborts the attempt (hub shutdown); the result then has `aborted: true`. */
  signal: AbortSignal;
  lookup?: LookupAll;
}

export interface SendResult {
  status: number | null;
  latencyMs: number;
  error: string | null;
  /** The guard refused the destination, or its URL is unusable: never worth retrying. */
  refused: boolean;
  aborted: boolean;
}

/**
 * One POST to a destination: resolve and check the host (SSRF guard), connect to the checked
 * address, send, read (and discard) the reply. Never follows redirects. Never throws.
 */
export async function sendOnce(req: SendRequest): Promise<SendResult> {
  const started = Date.now();
  const done = (r: Omit<SendResult, 'latencyMs'>): SendResult => ({ ...r, latencyMs: Date.now() - started });
  let url: URL;
  try {
    url = new URL(req.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not an http(s) URL');
  } catch (err) {
    return done({
      status: null,
      error: `invalid URL: ${(err as Error).message}`,
      refused: true,
      aborted: false,
    });
  }
  const deadline = AbortSignal.timeout(req.timeoutMs);
  const signal = AbortSignal.any([req.signal, deadline]);
  const why = () =>
    req.signal.aborted ? 'aborted: the hub is shutting down' : `timed out after ${req.timeoutMs} ms`;
  try {
    const addr = await Promise.race([
      checkDestination(url, req.allowPrivate, req.lookup ?? systemLookup),
      new Promise<never>((_, reject) => {
        if (signal.aborted) reject(new Error(why()));
        signal.addEventListener('abort', () => reject(new Error(why())), { once: true });
      }),
    ]);
    const status = await post(url, addr, req, signal, why);
    return done({
      status,
      error: status >= 200 && status < 300 ? null : `HTTP ${status}`,
      refused: false,
      aborted: false,
    });
  } catch (err) {
    if (req.signal.aborted) return done({ status: null, error: why(), refused: false, aborted: true });
    const refused = err instanceof RefusedDestination;
    return done({ status: null, error: (err as Error).message, refused, aborted: false });
  }
}

function post(
  url: URL,
  addr: { address: string; family: 4 | 6 },
  req: SendRequest,
  signal: AbortSignal,
  why: () => string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const r = mod.request(
      url,
      {
        method: 'POST',
        // A fresh connection per attempt: a pooled socket would skip the address check.
        agent: false,
        lookup: pinnedLookup(addr) as never,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(req.body).toString(),
          'user-agent': 'svc-notifications/1',
          connection: 'close',
          ...req.headers,
        },
      },
      (res) => {
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > 64 * 1024) res.destroy(); // the reply is not used; do not let it grow
        });
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('close', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(res.statusCode ?? 0));
      },
    );
    const onAbort = () => r.destroy(new Error(why()));
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    r.on('close', () => signal.removeEventListener('abort', onAbort));
    r.on('error', (err) =>
      reject(
        new Error(
          signal.aborted ? why() : `${(err as NodeJS.ErrnoException).code ?? 'error'}: ${err.message}`,
        ),
      ),
    );
    r.end(req.body);
  });
}
