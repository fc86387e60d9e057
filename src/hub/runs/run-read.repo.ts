import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import { allColumns, oneOf, prepared, preparedQuery } from '../../db/prepared.js';
import type { DaemonsTable, RunsTable } from '../../db/schema.js';
import { groupCallsPer } from '../../shared/group-calls.js';

/** Reading one run (SQL): the hot reads, prepared once (src/db/prepared.ts). */

/** Every column of `runs`, by name: a prepared statement must not be `select *`. */
export const RUN_COLUMNS = allColumns<RunsTable>()([
  'run_id',
  'org_id',
  'realm_id',
  'workspace_id',
  'workspace_path',
  'team_id',
  'team_version_id',
  'agent_id',
  'daemon_id',
  'parent_run_id',
  'parent_phase',
  'root_run_id',
  'call_path',
  'call_depth',
  'iteration_key',
  'child_key',
  'run_name',
  'state',
  'inputs',
  'outputs',
  'error',
  'execution_type',
  'current_pid',
  'current_phase',
  'external_id',
  'context_labels',
  'reviewers',
  'notify_channels',
  'lease_epoch',
  'lease_expires_at',
  'queue_item_id',
  'pending_control',
  'control_tx_id',
  'started_at',
  'completed_at',
  'state_lost_at',
  'terminated_at',
  'terminated_by_user_id',
  'terminated_reason',
  'created_by_user_id',
  'created_at',
  'updated_at',
  'logs_pruned_at',
  'priority',
  'concurrency',
  'waiting_for',
  'queue_deadline_at',
  'run_deadline_at',
]);

/** Every column of `runs`, qualified (for joins). */
export const OF_RUNS = RUN_COLUMNS.map(
  (c) => `runs.${c}` as const,
) as `runs.${(typeof RUN_COLUMNS)[number]}`[];

/** A run by id, compiled once; as a statement to send with others (src/db/together.ts) too. */
export const runByIdQuery = preparedQuery((db: Kysely<DB>, runId: string) =>
  db.selectFrom('runs').select(RUN_COLUMNS).where('run_id', '=', runId),
);

export async function loadRun(db: Kysely<DB>, runId: string): Promise<RunsTable | undefined> {
  return (await runByIdQuery(db, runId).execute())[0] as RunsTable | undefined;
}

const byIds = prepared((db: Kysely<DB>, runIds: string[]) =>
  db
    .selectFrom('runs')
    .select(RUN_COLUMNS)
    .where(oneOf(db, 'run_id', runIds)),
);

/** Runs by id, in one statement compiled once (a realm stream reads the runs that changed). */
export async function loadRuns(db: Kysely<DB>, runIds: string[]): Promise<RunsTable[]> {
  return runIds.length === 0 ? [] : byIds(db, runIds);
}

/** The run with its daemon's status (null: no daemon, or a removed one), in one query. */
export type RunWithDaemon = RunsTable & { daemon_status: DaemonsTable['status'] | null };

const withDaemonIn = prepared((db: Kysely<DB>, runIds: string[]) =>
  db
    .selectFrom('runs')
    .leftJoin('daemons as d', (j) => j.onRef('d.id', '=', 'runs.daemon_id').on('d.revoked_at', 'is', null))
    .select(OF_RUNS)
    .select('d.status as daemon_status')
    .where(oneOf(db, 'runs.run_id', runIds)),
);

/** The most runs one grouped read asks for. */
const MAX_READ_GROUP = 128;

/** Per database handle: the reads of one run that arrived together, done as one query. */
const readTogether = groupCallsPer(async (db: Kysely<DB>, ids: string[]) => {
  const rows = await withDaemonIn(db, [...new Set(ids)]);
  const byRunId = new Map(rows.map((r) => [r.run_id, r]));
  return ids.map((id) => byRunId.get(id));
}, MAX_READ_GROUP);

/**
 * The run with its daemon's status, in one query. Reads that arrive in the same turn of the event
 * loop share one query (`groupCalls`): under load, one statement and one round trip serve many
 * requests. Each read is still made after its request arrived, so it sees every write committed
 * before that.
 */
export function loadRunWithDaemon(db: Kysely<DB>, runId: string): Promise<RunWithDaemon | undefined> {
  return readTogether(db, runId);
}
