import type { Hub, Tx } from '../context.js';
import { enqueueCommand } from './outbox.repo.js';

/**
 * Runs `fn` in one transaction. Every command it writes through `tx.command` commits with the
 * change that caused it (the outbox), and once the transaction has committed the tunnel is woken
 * for each daemon concerned, so the commands go out at once; on a rollback nothing is sent. Then
 * the steps registered with `tx.afterCommit` run, in order.
 */
export async function inTx<T>(hub: Hub, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const daemons = new Set<string>();
  const after: (() => Promise<unknown>)[] = [];
  const result = await hub.db.transaction().execute((trx) =>
    fn({
      db: trx,
      hub,
      async command(daemonId, path, body) {
        const txId = await enqueueCommand(trx, hub, daemonId, path, body);
        daemons.add(daemonId);
        return txId;
      },
      afterCommit(step) {
        after.push(step);
      },
    }),
  );
  for (const d of daemons) hub.tunnel.wake(d);
  for (const step of after) {
    await step().catch((err: unknown) => hub.log.error({ err }, 'a step after commit failed'));
  }
  return result;
}

/** Thrown inside `inTx` to undo the transaction when a later guarded write finds the row moved. */
export class Rollback extends Error {
  constructor() {
    super('rolled back: a guarded write found the row changed');
  }
}

/** `.catch(rolledBack)` after `inTx`: a Rollback becomes `null`, anything else is rethrown. */
export function rolledBack(err: unknown): null {
  if (err instanceof Rollback) return null;
  throw err;
}

/** Writes one command outside any transaction, and sends it. */
export function sendCommand(hub: Hub, daemonId: string, path: string, body: unknown): Promise<string> {
  return inTx(hub, (tx) => tx.command(daemonId, path, body));
}
