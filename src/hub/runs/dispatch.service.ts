import type { Kysely } from 'kysely';
import { type DB, isPostgres } from '../../db/index.js';
import { preparedQuery } from '../../db/prepared.js';
import type { RunsTable } from '../../db/schema.js';
import type { WaitingFor } from '../../shared/api/runs.js';
import { AppError, forbidden, notFound } from '../../shared/errors.js';
import { groupCallsPer } from '../../shared/group-calls.js';
import { merged } from '../../shared/merged.js';
import type { ExecuteRunBody, RunAgentManifest, RunPhase } from '../../shared/protocol.js';
import type { DaemonActor } from '../access/actor.js';
import { definitionOfVersion } from '../catalog/catalog.repo.js';
import { daemonsThatMayRun, mayRunQuery, type RunNeeds } from '../catalog/installs.service.js';
import { keepCheck, writeThenNotify } from '../cluster/bus.js';
import type { Hub, Tx } from '../context.js';
import { inTx } from '../daemons/commands.js';
import { SEALED_SECRETS_FIELD, sealedRunSecrets } from '../secrets/resolve.js';
import { loadWorkspace } from '../workspaces/workspaces.repo.js';
import { admit } from './concurrency.js';
import { movedBy, transition } from './lifecycle.js';
import {
  type ClaimedItem,
  claimAheadCheck,
  claimQueueItems,
  loadQueueItem,
  newQueueItem,
  RUN_ITEM_KIND,
} from './queue.repo.js';
import { daemonActor, json } from './run.mapper.js';
import {
  daemonsWithWaitingRuns,
  HELD_STATES,
  loadRun,
  openOffersInRealm,
  queuedInRealm,
  runOfQueueItem,
  updateRunRow,
} from './runs.repo.js';
import { leaseMsOf } from './settings.js';

/**
 * Dispatch: a queued run goes to its workspace's daemon (`assigned`, `runs/execute`), or is
 * offered (`offer_job`) to the online daemons of its realm that have its team; the first
 * `queue/claim` wins it (`assigned`, `runs/execute`). Every assignment raises the lease epoch.
 */

/** Body of the `offer_job` command (spec: POST /v1/offer_job on the daemon). */
export interface OfferJobBody {
  queue_item_id: string;
  daemon_id: string;
  kind: string;
  payload: unknown;
  tx_id?: string;
}

/**
 * The phases a run executes: its team version's, or one phase for a single-agent run. Rows are
 * loaded within the run's organization only.
 */
export async function runDefinition(
  db: Kysely<DB>,
  run: Pick<RunsTable, 'org_id' | 'team_version_id' | 'agent_id'>,
): Promise<ExecuteRunBody['team']> {
  return definitionOfVersion(db, run.org_id, run);
}

/**
 * The self-contained `runs/execute` body (definition, manifests, inputs, outputs so far). Only
 * manifests of the run's organization go in, whatever ids a stored definition pins.
 */
export async function executeBody(
  db: Kysely<DB>,
  hub: Pick<Hub, 'cipher' | 'catalog'>,
  run: RunsTable,
  leaseMs: number,
): Promise<Omit<ExecuteRunBody, 'tx_id' | 'secrets'> & { [SEALED_SECRETS_FIELD]?: string }> {
  const team = await hub.catalog.definition(db, run.org_id, run);
  const agentIds = team.phases
    .map((p: RunPhase) => p.agent_id)
    .filter((x): x is string => typeof x === 'string');
  const agents: Record<string, RunAgentManifest> = await hub.catalog.manifests(db, run.org_id, agentIds);
  const sealed = await sealedRunSecrets(db, hub.cipher, run, agents);
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
    ...(sealed ? { [SEALED_SECRETS_FIELD]: sealed } : {}),
  };
}

/**
 * The run is now `daemonId`'s (`assigned`, a new lease epoch) and that daemon gets `runs/execute`
 * in the same transaction. Answers the new lease epoch, or null when the run moved meanwhile.
 */
