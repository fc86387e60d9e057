import { CliError } from './context.js';

/** A hub error reply, normalised from the spec's two shapes; printed as `error: <code>: <message>`. */
export class ApiError extends CliError {
  constructor(
    readonly code: string,
    readonly detail: string,
    readonly status: number,
    readonly reply: unknown,
  ) {
    super(`${code}: ${detail}`, 1);
    this.name = 'ApiError';
  }
}

export interface Page<T> {
  ok: true;
  data: T[];
  next_cursor: string | null;
}

export interface HubClient {
  readonly url: string;
  readonly token: string | null;
  /** `POST /v1/<op>`; answers the reply (`ok: true`) or throws `ApiError` / `CliError`. */
  call<T = Record<string, unknown>>(op: string, body?: unknown): Promise<T & { ok: true }>;
}

/** The spec's error shapes: `{error:{code,message}}` or `{error:<message>, code}`. */
export function errorOf(status: number, body: unknown): { code: string; message: string } {
  const b = (body ?? {}) as { error?: unknown; code?: unknown };
  if (b.error && typeof b.error === 'object') {
    const e = b.error as { code?: unknown; message?: unknown };
    return { code: String(e.code ?? `http_${status}`), message: String(e.message ?? '') };
  }
  if (typeof b.error === 'string') return { code: String(b.code ?? `http_${status}`), message: b.error };
  return { code: `http_${status}`, message: 'unexpected reply from the hub' };
}

export function createHubClient(opts: {
  url: string;
  token?: string | null;
  fetch?: typeof fetch;
  /** What the URL is, in error messages (default `hub`; `svc tokens create --local` says `daemon`). */
  server?: string;
}): HubClient {
  const base = opts.url.replace(/\/+$/, '');
  const token = opts.token ?? null;
  const doFetch = opts.fetch ?? fetch;
  return {
    url: base,
    token,
    async call<T>(op: string, body: unknown = {}) {
      let res: Response;
      try {
        res = await doFetch(`${base}/v1/${op}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
          body: JSON.stringify(body),
        });
      } catch (err) {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        throw new CliError(
          `cannot reach the ${opts.server ?? 'hub'} at ${base} (${cause?.code ?? cause?.message ?? String(err)})`,
        );
      }
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new CliError(`unexpected reply from ${base}/v1/${op} (HTTP ${res.status}, not JSON)`);
      }
      if ((parsed as { ok?: unknown }).ok === true) return parsed as T & { ok: true };
      const e = errorOf(res.status, parsed);
      const signingIn = op === 'auth/sign_in' || op === 'invites/accept';
      const hint =
        e.code === 'unauthorized' && !token && !signingIn
          ? ' (no token: run `svc login` or set SVC_TOKEN)'
          : '';
      throw new ApiError(e.code, e.message + hint, res.status, parsed);
    },
  };
}

/** Every page of a list operation (500 at a time). */
export async function listAll<T>(client: HubClient, op: string, body: Record<string, unknown> = {}) {
  const out: T[] = [];
  let cursor: string | null = null;
  do {
    const page: Page<T> = await client.call<Page<T>>(op, {
      ...body,
      limit: 500,
      ...(cursor ? { cursor } : {}),
    });
    out.push(...page.data);
    cursor = page.next_cursor ?? null;
  } while (cursor);
  return out;
}
