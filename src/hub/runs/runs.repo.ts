import {
  type ExpressionBuilder,
  type Kysely,
  type QueryCreator,
  type SelectQueryBuilder,
  sql,
  type UpdateQueryBuilder,
  type UpdateResult,
} from 'kysely';
import { type DB, updateOne } from '../../db/index.js';
import { oneOf, prepared, preparedQuery } from '../../db/prepared.js';
import type { RunsTable } from '../../db/schema.js';
import type { RunState } from '../../shared/api/run-states.js';
import { merged } from '../../shared/merged.js';
import { expectOne } from '../cluster/bus.js';
import { decodeCursor } from '../http/paging.js';
import { loadRun, loadRuns, RUN_COLUMNS } from './run-read.repo.js';

/**
 * Runs: every query on the `runs` table, one named function each. A row's state changes only
 * through `moveRow`, which lifecycle.ts's `transition` calls after checking the state table, and
 * `assignOfferedRun`, the move a claim that won makes (lifecycle.ts `movedBy`).
 */

type RunUpdate = UpdateQueryBuilder<DB, 'runs', 'runs', UpdateResult>;
/** Extra conditions of a guarded write, beside "still in its state with its lease epoch". */
export type RunGuard = (q: RunUpdate) => RunUpdate;
/** Columns a write may change; the state only through `moveRow`. */
export type RunChanges = Omit<Partial<RunsTable>, 'state' | 'run_id'>;

/** The states in which a daemon may hold a run's lease. */
export const LIVE: RunState[] = ['queued', 'offered', 'assigned', 'running', 'awaiting_input'];

export { loadRun, loadRuns };

export function runOfQueueItem(db: Kysely<DB>, queueItemId: string) {
  return db.selectFrom('runs').selectAll().where('queue_item_id', '=', queueItemId).executeTakeFirst();
}

export function runOfChildKey(db: Kysely<DB>, childKey: string) {
  return db.selectFrom('runs').selectAll().where('child_key', '=', childKey).executeTakeFirst();
}

export function runOfControlTx(db: Kysely<DB>, txId: string) {
  return db.selectFrom('runs').selectAll().where('control_tx_id', '=', txId).executeTakeFirst();
}

/**
 * Inserts many runs at once (imports, tests of retention at scale), in statements of `chunk` rows
 * so that no statement passes the databases' limits on bound values.
 */
export async function insertRunRows(db: Kysely<DB>, rows: readonly RunsTable[], chunk = 500): Promise<void> {
  for (let i = 0; i < rows.length; i += chunk) {
    await db
      .insertInto('runs')
      .values(rows.slice(i, i + chunk) as RunsTable[])
      .execute();
  }
}

/** States in which a daemon holds a run (works on it or is about to). */
export const HELD_STATES: readonly RunState[] = ['assigned', 'running', 'awaiting_input'];

/** Moves the row to `to` if it is still in `run.state` with `run.lease_epoch` (and the guard holds). */
export async function moveRow(
  db: Kysely<DB>,
  run: RunsTable,
  to: RunState,
  set: RunChanges,
  guard?: RunGuard,
): Promise<boolean> {
  if (!guard) return (await moveWrite(db, run, to, set).execute()).length === 1;
  return updateOne(guard(updateAsRead(db, run).set(merged(set, { state: to }))));
}

/** An update of the run's row that applies only while it is still in `run.state` with `run.lease_epoch`. */
function updateAsRead(db: Kysely<DB>, run: RunsTable) {
  return db
    .updateTable('runs')
    .where('run_id', '=', run.run_id)
    .where('state', '=', run.state)
    .where('lease_epoch', '=', run.lease_epoch);
}

/**
 * `moveRow` for a transaction that is refused as a whole (`conflict(message)`) when the row is no
 * longer in `run.state` with `run.lease_epoch`. On PostgreSQL, in a transaction that keeps its writes,
 * it does not wait for the row: the move leaves with the transaction's next statement, which fails if
 * the row had changed (src/hub/cluster/bus.ts `expectOne`).
 *
 * `asFound`: the move also checks that every other column a daemon's report reads (`REPORT_READS`) is
 * still as in `run`, which a report read in its transaction or took as this process last wrote it
 * (runs/daemon.service.ts): a cancel or an acknowledged command made since refuses it.
 */
export function mustMoveRow(
  db: Kysely<DB>,
  run: RunsTable,
  to: RunState,
  set: RunChanges,
  message: string,
  asFound = false,
): Promise<void> {
  return expectOne(db, moveWrite(db, run, to, set, asFound), message);
}

/**
 * The columns a daemon's report reads besides the state and the lease epoch (its daemon changes only
 * with the epoch): what a cancel, a resume or an acknowledged command changes.
 */
