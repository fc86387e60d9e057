import { groupCalls } from '../../shared/group-calls.js';
import { recordEvents } from '../events/events.js';
import type { Conn, TunnelDeps } from './connection.js';
import { markConnected, markDisconnected, touchConnections } from './daemons.repo.js';

/**
 * Daemon presence as one hub process writes it: online when a tunnel opens (with its
 * `daemon.connected` event), offline when it closes unless a newer connection replaced it (with
 * `daemon.disconnected`), last seen on pongs. Each is a group commit (src/shared/group-calls.ts)
 * over a short window, so a reconnect storm of thousands of daemons costs a few transactions, not
 * one per daemon.
 */
export interface Presence {
  /** When the daemon was recorded online. */
  connected(conn: Conn): Promise<number>;
  /** Whether the daemon went offline (no newer connection had replaced this one). */
  disconnected(conn: Conn): Promise<boolean>;
  touched(conn: Conn): Promise<void>;
}

/** Connections per transaction at most. */
const GROUP = 500;
/**
 * How long a write waits for others: handshakes complete one per event-loop turn, so without a
 * window a storm would still commit once per daemon. A daemon's hello waits this much longer.
 */
export const PRESENCE_WINDOW_MS = 3;
const OVER_WINDOW = { windowMs: PRESENCE_WINDOW_MS };

const connection = (c: Conn) => ({ daemonId: c.daemonId, connectionId: c.id });
const eventOf = (type: 'daemon.connected' | 'daemon.disconnected', c: Conn) => ({
  type,
  org_id: c.orgId,
  realm_id: c.realmId,
  subject_id: c.daemonId,
  payload: { daemon_id: c.daemonId, connection_id: c.id },
});

export function createPresence(deps: TunnelDeps, instanceId: string): Presence {
  const { db } = deps;
  return {
    connected: groupCalls(
      (conns: Conn[]) =>
        db.transaction().execute(async (trx) => {
          const at = deps.now();
          await markConnected(trx, conns.map(connection), at, instanceId);
          await recordEvents(
            trx,
            deps,
            conns.map((c) => eventOf('daemon.connected', c)),
          );
          return conns.map(() => at);
        }),
      GROUP,
      OVER_WINDOW,
    ),
    disconnected: groupCalls(
      (conns: Conn[]) =>
        db.transaction().execute(async (trx) => {
          const marked = await markDisconnected(trx, conns.map(connection), deps.now());
          await recordEvents(
            trx,
            deps,
            conns.filter((_, i) => marked[i]).map((c) => eventOf('daemon.disconnected', c)),
          );
          return marked;
        }),
      GROUP,
      OVER_WINDOW,
    ),
    touched: groupCalls(
      async (conns: Conn[]) => {
        await touchConnections(db, conns.map(connection), deps.now());
        return conns.map(() => undefined);
      },
      GROUP,
      OVER_WINDOW,
    ),
  };
}
