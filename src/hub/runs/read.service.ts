import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import type { Run } from '../../shared/api/runs.js';
import { AppError, conflict, forbidden, notFound } from '../../shared/errors.js';
import { requireRealm } from '../access/access.service.js';
import type { Actor, DaemonActor, UserActor } from '../access/actor.js';
import type { Hub } from '../context.js';
import { daemonShownOnline } from '../daemons/await-command.js';
import { decodeCursor, pageOf } from '../http/paging.js';
import { listHistory } from './history.repo.js';
import { logLinesAfter } from './logs.repo.js';
import { runOut } from './run.mapper.js';
import { loadRunWithDaemon } from './run-read.repo.js';
import { listQueueRows, listRunRows, loadRun, type RunListFilter } from './runs.repo.js';

/** Reading runs: who may see one, and the Run, list and logs replies. */

/** Loads a run the caller may see: a user with `permission` in its realm, or a daemon of its realm. */
export async function visibleRun(
  hub: Hub,
  actor: Actor | null,
  runId: string,
  permission: RunPermission = 'runs.view',
): Promise<{ run: RunsTable; user: UserActor | null }> {
  return mayTouch(hub, actor, await loadRun(hub.db, runId), permission);
}

type RunPermission = 'runs.view' | 'runs.manage' | 'runs.terminate';

async function mayTouch<R extends RunsTable>(
  hub: Hub,
  actor: Actor | null,
  run: R | undefined,
  permission: RunPermission,
): Promise<{ run: R; user: UserActor | null }> {
  if (!run) {
    if (!actor) throw new AppError('unauthorized', 'authentication required');
    throw notFound('run');
  }
  if (actor?.kind === 'daemon' && permission === 'runs.view') {
    if (actor.daemon.realm_id !== run.realm_id) throw forbidden('this run belongs to another realm');
    return { run, user: null };
  }
  const { actor: user } = await requireRealm(hub, actor, run.realm_id, permission);
  return { run, user };
}

/** The run, if this daemon holds its current lease epoch; else not_found / conflict (fencing). */
export async function heldRun(
  db: Kysely<DB>,
  actor: DaemonActor,
  runId: string,
  epoch: number,
): Promise<RunsTable> {
  return mustHold(await loadRun(db, runId), actor, epoch);
}

/** `heldRun` of a run already read (undefined: there is none). */
export function mustHold(run: RunsTable | undefined, actor: DaemonActor, epoch: number): RunsTable {
  if (!run || run.realm_id !== actor.daemon.realm_id) throw notFound('run');
  if (run.daemon_id !== actor.daemon.id || run.lease_epoch !== epoch) {
    throw conflict('this daemon no longer holds the run (stale lease epoch)', {
      lease_epoch: run.lease_epoch,
      state: run.state,
    });
  }
  return run;
}

/** The same as `visibleRun`, for a user (a realm token cannot manage runs). */
export async function managedRun(
  hub: Hub,
  actor: Actor | null,
  runId: string,
  permission: 'runs.manage' | 'runs.terminate',
): Promise<{ run: RunsTable; user: UserActor }> {
  const { run, user } = await visibleRun(hub, actor, runId, permission);
  return { run, user: user! };
}

export async function showRun(hub: Hub, run: RunsTable, withHistory: boolean): Promise<Run> {
  const out: Run = runOut(run, await daemonShownOnline(hub, run.daemon_id), hub.now());
  if (withHistory) out.history = await listHistory(hub.db, run.run_id);
  return out;
}

/** `runs/get_by_id`: the run with its daemon's status in one query, if the caller may see it. */
export async function showVisibleRun(
  hub: Hub,
  actor: Actor | null,
  runId: string,
  withHistory: boolean,
): Promise<Run> {
  const { run } = await mayTouch(hub, actor, await loadRunWithDaemon(hub.db, runId), 'runs.view');
  const out: Run = runOut(run, run.daemon_status === 'online', hub.now());
  if (withHistory) out.history = await listHistory(hub.db, run.run_id);
  return out;
}

/** The run as it is now. */
export async function showRunNow(hub: Hub, runId: string): Promise<Run> {
  return showRun(hub, (await loadRun(hub.db, runId))!, false);
}

export async function listRuns(hub: Hub, actor: Actor | null, input: RunListFilter) {
  await requireRealm(hub, actor, input.realm_id, 'runs.view');
  const queue = input.order === 'queue';
  const offset = queue ? Number(decodeCursor(input.cursor, /^\d{1,9}$/) ?? 0) : 0;
  const rows = queue ? await listQueueRows(hub.db, input, offset) : await listRunRows(hub.db, input);
  const online = new Map<string, boolean>();
  const now = hub.now();
  const page = queue
    ? pageOf(rows, input.limit, () => String(offset + input.limit))
    : pageOf(rows, input.limit, (r) => r.run_id);
  const data = [];
  for (const r of page.data) {
    if (r.daemon_id && !online.has(r.daemon_id))
      online.set(r.daemon_id, await daemonShownOnline(hub, r.daemon_id));
    const out = runOut(r, r.daemon_id ? online.get(r.daemon_id)! : false, now);
    if (queue) out.queue_position = offset + data.length + 1;
    data.push(out);
  }
  return { data, next_cursor: page.next_cursor };
}

export async function runLogs(hub: Hub, run: RunsTable, after: number, limit: number) {
  const rows = await logLinesAfter(hub.db, run.run_id, after, limit);
  const data = rows.slice(0, limit);
  return {
    data,
    next_after: data.length ? data[data.length - 1]!.seq : after,
    has_more: rows.length > limit,
    run_state: run.state,
  };
}
