import type { Hub } from '../context.js';
import { enqueueCommand } from './outbox.repo.js';

/**
 * Writes a command for a daemon outside any transaction and wakes its delivery. Inside a
 * transaction, call `enqueueCommand(trx, hub, …)` and `hub.tunnel.wake(daemonId)` after the commit.
 */
export async function sendCommand(hub: Hub, daemonId: string, path: string, body: unknown): Promise<string> {
  const txId = await enqueueCommand(hub.db, hub, daemonId, path, body);
  hub.tunnel.wake(daemonId);
  return txId;
}