const REPORT_READS = ['pending_control', 'control_tx_id', 'error', 'outputs', 'current_phase'] as const;

/** An unguarded move's statement, answering the row it moved (`run_id`). */
function moveWrite(db: Kysely<DB>, run: RunsTable, to: RunState, set: RunChanges, asFound = false) {
  const columns = Object.keys(set).filter((c) => set[c as keyof RunChanges] !== undefined);
  const move = moveOf(columns, asFound);
  if (move) {
    const values = columns.map((c) => set[c as keyof RunChanges]);
    const found = asFound ? REPORT_READS.map((c) => run[c]) : [];
    return move(db, ...values, to, run.run_id, run.state, run.lease_epoch, ...found);
  }
  return updateAsRead(db, run)
    .set(merged(set, { state: to }))
    .$if(asFound, (q) => q.where((eb) => eb.and(REPORT_READS.map((c) => sameAs(eb, c, run[c])))))
    .returning('run_id');
}

/** `column` holds `value` (null included: PostgreSQL's `is not distinct from`, SQLite's `is`). */
function sameAs(eb: ExpressionBuilder<DB, 'runs'>, column: (typeof REPORT_READS)[number], value: unknown) {
  return eb(column, 'is not distinct from', value as never);
}

/**
 * The statement of an unguarded move that sets these columns, compiled once per set of columns
 * (src/db/prepared.ts): a run's moves set a handful of combinations, over and over. Undefined past
 * MAX_MOVE_SHAPES combinations, which are then built at each call.
 */
function moveOf(columns: readonly string[], asFound: boolean) {
  const key = `${asFound ? 'as found:' : ''}${columns.join(',')}`;
  let move = moveShapes.get(key);
  if (!move && moveShapes.size < MAX_MOVE_SHAPES) {
    const n = columns.length;
    move = preparedQuery(
      (db: Kysely<DB>, ...args: unknown[]) =>
        db
          .updateTable('runs')
          .set(Object.fromEntries(columns.map((c, i) => [c, args[i]])) as RunChanges)
          .set({ state: args[n] as RunState })
          .where('run_id', '=', args[n + 1] as string)
          .where('state', '=', args[n + 2] as RunState)
          .where('lease_epoch', '=', args[n + 3] as number)
          .$if(asFound, (q) =>
            q.where((eb) => eb.and(REPORT_READS.map((c, i) => sameAs(eb, c, args[n + 4 + i])))),
          )
          .returning('run_id'),
      n + 4 + (asFound ? REPORT_READS.length : 0),
    );
    moveShapes.set(key, move);
  }
  return move;
}
const MAX_MOVE_SHAPES = 64;
const moveShapes = new Map<string, ReturnType<typeof preparedQuery<DB, unknown[], { run_id: string }>>>();

/**
 * The run an offered queue item names becomes `daemonId`'s (`assigned`, its lease epoch raised by
 * one) if it is still offered with that item: the move of a claim that won (queue.repo.ts
 * `claimQueueItems`; on PostgreSQL within the claim's own statement). Returns the row as moved.
 */
export function assignOfferedRun(
  q: QueryCreator<DB>,
  itemId: string,
  daemonId: string,
  set: Pick<RunChanges, 'lease_expires_at' | 'updated_at'>,
) {
  // Named columns, not `*`, and the state a constant: the claim's statement is prepared on
  // PostgreSQL (src/db/pg-client.ts) and planned once.
  return q
    .updateTable('runs')
    .set(merged(set, { state: 'assigned', daemon_id: daemonId, lease_epoch: sql<number>`lease_epoch + 1` }))
    .where('queue_item_id', '=', itemId)
    .where('state', '=', sql.lit('offered'))
    .returning(RUN_COLUMNS);
}

/** Changes columns of a run still in its state with its lease epoch (never the state). */
export function updateRunRow(db: Kysely<DB>, run: RunsTable, set: RunChanges, guard: RunGuard = (q) => q) {
  return updateOne(guard(updateAsRead(db, run).set(set)));
}

/** Renews a lease the daemon still holds with this epoch. */
export function renewLeaseRow(
  db: Kysely<DB>,
  held: { runId: string; realmId: string; daemonId: string; epoch: number },
  until: number,
): Promise<boolean> {
  return updateOne(
    db
      .updateTable('runs')
      .set({ lease_expires_at: until })
      .where('run_id', '=', held.runId)
      .where('realm_id', '=', held.realmId)
      .where('daemon_id', '=', held.daemonId)
      .where('lease_epoch', '=', held.epoch)
      .where('state', 'in', LIVE),
  );
}

