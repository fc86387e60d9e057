import { isPostgres } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import { together } from '../../db/together.js';
import type { Actor as HistoryActor } from '../../shared/api/runs.js';
import { groupCallsPer } from '../../shared/group-calls.js';
import { merged } from '../../shared/merged.js';
import type { RunNeeds } from '../catalog/installs.service.js';
import { insertRows, writeThenNotify } from '../cluster/bus.js';
import type { Hub, Tx } from '../context.js';
import { inTx } from '../daemons/commands.js';
import { insertRunGroups, type RunGroup } from './concurrency.js';
import {
  type DispatchPlan,
  dispatchIn,
  offeredAtOnce,
  offerItem,
  offerPlan,
  offerTargetsQuery,
  type Waiting,
} from './dispatch.service.js';
import { addHistories } from './history.repo.js';
import { movedAtBirth } from './lifecycle.js';
import { toJson } from './run.mapper.js';
import { insertRunRows } from './runs.repo.js';
import { firstRunNumber, idempotencyKeyWrite, takeRunNumbers } from './starts.repo.js';

/**
 * Writing new runs. Each is inserted `queued` with its `run.queued` history entry, its idempotency
 * key and its concurrency groups, and dispatched where its plan says, in one transaction. A run
 * offered at once (dispatch.service.ts `offeredAtOnce`) is inserted `offered` instead, with both
 * entries (lifecycle.ts `movedAtBirth`): no second write of its row.
 *
 * Starts that arrive while such a transaction runs are written together in the next one (a group
 * commit, src/shared/group-calls.ts): one commit and one statement per table for the whole group
 * instead of one of each per run, and their default names' numbers taken in one step. A lone start
 * waits for nothing. A group that fails is written again run by run, so a run that cannot be
 * written (a repeated idempotency key) fails alone; its id is chosen before, so no run is written twice.
 */

/** What a new run row needs besides its defaults. */
export interface RunSeed
  extends Pick<
    RunsTable,
    | 'org_id'
    | 'realm_id'
    | 'workspace_id'
    | 'workspace_path'
    | 'team_id'
    | 'team_version_id'
    | 'agent_id'
    | 'external_id'
    | 'parent_run_id'
    | 'parent_phase'
    | 'root_run_id'
    | 'call_depth'
    | 'iteration_key'
    | 'created_by_user_id'
    | 'priority'
  > {
  execution_type: 'team' | 'agent';
  run_name: string | null;
  /** Used for the default run name. */
  base_name: string;
  inputs: Record<string, unknown>;
  reviewers: Record<string, string[]> | null;
  notify_channels: unknown;
  context_labels: unknown;
  call_path: string[] | null;
  /** Set for child runs: makes a retried `runs/start_child` return the same child. */
  child_key?: string | null;
  /** Its concurrency groups (concurrency.ts), written with the run. */
  groups: RunGroup[];
  queue_timeout_ms: number | null;
  timeout_ms: number | null;
}

/** One run to write. */
export interface NewRun {
  runId: string;
  seed: RunSeed;
  /** Who started it (its history actor). */
  actor: HistoryActor;
  idempotencyKey?: string | undefined;
  /**
   * Where it goes, when known before the transaction (dispatch.service.ts `planBeforeWriting`);
   * null: it stays queued. Undefined: the daemons to offer it to are read in the transaction, with
   * its first statements.
   */
  plan: DispatchPlan | null | undefined;
}

/** A written run; `waiting` names the full concurrency group it waits for, if any. */
export interface WrittenRun {
  /** The run as created (`queued`), as `runs/new` answers it, whether or not it was dispatched since. */
  row: RunsTable;
  waiting: Waiting | null;
}

/** At most this many runs are written in one transaction. */
const MAX_GROUP = 100;

/** The group commit of each database handle (its process's one). */
const writeTogether = groupCallsPer(
  (_db: object, runs: (NewRun & { hub: Hub })[]) =>
    inTx(runs[0]!.hub, (tx) => writeRuns(tx, runs, { readLater: false })),
  MAX_GROUP,
);

/** Writes one new run, together with the others started meanwhile (see above). */
export function writeNewRun(hub: Hub, run: NewRun): Promise<WrittenRun> {
  return writeTogether(hub.db, merged(run, { hub }));
}

/**
 * Writes new runs in the caller's transaction: rows, history, keys, and their dispatch. Unless the
 * caller reads or references the rows later in its transaction (`readLater`, the default), runs that
 * nothing here reads back again (in no concurrency group, in no workspace) are written with the
 * writes kept for the commit (src/hub/cluster/bus.ts `writeThenNotify`): on PostgreSQL their rows,
 * keys, entries and offers leave in one statement with the commit.
 */
export async function writeRuns(
  tx: Tx,
  runs: readonly NewRun[],
  opts: { readLater: boolean } = { readLater: true },
): Promise<WrittenRun[]> {
  const kept = !opts.readLater && runs.every((r) => r.seed.groups.length === 0 && !r.plan?.workspace);
  const { created, written, plans } = await insertRuns(tx, runs, kept);
  const out: WrittenRun[] = [];
  for (const [i, run] of runs.entries()) {
    const row = created[i]!;
    if (run.idempotencyKey) {
      const key = {
        realm_id: row.realm_id,
        key: run.idempotencyKey,
        run_id: row.run_id,
        created_at: row.created_at,
      };
      if (kept) await writeThenNotify(tx.db, [idempotencyKeyWrite(tx.db, key)], []);
      else await idempotencyKeyWrite(tx.db, key).execute();
    }
    let waiting: Waiting | null = null;
    // Offered as it was written: its queue item and offers. Otherwise dispatched as any queued run.
    const plan = plans[i] ?? null;
    if (written[i]!.state === 'offered') {
      const offered = written[i]!;
      await offerItem(tx, offered, plan?.daemons ?? [], offered);
      // Its first claim through this process may then be made ahead (dispatch.service.ts `claimAhead`).
      if (isPostgres(tx.db)) tx.afterCommit(async () => tx.hub.claims.offered(offered));
    } else if (plan) waiting = await dispatchIn(tx, row, plan);
    out.push({
      row: waiting ? { ...row, waiting_for: JSON.stringify({ ...waiting, group: undefined }) } : row,
      waiting,
    });
  }
  return out;
}

