import type { RunsTable } from '../../db/schema.js';
import type { Hub, Tx } from '../context.js';
import { groupsOf, groupsWithWaitingRuns, leaveGroups, waitingInGroup } from './concurrency.js';
import { dispatchRun } from './dispatch.service.js';

/**
 * Waiting runs take the slots that free up (CONTRACT.md §11): when a run in a group ends, once its
 * transaction has committed, the group's queued runs are dispatched in queue order (higher
 * priority first, then older first) until one finds the group full again. The re-dispatch pass
 * does the same for every group with queued runs, page after page, so a hub process that dies
 * between the commit and this step delays the next run by one pass at most, whatever the number
 * of groups.
 */

/** Attempts per group and pass: a few more than can start, for runs that wait on another group. */
const ATTEMPTS = 20;
/** Groups read at once by the periodic pass (it reads every page). */
export const GROUP_PAGE = 200;

/**
 * Admits the waiting runs of one group. `used`, its slots in use when the caller knows them,
 * spares a full group the dispatch attempt: when none of its next runs fits, nothing is tried.
 */
async function admitGroup(hub: Hub, group: string, used?: number): Promise<number> {
  const waiting = await waitingInGroup(hub.db, group, ATTEMPTS);
  const limitOf = (r: Pick<RunsTable, 'concurrency'>) =>
    groupsOf(r).find((g) => g.group === group)?.limit ?? Number.POSITIVE_INFINITY;
  if (used !== undefined && waiting.every((r) => used >= limitOf(r))) return 0;
  let dispatched = 0;
  for (const r of waiting) {
    const full = await dispatchRun(hub, r.run_id);
    if (full?.group === group) break;
    if (!full) dispatched++;
  }
  return dispatched;
}

export async function admitWaiting(hub: Hub, groups: readonly string[]): Promise<number> {
  let dispatched = 0;
  for (const group of groups) dispatched += await admitGroup(hub, group);
  return dispatched;
}

/**
 * A `runEnded` hook: the run leaves its groups, its slots are free once its transaction commits,
 * and waiting runs take them.
 */
export async function freeSlotsOfEndedRun(tx: Tx, run: RunsTable): Promise<void> {
  const groups = groupsOf(run).map((g) => g.group);
  if (groups.length === 0) return;
  await leaveGroups(tx.db, run.run_id);
  tx.afterCommit(() => admitWaiting(tx.hub, groups));
}

/** The periodic pass: every group with queued runs, page after page, admits what its free slots allow. */
export async function admitAllWaiting(hub: Hub, page = GROUP_PAGE): Promise<number> {
  let admitted = 0;
  let after: string | null = null;
  for (;;) {
    const groups = await groupsWithWaitingRuns(hub.db, after, page);
    for (const g of groups) admitted += await admitGroup(hub, g.group, g.used);
    if (groups.length < page) return admitted;
    after = groups[groups.length - 1]!.group;
  }
}
