import type { HubErrorCode } from './envelope.js';
import type { OpName, Reply } from './operations.js';
import type { Requests } from './requests.gen.js';

/**
 * A typed client of the hub API: `client.call('runs/get_by_id', {run_id})` posts to
 * `/v1/runs/get_by_id` and answers the operation's reply (`{ok: true, data: Run}`), typed from the
 * API module; a refusal is thrown as one `ApiError`. See docs/api.md "Scripting the hub from
 * TypeScript". Used by the CLI and the console; it runs in Node 20 and in browsers.
 */

/** The body of an operation (fields with a default may be left out). */
export type Request<K extends OpName> = Requests[K];

/**
 * A refusal of the hub, both of its error shapes as one: the spec's `code` (`not_found`,
 * `invalid_params`…), its message, `details` (`details.issues` for invalid_params) and the HTTP
 * status. A call that got no reply from the hub has code `network` and status 0; a reply that is
 * not the hub's JSON has code `bad_reply`.
 */
export class ApiError extends Error {
  constructor(
    readonly code: HubErrorCode | 'network' | 'bad_reply' | (string & {}),
    message: string,
    readonly status: number,
    readonly details: Record<string, unknown> | null = null,
    /** The reply's body as parsed (null when there was none or it was not JSON). */
    readonly reply: unknown = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Both error shapes of the hub (`{error:{code, message}}` and `{error:<message>, code, details?}`). */
export function errorOf(status: number, body: unknown): ApiError {
  const b = (body ?? {}) as { error?: unknown; code?: unknown; details?: unknown };
  if (b.error && typeof b.error === 'object') {
    const e = b.error as { code?: unknown; message?: unknown };
    return new ApiError(String(e.code ?? `http_${status}`), String(e.message ?? ''), status, null, body);
  }
  if (typeof b.error === 'string') {
    const details =
      b.details && typeof b.details === 'object' ? (b.details as Record<string, unknown>) : null;
    return new ApiError(String(b.code ?? `http_${status}`), b.error, status, details, body);
  }
  return new ApiError(`http_${status}`, 'unexpected reply from the hub', status, null, body);
}

export interface ClientOptions {
  /** The hub's base URL (`https://hub.example.com`); `''` for the page's own origin (the console). */
  url: string;
  /** A bearer token (`svc_tok_…` or a session token), or a function that answers the current one. */
  token?: string | null | (() => string | null);
  /** The fetch to use (default: the global fetch). */
  fetch?: typeof fetch;
  /** Extra options of every request (the console sets `credentials` and `cache`). */
  init?: Omit<RequestInit, 'method' | 'headers' | 'body' | 'signal'>;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/** A body, then options; the body is optional for an operation whose fields all are. */
export type CallArgs<K extends OpName> =
  Record<string, never> extends Request<K>
    ? [body?: Request<K>, opts?: CallOptions]
    : [body: Request<K>, opts?: CallOptions];

export interface Client {
  readonly url: string;
  /**
   * `POST /v1/<op>` with a typed body (which may be left out when every field is optional);
   * answers the typed reply or throws `ApiError`.
   */
  call<K extends OpName>(op: K, ...args: CallArgs<K>): Promise<Reply<K>>;
  /** The same for an operation by a name known only at run time (`svc call`, other servers). */
  request(op: string, body?: unknown, opts?: CallOptions): Promise<{ ok: true } & Record<string, unknown>>;
}

export function createClient(opts: ClientOptions): Client {
  const base = opts.url.replace(/\/+$/, '');
  const tokenOf = typeof opts.token === 'function' ? opts.token : () => (opts.token as string | null) ?? null;
  const request = async (op: string, body: unknown = {}, call: CallOptions = {}) => {
    const doFetch = opts.fetch ?? fetch;
    const token = tokenOf();
    let res: Response;
    try {
      res = await doFetch(`${base}/v1/${op}`, {
        ...opts.init,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(body),
        ...(call.signal ? { signal: call.signal } : {}),
      });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? String(err);
      throw new ApiError('network', `cannot reach ${base || 'the hub'} (${why})`, 0, { cause: why });
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ApiError(
        'bad_reply',
        `unexpected reply from ${base}/v1/${op} (HTTP ${res.status}, not JSON)`,
        res.status,
      );
    }
    if ((parsed as { ok?: unknown } | null)?.ok === true) {
      return parsed as { ok: true } & Record<string, unknown>;
    }
    throw errorOf(res.status, parsed);
  };
  return {
    url: base,
    request,
    call: (op, ...[body, call]) => request(op, body ?? {}, call) as Promise<never>,
  };
}

/** Every page of a list operation, `limit` items a page, at most `maxPages` pages. */
export async function listAll<K extends OpName>(
  client: Client,
  op: K,
  body: Request<K>,
  opts: { limit?: number; maxPages?: number } = {},
): Promise<Reply<K> extends { data: (infer T)[] } ? T[] : never> {
  const out: unknown[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < (opts.maxPages ?? Number.POSITIVE_INFINITY); i++) {
    const page = (await client.call(op, {
      ...(body as object),
      limit: opts.limit ?? 500,
      ...(cursor ? { cursor } : {}),
    } as Request<K>)) as unknown as { data: unknown[]; next_cursor?: string | null };
    out.push(...page.data);
    cursor = page.next_cursor ?? null;
    if (!cursor) break;
  }
  return out as never;
}
