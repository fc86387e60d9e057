import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import { allColumns, prepared } from '../../db/prepared.js';
import type { DaemonsTable } from '../../db/schema.js';
import { AppError } from '../../shared/errors.js';
import { digestsEqual, hashSecret, tokenKind } from '../../shared/tokens.js';
import type { Actor } from '../access/actor.js';
import type { Hub } from '../context.js';

const TOUCH_EVERY_MS = 60_000;

/**
 * Resolves `Authorization: Bearer …` to an actor. No header: null (anonymous). A header that does
 * not hold a live token: unauthorized. A token whose checksum fails never reaches the database,
 * except the operator-chosen SVC_ADMIN_TOKEN (no checksum), recognised by its hash and then looked
 * up like any other token (so a revocation holds).
 */
export async function authenticate(
  hub: Pick<Hub, 'db' | 'now' | 'config' | 'access'>,
  header: string | undefined,
): Promise<Actor | null> {
  if (header === undefined || header === '') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw new AppError('unauthorized', 'Authorization must be "Bearer <token>"');
  const token = m[1]!;
  const hash = hashSecret(token);
  // Only a live token is ever kept, so an answer needs no other check than its expiry.
  const actor = await hub.access.token(hash, async () => {
    const configured = hub.config.adminTokenHash;
    const kind = tokenKind(token) ?? (configured !== null && digestsEqual(configured, hash) ? 'user' : null);
    if (!kind) throw new AppError('unauthorized', 'token is malformed');
    const found = await lookUp(hub, kind, hash, hub.now());
    if (!found) throw new AppError('unauthorized', 'token is expired, revoked or unknown');
    return found;
  });
  if (actor.kind === 'user' && actor.tokenExpiresAt !== null && actor.tokenExpiresAt <= hub.now()) {
    throw new AppError('unauthorized', 'token is expired, revoked or unknown');
  }
  return actor;
}

const DAEMON_COLUMNS = allColumns<DaemonsTable>()([
  'id',
  'realm_id',
  'name',
  'token_hash',
  'hint',
  'status',
  'last_seen_at',
  'created_at',
  'revoked_at',
  'connection_id',
  'hub_instance_id',
]);

/** A live realm token's daemon: once per tunnel that opens, so compiled once. */
const daemonByToken = prepared((db: Kysely<DB>, hash: string) =>
  db
    .selectFrom('daemons')
    .select(DAEMON_COLUMNS)
    .where('token_hash', '=', hash)
    .where('revoked_at', 'is', null),
);

async function lookUp(hub: Pick<Hub, 'db'>, kind: string, hash: string, now: number): Promise<Actor | null> {
  if (kind === 'user') {
    const row = await hub.db
      .selectFrom('tokens')
      .innerJoin('users', 'users.id', 'tokens.user_id')
      .selectAll('users')
      .select([
        'tokens.id as token_id',
        'tokens.token_hash',
        'tokens.kind as token_kind',
        'tokens.expires_at',
        'tokens.last_used_at',
      ])
      .where('tokens.token_hash', '=', hash)
      .where('tokens.revoked_at', 'is', null)
      .executeTakeFirst();
    if (row && digestsEqual(row.token_hash, hash) && (row.expires_at === null || row.expires_at > now)) {
      if (row.last_used_at === null || now - row.last_used_at > TOUCH_EVERY_MS) {
        await hub.db
          .updateTable('tokens')
          .set({ last_used_at: now })
          .where('id', '=', row.token_id)
          .execute();
      }
      const { token_id, token_hash, token_kind, expires_at, last_used_at, ...user } = row;
      return { kind: 'user', user, tokenId: token_id, tokenKind: token_kind, tokenExpiresAt: expires_at };
    }
  } else if (kind === 'daemon') {
    const [daemon] = await daemonByToken(hub.db, hash);
    if (daemon && digestsEqual(daemon.token_hash, hash)) return { kind: 'daemon', daemon };
  }
  return null;
}
