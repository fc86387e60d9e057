/**
 * The daemon's one error type. Routes and the access guard throw `DaemonError`; the HTTP server and
 * the hub link turn it into the spec's daemon shape `{ok: false, error: {code, message, details?}}`
 * (over HTTP, with the status below; over the tunnel, as an `ack` with status `error`).
 */
export type DaemonErrorCode =
  | 'PAYLOAD_INVALID'
  | 'BAD_REQUEST'
  | 'UNAUTHORIZED'
  | 'WEB_REQUEST_REFUSED'
  | 'HOST_NOT_LOCAL'
  | 'LOCAL_ONLY'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'INTERNAL_ERROR'
  | 'CLAIM_FAILED'
  | 'DAEMON_ID_UNKNOWN'
  | 'HUB_CREDENTIALS_MISSING'
  | 'WORKSPACE_INVALID'
  | 'PAYLOAD_TOO_LARGE';

export const DAEMON_STATUS: Record<DaemonErrorCode, number> = {
  PAYLOAD_INVALID: 400,
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  WEB_REQUEST_REFUSED: 403,
  HOST_NOT_LOCAL: 403,
  LOCAL_ONLY: 403,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  INTERNAL_ERROR: 500,
  CLAIM_FAILED: 502,
  DAEMON_ID_UNKNOWN: 503,
  HUB_CREDENTIALS_MISSING: 503,
  WORKSPACE_INVALID: 400,
  PAYLOAD_TOO_LARGE: 413,
};

/** One PAYLOAD_INVALID issue: `path` is dotted (`message.type`), `(body)` for the body itself. */
export interface PayloadIssue {
  path: string;
  message: string;
}

/** The `error` member of a daemon error reply (also the `error` of an `ack` frame). */
export interface DaemonErrorBody {
  code: DaemonErrorCode;
  message: string;
  details?: unknown;
}

export class DaemonError extends Error {
  constructor(
    readonly code: DaemonErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'DaemonError';
  }

  get status(): number {
    return DAEMON_STATUS[this.code];
  }

  toBody(): DaemonErrorBody {
    return {
      code: this.code,
      message: this.message,
      ...(this.details === undefined ? {} : { details: this.details }),
    };
  }

  static fromBody(body: DaemonErrorBody): DaemonError {
    return new DaemonError(body.code, body.message, body.details);
  }
}

export const isDaemonErrorCode = (code: unknown): code is DaemonErrorCode =>
  typeof code === 'string' && Object.hasOwn(DAEMON_STATUS, code);
