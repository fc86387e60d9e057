import { type Kysely, sql } from 'kysely';
import type { DB } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import type { WaitingFor } from '../../shared/api/runs.js';
import type { Tx } from '../context.js';
import { json } from './run.mapper.js';

/**
 * Concurrency groups (CONTRACT.md §11). A run belongs to the groups its team definition names
 * (`concurrency: [{key, limit}]`) and to the one `runs/new` names (`concurrency_key`,
 * `concurrency_limit`). A group's slots in use are the runs of the group that a daemon was given
 * and that have not ended (offered, assigned, running, awaiting_input): counted from the runs'
 * states, never kept in a counter, so a run that ends however it ends (a hub process dying
 * included) frees its slot. Which runs are in a group is said by the rows of `run_groups`, kept
 * while a run has not ended: written in its creation transaction, removed in the transaction that
 * ends it, written again when it is resumed. So a group's queries read its live runs, never its
 * history; a row left behind changes nothing, the runs' states decide.
 *
 * Admission happens in the transaction that dispatches the run: on PostgreSQL it first takes a
 * transaction-level advisory lock per group (in one order, so two processes never deadlock), then
 * counts; SQLite has a single writer. A run in no group pays nothing: its row says so.
 */

/** One group a run is in: `group` is its identity within the hub (realm, key, value). */
export interface RunGroup {
  group: string;
  key: string;
  value: string;
  limit: number;
}

/** A team definition's `concurrency` entry. */
export interface GroupSpec {
  key: string;
  limit: number;
}

export const MAX_GROUP_LIMIT = 100_000;

/** The key of the extra group `runs/new` names with `concurrency_key`. */
export const REQUEST_GROUP_KEY = 'concurrency_key';

/** The states that hold a slot of the run's groups. */
const HOLDING = ['offered', 'assigned', 'running', 'awaiting_input'] as const;