/**
 * Inserts `queued` runs with their `run.queued` history entries (in the caller's transaction), those
 * offered at once `offered` with their `run.offered` too. The numbers of default names
 * (`<team or agent>-<n>`) are taken once per team (or agent) and realm, and the daemons that may
 * take the runs whose plan was left to the transaction are read once per team: all in one round
 * trip (src/db/together.ts). `kept`: the rows go with the writes kept for the commit (see
 * writeRuns). Answers each run as created (`queued`, as `runs/new` shows it), as written, and its plan.
 */
async function insertRuns(
  tx: Tx,
  runs: readonly Pick<NewRun, 'runId' | 'seed' | 'actor' | 'plan'>[],
  kept: boolean,
): Promise<{ created: RunsTable[]; written: RunsTable[]; plans: (DispatchPlan | null)[] }> {
  const { db, hub } = tx;
  const now = hub.now();
  const subjectOf = (s: RunSeed) => s.team_id ?? s.agent_id ?? s.base_name;
  const unnamed = new Map<string, { realmId: string; subjectId: string; count: number; next: number }>();
  for (const { seed } of runs) {
    if (seed.run_name !== null) continue;
    const key = `${seed.realm_id} ${subjectOf(seed)}`;
    const n = unnamed.get(key) ?? { realmId: seed.realm_id, subjectId: subjectOf(seed), count: 0, next: 0 };
    n.count++;
    unnamed.set(key, n);
  }
  const needs = new Map<string, RunNeeds>();
  for (const { seed, plan } of runs) if (plan === undefined) needs.set(needsKey(seed), seed);
  const reads = [...needs].flatMap(([key, seed]) => {
    const q = offerTargetsQuery(db, seed);
    return q ? [{ key, q }] : [];
  });
  const numbers = [...unnamed.values()];
  const rows = await together(db, [
    ...numbers.map((n) => takeRunNumbers(db, n.realmId, n.subjectId, n.count)),
    ...reads.map((r) => r.q),
  ]);
  numbers.forEach((n, i) => {
    n.next = firstRunNumber(rows[i]![0] as { last: number }, n.count);
  });
  const eligible = new Map(
    reads.map((r, i) => [r.key, rows[numbers.length + i] as { daemon_id: string; held: number }[]] as const),
  );
  const plans: (DispatchPlan | null)[] = [];
  for (const { seed, plan } of runs) {
    plans.push(plan !== undefined ? plan : offerPlan(hub, eligible.get(needsKey(seed)) ?? []));
  }
  const queued = runs.map(({ runId, seed }): RunsTable => {
    const { base_name, child_key, groups, queue_timeout_ms, timeout_ms, ...fields } = seed;
    const numbered = seed.run_name === null ? unnamed.get(`${seed.realm_id} ${subjectOf(seed)}`)! : null;
    return merged(fields, {
      run_id: runId,
      call_path: toJson(seed.call_path),
      child_key: child_key ?? null,
      daemon_id: null,
      run_name: seed.run_name ?? `${base_name}-${numbered!.next++}`,
      state: 'queued',
      inputs: JSON.stringify(seed.inputs),
      outputs: '{}',
      error: null,
      current_pid: null,
      current_phase: null,
      context_labels: toJson(seed.context_labels),
      reviewers: toJson(seed.reviewers),
      notify_channels: toJson(seed.notify_channels),
      lease_epoch: 0,
      lease_expires_at: now,
      queue_item_id: null,
      pending_control: null,
      control_tx_id: null,
      started_at: now,
      completed_at: null,
      logs_pruned_at: null,
      state_lost_at: null,
      terminated_at: null,
      terminated_by_user_id: null,
      terminated_reason: null,
      created_at: now,
      updated_at: now,
      concurrency: groups.length ? JSON.stringify(groups) : null,
      waiting_for: null,
      queue_deadline_at: queue_timeout_ms === null ? null : now + queue_timeout_ms,
      run_deadline_at: timeout_ms === null ? null : now + timeout_ms,
    });
  });
  const born = queued.map((row, i) =>
    offeredAtOnce({ seed: runs[i]!.seed, plan: plans[i]! })
      ? movedAtBirth(row, 'offered', { queue_item_id: hub.newId() })
      : null,
  );
  const written = queued.map((row, i) => born[i]?.row ?? row);
  if (kept) await writeThenNotify(db, [insertRows(db, 'runs', written)], []);
  else await insertRunRows(db, written);
  for (const [i, { seed }] of runs.entries()) await insertRunGroups(db, written[i]!.run_id, seed.groups);
  await addHistories(db, hub, [
    ...queued.map((run, i) => ({
      run,
      state: 'queued' as const,
      entry: { type: 'run.queued', actor: runs[i]!.actor },
    })),
    ...born.flatMap((b) => (b ? [{ run: b.row, state: b.row.state, entry: b.entry }] : [])),
  ]);
  return { created: queued, written, plans };
}

/** Runs with the same key may go to the same daemons. */
function needsKey(n: RunNeeds): string {
  return `${n.realm_id} ${n.team_version_id} ${n.agent_id} ${n.root_run_id ?? ''}`;
}
