import { flushWrites, keepWrites, refusedWrite } from '../cluster/bus.js';
import type { Hub, Tx } from '../context.js';
import type { NewCommand } from '../ports.js';
import { commandText, enqueueCommand } from './outbox.repo.js';

/**
 * Commands that leave without an outbox row when their daemon's connection to this process is ready:
 * an offer (`offer_job`) only tells a daemon that a run waits for a claim, and the run's queue item,
 * written in the same transaction, is what a claim decides on. Its ack is not recorded either. Should
 * the frame be lost with its connection, the daemon is offered the run again when it connects
 * (dispatch.service.ts `onDaemonsConnected`); a connection that replaced the one it was meant for
 * gets it from the outbox (`storeCommands`); and an offer nobody claims moves on after
 * `offerTimeoutMs` (redispatch.service.ts). Every other command stays in the outbox until acked.
 */
const UNSTORED_PATHS: ReadonlySet<string> = new Set(['offer_job']);

/**
 * Runs `fn` in one transaction. Every command it writes through `tx.command` commits with the
 * change that caused it (the outbox); once the transaction has committed, a command for a daemon
 * connected to this process goes straight to its connection from memory, and for any other daemon
 * the tunnel is woken (here, or through the cluster bus on the process that holds it). On a
 * rollback nothing is sent. Then the steps registered with `tx.afterCommit` run, in order.
 */
export async function inTx<T>(hub: Hub, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const daemons = new Set<string>();
  const direct = new Map<string, NewCommand[]>();
  const after: (() => Promise<unknown>)[] = [];
  const result = await hub.db
    .transaction()
    .execute(async (trx) => {
      // History entries, events and commands nothing reads back go in one statement before the commit.
      keepWrites(trx);
      const out = await fn({
        db: trx,
        hub,
        async command(daemonId, path, body, opts = {}) {
          if (!hub.tunnel.canSendNow(daemonId)) {
            daemons.add(daemonId);
            const from = hub.tunnel.instanceId;
            return (await enqueueCommand(trx, hub, daemonId, path, body, { from, offered: opts.offered }))
              .tx_id;
          }
          const cmd = UNSTORED_PATHS.has(path)
            ? unstoredCommand(hub, path, body)
            : await enqueueCommand(trx, hub, daemonId, path, body, { sentAt: hub.now() });
          direct.set(daemonId, [...(direct.get(daemonId) ?? []), cmd]);
          return cmd.tx_id;
        },
        afterCommit(step) {
          after.push(step);
        },
      });
      await flushWrites(trx);
      return out;
    })
    .catch(refusedWrite);
  for (const [d, cmds] of direct) hub.tunnel.sendNow(d, cmds);
  for (const d of daemons) hub.tunnel.wake(d);
  for (const step of after) {
    await step().catch((err: unknown) => hub.log.error({ err }, 'a step after commit failed'));
  }
  return result;
}

/** A command sent without an outbox row (see UNSTORED_PATHS). */
function unstoredCommand(hub: Pick<Hub, 'newId' | 'now'>, path: string, body: unknown): NewCommand {
  const txId = hub.newId();
  return { tx_id: txId, path, body: commandText(body, txId), last_sent_at: hub.now(), stored: false };
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
