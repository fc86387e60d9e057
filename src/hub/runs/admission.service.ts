import type { RunsTable } from '../../db/schema.js';
import type { Hub, Tx } from '../context.js';
import { groupsOf, groupsWithWaitingRuns, waitingInGroup } from './concurrency.js';
import { dispatchRun } from './dispatch.service.js';

/**
 * Waiting runs take the slots that free up (CONTRACT.md §11): when a run in a group ends, once its
 * transaction has committed, the group's queued runs are dispatched in queue order (higher
 * priority first, then older first) until one finds the group full again. The re-dispatch pass
 * does the same for every group with queued runs, so a hub process that dies between the commit
 * and this step delays the next run by one pass at most.
 */

/** Attempts per group and pass: a few more than can start, for runs that wait on another group. */
const ATTEMPTS = 20;

export async function admitWaiting(hub: Hub, groups: readonly string[]): Promise<number> {
  let dispatched = 0;
  for (const group of groups) {
    for (const r of await waitingInGroup(hub.db, group, ATTEMPTS)) {
      const waiting = await dispatchRun(hub, r.run_id);
      if (waiting?.group === group) break;
      if (!waiting) dispatched++;
    }
  }
  return dispatched;
}

/** A `runEnded` hook: the run's slots are free once its transaction commits; waiting runs take them. */
export function freeSlotsOfEndedRun(tx: Tx, run: RunsTable): Promise<void> {
  const groups = groupsOf(run).map((g) => g.group);
  if (groups.length) tx.afterCommit(() => admitWaiting(tx.hub, groups));
  return Promise.resolve();
}

/** The periodic pass: every group with queued runs admits what its free slots allow. */
export async function admitAllWaiting(hub: Hub, limit: number): Promise<number> {
  return admitWaiting(hub, await groupsWithWaitingRuns(hub.db, limit));
}
