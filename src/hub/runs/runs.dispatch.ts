import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import type { ExecuteRunBody, RunAgentManifest, RunPhase } from '../../shared/protocol.js';
import { daemonsWithTeam } from '../catalog/installs.service.js';
import type { PinnedDefinition } from '../catalog/teams.service.js';
import type { Hub } from '../context.js';
import { enqueueCommand } from '../daemons/outbox.repo.js';
import type { OfferJobBody } from '../daemons/queue.service.js';
import { addHistory, daemonActor, json, leaseMsOf, loadRun } from './runs.repo.js';

/**
 * Dispatch: a queued run goes to its workspace's daemon (`runs/execute`), or is offered
 * (`offer_job`) to the online daemons of its realm that have its team; the first `queue/claim`
 * wins and gets `runs/execute`. Every dispatch or claim raises the run's lease epoch.
 */

export const RUN_ITEM_KIND = 'run';

/**
 * The phases a run executes: its team version's, or one phase for a single-agent run. Rows are
 * loaded within the run's organization only.
 */
export async function runDefinition(
  db: Kysely<DB>,
  run: Pick<RunsTable, 'org_id' | 'team_version_id' | 'agent_id'>,
): Promise<ExecuteRunBody['team']> {
  if (run.team_version_id) {
    const tv = await db
      .selectFrom('team_versions')
      .selectAll()
      .where('id', '=', run.team_version_id)
      .where('org_id', '=', run.org_id)
      .executeTakeFirstOrThrow();
    const def = JSON.parse(tv.definition) as PinnedDefinition;
    return {
      name: tv.name,
      version: tv.version,
      team_version_id: tv.id,
      phases: def.phases as RunPhase[],
    };
  }
  const agent = await db
    .selectFrom('agents')
    .selectAll()
    .where('id', '=', run.agent_id!)
    .where('org_id', '=', run.org_id)
    .executeTakeFirstOrThrow();
  return {
    name: agent.name,
    version: agent.version,
    team_version_id: null,
    phases: [{ name: agent.name, agent: `${agent.name}@${agent.version}`, agent_id: agent.id }],
  };
}

/**
 * The self-contained `runs/execute` body (definition, manifests, inputs, outputs so far). Only
 * manifests of the run's organization go in, whatever ids a stored definition pins.
 */
export async function executeBody(
  db: Kysely<DB>,
  run: RunsTable,
  leaseMs: number,
): Promise<Omit<ExecuteRunBody, 'tx_id'>> {
  const team = await runDefinition(db, run);
  const agentIds = team.phases.map((p) => p.agent_id).filter((x): x is string => typeof x === 'string');
  const agents: Record<string, RunAgentManifest> = {};
  if (agentIds.length > 0) {
    const rows = await db
      .selectFrom('agents')
      .select(['id', 'manifest'])
      .where('id', 'in', agentIds)
      .where('org_id', '=', run.org_id)
      .execute();
    for (const a of rows) agents[a.id] = JSON.parse(a.manifest) as RunAgentManifest;
  }
  return {
    run_id: run.run_id,
    lease_epoch: run.lease_epoch,
    lease_ms: leaseMs,
    execution_type: run.execution_type === 'agent' ? 'agent' : 'team',
    team,
    agents,
    start_phase: run.current_phase,
    inputs: json<Record<string, unknown>>(run.inputs) ?? {},
    outputs: json<Record<string, unknown>>(run.outputs) ?? {},
    workspace_path: run.workspace_path,
    call_depth: run.call_depth,
  };
}

/** Online daemons of the realm that may take the run (see docs/api.md, runs: dispatch). */
async function eligibleDaemons(hub: Hub, run: RunsTable): Promise<string[]> {
  const online = await hub.db
    .selectFrom('daemons')
    .select('id')
    .where('realm_id', '=', run.realm_id)
    .where('status', '=', 'online')
    .where('revoked_at', 'is', null)
    .orderBy('id')
    .execute();
  if (!run.team_id) return online.map((d) => d.id);
  const known = await hub.db
    .selectFrom('team_installs')
    .select('id')
    .where('realm_id', '=', run.realm_id)
    .where('team_id', '=', run.team_id)
    .limit(1)
    .execute();
  // No daemon of the realm was ever asked to install this team: every daemon may take it (the
  // execute command carries the definition and the manifests).
  if (known.length === 0) return online.map((d) => d.id);
  const withTeam = await daemonsWithTeam(hub, run.realm_id, { teamId: run.team_id });
  const ok = new Set(withTeam.filter((d) => d.daemon_status === 'online').map((d) => d.daemon_id));
  return online.map((d) => d.id).filter((id) => ok.has(id));
}

/**
 * Dispatches a `queued` run that no daemon holds. Safe to call from several places at once (runs/new,
 * a daemon connecting, a resume): the conditional UPDATE lets one of them win. A run with no
 * eligible daemon stays `queued`.
 */
