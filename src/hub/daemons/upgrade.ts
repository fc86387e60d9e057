import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { DaemonsTable } from '../../db/schema.js';
import { AppError, forbidden, HUB_STATUS, type HubErrorCode } from '../../shared/errors.js';
import { loadRealm } from '../access/access.service.js';
import { authenticate } from '../auth/authenticate.js';
import type { Hub } from '../context.js';
import { errorBody, toAppError } from '../http/errors.js';

/** The tunnel's endpoint (CONTRACT.md §6). */
export const CONNECT_PATH = '/v1/daemons/connect';

/**
 * Who may open the tunnel: a live realm token (`svc_dt_…`). No or a bad token → unauthorized,
 * a user token → forbidden. Decided before the WebSocket upgrade, so a refused caller gets a
 * plain HTTP reply in the hub's error shape.
 */
export async function authenticateUpgrade(
  hub: Pick<Hub, 'db' | 'now' | 'config' | 'access'>,
  header: string | undefined,
): Promise<{ daemon: DaemonsTable; realmId: string; orgId: string } | { error: AppError }> {
  try {
    const actor = await authenticate(hub, header);
    if (!actor) return { error: new AppError('unauthorized', 'a realm token is required') };
    if (actor.kind !== 'daemon') return { error: forbidden('only a realm token may open the tunnel') };
    const realm = await loadRealm(hub, actor.daemon.realm_id).catch((err: unknown) => {
      if (err instanceof AppError && err.code === 'not_found') return null;
      throw err;
    });
    if (!realm) return { error: forbidden("the daemon's organization is deleted") };
    // The realm's ids as the access cache holds them: connections of one realm share the strings.
    return { daemon: actor.daemon, realmId: realm.id, orgId: realm.org_id };
  } catch (err) {
    return { error: toAppError(err).error };
  }
}

/** Answers a refused upgrade on the raw socket with an HTTP error reply and closes it. */
export function rejectUpgrade(socket: Duplex, code: HubErrorCode, message: string): void {
  if (socket.destroyed) return;
  const status = HUB_STATUS[code];
  const body = JSON.stringify(errorBody(new AppError(code, message)));
  socket.once('finish', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}
