import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import { prepared } from '../../db/prepared.js';
import type { RunHistoryTable, RunsTable } from '../../db/schema.js';
import type { RunState } from '../../shared/api/run-states.js';
import type { Actor, HistoryEntry as HistoryOut } from '../../shared/api/runs.js';
import { insertRows, writeAndNotifyRunChanged } from '../cluster/bus.js';
import { recordEvents } from '../events/events.js';
import type { EventContext } from '../notifications/outbox.js';
import { json, toJson } from './run.mapper.js';
import { OF_RUNS } from './run-read.repo.js';

/** A run's history (SQL): every entry also becomes an event in the same transaction. */

export interface HistoryEntry {
  type: string;
  from_phase?: string | null;
  phase?: string | null;
  error?: string | null;
  actor?: Actor | null;
  /** Details of the entry (a review's id and summary…): stored, shown, and added to the event. */
  data?: Record<string, unknown> | null;
}

/** The run events also sent to the channels named in the run's `notify_channels`. */
export const NOTIFY_RUN_CHANNELS_ON: ReadonlySet<string> = new Set([
  'run.ended',
  'run.lost',
  'review.requested',
]);

type HistoryRun = Pick<RunsTable, 'run_id' | 'org_id' | 'realm_id' | 'team_id' | 'notify_channels'>;

/**
 * Appends a history entry (with the run's state after it) and records the same event in the
 * events table, in the caller's transaction.
 */
export async function addHistory(
  db: Kysely<DB>,
  hub: EventContext,
  run: HistoryRun,
  state: RunState,
  e: HistoryEntry,
): Promise<void> {
  await addHistories(db, hub, [{ run, state, entry: e }]);
}

/** Several entries at once (of new runs written together): one statement per table at most. */
export async function addHistories(
  db: Kysely<DB>,
  hub: EventContext,
  entries: readonly { run: HistoryRun; state: RunState; entry: HistoryEntry }[],
): Promise<void> {
  if (entries.length === 0) return;
  // The entries, their events and their deliveries are written together.
  if (!db.isTransaction) return db.transaction().execute((trx) => addHistories(trx, hub, entries));
  const at = hub.now();
  const rows = entries.map(({ run, state, entry: e }) => ({
    id: hub.newId(),
    run_id: run.run_id,
    realm_id: run.realm_id,
    type: e.type,
    at,
    from_phase: e.from_phase ?? null,
    phase: e.phase ?? null,
    state,
    error: e.error ?? null,
    actor: toJson(e.actor ?? null),
    data: toJson(e.data ?? null),
  }));
  // With their streams' notice in one statement; in a transaction that keeps its writes (inTx), the
  // events go in that same statement too (src/hub/cluster/bus.ts).
  await writeAndNotifyRunChanged(
    db,
    [insertRows(db, 'run_history', rows)],
    rows.map((r) => ({ realm_id: r.realm_id, run_id: r.run_id, entry_id: r.id })),
  );
  await recordEvents(
    db,
    hub,
    entries.map(({ run, state, entry: e }) => {
      // A run's own notify_channels hear the events that need a person: its end, a loss, a review.
      const channelIds = NOTIFY_RUN_CHANNELS_ON.has(e.type)
        ? (json<string[]>(run.notify_channels) ?? [])
        : [];
      return {
        type: e.type,
        org_id: run.org_id,
        realm_id: run.realm_id,
        subject_id: run.run_id,
        payload: {
          ...(e.data ?? {}),
          run_id: run.run_id,
          team_id: run.team_id,
          state,
          phase: e.phase ?? null,
          error: e.error ?? null,
          actor: e.actor ?? null,
          ...(channelIds.length ? { channel_ids: channelIds } : {}),
        },
      };
    }),
  );
}

export async function listHistory(db: Kysely<DB>, runId: string): Promise<HistoryOut[]> {
  return (await historyAfter(db, runId, '', null)).map((h) => h.entry);
}

/** The run's entries after the one with id `afterId` ('' for all), oldest first. */
export async function historyAfter(
  db: Kysely<DB>,
  runId: string,
  afterId: string,
  limit: number | null,
): Promise<{ id: string; entry: HistoryOut }[]> {
  return historyEntries(await historyAfterQuery(db, runId, afterId, limit).execute());
}

/** `historyAfter`'s statement, to send with others (src/db/together.ts); `historyEntries` reads its rows. */
export function historyAfterQuery(db: Kysely<DB>, runId: string, afterId: string, limit: number | null) {
  return db
    .selectFrom('run_history')
    .selectAll()
    .where('run_id', '=', runId)
    .$if(afterId !== '', (q) => q.where('id', '>', afterId))
    .orderBy('id')
    .$if(limit !== null, (q) => q.limit(limit!));
}

export function historyEntries(rows: readonly RunHistoryTable[]): { id: string; entry: HistoryOut }[] {
  return rows.map((r) => ({ id: r.id, entry: historyOut(r) }));
}

/** History entries of the realm's runs after `afterId`, oldest first: which runs changed. */
export function realmChangesAfter(db: Kysely<DB>, realmId: string, afterId: string, limit: number) {
  return realmChanges(db, realmId, afterId, limit);
}

/** realmChangesAfter's statement (an index of (realm_id, id) serves it: no walk of the realm's runs). */
export function realmChangesQuery(db: Kysely<DB>, realmId: string, afterId: string, limit: number) {
  return db
    .selectFrom('run_history')
    .select(['id', 'run_id'])
    .where('realm_id', '=', realmId)
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit);
}

/** realmChangesQuery compiled once: every open realm stream reads it at each change of its realm. */
const realmChanges = prepared(realmChangesQuery);

/**
 * realmChangesAfter's entries, each with its run's row as the same statement read it (none for a run
 * that is gone): a realm stream's read of new entries and of the runs they changed in one round trip
 * instead of two (PostgreSQL). Runs with several entries are read once per entry, so it serves small
 * reads past the newest entry, not whole windows.
 */
export async function realmChangesWithRuns(
  db: Kysely<DB>,
  realmId: string,
  afterId: string,
  limit: number,
): Promise<{ id: string; run_id: string; run: RunsTable | undefined }[]> {
  const rows = await changesWithRuns(db, realmId, afterId, limit);
  // The row is the run's, with the entry's two columns beside its own (nothing shows them).
  return rows.map((r) => ({
    id: r.change_id,
    run_id: r.change_run_id,
    run: r.run_id === null ? undefined : (r as unknown as RunsTable),
  }));
}

const changesWithRuns = prepared((db: Kysely<DB>, realmId: string, afterId: string, limit: number) =>
  db
    .selectFrom(realmChangesQuery(db, realmId, afterId, limit).as('h'))
    .leftJoin('runs', 'runs.run_id', 'h.run_id')
    .select(['h.id as change_id', 'h.run_id as change_run_id'])
    .select(OF_RUNS)
    .orderBy('h.id'),
);

function historyOut(r: RunHistoryTable): HistoryOut {
  return {
    type: r.type,
    at: r.at,
    from_phase: r.from_phase,
    phase: r.phase,
    error: r.error,
    actor: json<Actor>(r.actor),
    state: r.state,
    data: json<Record<string, unknown>>(r.data),
  };
}
