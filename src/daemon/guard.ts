import type { RealmRole } from '../shared/permissions.js';
import type { Caller } from './caller.js';
import { DaemonError } from './errors.js';

/**
 * The daemon's access guard: the spec's rules 1–7 in the order of CONTRACT §6. Pure — the caller's
 * credential is verified beforehand (see credentials.ts) and passed in as a verdict.
 */

/** What verifying the caller's bearer token found. Only computed for callers on another host. */
export type CredentialVerdict =
  /** No Authorization header. */
  | { kind: 'none' }
  /** Malformed, unknown, expired, wrong audience, or a kind not accepted in the current mode. */
  | { kind: 'invalid' }
  /** A dispatch JWT the hub signed for this daemon; `userId` when the hub issued it to a person. */
  | { kind: 'dispatch_token'; userId: string | null; role: RealmRole | null; inAcl: boolean | null }
  /** A live local token from `tokens/create` (accepted only while unconnected). */
  | { kind: 'local_token' }
  /**
   * A `svc_tok_` the hub vouched for; `inAcl` null when the realm ACL is not loaded, `role` the
   * user's realm role in it.
   */
  | { kind: 'user_token'; userId: string; role: RealmRole | null; inAcl: boolean | null }
  /** A `svc_tok_` that could not be checked because the hub was unreachable. */
  | { kind: 'unverifiable' };

export interface AccessRequest {
  /** Whether the request carries an `Origin` header (any value). */
  hasOrigin: boolean;
  /** The TCP peer address. */
  remoteAddress: string | undefined;
  /** The `Host` header. */
  host: string | undefined;
  /** Whether the daemon has a dispatch key from the hub (connected mode). */
  connected: boolean;
  credential: CredentialVerdict;
}

export type AccessDecision = { allow: true; caller: Caller } | { allow: false; error: DaemonError };

const deny = (code: DaemonError['code'], message: string): AccessDecision => ({
  allow: false,
  error: new DaemonError(code, message),
});

export function checkAccess(req: AccessRequest): AccessDecision {
  if (req.hasOrigin) {
    return deny('WEB_REQUEST_REFUSED', 'requests from web pages (with an Origin header) are refused');
  }
  const loopback = isLoopbackAddress(req.remoteAddress);
  if (loopback && !isLocalHostHeader(req.host)) {
    return deny('HOST_NOT_LOCAL', 'a local caller must address localhost, 127.0.0.1 or [::1]');
  }
  if (loopback) return { allow: true, caller: { kind: 'local' } };

  const c = req.credential;
  if (!req.connected) {
    if (c.kind === 'local_token') return { allow: true, caller: { kind: 'local_token' } };
    return deny(
      'LOCAL_ONLY',
      'the daemon is not connected to a hub: only local callers or holders of a local token are accepted',
    );
  }
  switch (c.kind) {
    case 'dispatch_token':
    case 'user_token':
      if (c.kind === 'dispatch_token' && c.userId === null)
        return { allow: true, caller: { kind: 'dispatch' } };
      if (c.inAcl === true) {
        const userId = c.userId as string;
        return { allow: true, caller: { kind: 'user', userId, role: c.role, via: c.kind } };
      }
      return deny(
        'FORBIDDEN',
        c.inAcl === null
          ? "the realm's access list is not loaded yet"
          : "the token's user is not in this realm",
      );
    case 'unverifiable':
      return deny('INTERNAL_ERROR', 'the hub could not be reached to check the token');
    case 'none':
      return deny('UNAUTHORIZED', 'a caller on another host must send a bearer token');
    default:
      return deny('UNAUTHORIZED', 'the token is malformed, unknown, expired or not for this daemon');
  }
}

/** 127.0.0.0/8, ::1 and IPv4-mapped 127.x addresses. */
export function isLoopbackAddress(addr: string | undefined): boolean {
  if (!addr) return false;
  const a = addr.toLowerCase();
  if (a === '::1' || a === '0:0:0:0:0:0:0:1') return true;
  const v4 = a.startsWith('::ffff:') ? a.slice(7) : a;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** `localhost`, `127.0.0.1` or `[::1]`, each with an optional port. Anything else (a DNS name) is not local. */
export function isLocalHostHeader(host: string | undefined): boolean {
  if (!host) return false;
  return /^(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i.test(host.trim());
}

/** The token of an `Authorization: Bearer <token>` header; null when absent, '' when malformed. */
export function bearerToken(header: string | undefined): string | null {
  if (header === undefined || header === '') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : '';
}