async function assign(
  tx: Tx,
  run: RunsTable,
  daemonId: string,
  how: {
    leaseMs: number;
    workspacePath?: string;
    historyType: string;
    queueItemId?: string;
    set?: { waiting_for?: null };
  },
): Promise<number | null> {
  const now = tx.hub.now();
  const set = merged(how.set ?? {}, {
    daemon_id: daemonId,
    lease_epoch: run.lease_epoch + 1,
    lease_expires_at: now + how.leaseMs,
    ...(how.workspacePath !== undefined ? { workspace_path: how.workspacePath } : {}),
  });
  const moved = await transition(tx, run, 'assigned', {
    set,
    guard: (q) => (how.queueItemId === undefined ? q : q.where('queue_item_id', '=', how.queueItemId)),
    history: { type: how.historyType, actor: daemonActor(daemonId) },
  });
  if (!moved) return null;
  return sendExecute(tx, { ...run, ...set }, how.leaseMs);
}

/** A run just assigned: its daemon gets `runs/execute` in the same transaction. Answers its lease epoch. */
async function sendExecute(tx: Tx, run: RunsTable, leaseMs: number): Promise<number> {
  await tx.command(run.daemon_id!, 'runs/execute', await executeBody(tx.db, tx.hub, run, leaseMs));
  return run.lease_epoch;
}

/** Where a queued run can go, read before the transaction that sends it there (or early in it). */
export interface DispatchPlan {
  /** A run in a workspace: that workspace's daemon, and the lease it gets the run with. */
  workspace: { daemon_id: string; path: string; leaseMs: number } | null;
  /** Otherwise the daemons to offer it to (none: it stays queued). */
  daemons: string[];
}

export async function planDispatch(
  hub: Hub,
  run: RunNeeds & Pick<RunsTable, 'workspace_id'>,
): Promise<DispatchPlan | null> {
  if (run.workspace_id) {
    const leaseMs = await leaseMsOf(hub);
    const ws = await loadWorkspace(hub, run.workspace_id).catch(() => null);
    return ws ? { workspace: { daemon_id: ws.daemon_id, path: ws.path, leaseMs }, daemons: [] } : null;
  }
  return offerPlan(hub, (await offerTargetsQuery(hub.db, run)?.execute()) ?? []);
}

/**
 * The online daemons that may take a run, each with the number of runs it holds (for `offerPlan`),
 * in one statement; null when none may. Every new run to offer reads it: compiled once for each of
 * its three shapes (src/db/prepared.ts) instead of built at each run.
 */
export function offerTargetsQuery(db: Kysely<DB>, run: RunNeeds) {
  const { realm_id: realm, team_version_id: version, agent_id: agent, root_run_id: root } = run;
  if (version) return root ? targetsOfNested(db, realm, version, root) : targetsOfTeam(db, realm, version);
  return agent ? targetsOfAgent(db, realm, agent) : null;
}

const OFFER_TARGETS = { online: true, countHeldIn: HELD_STATES } as const;
const targetsOfTeam = preparedQuery(
  (db: Kysely<DB>, realmId: string, teamVersionId: string) =>
    mayRunQuery(db, { realm_id: realmId, team_version_id: teamVersionId, agent_id: null }, OFFER_TARGETS)!,
);
/** A child run may also go where its root run's team version is installed. */
const targetsOfNested = preparedQuery(
  (db: Kysely<DB>, realmId: string, teamVersionId: string, rootRunId: string) =>
    mayRunQuery(
      db,
      { realm_id: realmId, team_version_id: teamVersionId, agent_id: null, root_run_id: rootRunId },
      OFFER_TARGETS,
    )!,
);
const targetsOfAgent = preparedQuery(
  (db: Kysely<DB>, realmId: string, agentId: string) =>
    mayRunQuery(db, { realm_id: realmId, team_version_id: null, agent_id: agentId }, OFFER_TARGETS)!,
);

/**
 * The plan of a new run that is known before its transaction: its workspace's daemon. Undefined
 * for a run to offer, whose daemons are read in its own transaction with its first statements
 * (new-runs.ts), in the same round trip.
 */
