import { ApiError, type Client, createClient, errorOf } from '../shared/api/client.js';
import { CliError } from './context.js';

export { ApiError, errorOf };

export interface Page<T> {
  ok: true;
  data: T[];
  next_cursor: string | null;
}

/**
 * The CLI's way to the hub (and, for `svc tokens create --local`, to the daemon): the typed client
 * of the API module (`api.call('runs/get_by_id', …)`), and `call` for an operation named at run time.
 * A refusal is the API module's `ApiError` (printed as `error: <code>: <message>`); an unreachable
 * server or a reply that is not JSON is a `CliError`.
 */
export interface HubClient {
  readonly url: string;
  readonly token: string | null;
  readonly api: Client;
  /** `POST /v1/<op>`; answers the reply (`ok: true`) or throws `ApiError` / `CliError`. */
  call<T = Record<string, unknown>>(op: string, body?: unknown): Promise<T & { ok: true }>;
}

export function createHubClient(opts: {
  url: string;
  token?: string | null;
  fetch?: typeof fetch;
  /** What the URL is, in error messages (default `hub`; `svc tokens create --local` says `daemon`). */
  server?: string;
}): HubClient {
  const token = opts.token ?? null;
  const base = createClient({ url: opts.url, token, ...(opts.fetch ? { fetch: opts.fetch } : {}) });
  const cliErrorOf = (op: string, err: unknown): unknown => {
    if (!(err instanceof ApiError)) return err;
    if (err.code === 'network') {
      const cause = (err.details as { cause?: string } | null)?.cause ?? err.message;
      return new CliError(`cannot reach the ${opts.server ?? 'hub'} at ${base.url} (${cause})`, 1, 'network');
    }
    if (err.code === 'bad_reply') return new CliError(err.message, 1, 'bad_reply');
    const signingIn = op === 'auth/sign_in' || op === 'invites/accept';
    if (err.code === 'unauthorized' && !token && !signingIn) {
      const hint = ' (no token: run `svc login` or set SVC_TOKEN)';
      return new ApiError(err.code, err.message + hint, err.status, err.details, err.reply);
    }
    if (err.code === 'unauthorized' && token && !signingIn) {
      // The hub does not tell a mistyped token from an expired or revoked one, and neither need we.
      const message = 'your sign-in is no longer valid: run `svc login` (or set a valid SVC_TOKEN)';
      return new ApiError(err.code, message, err.status, err.details, err.reply);
    }
    return err;
  };
  const api: Client = {
    url: base.url,
    call: (op, ...args) =>
      base.call(op, ...args).catch((err: unknown) => {
        throw cliErrorOf(op, err);
      }),
    request: (op, body, o) =>
      base.request(op, body, o).catch((err: unknown) => {
        throw cliErrorOf(op, err);
      }),
  };
  return {
    url: base.url,
    token,
    api,
    call: <T>(op: string, body: unknown = {}) => api.request(op, body) as Promise<T & { ok: true }>,
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
