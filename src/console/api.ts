/**
 * The console's only way to the hub: `api(op, body)` → `POST /v1/<op>` through the API module's
 * typed client (src/shared/api/client.ts), with the session token from `auth/sign_in` as a bearer
 * token. The token lives in sessionStorage (this tab only; see docs/security.md). Any
 * `unauthorized` reply forgets it and sends the page to sign-in.
 */

import { ApiError, type CallOptions, createClient, type Request } from '../shared/api/client.js';
import type { OpName, Reply } from '../shared/api/operations.js';

export type { OpName };
export { ApiError };

const KEY = 'svc.console.token';

export const session = {
  token(): string | null {
    try {
      return sessionStorage.getItem(KEY);
    } catch {
      return null;
    }
  },
  set(token: string): void {
    sessionStorage.setItem(KEY, token);
  },
  clear(): void {
    sessionStorage.removeItem(KEY);
  },
};

/** Called with the current hash when a call answers `unauthorized` (the app goes to sign-in). */
let onUnauthorized: (() => void) | null = null;
export function setUnauthorizedHandler(fn: () => void): void {
  onUnauthorized = fn;
}

const client = createClient({
  url: '',
  token: () => session.token(),
  init: { credentials: 'omit', cache: 'no-store' },
});

/** The refusal as the console shows it: invalid fields spelled out, transport faults in words. */
function shown(err: ApiError): ApiError {
  if (err.code === 'network') return new ApiError('network', 'the hub cannot be reached; retrying', 0);
  if (err.code === 'bad_reply')
    return new ApiError('http_error', `the hub answered HTTP ${err.status}`, err.status);
  const issues = (err.details as { issues?: { field: string; message: string }[] } | null)?.issues;
  if (!issues?.length) return err;
  const more = `: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`;
  return new ApiError(err.code, `${err.message}${more}`, err.status, err.details, err.reply);
}

export async function api<K extends OpName>(
  op: K,
  body: Request<K>,
  opts: CallOptions = {},
): Promise<Reply<K>> {
  try {
    return (await client.request(op, body, opts)) as Reply<K>;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    if (err.code === 'unauthorized' && op !== 'auth/sign_in') {
      session.clear();
      onUnauthorized?.();
    }
    throw shown(err);
  }
}

type Item<K extends OpName> = Reply<K> extends { data: (infer T)[] } ? T : never;

/** Every page of a list (bounded: at most `maxPages` pages of 500). */
export async function listAll<K extends OpName, T = Item<K>>(
  op: K,
  body: Request<K>,
  maxPages = 10,
): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const page = (await api(op, { ...body, limit: 500, ...(cursor ? { cursor } : {}) })) as unknown as {
      data: T[];
      next_cursor: string | null;
    };
    out.push(...page.data);
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return out;
}
