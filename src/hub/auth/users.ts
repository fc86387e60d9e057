import type { UsersTable } from '../../db/schema.js';
import { hashSecret, mintToken, TOKEN_PREFIX, tokenHint, tokenKind } from '../../shared/tokens.js';
import type { Hub } from '../context.js';

export function userOut(u: UsersTable) {
  return {
    id: u.id,
    handle: u.handle,
    email: u.email,
    display_name: u.display_name,
    status: u.status,
    is_site_admin: u.is_site_admin === 1,
    created_at: u.created_at,
  };
}

/** Creates a token for a user and returns the secret (shown once) with its row. */
export async function issueUserToken(
  hub: Hub,
  userId: string,
  kind: 'personal' | 'session',
  name: string,
  expiresAt: number | null,
) {
  const token = mintToken('user');
  const row = {
    id: hub.newId(),
    user_id: userId,
    kind,
    name,
    token_hash: hashSecret(token),
    hint: tokenHint(token),
    created_at: hub.now(),
    expires_at: expiresAt,
    last_used_at: null,
    revoked_at: null,
  };
  await hub.db.insertInto('tokens').values(row).execute();
  return { token, row };
}

/** A free handle derived from an e-mail address or a wish: `ada`, then `ada-2`, `ada-3`… */
export async function freeHandle(hub: Hub, wish: string): Promise<string> {
  const base =
    wish
      .toLowerCase()
      .replace(/@.*/, '')
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'user';
  for (let i = 1; ; i++) {
    const handle = i === 1 ? base : `${base}-${i}`;
    const taken = await hub.db
      .selectFrom('users')
      .select('id')
      .where('handle', '=', handle)
      .executeTakeFirst();
    if (!taken) return handle;
  }
}

/**
 * CONTRACT.md §1 bootstrap. With `adminToken`, a site administrator `admin` holds that token
 * (idempotent). Without it, the first start creates the administrator and returns a fresh token to
 * print once; later starts return null.
 */
export async function bootstrapAdmin(hub: Hub, adminToken: string | undefined): Promise<string | null> {
  if (
    adminToken !== undefined &&
    tokenKind(adminToken) === null &&
    !adminToken.startsWith(TOKEN_PREFIX.user)
  ) {
    throw new Error('SVC_ADMIN_TOKEN must be a svc_tok_… token');
  }
  if (adminToken === undefined) {
    const anyAdmin = await hub.db
      .selectFrom('users')
      .select('id')
      .where('is_site_admin', '=', 1)
      .executeTakeFirst();
    if (anyAdmin) return null;
  }
  let admin = await hub.db.selectFrom('users').selectAll().where('handle', '=', 'admin').executeTakeFirst();
  if (!admin) {
    admin = {
      id: hub.newId(),
      handle: 'admin',
      email: 'admin@localhost',
      display_name: 'Site administrator',
      status: 'active',
      is_site_admin: 1,
      password_hash: null,
      created_at: hub.now(),
    };
    await hub.db.insertInto('users').values(admin).execute();
  } else if (admin.is_site_admin !== 1) {
    await hub.db.updateTable('users').set({ is_site_admin: 1 }).where('id', '=', admin.id).execute();
  }
  if (adminToken === undefined) {
    const { token } = await issueUserToken(hub, admin.id, 'personal', 'bootstrap', null);
    return token;
  }
  const hash = hashSecret(adminToken);
  const existing = await hub.db
    .selectFrom('tokens')
    .select('id')
    .where('token_hash', '=', hash)
    .executeTakeFirst();
  if (!existing) {
    await hub.db
      .insertInto('tokens')
      .values({
        id: hub.newId(),
        user_id: admin.id,
        kind: 'personal',
        name: 'SVC_ADMIN_TOKEN',
        token_hash: hash,
        hint: tokenHint(adminToken),
        created_at: hub.now(),
        expires_at: null,
        last_used_at: null,
        revoked_at: null,
      })
      .execute();
  }
  return null;
}
