import type { Logger } from '../../shared/logger.js';
import type { ActiveRun } from './active-run.js';
import { Fenced, type RunHubCaller } from './hub-caller.js';

/**
 * A run's timers while it executes here: its lease renewed every third of the lease, its logs
 * uploaded every `logFlushMs`. A `conflict` on renewal fences the run; other failures wait for the
 * next renewal.
 */
export function startRunTimers(
  run: ActiveRun,
  deps: { caller: RunHubCaller; log: Logger; logFlushMs: number },
): void {
  const renew = setInterval(() => void renewLease(run, deps), Math.max(50, Math.floor(run.leaseMs / 3)));
  renew.unref();
  const flush = setInterval(() => void run.logs.flush(), deps.logFlushMs);
  flush.unref();
  run.timers.push(renew, flush);
}

export async function renewLease(run: ActiveRun, deps: { caller: RunHubCaller; log: Logger }): Promise<void> {
  if (deps.caller.closing() || run.fenced) return;
  const body = { runs: [{ run_id: run.id, lease_epoch: run.epoch }] };
  try {
    await deps.caller.call(run, 'runs/renew_lease', body, 1);
  } catch (err) {
    if (!(err instanceof Fenced)) deps.log.warn({ err, run_id: run.id }, 'lease renewal failed');
  }
}
