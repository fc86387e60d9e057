import { z } from 'zod';
import type { OpName, REPLIES } from '../../shared/api/operations.js';
import type { Actor } from '../access/actor.js';
import type { Hub } from '../context.js';

/**
 * An operation of the hub API: `POST /v1/<name>`, a zod schema for its body and a handler.
 * The handler's return value is spread into `{ok: true, ...}`, so it returns `{data}`,
 * `{removed}`, `{setting}`… exactly as the spec shows for that operation; its type is the
 * operation's reply in the API module (src/shared/api/operations.ts).
 */
export interface OpContext extends Hub {
  actor: Actor | null;
  /** The client's address (the sign-in throttle counts failures per address). */
  ip: string;
  /** Sets the HTTP status of a successful reply (default 200). */
  status(code: number): void;
}

/** The reply of the operation named N, without `ok` (any object for a name the API module lacks). */
export type ReplyBody<N extends string> = N extends OpName
  ? z.input<(typeof REPLIES)[N]>
  : Record<string, unknown>;

export interface Op<S extends z.ZodType = z.ZodType, N extends string = string> {
  name: N;
  summary: string;
  input: S;
  handler(ctx: OpContext, input: z.output<S>): Promise<ReplyBody<N>>;
}

export function op<S extends z.ZodType, N extends OpName>(def: Op<S, N>): Op {
  return def as unknown as Op;
}

// Shared field schemas.
export const id = z.string().min(1, 'must not be empty').max(200);
export const name = z.string().trim().min(1, 'must not be empty').max(200);
export const limit = z.number().int().min(1).max(500).default(50);
export const cursor = z.string().min(1).max(500).optional();
export const paging = { limit, cursor };

/** A body that names a realm or an organization (`realm_id` or `org_id`), exactly one. */
export function exactlyOneScope(
  v: { realm_id?: string | undefined; org_id?: string | undefined },
  ctx: z.RefinementCtx,
): void {
  if ((v.realm_id === undefined) === (v.org_id === undefined)) {
    ctx.addIssue({ code: 'custom', path: ['realm_id'], message: 'give exactly one of realm_id and org_id' });
  }
}