function valueAt(inputs: Record<string, unknown>, path: string[]): unknown {
  let v: unknown = inputs;
  for (const part of path) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/**
 * The groups of a new run. A key with no value for this run (`workspace` for a run in no
 * workspace, an input that is absent or null) puts the run in no group for that key.
 */
export function groupsOfRun(
  run: {
    realm_id: string;
    team_id: string | null;
    agent_id: string | null;
    workspace_id: string | null;
    inputs: Record<string, unknown>;
  },
  specs: readonly GroupSpec[],
  extra: { key: string; limit: number } | null,
): RunGroup[] {
  const out = new Map<string, RunGroup>();
  const add = (key: string, value: string | null, limit: number) => {
    if (value === null) return;
    const group = `${run.realm_id}/${key}/${value}`;
    // A run in the same group twice is held by the stricter limit.
    const had = out.get(group);
    out.set(group, { group, key, value, limit: Math.min(limit, had?.limit ?? limit) });
  };
  for (const s of specs) {
    if (s.key === 'realm') add(s.key, run.realm_id, s.limit);
    else if (s.key === 'team') add(s.key, run.team_id ?? run.agent_id, s.limit);
    else if (s.key === 'workspace') add(s.key, run.workspace_id, s.limit);
    else {
      const v = valueAt(run.inputs, s.key.slice('inputs.'.length).split('.'));
      add(
        s.key,
        v === undefined || v === null ? null : typeof v === 'string' ? v : JSON.stringify(v),
        s.limit,
      );
    }
  }
  if (extra) add(REQUEST_GROUP_KEY, extra.key, extra.limit);
  return [...out.values()].sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
}

/** Writes the run's groups in its creation transaction. */
export async function insertRunGroups(db: Kysely<DB>, runId: string, groups: RunGroup[]): Promise<void> {
  if (groups.length === 0) return;
  await db
    .insertInto('run_groups')
    .values(groups.map((g) => ({ run_id: runId, group_key: g.group })))
    .execute();
}

/** A run that ends leaves its groups, in the transaction that ends it. */
export async function leaveGroups(db: Kysely<DB>, runId: string): Promise<void> {
  await db.deleteFrom('run_groups').where('run_id', '=', runId).execute();
}

/** A resumed run is in its groups again, in the transaction that resumes it. */
export async function rejoinGroups(db: Kysely<DB>, run: RunsTable): Promise<void> {
  const groups = groupsOf(run);
  if (groups.length === 0) return;
  await db
    .insertInto('run_groups')
    .values(groups.map((g) => ({ run_id: run.run_id, group_key: g.group })))
    .onConflict((oc) => oc.doNothing())
    .execute();
}

export const groupsOf = (run: Pick<RunsTable, 'concurrency'>): RunGroup[] =>
  json<RunGroup[]>(run.concurrency) ?? [];

/** Slots in use per group: runs of the group a daemon was given that have not ended. */
export async function slotsInUse(db: Kysely<DB>, groups: string[]): Promise<Map<string, number>> {
  if (groups.length === 0) return new Map();
  const rows = await db
    .selectFrom('run_groups as g')
    .innerJoin('runs as r', 'r.run_id', 'g.run_id')
    .select((eb) => ['g.group_key', eb.fn.countAll<number | string>().as('n')])
    .where('g.group_key', 'in', groups)
    .where('r.state', 'in', HOLDING)
    .groupBy('g.group_key')
    .execute();
  return new Map(rows.map((r) => [r.group_key, Number(r.n)]));
}

/**
 * Whether the run may take a slot in each of its groups now, in the dispatching transaction: null
 * when it may (the caller moves it out of `queued` in the same transaction, which takes the slot),
 * else the full group it waits for.
 */
export async function admit(tx: Tx, run: RunsTable): Promise<(WaitingFor & { group: string }) | null> {
  const groups = groupsOf(run);
  if (groups.length === 0) return null;
  if (tx.hub.dialect === 'postgres') {
    // Sorted when the run was created: every process locks in the same order.
    for (const g of groups) await sql`select pg_advisory_xact_lock(hashtext(${g.group}))`.execute(tx.db);
  }
  const used = await slotsInUse(
    tx.db,
    groups.map((g) => g.group),
  );
  for (const g of groups) {
    const running = used.get(g.group) ?? 0;
    if (running >= g.limit) return { group: g.group, key: g.key, value: g.value, limit: g.limit, running };
  }
  return null;
}

/**
 * Queued runs of a group in the order they will start: higher priority first, then older first.
 */
export function waitingInGroup(db: Kysely<DB>, group: string, limit: number) {
  return db
    .selectFrom('run_groups as g')
    .innerJoin('runs as r', 'r.run_id', 'g.run_id')
    .select(['r.run_id', 'r.concurrency'])
    .where('g.group_key', '=', group)
    .where('r.state', '=', 'queued')
    .orderBy('r.priority', 'desc')
    .orderBy('r.created_at')
    .orderBy('r.run_id')
    .limit(limit)
    .execute();
}

/** A group with queued runs, and its slots in use. */
export interface GroupWithWaiting {
  group: string;
  used: number;
}

/**
 * Groups that have queued runs, a page at a time in the order of their names after `after` (the
 * periodic pass walks through all of them), each with its slots in use. Read from the runs that
 * have not ended, so finished runs of a group cost nothing here.
 */
export async function groupsWithWaitingRuns(
  db: Kysely<DB>,
  after: string | null,
  limit: number,
): Promise<GroupWithWaiting[]> {
  const rows = await db
    .selectFrom('runs as r')
    .innerJoin('run_groups as g', 'g.run_id', 'r.run_id')
    .select((eb) => [
      'g.group_key',
      eb.fn.sum<number | string>(eb.case().when('r.state', 'in', HOLDING).then(1).else(0).end()).as('used'),
    ])
    .where('r.state', 'in', ['queued', ...HOLDING])
    .$if(after !== null, (q) => q.where('g.group_key', '>', after!))
    .groupBy('g.group_key')
    .having((eb) => eb.fn.sum(eb.case().when('r.state', '=', 'queued').then(1).else(0).end()), '>', 0)
    .orderBy('g.group_key')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ group: r.group_key, used: Number(r.used) }));
}
