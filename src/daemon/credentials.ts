import { errors as joseErrors, jwtVerify } from 'jose';
import type { Kysely } from 'kysely';
import type { Clock } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import { hashSecret, parseAdminToken, tokenKind } from '../shared/tokens.js';
import type { DaemonDB } from './db/schema.js';
import { bearerToken, type CredentialVerdict } from './guard.js';
import type { HubApi } from './hub-api.js';
import type { DaemonIdentity } from './identity.js';
import { isLiveLocalToken } from './tokens/local-tokens.repo.js';

export interface CredentialDeps {
  db: Kysely<DaemonDB>;
  identity: DaemonIdentity;
  hub: HubApi;
  now: Clock;
  log: Logger;
  /** How long the hub's answer about a `svc_tok_` is reused (default 30 s). */
  whoamiTtlMs?: number;
}

export type CredentialChecker = (
  authorization: string | undefined,
  connected: boolean,
) => Promise<CredentialVerdict>;

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const CACHE_MAX = 1000;

/**
 * Verifies a remote caller's bearer token. Unconnected, only local tokens count. Connected: a
 * dispatch JWT (verified with the hub's key, `aud` = this daemon's id, `exp` required) or a
 * `svc_tok_` that the hub's `auth/whoami` resolves to a user (answer cached for `whoamiTtlMs`).
 */
export function createCredentialChecker(deps: CredentialDeps): CredentialChecker {
  const ttl = deps.whoamiTtlMs ?? 30_000;
  const whoamiCache = new Map<string, { userId: string | null; until: number }>();

  async function userOf(token: string): Promise<string | null | 'unreachable'> {
    const key = hashSecret(token);
    const now = deps.now();
    const hit = whoamiCache.get(key);
    if (hit && hit.until > now) return hit.userId;
    try {
      const who = await deps.hub.whoami(token);
      if (whoamiCache.size >= CACHE_MAX) whoamiCache.clear();
      whoamiCache.set(key, { userId: who?.userId ?? null, until: now + ttl });
      return who?.userId ?? null;
    } catch (err) {
      deps.log.warn({ err }, 'could not check a user token with the hub');
      return 'unreachable';
    }
  }

  /** The holder of a valid dispatch token: the hub, a user id, or null when it does not verify. */
  async function dispatchHolder(token: string): Promise<{ userId: string | null } | null> {
    const key = deps.identity.dispatchKey;
    const aud = deps.identity.daemonId;
    if (!key || !aud) return null;
    try {
      const { payload } = await jwtVerify(token, key, {
        audience: aud,
        algorithms: ['EdDSA', 'Ed25519', 'ES256'],
        requiredClaims: ['exp', 'sub'],
        currentDate: new Date(deps.now()),
      });
      // Fail closed: a token that names no holder carries no authority.
      if (payload.svc_holder === 'hub') return { userId: null };
      if (payload.svc_holder === 'user' && payload.sub) return { userId: payload.sub };
      return null;
    } catch (err) {
      if (!(err instanceof joseErrors.JOSEError)) deps.log.warn({ err }, 'dispatch token check failed');
      return null;
    }
  }

  return async (authorization, connected) => {
    const token = bearerToken(authorization);
    if (token === null) return { kind: 'none' };
    if (token === '') return { kind: 'invalid' };
    const kind = tokenKind(token);
    if (!connected) {
      if (kind === 'local' && (await isLiveLocalToken(deps.db, token, deps.now())))
        return { kind: 'local_token' };
      return { kind: 'invalid' };
    }
    // A hand-chosen admin token (SVC_ADMIN_TOKEN) has no checksum: the hub alone can tell.
    if (kind === 'user' || (kind === null && parseAdminToken(token) === token)) {
      const userId = await userOf(token);
      if (userId === 'unreachable') return { kind: 'unverifiable' };
      if (userId === null) return { kind: 'invalid' };
      return { kind: 'user_token', userId, ...deps.identity.membership(userId) };
    }
    if (kind === null && JWT_SHAPE.test(token)) {
      const holder = await dispatchHolder(token);
      if (holder?.userId === null) return { kind: 'dispatch_token', userId: null, role: null, inAcl: null };
      if (holder) {
        return { kind: 'dispatch_token', userId: holder.userId, ...deps.identity.membership(holder.userId) };
      }
    }
    return { kind: 'invalid' };
  };
}
