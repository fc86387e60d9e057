/**
 * The console's only way to the hub: `api(op, body)` → `POST /v1/<op>` with the session token from
 * `auth/sign_in` as a bearer token. The token lives in sessionStorage (this tab only; see
 * docs/security.md). Any `unauthorized` reply forgets it and sends the page to sign-in.
 */

import type { RunState } from '../shared/api/run-states.js';
import type {
  Agent,
  Channel,
  Daemon,
  Delivery,
  LogLine,
  Org,
  Realm,
  Review,
  ReviewAction,
  ReviewState,
  Run,
  Schedule,
  TeamInstall,
  TeamVersion,
  Trigger,
  User,
  Workspace,
} from './types.js';

interface Page<T> {
  data: T[];
  next_cursor: string | null;
}
interface One<T> {
  data: T;
}
type Paging = { limit?: number; cursor?: string };

/** Every operation the console calls: its body and its reply. */
export interface Ops {
  'auth/sign_in': { in: { email: string; password: string }; out: One<{ token: string; user: User }> };
  'auth/sign_out': { in: Record<string, never>; out: One<{ revoked: boolean }> };
  'auth/whoami': { in: Record<string, never>; out: One<{ user: User | null }> };
  'orgs/list': { in: Paging; out: Page<Org> };
  'realms/list': { in: { org_id: string } & Paging; out: Page<Realm> };
  'realms/get': { in: { id: string }; out: One<Realm> };
  'runs/list': {
    in: {
      realm_id: string;
      state?: RunState;
      team_id?: string;
      root_run_id?: string;
      top_level?: boolean;
    } & Paging;
    out: Page<Run>;
  };
  'runs/get_by_id': { in: { run_id: string; with_history?: boolean }; out: One<Run> };
  'runs/logs': {
    in: { run_id: string; after?: number; limit?: number };
    out: { data: LogLine[]; next_after: number; has_more: boolean; run_state: RunState };
  };
  'runs/cancel': { in: { run_id: string; reason?: string }; out: One<Run> };
  'runs/resume': { in: { run_id: string }; out: One<Run> };
  'runs/force_terminate': { in: { run_id: string; reason: string }; out: One<Run> };
  'reviews/list': {
    in: { realm_id: string; state?: ReviewState | 'all'; mine?: boolean; run_id?: string } & Paging;
    out: Page<Review>;
  };
  'reviews/submit': {
    in: { review_id: string; action: ReviewAction; comment?: string };
    out: One<Review>;
  };
  'daemons/get': { in: { id: string }; out: One<Daemon> };
  'daemons/list': { in: { realm_id: string } & Paging; out: Page<Daemon> };
  'teams/list_installs': { in: { realm_id: string } & Paging; out: Page<TeamInstall> };
  'workspaces/list': { in: { realm_id: string } & Paging; out: Page<Workspace> };
  'agents/list': { in: { org_id: string; name?: string } & Paging; out: Page<Agent> };
  'teams/list': { in: { org_id: string; name?: string } & Paging; out: Page<TeamVersion> };
  'teams/get': { in: { id: string }; out: One<TeamVersion> };
  'notification_channels/list': { in: { realm_id?: string; org_id?: string } & Paging; out: Page<Channel> };
  'notifications/list_deliveries': {
    in: { channel_id: string; state?: Delivery['state'] } & Paging;
    out: Page<Delivery>;
  };
  'schedules/list': { in: { realm_id: string } & Paging; out: Page<Schedule> };
  'schedules/update': { in: { id: string; enabled?: boolean }; out: One<Schedule> };
  'schedules/trigger': { in: { id: string }; out: One<Run> };
  'triggers/list': { in: { realm_id: string } & Paging; out: Page<Trigger> };
  'triggers/get': { in: { id: string }; out: One<Trigger> };
}
export type OpName = keyof Ops;

/** A refusal from the hub, with its stable code (`forbidden`, `conflict`…) and the message for people. */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly details: unknown = null,
  ) {
    super(message);
  }
}

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

/** Both error shapes of the hub (docs/api.md "Conventions") as one ApiError. */
export function errorOf(status: number, body: unknown): ApiError {
  const b = (body ?? {}) as { error?: unknown; code?: unknown; details?: unknown };
  if (b.error && typeof b.error === 'object') {
    const e = b.error as { code?: unknown; message?: unknown };
    return new ApiError(String(e.code ?? 'error'), String(e.message ?? `HTTP ${status}`), status);
  }
  if (typeof b.error === 'string') {
    const issues = (b.details as { issues?: { field: string; message: string }[] } | undefined)?.issues;
    const more = issues?.length ? `: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}` : '';
    return new ApiError(String(b.code ?? 'error'), `${b.error}${more}`, status, b.details ?? null);
  }
  return new ApiError('http_error', `the hub answered HTTP ${status}`, status);
}

export async function api<K extends OpName>(
  op: K,
  body: Ops[K]['in'],
  opts: { signal?: AbortSignal } = {},
): Promise<Ops[K]['out']> {
  const token = session.token();
  let res: Response;
  try {
    res = await fetch(`/v1/${op}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError('network', 'the hub cannot be reached; retrying', 0);
  }
  let parsed: unknown = null;
  try {
    parsed = await res.json();
  } catch {
    // not JSON: handled below
  }
  if (res.ok && (parsed as { ok?: unknown } | null)?.ok === true) return parsed as Ops[K]['out'];
  const error = errorOf(res.status, parsed);
  if (error.code === 'unauthorized' && op !== 'auth/sign_in') {
    session.clear();
    onUnauthorized?.();
  }
  throw error;
}

/** Every page of a list (bounded: at most `maxPages` pages of 500). */
export async function listAll<K extends OpName, T>(op: K, body: Ops[K]['in'], maxPages = 10): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const page = (await api(op, {
      ...body,
      limit: 500,
      ...(cursor ? { cursor } : {}),
    })) as unknown as Page<T>;
    out.push(...page.data);
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return out;
}
