import type { UsersTable } from '../../db/schema.js';
import type { User } from '../../shared/api/access.js';
import { hashSecret, mintToken, tokenHint } from '../../shared/tokens.js';
import type { Hub } from '../context.js';

export function userOut(u: UsersTable): User {
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
 * CONTRACT.md §1 bootstrap. With `adminToken` (already checked by parseAdminToken), the site
 * administrator `admin` holds exactly that token: created, or restored when it was revoked, and every
 * previous configured value is revoked. Without it, the first start creates the administrator and
 * returns a fresh token to print once; later starts return null.
 */
export async function bootstrapAdmin(hub: Hub, adminToken: string | undefined): Promise<string | null> {
  if (adminToken === undefined) {
    const anyAdmin = await hub.db
      .selectFrom('users')
      .select('id')
      .where('is_site_admin', '=', 1)
      .executeTakeFirst();
    if (anyAdmin) return null;
  }
  const admin = await ensureAdminUser(hub);
  if (adminToken === undefined) {
    const { token } = await issueUserToken(hub, admin.id, 'personal', 'bootstrap', null);
    return token;
  }
  await installAdminToken(hub, admin.id, adminToken);
  return null;
}

async function ensureAdminUser(hub: Hub): Promise<UsersTable> {
  const admin = await hub.db.selectFrom('users').selectAll().where('handle', '=', 'admin').executeTakeFirst();
  if (!admin) {
    const created: UsersTable = {
      id: hub.newId(),
      handle: 'admin',
      email: 'admin@localhost',
      display_name: 'Site administrator',
      status: 'active',
      is_site_admin: 1,
      password_hash: null,
      claim_org_id: null,
      created_at: hub.now(),
    };
    await hub.db.insertInto('users').values(created).execute();
    return created;
  }
  if (admin.is_site_admin !== 1) {
    await hub.db.updateTable('users').set({ is_site_admin: 1 }).where('id', '=', admin.id).execute();
  }
  return admin;
}

/** The configured value is the administrator's one `admin` token: live, never expiring. */
async function installAdminToken(hub: Hub, adminId: string, adminToken: string): Promise<void> {
  const hash = hashSecret(adminToken);
  const now = hub.now();
  await hub.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('tokens')
      .set({ revoked_at: now })
      .where('user_id', '=', adminId)
      .where('kind', '=', 'admin')
      .where('token_hash', '!=', hash)
      .where('revoked_at', 'is', null)
      .execute();
    const restored = await trx
      .updateTable('tokens')
      .set({ user_id: adminId, kind: 'admin', name: 'SVC_ADMIN_TOKEN', expires_at: null, revoked_at: null })
      .where('token_hash', '=', hash)
      .executeTakeFirst();
    if (Number(restored.numUpdatedRows) > 0) return;
    await trx
      .insertInto('tokens')
      .values({
        id: hub.newId(),
        user_id: adminId,
        kind: 'admin',
        name: 'SVC_ADMIN_TOKEN',
        token_hash: hash,
        hint: tokenHint(adminToken),
        created_at: now,
        expires_at: null,
        last_used_at: null,
        revoked_at: null,
      })
      .execute();
  });
}

/** The user with this handle (id and site-administrator flag), or undefined. */
export function userByHandle(db: Hub['db'], handle: string) {
  return db
    .selectFrom('users')
    .select(['id', 'is_site_admin'])
    .where('handle', '=', handle)
    .executeTakeFirst();
}
