import { updateOne } from '../../db/index.js';
import type { Hub } from '../context.js';
import type { CommandResult } from '../ports.js';
import { daemonOnline } from './daemons.repo.js';

/** How long an operation waits for a daemon's ack before answering without it. */
export const COMMAND_ACK_TIMEOUT_MS = 10_000;

/**
 * Waits for a command's ack when its daemon is online (connected to this hub process, or marked
 * online by another). Null when the daemon is offline or did not answer within `timeoutMs`; the
 * command then stays in the outbox (callers that must not leave it there call `withdrawCommand`).
 */
export async function awaitCommand(
  hub: Hub,
  daemonId: string,
  txId: string,
  timeoutMs = COMMAND_ACK_TIMEOUT_MS,
): Promise<CommandResult | null> {
  if (!(await daemonReachable(hub, daemonId))) return null;
  try {
    return await hub.tunnel.waitForAck(txId, timeoutMs);
  } catch {
    return null;
  }
}

/** Online: connected to this process, or marked online by another. */
export async function daemonReachable(hub: Hub, daemonId: string): Promise<boolean> {
  return hub.tunnel.isConnected(daemonId) || (await daemonOnline(hub.db, daemonId));
}

/**
 * As a run shows its daemon: connected to this process, or online by the database's answer of the
 * last second (online-cache.ts). Decisions call `daemonReachable`.
 */
export async function daemonShownOnline(hub: Hub, daemonId: string | null): Promise<boolean> {
  if (daemonId === null) return false;
  return hub.tunnel.isConnected(daemonId) || hub.online.isOnline(hub.db, daemonId);
}

/**
 * Removes a command that was not acknowledged, so it is never delivered later. True when it was
 * still pending (a command already delivered may still run on the daemon; its late ack is ignored).
 */
export async function withdrawCommand(hub: Hub, txId: string): Promise<boolean> {
  return updateOne(
    hub.db.deleteFrom('command_outbox').where('tx_id', '=', txId).where('status', '=', 'pending'),
  );
}
