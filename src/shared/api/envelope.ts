import { z } from 'zod';

/**
 * The hub's reply envelopes (spec: "Conventions"). A success is `{ok: true, ...}` with the result
 * beside `ok` — `{data}`, `{data, next_cursor}`, `{removed}`, `{setting}`… as each operation shows.
 * A refusal is one of the two error shapes below.
 */

/** `{data}`: one resource. */
export const one = <T extends z.ZodType>(data: T) => z.strictObject({ data });

/** `{data, next_cursor}`: one page of a list (`next_cursor` is null on the last page). */
export const page = <T extends z.ZodType>(item: T) =>
  z.strictObject({ data: z.array(item), next_cursor: z.string().nullable() });

/** `{data: {id, removed: true}}` of the remove operations. */
export const Removed = z.strictObject({ id: z.string(), removed: z.literal(true) });

/** Time as milliseconds since the epoch (the spec's timestamps), or an ISO 8601 text where noted. */
export const ms = z.number();
export const iso = z.string();

/** A field refused by validation: `field` is the dotted path (`owner.email`), `(body)` for the root. */
export const FieldIssue = z.strictObject({ field: z.string(), message: z.string() });
export type FieldIssue = z.infer<typeof FieldIssue>;

export const HUB_ERROR_CODES = [
  'bad_request',
  'invalid_params',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'locked',
  'rate_limited',
  'internal_error',
] as const;
export type HubErrorCode = (typeof HUB_ERROR_CODES)[number];

/** Error shape 1, for `unauthorized`, `forbidden` and `not_found`: `{ok:false, error:{code, message}}`. */
export const AccessErrorReply = z.strictObject({
  ok: z.literal(false),
  error: z.strictObject({
    code: z.enum(['unauthorized', 'forbidden', 'not_found']),
    message: z.string(),
  }),
});

/**
 * Error shape 2, for every other code: `{ok:false, error:<message>, code, details?}`;
 * `invalid_params` carries `details.issues`.
 */
export const ErrorReply = z.strictObject({
  ok: z.literal(false),
  error: z.string(),
  code: z.enum(['bad_request', 'invalid_params', 'conflict', 'locked', 'rate_limited', 'internal_error']),
  details: z.record(z.string(), z.unknown()).optional(),
});

export const HubErrorReply = z.union([AccessErrorReply, ErrorReply]);
export type HubErrorReply = z.infer<typeof HubErrorReply>;
