import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import { isTerminal, type RunState } from '../../shared/api/run-states.js';
import { AppError, conflict, forbidden, invalidParams, notFound } from '../../shared/errors.js';
import { countsAsRealmMember, requireRealm } from '../access/access.service.js';
import type { Actor, UserActor } from '../access/actor.js';
import { findAgent } from '../catalog/agents.routes.js';
import { parseRef } from '../catalog/manifest.js';
import { findTeamVersion } from '../catalog/teams.service.js';
import type { Hub } from '../context.js';
import { enqueueCommand } from '../daemons/outbox.repo.js';
import { decodeCursor, pageOf } from '../http/paging.js';
import { unusableChannelIds } from '../notifications/channels.repo.js';
import { cancelOpenReviews } from '../reviews/reviews.repo.js';
import { requireReadyWorkspace } from '../workspaces/workspaces.repo.js';
import { dispatchRun, runDefinition } from './runs.dispatch.js';
import {
  addHistory,
  daemonOnline,
  json,
  listHistory,
  loadRun,
  type PendingControl,
  type RunOut,
  runOut,
  toJson,
  userActor,
} from './runs.repo.js';
import { canMove } from './state.js';

export interface NewRunInput {
  realm_id?: string | undefined;
  team_id?: string | undefined;
  team?: string | undefined;
  agent?: string | undefined;
  execution_type?: 'team' | 'agent' | undefined;
  workspace_id?: string | undefined;
  inputs?: Record<string, unknown> | undefined;
  run_name?: string | undefined;
  reviewers?: Record<string, string[]> | undefined;
  notify_channels?: unknown;
  external_id?: string | undefined;
  context_labels?: unknown;
}

/** What a new run row needs besides its defaults. */
export interface RunSeed {
  org_id: string;
  realm_id: string;
  workspace_id: string | null;
  workspace_path: string | null;
  team_id: string | null;
  team_version_id: string | null;
  agent_id: string | null;
  execution_type: 'team' | 'agent';
  run_name: string | null;
  /** Used for the default run name. */
  base_name: string;
  inputs: Record<string, unknown>;
  reviewers: Record<string, string[]> | null;
  notify_channels: unknown;
  external_id: string | null;
  context_labels: unknown;
  parent_run_id: string | null;
  parent_phase: string | null;
  root_run_id: string | null;
  call_path: string[] | null;
  call_depth: number;
  iteration_key: string | null;
  /** Set for child runs: makes a retried `runs/start_child` return the same child. */
  child_key?: string | null;
  created_by_user_id: string | null;
}

