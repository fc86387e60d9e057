import { type Kysely, sql } from 'kysely';
import type { DB } from '../../db/index.js';
import { entriesOf, prepared, preparedQuery } from '../../db/prepared.js';
import type { DaemonsTable } from '../../db/schema.js';
import type { Daemon } from '../../shared/api/daemons.js';
import { notFound } from '../../shared/errors.js';
import { requireRealm, requireUser } from '../access/access.service.js';
import type { Actor } from '../access/actor.js';
import type { Hub } from '../context.js';

export const daemonOut = (d: DaemonsTable): Daemon => ({
  id: d.id,
  realm_id: d.realm_id,
  name: d.name,
  status: d.status,
  last_seen_at: d.last_seen_at,
  created_at: d.created_at,
});

/** A daemon that has not been removed, or not_found. */
export async function loadLiveDaemon(hub: Pick<Hub, 'db'>, daemonId: string): Promise<DaemonsTable> {
  const d = await hub.db
    .selectFrom('daemons')
    .selectAll()
    .where('id', '=', daemonId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!d) throw notFound('daemon');
  return d;
}

/**
 * The realm of a list scoped by `{daemon_id}` or `{realm_id}` (workspaces, installs), once the
 * caller holds `runs.view` there.
 */
export async function realmOfScope(
  hub: Hub,
  actor: Actor | null,
  scope: { daemon_id: string } | { realm_id: string },
): Promise<string> {
  const user = requireUser(actor);
  const realmId =
    'daemon_id' in scope ? (await loadLiveDaemon(hub, scope.daemon_id)).realm_id : scope.realm_id;
  await requireRealm(hub, user, realmId, 'runs.view');
  return realmId;
}

/** Ids of the realm's daemons online now (not removed), in id order. */
export async function onlineDaemonIds(db: Kysely<DB>, realmId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('daemons')
    .select('id')
    .where('realm_id', '=', realmId)
    .where('status', '=', 'online')
    .where('revoked_at', 'is', null)
    .orderBy('id')
    .execute();
  return rows.map((d) => d.id);
}

/** Whether the daemon's tunnel is up, as the hub last saw it. */
export async function daemonOnline(db: Kysely<DB>, daemonId: string | null): Promise<boolean> {
  if (daemonId === null) return false;
  const d = await db
    .selectFrom('daemons')
    .select('status')
    .where('id', '=', daemonId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return d?.status === 'online';
}

/** The realm of a daemon (removed or not), or undefined. */
export function realmOfDaemon(db: Kysely<DB>, daemonId: string) {
  return db.selectFrom('daemons').select('realm_id').where('id', '=', daemonId).executeTakeFirst();
}

/** A daemon's connection to one hub process, as its presence records it. */
export interface Connection {
  daemonId: string;
  connectionId: string;
}

/**
 * Marks each daemon online through its new connection (in the caller's transaction), all in one
 * statement compiled once: a reconnect storm's groups are hundreds of daemons. Of two connections of
 * one daemon, the later one wins.
 */
export async function markConnected(
  trx: Kysely<DB>,
  conns: readonly Connection[],
  at: number,
  hubInstanceId: string,
): Promise<void> {
  const latest = new Map(conns.map((c) => [c.daemonId, c.connectionId]));
  if (latest.size === 0) return;
  await markOnline(trx, at, hubInstanceId, JSON.stringify(Object.fromEntries(latest))).execute();
}

/** `connections`: JSON text of an object, daemon id → its connection id. */
const markOnline = preparedQuery((db: Kysely<DB>, at: number, hubInstanceId: string, connections: string) =>
  db
    .updateTable('daemons')
    .from(entriesOf(db, connections).as('c'))
    .set({
      status: 'online',
      last_seen_at: at,
      connection_id: sql<string>`${sql.ref('c.value')}`,
      hub_instance_id: hubInstanceId,
    })
    .where(sql<boolean>`${sql.ref('daemons.id')} = ${sql.ref('c.key')}`),
);

/**
 * Marks each daemon offline unless a newer connection replaced the given one, here or on another
 * hub process; answers, per connection, whether it did (in the caller's transaction). One statement
 * compiled once for the group (a hub that stops closes thousands of connections), or one more for
 * each further connection of a daemon that the group holds twice (an old connection and its
 * replacement closing together): the statement answers which daemons it marked, not through which
 * connection.
 */
export async function markDisconnected(
  trx: Kysely<DB>,
  conns: readonly Connection[],
  at: number,
): Promise<boolean[]> {
  const out = conns.map(() => false);
  let rest = [...conns.keys()];
  while (rest.length > 0) {
    const round = new Map<string, number>();
    const later: number[] = [];
    for (const i of rest) {
      if (round.has(conns[i]!.daemonId)) later.push(i);
      else round.set(conns[i]!.daemonId, i);
    }
    const byConnection = Object.fromEntries(
      [...round.values()].map((i) => [conns[i]!.connectionId, conns[i]!.daemonId]),
    );
    const marked = await markOffline(trx, at, JSON.stringify(byConnection));
    for (const { id } of marked) out[round.get(id)!] = true;
    rest = later;
  }
  return out;
}

/** `connections`: JSON text of an object, connection id → its daemon's id. */
const markOffline = prepared((db: Kysely<DB>, at: number, connections: string) =>
  db
    .updateTable('daemons')
    .from(entriesOf(db, connections).as('c'))
    .set({ status: 'offline', last_seen_at: at, connection_id: null, hub_instance_id: null })
    .where(sql<boolean>`${sql.ref('daemons.id')} = ${sql.ref('c.value')}`)
    .where(sql<boolean>`${sql.ref('daemons.connection_id')} = ${sql.ref('c.key')}`)
    .returning('daemons.id'),
);

/** `last_seen_at` of the daemons still on these connections (a connection id is one daemon's). */
export async function touchConnections(db: Kysely<DB>, conns: readonly Connection[], at: number) {
  if (conns.length === 0) return;
  await db
    .updateTable('daemons')
    .set({ last_seen_at: at })
    .where(
      'id',
      'in',
      conns.map((c) => c.daemonId),
    )
    .where(
      'connection_id',
      'in',
      conns.map((c) => c.connectionId),
    )
    .execute();
}