/** Clears a run's pending control once its command was acked; false when it was cleared already. */
export function clearControlRow(db: Kysely<DB>, runId: string, txId: string, now: number) {
  return updateOne(
    db
      .updateTable('runs')
      .set({ pending_control: null, control_tx_id: null, updated_at: now })
      .where('run_id', '=', runId)
      .where('control_tx_id', '=', txId),
  );
}

export interface RunListFilter {
  realm_id: string;
  state?: string | undefined;
  team_id?: string | undefined;
  /** Every run below this top-level run (children, grandchildren…). */
  root_run_id?: string | undefined;
  /** Only runs without a parent. */
  top_level?: boolean | undefined;
  /** Runs whose name contains this text (case-insensitive). */
  name_contains?: string | undefined;
  /** Runs started by this user. */
  created_by_user_id?: string | undefined;
  /** Runs started at or after / before these times (ms since the epoch). */
  started_after?: number | undefined;
  started_before?: number | undefined;
  limit: number;
  cursor?: string | undefined;
  /** `queue`: queued runs in the order they start, with their position (CONTRACT.md §11). */
  order?: 'newest' | 'queue' | undefined;
}

/** A LIKE pattern (escape character `\`) matching any text that contains `text`, lower-cased. */
function containsPattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The filters of `runs/list` that both orders share, on a query of one realm's runs. */
function withFilters<Q extends SelectQueryBuilder<DB, 'runs', RunsTable>>(q: Q, f: RunListFilter): Q {
  return (
    q
      .where('realm_id', '=', f.realm_id)
      .$if(f.team_id !== undefined, (b) => b.where('team_id', '=', f.team_id!))
      // A descendant is created after its root and ids are UUID v7, so `run_id > root` bounds the
      // scan of the (realm_id, run_id) index to the runs created since the root.
      .$if(f.root_run_id !== undefined, (b) =>
        b.where('root_run_id', '=', f.root_run_id!).where('run_id', '>', f.root_run_id!),
      )
      .$if(f.top_level === true, (b) => b.where('parent_run_id', 'is', null))
      .$if(f.name_contains !== undefined, (b) =>
        b.where(sql<boolean>`lower(run_name) like ${containsPattern(f.name_contains!)} escape '\\'`),
      )
      .$if(f.created_by_user_id !== undefined, (b) =>
        b.where('created_by_user_id', '=', f.created_by_user_id!),
      )
      .$if(f.started_after !== undefined, (b) => b.where('started_at', '>=', f.started_after!))
      .$if(f.started_before !== undefined, (b) => b.where('started_at', '<', f.started_before!)) as Q
  );
}

/** A page of a realm's runs, newest first (`limit + 1` rows: the extra one tells there are more). */
export function listRunRows(db: Kysely<DB>, f: RunListFilter) {
  const after = decodeCursor(f.cursor);
  return withFilters(db.selectFrom('runs').selectAll(), f)
    .$if(f.state !== undefined, (q) => q.where('state', '=', f.state as RunState))
    .$if(after !== null, (q) => q.where('run_id', '<', after!))
    .orderBy('run_id', 'desc')
    .limit(f.limit + 1)
    .execute();
}

/**
 * A page of a realm's queued runs in the order they start (higher priority first, then older
 * first), from `offset`: the cursor is the position reached. The filters of `listRunRows` apply.
 */
export function listQueueRows(db: Kysely<DB>, f: RunListFilter, offset: number) {
  return withFilters(db.selectFrom('runs').selectAll(), f)
    .where('state', '=', 'queued')
    .orderBy('priority', 'desc')
    .orderBy('created_at')
    .orderBy('run_id')
    .offset(offset)
    .limit(f.limit + 1)
    .execute();
}

/** Children of a run that have not ended. */
export function liveChildren(db: Kysely<DB>, runId: string) {
  return db
    .selectFrom('runs')
    .select('run_id')
    .where('parent_run_id', '=', runId)
    .where('state', 'in', LIVE)
    .execute();
}

/** Running runs whose lease expired (the sweeper's work). */
export function expiredLeases(db: Kysely<DB>, now: number, limit: number) {
  return db
    .selectFrom('runs')
    .selectAll()
    .where('state', 'in', ['running', 'awaiting_input'])
    .where('lease_expires_at', '<', now)
    .limit(limit)
    .execute();
}

/** Runs assigned to a daemon that did not start them before their lease expired. */
export function unstartedAssigned(db: Kysely<DB>, now: number, limit: number) {
  return db
    .selectFrom('runs')
    .selectAll()
    .where('state', '=', 'assigned')
    .where('lease_expires_at', '<', now)
    .orderBy('run_id')
    .limit(limit)
    .execute();
}

