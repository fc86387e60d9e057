import type { Kysely } from 'kysely';
import { hashSecret, mintToken } from '../../shared/tokens.js';
import type { DaemonDB } from '../db/schema.js';

/** Mints a `svc_lt_` token, stores only its hash, and shows it once. */
export async function createLocalToken(
  db: Kysely<DaemonDB>,
  now: number,
  ttlMs: number,
): Promise<{ token: string; expires_at: number }> {
  const token = mintToken('local');
  const expiresAt = now + ttlMs;
  await db
    .insertInto('local_tokens')
    .values({ hash: hashSecret(token), expires_at: expiresAt, created_at: now })
    .execute();
  await db.deleteFrom('local_tokens').where('expires_at', '<=', now).execute();
  return { token, expires_at: expiresAt };
}

/** Whether `token` is a live local token. The caller checks the token's kind (checksum) first. */
export async function isLiveLocalToken(db: Kysely<DaemonDB>, token: string, now: number): Promise<boolean> {
  const row = await db
    .selectFrom('local_tokens')
    .select('hash')
    .where('hash', '=', hashSecret(token))
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return row !== undefined;
}
