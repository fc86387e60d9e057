import type { Kysely } from 'kysely';
import { type DB, isUniqueViolation } from '../../db/index.js';
import type { RunsTable, WorkspacesTable } from '../../db/schema.js';
import type { Actor as HistoryActor, Run } from '../../shared/api/runs.js';
import { AppError, conflict, notFound } from '../../shared/errors.js';
import { merged } from '../../shared/merged.js';
import type { StartChildBody } from '../../shared/protocol.js';
import { requireRealm } from '../access/access.service.js';
import type { Actor, DaemonActor } from '../access/actor.js';
import { findAgent, teamVersionInOrg, teamVersionsById } from '../catalog/catalog.repo.js';
import { parseRef } from '../catalog/manifest.js';
import type { Hub } from '../context.js';
import { inTx } from '../daemons/commands.js';
import { unusableChannelIds } from '../notifications/channels.repo.js';
import { loadWorkspace, requireReadyWorkspace } from '../workspaces/workspaces.repo.js';
import { type GroupSpec, groupsOfRun } from './concurrency.js';
import { planBeforeWriting } from './dispatch.service.js';
import { type NewRun, type RunSeed, type WrittenRun, writeNewRun, writeRuns } from './new-runs.js';
import { heldRun } from './read.service.js';
import { daemonActor, json, runOut, userActor } from './run.mapper.js';
import { loadRun, runOfChildKey } from './runs.repo.js';
import { maxCallDepthOf } from './settings.js';
import { checkReviewers, issue, type RunTarget, requireAllowedIn } from './start-checks.js';
import { runOfIdempotencyKey } from './starts.repo.js';

/** New runs: `runs/new` (a person) and `runs/start_child` (a daemon, for a team phase). */

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
  /** A repeat with the same key in the realm within 24 h answers the first run (CONTRACT.md §10). */
  idempotency_key?: string | undefined;
  /** CONTRACT.md §11: 0–9, default 5. */
  priority?: number | undefined;
  /** One extra concurrency group, with `concurrency_limit`. */
  concurrency_key?: string | undefined;
  concurrency_limit?: number | undefined;
  queue_timeout_ms?: number | undefined;
  timeout_ms?: number | undefined;
}

export const DEFAULT_PRIORITY = 5;

/** What a team definition says about its runs: concurrency groups and a deadline. */
export interface RunPolicy {
  concurrency: GroupSpec[];
  timeout_ms: number | null;
}

const NO_POLICY: RunPolicy = { concurrency: [], timeout_ms: null };

/** The policy of a stored team definition (validated when the team was registered). */
export function policyOf(definition: string | null | undefined): RunPolicy {
  if (!definition) return NO_POLICY;
  const def = JSON.parse(definition) as { concurrency?: GroupSpec[]; timeout_ms?: number };
  if (!def.concurrency?.length && def.timeout_ms === undefined) return NO_POLICY;
  return { concurrency: def.concurrency ?? [], timeout_ms: def.timeout_ms ?? null };
}

/** Who starts a run: a person, or a schedule or trigger a person made (its history actor). */
export interface Starter {
  user_id: string | null;
  actor: HistoryActor;
}

/**
 * Written in the new run's transaction (a schedule's slot): false, or a unique violation there,
 * means another process already started this run, and nothing is started.
 */
export type RunClaim = (db: Kysely<DB>, runId: string) => Promise<boolean>;

/** Thrown inside the run's transaction to roll it back when its claim was taken. */
const CLAIM_TAKEN = new Error('claim taken');

/** A start's answer: the run, and whether it is new (201) or the first run of its key (200). */
export interface Started {
  run: Run;
  created: boolean;
}

type Target = RunTarget & { policy: RunPolicy };

/** The team version (by id, name or name@version) or the agent a `runs/new` names, in the org. */
export async function resolveTarget(hub: Hub, orgId: string, input: NewRunInput): Promise<Target> {
  const executionType = input.execution_type ?? (input.agent !== undefined ? 'agent' : 'team');
  if (executionType === 'agent') {
    if (!input.agent) throw issue('agent', 'is required when execution_type is agent');
    const ref = parseRef(input.agent);
    const agent = await findAgent(hub.db, orgId, ref.name, ref.version);
    if (!agent) throw notFound('agent');
    return {
      team_id: null,
      team_version_id: null,
      agent_id: agent.id,
      base_name: agent.name,
      execution_type: 'agent',
      policy: NO_POLICY,
    };
  }
  if ((input.team_id === undefined) === (input.team === undefined)) {
    throw issue('team', 'give exactly one of team_id or team (NAME or NAME@VERSION)');
  }
  let tv: { id: string; team_id: string; name: string; definition: string } | null | undefined;
  if (input.team_id) {
    // team_id names the team (its newest version), or a team version id directly.
    const rows = await teamVersionsById(hub.db, orgId, input.team_id);
    const direct = rows.find((r) => r.id === input.team_id);
    tv = direct ?? (rows[0] ? await hub.catalog.teamVersion(hub.db, orgId, rows[0].name, null) : null);
  } else {
    const ref = parseRef(input.team!);
    tv = await hub.catalog.teamVersion(hub.db, orgId, ref.name, ref.version);
  }
  if (!tv) throw notFound('team');
  return {
    team_id: tv.team_id,
    team_version_id: tv.id,
    agent_id: null,
    base_name: tv.name,
    execution_type: 'team',
    policy: policyOf(tv.definition),
  };
}