export async function planBeforeWriting(
  hub: Hub,
  run: RunNeeds & Pick<RunsTable, 'workspace_id'>,
): Promise<DispatchPlan | null | undefined> {
  return run.workspace_id ? planDispatch(hub, run) : undefined;
}

/**
 * Where to offer a run that the `eligible` daemons may take (`offerTargetsQuery`'s rows): at most
 * `offerFanout` of them, those holding the fewest runs first (ties in random order, so that equal
 * daemons share the work): an offer goes to a few daemons, not to every one of a large realm. Null
 * when there is none.
 */
export function offerPlan(
  hub: Pick<Hub, 'config'>,
  eligible: readonly { daemon_id: string; held?: number | string | null }[],
): DispatchPlan | null {
  const held = new Map(eligible.map((d) => [d.daemon_id, Number(d.held ?? 0)]));
  const keyed = [...held].map(([id, load]) => ({ id, load, tie: Math.random() }));
  if (keyed.length > hub.config.offerFanout) keyed.sort((a, b) => a.load - b.load || a.tie - b.tie);
  const daemons = keyed.slice(0, hub.config.offerFanout).map((d) => d.id);
  return daemons.length ? { workspace: null, daemons } : null;
}

/** A queued run left waiting for a full concurrency group (concurrency.ts). */
export type Waiting = WaitingFor & { group: string };

/**
 * Sends a `queued` run where the plan says, in the caller's transaction: assigned to its
 * workspace's daemon, or offered. Nothing happens when the run moved meanwhile. A run in a
 * concurrency group first takes a slot (concurrency.ts): when one of its groups is full it stays
 * `queued`, its `waiting_for` names the group, and that group is the answer.
 */
export async function dispatchIn(tx: Tx, run: RunsTable, plan: DispatchPlan): Promise<Waiting | null> {
  if (run.concurrency !== null) {
    const waiting = await admit(tx, run);
    if (waiting) {
      const { group: _, ...shown } = waiting;
      const text = JSON.stringify(shown);
      if (text !== run.waiting_for) await updateRunRow(tx.db, run, { waiting_for: text });
      return waiting;
    }
  }
  const admitted = run.waiting_for !== null ? { waiting_for: null } : {};
  if (plan.workspace) {
    const { daemon_id, path, leaseMs } = plan.workspace;
    const moved = await assign(tx, run, daemon_id, {
      leaseMs,
      workspacePath: path,
      historyType: 'run.assigned',
      set: admitted,
    });
    if (moved !== null) tx.hub.runMetrics.observeWait(tx.hub.now() - run.created_at);
    return null;
  }
  const set = { queue_item_id: tx.hub.newId(), ...admitted };
  if (!(await transition(tx, run, 'offered', { set }))) return null;
  await offerItem(tx, { ...run, ...set }, plan.daemons);
  return null;
}

/**
 * Whether a new run is offered in the transaction that writes it, and so written `offered` at once
 * (new-runs.ts): it goes to no workspace and waits for no concurrency group, and daemons may take it.
 */
export function offeredAtOnce(run: {
  seed: { groups: readonly unknown[] };
  plan: DispatchPlan | null;
}): boolean {
  return (
    run.plan !== null && !run.plan.workspace && run.plan.daemons.length > 0 && run.seed.groups.length === 0
  );
}

/**
 * A run just moved to `offered`: its queue item, and its offers to `daemons`. `written`: the run's
 * whole row as written, when the caller has it: the offers carry it to the hub processes that pass
 * them on, so that their claims can be made ahead (`claimAhead`).
 */
export async function offerItem(
  tx: Tx,
  run: Pick<RunsTable, 'run_id' | 'team_id' | 'realm_id' | 'created_at' | 'queue_item_id'>,
  daemons: readonly string[],
  written?: RunsTable,
): Promise<void> {
  const itemId = run.queue_item_id!;
  const payload = { run_id: run.run_id, team_id: run.team_id };
  tx.hub.runMetrics.observeWait(tx.hub.now() - run.created_at);
  const item = { id: itemId, realm_id: run.realm_id, payload, created_at: tx.hub.now() };
  await writeThenNotify(tx.db, [newQueueItem(tx.db, item)], []);
  for (const d of daemons) await offer(tx, itemId, d, payload, written);
}

