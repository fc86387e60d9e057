import type { UsersTable } from '../../db/schema.js';
import { RateLimitedError, waitSeconds } from '../../shared/errors.js';
import { verifyPassword } from '../../shared/password.js';
import type { Hub } from '../context.js';
import { clearKey, deleteFailures, insertFailures, pruneFailures, recentFailures } from './throttle.repo.js';

/**
 * The sign-in throttle (docs/security.md): failed password checks are counted in the database under
 * the e-mail address and under the client address, over a sliding window, so the budget holds across
 * hub processes and restarts. An attempt is recorded before its password is checked and counted
 * with the others, so concurrent attempts (in any process) never exceed the budget; a refused
 * attempt removes its record, so hammering a locked account does not extend the lock.
 */

export const emailKey = (email: string) => `email:${email.trim().toLowerCase()}`;

/** The budget key of a client address: IPv4 as is, IPv6 per /64 (what one subscriber usually holds). */
export function addressKey(ip: string): string {
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (v4) return `ip:${v4[1]}`;
  if (!ip.includes(':')) return `ip:${ip}`;
  const bare = ip.toLowerCase().replace(/%.*$/, '');
  const [head = '', tail] = bare.split('::');
  const groups = (part: string) =>
    part ? part.split(':').flatMap((g) => (g.includes('.') ? [g, '0'] : [g])) : [];
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? h : [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t];
  const prefix = all.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16));
  return `ip:${prefix.join(':')}::/64`;
}

/**
 * How long until one more attempt fits: `newestFirst` are the other failures in the window. The
 * `limit`-th newest must leave the window for the count to drop below the limit.
 */
export function retryAfterMs(newestFirst: number[], limit: number, windowMs: number, now: number): number {
  const blocking = newestFirst[limit - 1];
  return blocking === undefined ? 0 : Math.max(0, blocking + windowMs - now);
}

export interface Attempt {
  accountKey: string;
  ids: string[];
}

/** Records an attempt under both keys, or refuses it (rate_limited, with the wait) when a budget is spent. */
export async function beginAttempt(hub: Hub, email: string, ip: string): Promise<Attempt> {
  const { signInWindowMs: windowMs, signInAccountLimit, signInAddressLimit } = hub.config;
  const now = hub.now();
  const budgets = [
    { key: emailKey(email), limit: signInAccountLimit, what: 'for this account' },
    { key: addressKey(ip), limit: signInAddressLimit, what: 'from this address' },
  ];
  const rows = budgets.map((b) => ({ id: hub.newId(), key: b.key, at: now }));
  await insertFailures(hub.db, rows);
  const ids = rows.map((r) => r.id);
  for (const b of budgets) {
    const recent = await recentFailures(hub.db, b.key, now - windowMs, b.limit + 1);
    if (recent.length <= b.limit) continue;
    await deleteFailures(hub.db, ids);
    const others = recent.filter((r) => !ids.includes(r.id)).map((r) => r.at);
    const wait = retryAfterMs(others, b.limit, windowMs, now);
    throw new RateLimitedError(
      `too many failed sign-ins ${b.what}; try again in ${waitSeconds(wait)} s`,
      wait,
    );
  }
  return { accountKey: budgets[0]!.key, ids };
}

/**
 * Checks `password` for the account of `email` under the throttle and the password gate. Answers the
 * user when the password matches an active account, else null (a failure, counted). An unknown
 * address costs and counts the same, so neither time nor the throttle tells which accounts exist.
 */
export async function checkSignIn(
  hub: Hub,
  email: string,
  password: string,
  ip: string,
): Promise<UsersTable | null> {
  const address = email.trim().toLowerCase();
  const attempt = await beginAttempt(hub, address, ip);
  let user: UsersTable | undefined;
  let ok: boolean;
  try {
    user = await hub.db.selectFrom('users').selectAll().where('email', '=', address).executeTakeFirst();
    ok = await hub.passwords.run(() =>
      verifyPassword(password, user?.password_hash ?? null, hub.config.passwordCost),
    );
  } catch (err) {
    // Not a wrong password (the gate was full, or the database failed): not counted.
    await deleteFailures(hub.db, attempt.ids);
    throw err;
  }
  if (user && ok && user.status === 'active') {
    // A success clears the account's failures; the address keeps its own (another account's
    // success must not reset a budget an attacker shares).
    await clearKey(hub.db, attempt.accountKey);
    await deleteFailures(hub.db, attempt.ids);
    return user;
  }
  await pruneFailures(hub.db, hub.now() - hub.config.signInWindowMs);
  return null;
}