/** `runs/new`: the caller needs runs.create in the realm (the workspace's, or `realm_id`). */
export async function createRun(hub: Hub, actor: Actor | null, input: NewRunInput): Promise<Started> {
  const workspace = input.workspace_id ? await loadWorkspace(hub, input.workspace_id) : undefined;
  if (workspace && input.realm_id && input.realm_id !== workspace.realm_id) {
    throw issue('realm_id', 'is not the realm of the workspace');
  }
  const realmId = workspace?.realm_id ?? input.realm_id;
  if (!realmId) throw issue('realm_id', 'is required when no workspace_id is given');
  const { realm, actor: user } = await requireRealm(hub, actor, realmId, 'runs.create');
  const notify = Array.isArray(input.notify_channels) ? (input.notify_channels as string[]) : [];
  if (notify.length) {
    const scope = { realmId: realm.id, orgId: realm.org_id, userId: user.user.id };
    const bad = await unusableChannelIds(hub.db, scope, notify);
    if (bad.length)
      throw issue('notify_channels', `not channels you may use in this realm: ${bad.join(', ')}`);
  }
  const started = await startRun(hub, realm, { user_id: user.user.id, actor: userActor(user.user) }, input);
  return started!;
}

/**
 * Starts a run in `realm` for an authorised starter (`runs/new`, a schedule, a trigger): resolves
 * the team or agent, the workspace and the reviewers, queues and dispatches. With an
 * `idempotency_key`, a repeat answers the first run. With a `claim`, null when another process
 * already took it.
 */
export async function startRun(
  hub: Hub,
  realm: { id: string; org_id: string },
  by: Starter,
  input: NewRunInput,
  claim?: RunClaim,
): Promise<Started | null> {
  let workspace: WorkspacesTable | undefined;
  if (input.workspace_id) {
    workspace = await loadWorkspace(hub, input.workspace_id);
    if (workspace.realm_id !== realm.id) throw issue('realm_id', 'is not the realm of the workspace');
  }
  const key = input.idempotency_key;
  const first = async () => {
    const run = key ? await runOfIdempotencyKey(hub.db, realm.id, key, hub.now()) : undefined;
    return run ? { run: runOut(run, false, hub.now()), created: false } : null;
  };
  const repeat = await first();
  if (repeat) return repeat;
  if (workspace) await requireReadyWorkspace(hub, workspace.id);
  const { policy, ...resolved } = await resolveTarget(hub, realm.org_id, input);
  const target = merged(resolved, { policy });
  if (workspace) await requireAllowedIn(hub, { ...workspace, realm_id: realm.id }, target);
  const reviewers = input.reviewers ? await checkReviewers(hub, realm, target, input.reviewers) : null;
  const inputs = input.inputs ?? {};
  const extra =
    input.concurrency_key !== undefined
      ? { key: input.concurrency_key, limit: input.concurrency_limit ?? 1 }
      : null;
  const seed: RunSeed = merged(resolved, {
    org_id: realm.org_id,
    realm_id: realm.id,
    workspace_id: workspace?.id ?? null,
    workspace_path: workspace?.path ?? null,
    run_name: input.run_name ?? null,
    inputs,
    priority: input.priority ?? DEFAULT_PRIORITY,
    groups: groupsOfRun(
      merged(resolved, { realm_id: realm.id, workspace_id: workspace?.id ?? null, inputs }),
      policy.concurrency,
      extra,
    ),
    queue_timeout_ms: input.queue_timeout_ms ?? null,
    timeout_ms: input.timeout_ms ?? policy.timeout_ms,
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
    created_by_user_id: by.user_id,
  });
  // The run is written and sent where it goes in one transaction; the reply shows it as created.
  const run: NewRun = {
    runId: hub.newId(),
    seed,
    actor: by.actor,
    idempotencyKey: key,
    plan: await planBeforeWriting(hub, seed),
  };
  let written: WrittenRun;
  try {
    written = claim ? await writeClaimed(hub, run, claim) : await writeNewRun(hub, run);
  } catch (err) {
    if (err === CLAIM_TAKEN) return null;
    if (!isUniqueViolation(err)) throw err;
    // A concurrent start with the same key committed first: its run is the answer.
    const raced = await first();
    if (raced) return raced;
    if (claim) return null;
    throw err;
  }
  return { run: runOut(written.row, false, hub.now()), created: true };
}