/**
 * Dispatches a `queued` run. Safe to call from several places at once (a daemon connecting, a
 * resume, re-dispatch): the conditional move lets one of them win. A run with no eligible daemon
 * stays `queued`; a run whose concurrency group is full too, and that group is the answer.
 */
export async function dispatchRun(hub: Hub, runId: string): Promise<Waiting | null> {
  const run = await loadRun(hub.db, runId);
  if (run?.state !== 'queued') return null;
  const plan = await planDispatch(hub, run);
  return plan ? inTx(hub, (tx) => dispatchIn(tx, run, plan)) : null;
}

function offer(
  tx: Tx,
  itemId: string,
  daemonId: string,
  payload: unknown,
  written?: RunsTable,
): Promise<string> {
  const body: OfferJobBody = { queue_item_id: itemId, daemon_id: daemonId, kind: RUN_ITEM_KIND, payload };
  return tx.command(daemonId, 'offer_job', body, written ? { offered: written } : {});
}

/** The reply to `queue/claim`: whether this daemon won the item, and the run it holds if so. */
type ClaimReply = { claimed: boolean; queue_item_id: string; run?: { run_id: string; lease_epoch: number } };

/**
 * A daemon claims an offered item (`queue/claim`): one conditional UPDATE decides the winner, and
 * in the same transaction the winner holds the run and gets its `runs/execute`. A retried claim
 * by the winner answers `claimed: true` again, with the run.
 */
export async function claimRun(
  hub: Hub,
  actor: DaemonActor,
  input: { queue_item_id: string; daemon_id: string },
): Promise<ClaimReply> {
  if (input.daemon_id !== actor.daemon.id) throw forbidden('a daemon may only claim for itself');
  const itemId = input.queue_item_id;
  return hub.claims.oneAtATime(itemId, () => decideClaim(hub, actor, itemId));
}

/** One claim, once the claims of the same item before it through this process are decided. */
async function decideClaim(hub: Hub, actor: DaemonActor, itemId: string): Promise<ClaimReply> {
  // Another daemon's claim of this offer already won here: lost, without a transaction.
  if (hub.claims.lostBy(itemId, actor.daemon)) return { claimed: false, queue_item_id: itemId };
  const leaseMs = await leaseMsOf(hub);
  const won = await claimTogether(hub.db, { hub, daemon: actor.daemon, itemId, leaseMs });
  if (won) hub.claims.won(itemId, actor.daemon);
  // Won here: the run is this daemon's at the epoch the claim gave it.
  if (won?.run) return { claimed: true, queue_item_id: itemId, run: won.run };
  if (!won) {
    // Lost, unknown, another realm's, or already ours: only now read the item to say which.
    const item = await loadQueueItem(hub.db, itemId);
    if (!item || item.realm_id !== actor.daemon.realm_id) throw notFound('queue item');
    // A withdrawn item (redispatch.service.ts) belongs to nobody, its old claimer included.
    if (item.status !== 'claimed' || item.claimed_by !== actor.daemon.id) {
      return { claimed: false, queue_item_id: itemId };
    }
  }
  const run = await runOfQueueItem(hub.db, itemId);
  const held =
    run?.daemon_id === actor.daemon.id ? { run_id: run.run_id, lease_epoch: run.lease_epoch } : null;
  return { claimed: true, queue_item_id: itemId, ...(held ? { run: held } : {}) };
}

/** One daemon's claim of an item, as `claimTogether` decides it. */
interface ClaimCall {
  hub: Hub;
  daemon: DaemonActor['daemon'];
  itemId: string;
  leaseMs: number;
}

/** A claim that won, with the run it handed over (null when the item's run had moved), or null. */
type Won = { run: { run_id: string; lease_epoch: number } | null } | null;

/** At most this many claims are decided in one transaction. */
const MAX_CLAIMS = 64;
/** A claim decided this long after the last one starts its group at once. */
const CLAIMS_IDLE_MS = 2;

