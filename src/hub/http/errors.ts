import type { FastifyError } from 'fastify';
import { ZodError } from 'zod';
import { AppError, type FieldIssue, HUB_STATUS } from '../../shared/errors.js';

/** Field issues from a zod error: `field` is the dotted path (`owner.email`), `(body)` for the root. */
export function zodIssues(err: ZodError): FieldIssue[] {
  return err.issues.map((i) => ({
    field: i.path.length ? i.path.map(String).join('.') : '(body)',
    message: i.message,
  }));
}

/**
 * The spec's two hub error shapes:
 * 1. `{ok:false, error:{code, message}}` for unauthorized, forbidden, not_found;
 * 2. `{ok:false, error:<message>, code, details?}` for every other code.
 */
export function errorBody(err: AppError): Record<string, unknown> {
  if (err.code === 'unauthorized' || err.code === 'forbidden' || err.code === 'not_found') {
    return { ok: false, error: { code: err.code, message: err.message } };
  }
  return { ok: false, error: err.message, code: err.code, ...(err.details ? { details: err.details } : {}) };
}

/** Maps anything thrown to an AppError; unknown faults become internal_error with no detail. */
export function toAppError(err: unknown): { error: AppError; unexpected: boolean } {
  if (err instanceof AppError) return { error: err, unexpected: false };
  if (err instanceof ZodError) {
    const issues = zodIssues(err);
    return {
      error: new AppError('invalid_params', issues.map((i) => `${i.field}: ${i.message}`).join('; '), {
        issues,
      }),
      unexpected: false,
    };
  }
  const fe = err as Partial<FastifyError>;
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return { error: new AppError('bad_request', 'request body is larger than 10 MB'), unexpected: false };
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { error: new AppError('bad_request', fe.message ?? 'bad request'), unexpected: false };
  }
  return { error: new AppError('internal_error', 'internal error'), unexpected: true };
}

export const statusOf = (err: AppError): number => HUB_STATUS[err.code];