/** A run started for a schedule or trigger: its claim is written in the run's own transaction. */
function writeClaimed(hub: Hub, run: NewRun, claim: RunClaim): Promise<WrittenRun> {
  return inTx(hub, async (tx) => {
    const [written] = await writeRuns(tx, [run]);
    if (!(await claim(tx.db, run.runId))) throw CLAIM_TAKEN;
    return written!;
  });
}

/**
 * `runs/start_child`: a `team:` phase of a run this daemon holds starts a child run (same realm and
 * workspace, `call_depth` + 1, capped by `runs.max_call_depth`).
 */
export async function startChild(hub: Hub, actor: DaemonActor, input: StartChildBody) {
  const parent = await heldRun(hub.db, actor, input.parent_run_id, input.lease_epoch);
  if (parent.state !== 'running')
    throw conflict(`the parent run is ${parent.state}`, { state: parent.state });
  const maxDepth = await maxCallDepthOf(hub);
  const depth = parent.call_depth + 1;
  if (depth > maxDepth) {
    throw new AppError(
      'bad_request',
      `call depth ${depth} exceeds runs.max_call_depth (${maxDepth}): phase "${input.parent_phase}" cannot start another child run`,
      { call_depth: depth, max_call_depth: maxDepth },
    );
  }
  const tv = await teamVersionInOrg(hub.db, parent.org_id, input.team_version_id);
  if (!tv) throw notFound('team version');
  const parentTeam = parent.team_version_id
    ? await teamVersionInOrg(hub.db, parent.org_id, parent.team_version_id)
    : undefined;
  const step = `${parentTeam?.name ?? parent.run_name}/${input.parent_phase}`;
  // A daemon that retries (its reply was lost) gets the child it already has; a resumed parent runs
  // under a new lease epoch and so starts fresh children.
  const childKey = `${parent.run_id}#${parent.lease_epoch}#${input.parent_phase}#${input.iteration_key ?? ''}`;
  const already = await runOfChildKey(hub.db, childKey);
  if (already) return { run: runOut(already, true, hub.now()), created: false };
  const seed: RunSeed = {
    org_id: parent.org_id,
    realm_id: parent.realm_id,
    workspace_id: parent.workspace_id,
    workspace_path: parent.workspace_path,
    team_id: tv.team_id,
    team_version_id: tv.id,
    agent_id: null,
    execution_type: 'team',
    run_name:
      input.iteration_key === null
        ? `${parent.run_name}/${input.parent_phase}`
        : `${parent.run_name}/${input.parent_phase}[${input.iteration_key}]`,
    base_name: tv.name,
    inputs: input.inputs,
    reviewers: null,
    notify_channels: json(parent.notify_channels),
    external_id: null,
    context_labels: json(parent.context_labels),
    parent_run_id: parent.run_id,
    parent_phase: input.parent_phase,
    root_run_id: parent.root_run_id ?? parent.run_id,
    call_path: [...(json<string[]>(parent.call_path) ?? []), step],
    call_depth: depth,
    iteration_key: input.iteration_key,
    child_key: childKey,
    created_by_user_id: parent.created_by_user_id,
    // A child runs at its parent's priority, in the groups of its own team definition.
    priority: parent.priority,
    groups: groupsOfRun(
      { ...parent, team_id: tv.team_id, agent_id: null, inputs: input.inputs },
      policyOf(tv.definition).concurrency,
      null,
    ),
    queue_timeout_ms: null,
    timeout_ms: policyOf(tv.definition).timeout_ms,
  };
  let child: RunsTable;
  const run: NewRun = {
    runId: hub.newId(),
    seed,
    actor: daemonActor(actor.daemon.id),
    plan: await planBeforeWriting(hub, seed),
  };
  try {
    child = (await inTx(hub, (tx) => writeRuns(tx, [run])))[0]!.row;
  } catch (err) {
    const raced = isUniqueViolation(err) ? await runOfChildKey(hub.db, childKey) : undefined;
    if (!raced) throw err;
    return { run: runOut(raced, true, hub.now()), created: false };
  }
  return { run: runOut((await loadRun(hub.db, child.run_id))!, true, hub.now()), created: true };
}
