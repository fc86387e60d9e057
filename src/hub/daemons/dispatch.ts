import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  SignJWT,
} from 'jose';
import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { Hub } from '../context.js';
import type { Cipher, DispatchKeys } from '../ports.js';

/**
 * Dispatch tokens: short-lived JWTs the hub signs so that a caller on another host may call a
 * daemon (CONTRACT.md §6). The key pair is Ed25519 (JWS alg `EdDSA`); the daemon receives the
 * public JWK in the tunnel's hello frame and checks `aud` = its own id.
 */
export const DISPATCH_ALG = 'EdDSA';
export const DISPATCH_ISSUER = 'svc-hub';
export const MAX_DISPATCH_TTL_MS = 5 * 60 * 1000;
const KEY_ID = 'dispatch';

/**
 * Loads the hub's dispatch key pair, creating it on the first start. Several hub processes may
 * start at once: each inserts a fresh pair if none exists (the primary key lets one win), then
 * every process reads the stored one. The private key is stored sealed (src/hub/secrets/cipher.ts).
 */
export async function loadDispatchKeys(
  db: Kysely<DB>,
  now: () => number,
  cipher: Cipher,
): Promise<DispatchKeys> {
  let row = await db.selectFrom('hub_keys').selectAll().where('id', '=', KEY_ID).executeTakeFirst();
  if (!row) {
    const pair = await generateKeyPair(DISPATCH_ALG, { crv: 'Ed25519', extractable: true });
    const [pub, priv] = await Promise.all([exportJWK(pair.publicKey), exportJWK(pair.privateKey)]);
    await db
      .insertInto('hub_keys')
      .values({
        id: KEY_ID,
        alg: DISPATCH_ALG,
        public_jwk: JSON.stringify(pub),
        private_jwk: cipher.seal(JSON.stringify(priv)),
        created_at: now(),
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    row = await db.selectFrom('hub_keys').selectAll().where('id', '=', KEY_ID).executeTakeFirstOrThrow();
  }
  const pub = JSON.parse(row.public_jwk) as JWK;
  const kid = await calculateJwkThumbprint(pub);
  const privateKey = (await importJWK(
    JSON.parse(cipher.reveal(row.private_jwk)) as JWK,
    row.alg,
  )) as CryptoKey;
  return { privateKey, kid, publicJwk: { ...pub, alg: row.alg, use: 'sig', kid } };
}

/**
 * Whose authority a dispatch token carries (claim `svc_holder`). `hub`: the hub's own commands,
 * which a daemon obeys as it obeys the tunnel. `user`: a token issued to a person
 * (`daemons/issue_dispatch_token`); `sub` is their user id and the daemon grants them exactly what
 * their realm role allows (src/daemon/route-access.ts), never the hub's authority.
 */
export type DispatchHolder = { kind: 'hub' } | { kind: 'user'; userId: string };

/** Signs a dispatch token for one daemon. `now` in ms; the lifetime is capped at 5 minutes. */
export async function signDispatch(
  keys: DispatchKeys,
  daemonId: string,
  now: number,
  ttlMs: number,
  holder: DispatchHolder = { kind: 'hub' },
): Promise<{ token: string; expires_at: number }> {
  const iat = Math.floor(now / 1000);
  const exp = iat + Math.max(1, Math.floor(Math.min(ttlMs, MAX_DISPATCH_TTL_MS) / 1000));
  const token = await new SignJWT({ svc_holder: holder.kind })
    .setProtectedHeader({ alg: DISPATCH_ALG, kid: keys.kid, typ: 'JWT' })
    .setIssuer(DISPATCH_ISSUER)
    .setAudience(daemonId)
    .setSubject(holder.kind === 'user' ? holder.userId : daemonId)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(keys.privateKey);
  return { token, expires_at: exp * 1000 };
}

/** A fresh dispatch token for `daemonId`, signed with this hub's key (`aud` = the daemon id). */
export function signDispatchToken(
  hub: Pick<Hub, 'tunnel' | 'now' | 'config'>,
  daemonId: string,
  holder: DispatchHolder,
): Promise<{ token: string; expires_at: number }> {
  return signDispatch(hub.tunnel.keys, daemonId, hub.now(), hub.config.dispatchTokenTtlMs, holder);
}