/**
 * Claims that arrive together (a busy hub's, or the claims of many offers at once) are decided in one
 * transaction, a group commit as for reports (src/shared/group-calls.ts): each keeps its own
 * conditional update, so the group shares the `begin` and the `commit`, and on PostgreSQL the round
 * trips: its claims leave together, its hand-overs' writes with the commit. A group that fails is
 * decided again claim by claim, so a claim that cannot be handed over fails alone. A claim that comes
 * alone to a process that decided none for a few milliseconds is decided at once, before what else
 * the turn holds (a realm stream's step, another request's reply): it is on a run's way to its agent.
 */
const claimTogether = groupCallsPer(
  (_db: object, calls: ClaimCall[]) => decideClaims(calls[0]!.hub, calls),
  MAX_CLAIMS,
  { idleMs: CLAIMS_IDLE_MS },
);

/**
 * A group's claims, in the order of their items: two hub processes' groups then take the items' row
 * locks (PostgreSQL) in the same order and never wait for each other in a circle. The claims go
 * first (on PostgreSQL in one round trip), then the winners' hand-overs, whose writes leave with the
 * commit.
 */
async function decideClaims(hub: Hub, calls: readonly ClaimCall[]): Promise<Won[]> {
  if (calls.length === 1) {
    const ahead = await claimAhead(hub, calls[0]!);
    if (ahead !== undefined) return [ahead];
  }
  const item = (i: number) => calls[i]!.itemId;
  const order = [...calls.keys()].sort((a, b) => (item(a) < item(b) ? -1 : item(a) > item(b) ? 1 : 0));
  return inTx(hub, async (tx) => {
    const now = hub.now();
    const claims = order.map((i) => {
      const { itemId, daemon, leaseMs } = calls[i]!;
      return { itemId, daemon, lease_expires_at: now + leaseMs };
    });
    const claimed = await claimQueueItems(tx.db, claims, now);
    const won: Won[] = [];
    for (const [k, i] of order.entries()) {
      const c = claimed[k];
      if (!c) {
        won[i] = null;
        continue;
      }
      const { itemId, daemon, leaseMs } = calls[i]!;
      const epoch = await handOverRun(tx, c, itemId, daemon.id, leaseMs);
      won[i] = { run: epoch === null ? null : { run_id: c.run!.run_id, lease_epoch: epoch } };
    }
    return won;
  });
}

/** The conflict of a claim made ahead that did not hold (`claimAhead`). */
const AHEAD_MISSED = 'the claim made ahead found its item or run moved';

/**
 * A lone claim of a run this process offered (PostgreSQL): decided in one round trip with its
 * run's hand-over, which is built from the run as this process offered it (claimed-items.ts
 * `offered`) instead of from the claim's answer. The claim checks itself (queue.repo.ts
 * `claimAheadCheck`): one that lost, or found the run moved since, refuses its transaction, and is
 * then decided again as any claim (undefined). On SQLite a statement costs no round trip: nothing to
 * gain there.
 */
async function claimAhead(hub: Hub, call: ClaimCall): Promise<Won | undefined> {
  if (!isPostgres(hub.db)) return undefined;
  const { itemId, daemon, leaseMs } = call;
  const offered = hub.claims.takeOffered(itemId);
  if (offered?.state !== 'offered' || offered.realm_id !== daemon.realm_id) return undefined;
  try {
    return await inTx(hub, async (tx) => {
      const now = hub.now();
      const leaseExpiresAt = now + leaseMs;
      const epoch = offered.lease_epoch;
      const check = claimAheadCheck(
        tx.db,
        itemId,
        daemon.id,
        daemon.realm_id,
        leaseExpiresAt,
        now,
        epoch,
        AHEAD_MISSED,
      );
      await keepCheck(tx.db, check.compile());
      // The row as the check's statement leaves it (runs.repo.ts `assignOfferedRun`).
      const run: RunsTable = merged(offered, {
        state: 'assigned' as const,
        daemon_id: daemon.id,
        lease_epoch: epoch + 1,
        lease_expires_at: leaseExpiresAt,
        updated_at: now,
      });
      const held = await handOverRun(tx, { run, assigned: true }, itemId, daemon.id, leaseMs);
      return { run: { run_id: run.run_id, lease_epoch: held! } };
    });
  } catch (err) {
    if (err instanceof AppError && err.code === 'conflict' && err.message === AHEAD_MISSED) return undefined;
    throw err;
  }
}