/** Inserts a `queued` run with its `run.queued` history entry (in the caller's transaction). */
export async function insertRun(db: Kysely<DB>, hub: Hub, seed: RunSeed, actor: unknown): Promise<RunsTable> {
  const now = hub.now();
  let runName = seed.run_name;
  if (!runName) {
    const n = await db
      .selectFrom('runs')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('realm_id', '=', seed.realm_id)
      .$if(seed.team_id !== null, (q) => q.where('team_id', '=', seed.team_id))
      .$if(seed.team_id === null, (q) => q.where('agent_id', '=', seed.agent_id))
      .executeTakeFirstOrThrow();
    runName = `${seed.base_name}-${Number(n.n) + 1}`;
  }
  const row: RunsTable = {
    run_id: hub.newId(),
    org_id: seed.org_id,
    realm_id: seed.realm_id,
    workspace_id: seed.workspace_id,
    workspace_path: seed.workspace_path,
    team_id: seed.team_id,
    team_version_id: seed.team_version_id,
    agent_id: seed.agent_id,
    daemon_id: null,
    parent_run_id: seed.parent_run_id,
    parent_phase: seed.parent_phase,
    root_run_id: seed.root_run_id,
    call_path: toJson(seed.call_path),
    call_depth: seed.call_depth,
    iteration_key: seed.iteration_key,
    child_key: seed.child_key ?? null,
    run_name: runName,
    state: 'queued',
    inputs: JSON.stringify(seed.inputs),
    outputs: '{}',
    error: null,
    execution_type: seed.execution_type,
    current_pid: null,
    current_phase: null,
    external_id: seed.external_id,
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
    state_lost_at: null,
    terminated_at: null,
    terminated_by_user_id: null,
    terminated_reason: null,
    created_by_user_id: seed.created_by_user_id,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('runs').values(row).execute();
  await addHistory(db, hub, row, 'queued', { type: 'run.queued', actor: actor as Record<string, unknown> });
  return row;
}

const issue = (field: string, message: string) => invalidParams([{ field, message }]);

/** `runs/new`: resolves the team or agent, the workspace and the reviewers, queues and dispatches. */
export async function createRun(hub: Hub, actor: Actor | null, input: NewRunInput): Promise<RunOut> {
  let workspace: { id: string; daemon_id: string; realm_id: string; path: string } | undefined;
  if (input.workspace_id) {
    workspace = await hub.db
      .selectFrom('workspaces')
      .select(['id', 'daemon_id', 'realm_id', 'path'])
      .where('id', '=', input.workspace_id)
      .executeTakeFirst();
    if (!workspace) throw notFound('workspace');
    if (input.realm_id && input.realm_id !== workspace.realm_id) {
      throw issue('realm_id', 'is not the realm of the workspace');
    }
  }
  const realmId = workspace?.realm_id ?? input.realm_id;
  if (!realmId) throw issue('realm_id', 'is required when no workspace_id is given');
  const { realm, actor: user } = await requireRealm(hub, actor, realmId, 'runs.create');
  if (workspace) await requireReadyWorkspace(hub, workspace.id);

  const executionType = input.execution_type ?? (input.agent !== undefined ? 'agent' : 'team');
  let seed: Pick<RunSeed, 'team_id' | 'team_version_id' | 'agent_id' | 'base_name' | 'execution_type'>;
  const execution_type = executionType;
  if (executionType === 'agent') {
    if (!input.agent) throw issue('agent', 'is required when execution_type is agent');
    const ref = parseRef(input.agent);
    const agent = await findAgent(hub, realm.org_id, ref.name, ref.version);
    if (!agent) throw notFound('agent');
    seed = {
      team_id: null,
      team_version_id: null,
      agent_id: agent.id,
      base_name: agent.name,
      execution_type,
    };
  } else {
    if ((input.team_id === undefined) === (input.team === undefined)) {
      throw issue('team', 'give exactly one of team_id or team (NAME or NAME@VERSION)');
    }
    let tv: { id: string; team_id: string; name: string } | null | undefined;
    if (input.team_id) {
      const rows = await hub.db
        .selectFrom('team_versions')
        .select(['id', 'team_id', 'name', 'version', 'org_id'])
        .where('org_id', '=', realm.org_id)
        .where((eb) => eb.or([eb('team_id', '=', input.team_id!), eb('id', '=', input.team_id!)]))
        .execute();
      // team_id names the team (its newest version), or a team version id directly.
      const direct = rows.find((r) => r.id === input.team_id);
      tv = direct ?? (rows[0] ? await findTeamVersion(hub, realm.org_id, rows[0].name, null) : null);
    } else {
      const ref = parseRef(input.team!);
      tv = await findTeamVersion(hub, realm.org_id, ref.name, ref.version);
    }
    if (!tv) throw notFound('team');
    seed = {
      team_id: tv.team_id,
      team_version_id: tv.id,
      agent_id: null,
      base_name: tv.name,
      execution_type,
    };
  }

  let reviewers: Record<string, string[]> | null = null;
  if (input.reviewers) {
    const phases = new Set(
      (await runDefinition(hub.db, { ...seed, org_id: realm.org_id })).phases.map((p) => p.name),
    );
    reviewers = {};
    for (const [phase, handles] of Object.entries(input.reviewers)) {
      if (!phases.has(phase)) throw issue(`reviewers.${phase}`, 'is not a phase of this run');
      for (const handle of handles) {
        if (!(await isRealmMemberHandle(hub, realm, handle))) {
          throw issue(`reviewers.${phase}`, `"${handle}" is not a member of this realm`);
        }
      }
      reviewers[phase] = [...new Set(handles)];
    }
  }
  const notify = Array.isArray(input.notify_channels) ? (input.notify_channels as string[]) : [];
  if (notify.length) {
    const scope = { realmId: realm.id, orgId: realm.org_id, userId: user.user.id };
    const bad = await unusableChannelIds(hub.db, scope, notify);
    if (bad.length)
      throw issue('notify_channels', `not channels you may use in this realm: ${bad.join(', ')}`);
  }

  const row = await hub.db.transaction().execute((trx) =>
    insertRun(
      trx,
      hub,
      {
        ...seed,
        org_id: realm.org_id,
        realm_id: realm.id,
        workspace_id: workspace?.id ?? null,
        workspace_path: workspace?.path ?? null,
        run_name: input.run_name ?? null,
        inputs: input.inputs ?? {},
        reviewers,
        notify_channels: input.notify_channels ?? null,
        external_id: input.external_id ?? null,
        context_labels: input.context_labels ?? null,
        parent_run_id: null,
        parent_phase: null,
        root_run_id: null,
        call_path: null,
        call_depth: 0,
        iteration_key: null,
        created_by_user_id: user.user.id,
      },
      userActor(user.user),
    ),
  );
  const answer = runOut(row, false, hub.now());
  await dispatchRun(hub, row.run_id);
  return answer;
}

async function isRealmMemberHandle(
  hub: Hub,
  realm: { id: string; org_id: string },
  handle: string,
): Promise<boolean> {
  const u = await hub.db
    .selectFrom('users')
    .select(['id', 'is_site_admin'])
    .where('handle', '=', handle)
    .executeTakeFirst();
  return u !== undefined && (await countsAsRealmMember(hub, u, realm));
}

/** Loads a run the caller may see: a user with `permission` in its realm, or a daemon of its realm. */
export async function visibleRun(
  hub: Hub,
  actor: Actor | null,
  runId: string,
  permission: 'runs.view' | 'runs.manage' | 'runs.terminate' = 'runs.view',
): Promise<{ run: RunsTable; user: UserActor | null }> {
  const run = await loadRun(hub.db, runId);
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

export async function showRun(hub: Hub, run: RunsTable, withHistory: boolean): Promise<RunOut> {
  const out: RunOut = runOut(run, await daemonOnline(hub.db, run.daemon_id), hub.now());
  if (withHistory) out.history = await listHistory(hub.db, run.run_id);
  return out;
}

export async function listRuns(
  hub: Hub,
  actor: Actor | null,
  input: {
    realm_id: string;
    state?: string | undefined;
    team_id?: string | undefined;
    /** Every run below this top-level run (children, grandchildren…). */
    root_run_id?: string | undefined;
    /** Only runs without a parent. */
    top_level?: boolean | undefined;
    limit: number;
    cursor?: string | undefined;
  },
) {
  await requireRealm(hub, actor, input.realm_id, 'runs.view');
  const after = decodeCursor(input.cursor);
  const rows = await hub.db
    .selectFrom('runs')
    .selectAll()
    .where('realm_id', '=', input.realm_id)
    .$if(input.state !== undefined, (q) => q.where('state', '=', input.state!))
    .$if(input.team_id !== undefined, (q) => q.where('team_id', '=', input.team_id!))
    // A descendant is created after its root and ids are UUID v7, so `run_id > root` bounds the scan
    // of the (realm_id, run_id) index to the runs created since the root.
    .$if(input.root_run_id !== undefined, (q) =>
      q.where('root_run_id', '=', input.root_run_id!).where('run_id', '>', input.root_run_id!),
    )
    .$if(input.top_level === true, (q) => q.where('parent_run_id', 'is', null))
    .$if(after !== null, (q) => q.where('run_id', '<', after!))
    .orderBy('run_id', 'desc')
    .limit(input.limit + 1)
    .execute();
  const online = new Map<string, boolean>();
  const now = hub.now();
  const page = pageOf(rows, input.limit, (r) => r.run_id);
  const data = [];
  for (const r of page.data) {
    if (r.daemon_id && !online.has(r.daemon_id))
      online.set(r.daemon_id, await daemonOnline(hub.db, r.daemon_id));
    data.push(runOut(r, r.daemon_id ? online.get(r.daemon_id)! : false, now));
  }
  return { data, next_cursor: page.next_cursor };
}

export async function runLogs(hub: Hub, run: RunsTable, after: number, limit: number) {
  const rows = await hub.db
    .selectFrom('run_logs')
    .select(['seq', 'at', 'stream', 'phase', 'text'])
    .where('run_id', '=', run.run_id)
    .where('seq', '>', after)
    .orderBy('seq')
    .limit(limit + 1)
    .execute();
  const data = rows.slice(0, limit);
  return {
    data,
    next_after: data.length ? data[data.length - 1]!.seq : after,
    has_more: rows.length > limit,
    run_state: run.state,
  };
}

/**
 * When a run ends (or is lost) and has a parent, the parent's daemon is told (`runs/child_ended`),
 * in the transaction of the change. Returns the daemon to wake after the commit.
 */
export async function notifyParent(
  db: Kysely<DB>,
  hub: Hub,
  run: RunsTable,
  state: string,
): Promise<string | null> {
  if (!run.parent_run_id) return null;
  const parent = await loadRun(db, run.parent_run_id);
  if (!parent?.daemon_id || isTerminal(parent.state as RunState)) return null;
  const outputs = json<Record<string, unknown>>(run.outputs) ?? {};
  await enqueueCommand(db, hub, parent.daemon_id, 'runs/child_ended', {
    run_id: parent.run_id,
    child_run_id: run.run_id,
    state,
    outputs,
    error: run.error,
  });
  return parent.daemon_id;
}

/**
 * Moves a run to `to` if it is still in `from` with `epoch` (one conditional UPDATE, so two hub
 * processes or a daemon report racing the sweeper never both win). False when it changed meanwhile.
 */
export async function moveRun(
  db: Kysely<DB>,
  run: RunsTable,
  to: RunState,
  set: Partial<RunsTable>,
): Promise<boolean> {
  if (!canMove(run.state as RunState, to)) {
    throw conflict(`a ${run.state} run cannot become ${to}`, { state: run.state, to });
  }
  const res = await db
    .updateTable('runs')
    .set({ ...set, state: to })
    .where('run_id', '=', run.run_id)
    .where('state', '=', run.state)
    .where('lease_epoch', '=', run.lease_epoch)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) return false;
  // A run that ends while a review is open: the review closes with it (the sweeper: lost runs).
  if (isTerminal(to)) await cancelOpenReviews(db, run.run_id, set.updated_at ?? Date.now());
  return true;
}

/** `runs/cancel`: at once when no daemon holds the run, else through the daemon (pending_control). */
export async function cancelRun(hub: Hub, actor: Actor | null, runId: string, reason: string | null) {
  const { run, user } = await visibleRun(hub, actor, runId, 'runs.manage');
  const who = userActor(user!.user);
  if (isTerminal(run.state as RunState))
    throw conflict(`the run is already ${run.state}`, { state: run.state });
  const pc = json<PendingControl>(run.pending_control);
  if (pc?.type === 'cancel') return showRun(hub, run, false);
  const now = hub.now();
  const wake = await hub.db.transaction().execute(async (trx) => {
    const wakeList: string[] = [];
    if (run.daemon_id === null) {
      // Nobody runs it: cancelled now. An open offer is closed so a late claim wins nothing.
      if (
        !(await moveRun(trx, run, 'cancelled', { completed_at: now, updated_at: now, pending_control: null }))
      ) {
        throw conflict('the run changed meanwhile; try again');
      }
      if (run.queue_item_id) {
        await trx
          .updateTable('queue_items')
          .set({ status: 'claimed', claimed_at: now })
          .where('id', '=', run.queue_item_id)
          .where('status', '=', 'offered')
          .execute();
      }
      await addHistory(trx, hub, run, run.state, {
        type: 'run.cancel_requested',
        phase: run.current_phase,
        actor: who,
        error: reason,
      });
      await addHistory(trx, hub, run, 'cancelled', {
        type: 'run.ended',
        phase: run.current_phase,
        error: reason,
      });
      const p = await notifyParent(trx, hub, { ...run, state: 'cancelled' }, 'cancelled');
      if (p) wakeList.push(p);
      return wakeList;
    }
    const txId = await enqueueCommand(trx, hub, run.daemon_id, 'runs/cancel', {
      run_id: run.run_id,
      lease_epoch: run.lease_epoch,
      reason,
    });
    const control: PendingControl = {
      type: 'cancel',
      tx_id: txId,
      requested_by: user!.user.id,
      requested_at: now,
    };
    const res = await trx
      .updateTable('runs')
      .set({ pending_control: JSON.stringify(control), control_tx_id: txId, updated_at: now })
      .where('run_id', '=', run.run_id)
      .where('state', '=', run.state)
      .where('lease_epoch', '=', run.lease_epoch)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) throw conflict('the run changed meanwhile; try again');
    await addHistory(trx, hub, run, run.state, {
      type: 'run.cancel_requested',
      phase: run.current_phase,
      actor: who,
      error: reason,
    });
    wakeList.push(run.daemon_id);
    return wakeList;
  });
  for (const d of wake) hub.tunnel.wake(d);
  // Children still running are cancelled too.
  const children = await hub.db
    .selectFrom('runs')
    .select('run_id')
    .where('parent_run_id', '=', run.run_id)
    .where('state', 'in', ['queued', 'offered', 'running', 'awaiting_input'])
    .execute();
  for (const c of children) {
    try {
      await cancelRun(hub, actor, c.run_id, reason);
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'conflict')) throw err;
    }
  }
  return showRun(hub, (await loadRun(hub.db, run.run_id))!, false);
}

