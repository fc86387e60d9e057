/**
 * One error type for the hub. Handlers throw `AppError`; the hub's error handler turns it into the
 * spec's reply shapes (see `src/hub/http/errors.ts`).
 */
export type HubErrorCode =
  | 'bad_request'
  | 'invalid_params'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'locked'
  | 'rate_limited'
  | 'internal_error';

export const HUB_STATUS: Record<HubErrorCode, number> = {
  bad_request: 400,
  invalid_params: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  locked: 423,
  rate_limited: 429,
  internal_error: 500,
};

export interface FieldIssue {
  field: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly code: HubErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/** A wait in ms as whole seconds for `Retry-After` (rounded up, at least 1). */
export const waitSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** `rate_limited`; the HTTP reply carries the wait as `Retry-After`. */
export class RateLimitedError extends AppError {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterMs: number) {
    super('rate_limited', message);
    this.retryAfterSeconds = waitSeconds(retryAfterMs);
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);
export const forbidden = (message = 'you are not allowed to do this') => new AppError('forbidden', message);
export const conflict = (message: string, details?: Record<string, unknown>) =>
  new AppError('conflict', message, details);
export const invalidParams = (issues: FieldIssue[]) =>
  new AppError('invalid_params', issues.map((i) => `${i.field}: ${i.message}`).join('; '), { issues });