/**
 * The run of a claimed item becomes its claimer's. Also used by re-dispatch for a claim whose
 * hand-over did not happen (an older hub version took the two steps in separate transactions).
 */
export async function handOver(tx: Tx, itemId: string, daemonId: string, leaseMs: number): Promise<boolean> {
  const claimed: ClaimedItem = { run: await runOfQueueItem(tx.db, itemId), assigned: false };
  return (await handOverRun(tx, claimed, itemId, daemonId, leaseMs)) !== null;
}

/**
 * `handOver` of the item's run, read (re-dispatch), or already assigned by the claim's statements
 * (queue.repo.ts `claimQueueItems`): answers the run's new lease epoch, or null.
 */
async function handOverRun(
  tx: Tx,
  { run, assigned }: ClaimedItem,
  itemId: string,
  daemonId: string,
  leaseMs: number,
): Promise<number | null> {
  if (assigned) {
    await movedBy(tx, 'offered', run!, { type: 'run.claimed', actor: daemonActor(daemonId) });
    // Its daemon's first report may be applied from the row as the claim wrote it (daemon.service.ts).
    if (isPostgres(tx.db)) tx.afterCommit(async () => tx.hub.claims.held(run!));
    return sendExecute(tx, run!, leaseMs);
  }
  if (run?.state !== 'offered') return null;
  return assign(tx, run, daemonId, { leaseMs, historyType: 'run.claimed', queueItemId: itemId });
}

/**
 * Daemons came online on this hub process (those that connected together, src/shared/group-calls.ts):
 * dispatch the queued runs of their realms once, and offer each the runs still waiting for a claim
 * that were offered before it was online (a later offer already saw it). An offer made in the very
 * millisecond it came online is left to the re-dispatch pass rather than sent twice. Realms with no
 * run waiting are not read further (one statement for the group, which most groups end with).
 */
export async function onDaemonsConnected(
  hub: Hub,
  daemons: readonly { daemonId: string; onlineAt: number }[],
): Promise<void> {
  const onlineAt = new Map(daemons.map((d) => [d.daemonId, d.onlineAt]));
  const byRealm = new Map<string, string[]>();
  for (const d of await daemonsWithWaitingRuns(hub.db, [...onlineAt.keys()])) {
    const ids = byRealm.get(d.realm_id) ?? [];
    ids.push(d.id);
    byRealm.set(d.realm_id, ids);
  }
  for (const [realmId, ids] of byRealm) {
    for (const r of await queuedInRealm(hub.db, realmId, 500)) await dispatchRun(hub, r.run_id);
    const waiting = await openOffersInRealm(hub.db, realmId, 500);
    // Each waiting run goes to those of the new daemons that may take it (one query per run).
    const offers: { run: (typeof waiting)[number]; daemonId: string }[] = [];
    for (const run of waiting) {
      const may = await daemonsThatMayRun(hub.db, run, { daemonIds: ids });
      for (const daemonId of new Set(may.map((d) => d.daemon_id))) {
        if (run.offered_at < onlineAt.get(daemonId)!) offers.push({ run, daemonId });
      }
    }
    if (offers.length === 0) continue;
    await inTx(hub, async (tx) => {
      for (const { run, daemonId } of offers)
        await offer(tx, run.queue_item_id!, daemonId, { run_id: run.run_id, team_id: run.team_id });
    });
  }
}

/**
 * A team version was installed on a daemon: dispatch the queued runs of its realm that may have
 * waited for it (also done by the re-dispatch pass, later).
 */
export async function onTeamInstalled(hub: Hub, realmId: string, teamVersionId: string): Promise<void> {
  for (const r of await queuedInRealm(hub.db, realmId, 500, teamVersionId)) await dispatchRun(hub, r.run_id);
}