/** `runs/resume`: a failed, cancelled or lost run goes back to `queued` and continues from its current phase. */
export async function resumeRun(hub: Hub, actor: Actor | null, runId: string) {
  const { run, user } = await visibleRun(hub, actor, runId, 'runs.manage');
  const now = hub.now();
  const control: PendingControl = {
    type: 'resume',
    tx_id: hub.newId(),
    requested_by: user!.user.id,
    requested_at: now,
  };
  await hub.db.transaction().execute(async (trx) => {
    const moved = await moveRun(trx, run, 'queued', {
      daemon_id: null,
      queue_item_id: null,
      error: null,
      completed_at: null,
      current_pid: null,
      pending_control: JSON.stringify(control),
      control_tx_id: null,
      updated_at: now,
    });
    if (!moved) throw conflict('the run changed meanwhile; try again');
    await addHistory(trx, hub, run, 'queued', {
      type: 'run.resume_requested',
      phase: run.current_phase,
      actor: userActor(user!.user),
    });
  });
  await dispatchRun(hub, run.run_id);
  return showRun(hub, (await loadRun(hub.db, run.run_id))!, false);
}

/** `runs/force_terminate`: only when `force_terminate.eligible`; otherwise `conflict` with the blocker. */
export async function forceTerminate(hub: Hub, actor: Actor | null, runId: string, reason: string) {
  const { run, user } = await visibleRun(hub, actor, runId, 'runs.terminate');
  const shown = await showRun(hub, run, false);
  if (!shown.force_terminate.eligible) {
    throw conflict(`the run cannot be force-terminated: ${shown.force_terminate.blocker}`, {
      blocker: shown.force_terminate.blocker,
    });
  }
  const now = hub.now();
  const wake = await hub.db.transaction().execute(async (trx) => {
    const list: string[] = [];
    // A new epoch fences the old holder: its late reports are refused.
    const moved = await moveRun(trx, run, 'terminated', {
      terminated_at: now,
      terminated_by_user_id: user!.user.id,
      terminated_reason: reason,
      completed_at: now,
      pending_control: null,
      lease_epoch: run.lease_epoch + 1,
      updated_at: now,
    });
    if (!moved) throw conflict('the run changed meanwhile; try again');
    await addHistory(trx, hub, run, 'terminated', {
      type: 'run.ended',
      phase: run.current_phase,
      error: reason,
      actor: userActor(user!.user),
    });
    if (run.daemon_id) {
      // If the daemon comes back it stops whatever is left of the run.
      await enqueueCommand(trx, hub, run.daemon_id, 'runs/cancel', {
        run_id: run.run_id,
        lease_epoch: run.lease_epoch,
        reason: 'terminated',
      });
      list.push(run.daemon_id);
    }
    const p = await notifyParent(trx, hub, { ...run, state: 'terminated' }, 'terminated');
    if (p) list.push(p);
    return list;
  });
  for (const d of wake) hub.tunnel.wake(d);
  return showRun(hub, (await loadRun(hub.db, run.run_id))!, false);
}