export async function dispatchRun(hub: Hub, runId: string): Promise<void> {
  const run = await loadRun(hub.db, runId);
  if (run?.state !== 'queued' || run.daemon_id !== null) return;
  const leaseMs = await leaseMsOf(hub);
  if (run.workspace_id) {
    const ws = await hub.db
      .selectFrom('workspaces')
      .select(['daemon_id', 'path'])
      .where('id', '=', run.workspace_id)
      .executeTakeFirst();
    if (!ws) return;
    const epoch = run.lease_epoch + 1;
    const now = hub.now();
    const sent = await hub.db.transaction().execute(async (trx) => {
      const res = await trx
        .updateTable('runs')
        .set({
          daemon_id: ws.daemon_id,
          lease_epoch: epoch,
          lease_expires_at: now + leaseMs,
          updated_at: now,
        })
        .where('run_id', '=', run.run_id)
        .where('state', '=', 'queued')
        .where('daemon_id', 'is', null)
        .where('lease_epoch', '=', run.lease_epoch)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) return false;
      const moved = { ...run, daemon_id: ws.daemon_id, lease_epoch: epoch, workspace_path: ws.path };
      await enqueueCommand(trx, hub, ws.daemon_id, 'runs/execute', await executeBody(trx, moved, leaseMs));
      return true;
    });
    if (sent) hub.tunnel.wake(ws.daemon_id);
    return;
  }
  const daemons = await eligibleDaemons(hub, run);
  if (daemons.length === 0) return;
  const itemId = hub.newId();
  const payload = { run_id: run.run_id, team_id: run.team_id };
  const offered = await hub.db.transaction().execute(async (trx) => {
    const now = hub.now();
    const res = await trx
      .updateTable('runs')
      .set({ state: 'offered', queue_item_id: itemId, updated_at: now })
      .where('run_id', '=', run.run_id)
      .where('state', '=', 'queued')
      .where('daemon_id', 'is', null)
      .where('lease_epoch', '=', run.lease_epoch)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return false;
    await trx
      .insertInto('queue_items')
      .values({
        id: itemId,
        realm_id: run.realm_id,
        kind: RUN_ITEM_KIND,
        payload: JSON.stringify(payload),
        status: 'offered',
        claimed_by: null,
        claimed_at: null,
        created_at: now,
      })
      .execute();
    await addHistory(trx, hub, run, 'offered', { type: 'run.offered', phase: run.current_phase });
    for (const d of daemons) {
      const body: OfferJobBody = { queue_item_id: itemId, daemon_id: d, kind: RUN_ITEM_KIND, payload };
      await enqueueCommand(trx, hub, d, 'offer_job', body);
    }
    return true;
  });
  if (offered) for (const d of daemons) hub.tunnel.wake(d);
}

/**
 * After a daemon won `queue/claim` for a run's item: the run is the winner's (new lease epoch,
 * `run.claimed`) and the winner gets `runs/execute`. Idempotent: a retried claim changes nothing.
 */
export async function runClaimed(
  hub: Hub,
  queueItemId: string,
  daemonId: string,
): Promise<{ run_id: string; lease_epoch: number } | null> {
  const run = await hub.db
    .selectFrom('runs')
    .selectAll()
    .where('queue_item_id', '=', queueItemId)
    .executeTakeFirst();
  if (!run) return null;
  if (run.state !== 'offered' || run.daemon_id !== null) {
    return run.daemon_id === daemonId ? { run_id: run.run_id, lease_epoch: run.lease_epoch } : null;
  }
  const leaseMs = await leaseMsOf(hub);
  const epoch = run.lease_epoch + 1;
  const won = await hub.db.transaction().execute(async (trx) => {
    const now = hub.now();
    const res = await trx
      .updateTable('runs')
      .set({ daemon_id: daemonId, lease_epoch: epoch, lease_expires_at: now + leaseMs, updated_at: now })
      .where('run_id', '=', run.run_id)
      .where('state', '=', 'offered')
      .where('daemon_id', 'is', null)
      .where('queue_item_id', '=', queueItemId)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return false;
    const moved = { ...run, daemon_id: daemonId, lease_epoch: epoch };
    await addHistory(trx, hub, run, 'offered', {
      type: 'run.claimed',
      phase: run.current_phase,
      actor: daemonActor(daemonId),
    });
    await enqueueCommand(trx, hub, daemonId, 'runs/execute', await executeBody(trx, moved, leaseMs));
    return true;
  });
  if (!won) return null;
  hub.tunnel.wake(daemonId);
  return { run_id: run.run_id, lease_epoch: epoch };
}

/**
 * A daemon came online on this hub process: dispatch the queued runs of its realm, and offer it
 * the runs still waiting for a claim.
 */
export async function onDaemonConnected(hub: Hub, daemonId: string): Promise<void> {
  const d = await hub.db
    .selectFrom('daemons')
    .select('realm_id')
    .where('id', '=', daemonId)
    .executeTakeFirst();
  if (!d) return;
  const queued = await hub.db
    .selectFrom('runs')
    .select('run_id')
    .where('realm_id', '=', d.realm_id)
    .where('state', '=', 'queued')
    .where('daemon_id', 'is', null)
    .orderBy('run_id')
    .limit(500)
    .execute();
  for (const r of queued) await dispatchRun(hub, r.run_id);
  const waiting = await hub.db
    .selectFrom('runs')
    .innerJoin('queue_items as q', 'q.id', 'runs.queue_item_id')
    .select(['runs.run_id', 'runs.team_id', 'runs.queue_item_id'])
    .where('runs.realm_id', '=', d.realm_id)
    .where('runs.state', '=', 'offered')
    .where('runs.daemon_id', 'is', null)
    .where('q.status', '=', 'offered')
    .limit(500)
    .execute();
  if (waiting.length === 0) return;
  for (const r of waiting) {
    const payload = { run_id: r.run_id, team_id: r.team_id };
    const body: OfferJobBody = {
      queue_item_id: r.queue_item_id!,
      daemon_id: daemonId,
      kind: RUN_ITEM_KIND,
      payload,
    };
    await enqueueCommand(hub.db, hub, daemonId, 'offer_job', body);
  }
  hub.tunnel.wake(daemonId);
}