/**
 * Offered runs whose item nobody claimed since `cutoff`, or whose item was claimed since `cutoff`
 * without the run moving to its claimer; with the item and the claimer's status.
 */
export function staleOffers(db: Kysely<DB>, cutoff: number, limit: number) {
  return db
    .selectFrom('runs')
    .innerJoin('queue_items as q', 'q.id', 'runs.queue_item_id')
    .leftJoin('daemons as d', 'd.id', 'q.claimed_by')
    .selectAll('runs')
    .select(['q.id as item_id', 'q.status as item_status', 'q.claimed_by', 'd.status as claimer_status'])
    .where('runs.state', '=', 'offered')
    .where((eb) =>
      eb.or([
        eb.and([eb('q.status', '=', 'offered'), eb('q.created_at', '<', cutoff)]),
        eb.and([eb('q.status', '=', 'claimed'), eb('q.claimed_at', '<', cutoff)]),
      ]),
    )
    .orderBy('runs.run_id')
    .limit(limit)
    .execute();
}

const realmHasOnlineDaemon = ({ exists, selectFrom }: ExpressionBuilder<DB, 'runs'>) =>
  exists(
    selectFrom('daemons as d')
      .select('d.id')
      .whereRef('d.realm_id', '=', 'runs.realm_id')
      .where('d.status', '=', 'online')
      .where('d.revoked_at', 'is', null),
  );

/** Queued runs untouched since `before` that a daemon could take (their realm has one online). */
export function staleQueued(db: Kysely<DB>, before: number, limit: number) {
  return (
    db
      .selectFrom('runs')
      .select('run_id')
      .where('state', '=', 'queued')
      .where('updated_at', '<', before)
      // Runs in a concurrency group are admitted group by group, in queue order (concurrency.ts).
      .where('concurrency', 'is', null)
      .where((eb) => eb.or([eb('workspace_id', 'is not', null), realmHasOnlineDaemon(eb)]))
      .orderBy('updated_at')
      .limit(limit)
      .execute()
  );
}

/**
 * A realm's queued runs in the order they start (higher priority first, then older first); with `teamVersionId`, those that version's install may let
 * go: its runs, child runs (their root's install counts) and single-agent runs.
 */
export function queuedInRealm(db: Kysely<DB>, realmId: string, limit: number, teamVersionId?: string) {
  return db
    .selectFrom('runs')
    .select('run_id')
    .where('realm_id', '=', realmId)
    .where('state', '=', 'queued')
    .$if(teamVersionId !== undefined, (q) =>
      q.where((eb) =>
        eb.or([
          eb('team_version_id', '=', teamVersionId!),
          eb('agent_id', 'is not', null),
          eb('root_run_id', 'is not', null),
        ]),
      ),
    )
    .orderBy('priority', 'desc')
    .orderBy('created_at')
    .orderBy('run_id')
    .limit(limit)
    .execute();
}

/**
 * Of `daemonIds`, those whose realm has a run waiting: `queued`, or `offered` (its offer may still be
 * open), with their realm. Daemons that come online look here first: most find nothing, and their
 * realm's queued runs and open offers are read only when there are some.
 */
export function daemonsWithWaitingRuns(
  db: Kysely<DB>,
  daemonIds: readonly string[],
): Promise<{ id: string; realm_id: string }[]> {
  return daemonIds.length === 0 ? Promise.resolve([]) : withWaitingRuns(db, [...daemonIds]);
}

const withWaitingRuns = prepared((db: Kysely<DB>, daemonIds: string[]) =>
  db
    .selectFrom('daemons as d')
    .select(['d.id', 'd.realm_id'])
    .where(oneOf(db, 'd.id', daemonIds))
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('runs')
          .select('runs.run_id')
          .whereRef('runs.realm_id', '=', 'd.realm_id')
          .where('runs.state', 'in', ['queued', 'offered']),
      ),
    ),
);

/** A realm's runs offered and still waiting for a claim, with their item. */
export function openOffersInRealm(db: Kysely<DB>, realmId: string, limit: number) {
  return db
    .selectFrom('runs')
    .innerJoin('queue_items as q', 'q.id', 'runs.queue_item_id')
    .select([
      'runs.run_id',
      'runs.realm_id',
      'runs.team_id',
      'runs.team_version_id',
      'runs.agent_id',
      'runs.root_run_id',
      'runs.queue_item_id',
      'q.created_at as offered_at',
    ])
    .where('runs.realm_id', '=', realmId)
    .where('runs.state', '=', 'offered')
    .where('q.status', '=', 'offered')
    .orderBy('runs.priority', 'desc')
    .orderBy('runs.created_at')
    .limit(limit)
    .execute();
}
