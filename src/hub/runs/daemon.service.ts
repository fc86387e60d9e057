import { isPostgres } from '../../db/index.js';
import type { RunsTable } from '../../db/schema.js';
import { isTerminal, type RunState } from '../../shared/api/run-states.js';
import { AppError, conflict } from '../../shared/errors.js';
import { groupCallsPer } from '../../shared/group-calls.js';
import type { AppendLogsBody, RenewLeaseBody, RunReportBody, RunReportEvent } from '../../shared/protocol.js';
import type { DaemonActor } from '../access/actor.js';
import { notifyRunLogged } from '../cluster/bus.js';
import type { Hub, Tx } from '../context.js';
import { inTx } from '../daemons/commands.js';
import { pastItsDeadline, terminateTimedOut } from './deadlines.service.js';
import { addHistory } from './history.repo.js';
import { mustTransition, RUN_CHANGED, RunWrite, transition } from './lifecycle.js';
import { appendLogLines } from './logs.repo.js';
import { heldRun, mustHold } from './read.service.js';
import { daemonActor, json, type PendingControl, systemActor } from './run.mapper.js';
import {
  clearControlRow,
  expiredLeases,
  loadRuns,
  type RunChanges,
  type RunGuard,
  renewLeaseRow,
  runOfControlTx,
} from './runs.repo.js';
import { leaseMsOf } from './settings.js';

/**
 * Daemon-side calls (realm token) and the lease sweeper. Each call carries the run's lease epoch:
 * the daemon holding the current epoch is the only one whose report, renewal or logs are accepted
 * (fencing).
 */

const moveFor: Partial<Record<RunReportBody['event'], RunState>> = {
  started: 'running',
  awaiting_input: 'awaiting_input',
  'input.received': 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** Events that name where they come from (the state table alone would allow more). */
const eventFrom: Partial<Record<RunReportBody['event'], RunState[]>> = {
  started: ['assigned'],
  'input.received': ['awaiting_input'],
  awaiting_input: ['running'],
};

/** What `runs/report` answers: the run as the report left it, and how many events it applied. */
interface Reported {
  run_id: string;
  state: RunState;
  lease_epoch: number;
  lease_expires_at: number;
  applied: number;
}

/** What one event did: the state it left the run in and the columns it changed. */
interface Applied {
  state: RunState;
  set: RunChanges;
}

/**
 * `runs/report`: an event and the ones in `next`, in order, in one transaction; each a state move or
 * a phase step with its history entry. Any event refused refuses them all.
 *
 * Reports that arrive while such a transaction runs (the runs of a busy hub) are applied together in
 * the next one, a group commit as for new runs (src/shared/group-calls.ts): one `begin` and one
 * `commit` for the group, and on PostgreSQL one statement for all of their history entries and
 * notices. A group that fails is applied again report by report, so a refused report fails alone.
 */
export function reportRun(hub: Hub, actor: DaemonActor, input: RunReportBody): Promise<Reported> {
  return reportTogether(hub.db, { hub, actor, input });
}

interface ReportCall {
  hub: Hub;
  actor: DaemonActor;
  input: RunReportBody;
}

/** At most this many reports are applied in one transaction. */
const MAX_REPORTS = 64;
const reportTogether = groupCallsPer(
  (_db: object, calls: ReportCall[]) => applyReports(calls[0]!.hub, calls),
  MAX_REPORTS,
);

/** Times a group is applied at most when its runs change meanwhile. */
const REPORT_ATTEMPTS = 3;

async function applyReports(hub: Hub, calls: readonly ReportCall[]): Promise<Reported[]> {
  const leaseMs = await leaseMsOf(hub);
  let ahead = heldAhead(hub, calls);
  for (let attempt = 1; ; attempt++) {
    try {
      return await applyReportsFrom(hub, calls, leaseMs, ahead);
    } catch (err) {
      // A run changed since it was read, or since this process wrote the row a report was applied
      // from (which may also have refused it for a state it is no longer in): applied again from a
      // read. A cancel acknowledged while the run ends, say, is then seen by the end.
      const conflicted = err instanceof AppError && err.code === 'conflict';
      const again = conflicted && (ahead.size > 0 || err.message === RUN_CHANGED);
      if (!again || attempt >= REPORT_ATTEMPTS) throw err;
      ahead = new Map();
    }
  }
}

/**
 * The runs of these reports as this process last wrote them (PostgreSQL): a report of one is applied
 * without a read of its row, a round trip fewer (claimed-items.ts `held`). Only the first report of a
 * run in the group, by the daemon and with the lease epoch of the row kept.
 */
function heldAhead(hub: Hub, calls: readonly ReportCall[]): Map<string, RunsTable> {
  const ahead = new Map<string, RunsTable>();
  if (!isPostgres(hub.db)) return ahead;
  for (const { actor, input } of calls) {
    if (ahead.has(input.run_id)) continue;
    const run = hub.claims.takeHeld(input.run_id);
    if (
      run &&
      run.realm_id === actor.daemon.realm_id &&
      run.daemon_id === actor.daemon.id &&
      run.lease_epoch === input.lease_epoch
    ) {
      ahead.set(input.run_id, run);
    }
  }
  return ahead;
}

async function applyReportsFrom(
  hub: Hub,
  calls: readonly ReportCall[],
  leaseMs: number,
  ahead: ReadonlyMap<string, RunsTable>,
): Promise<Reported[]> {
  return inTx(hub, async (tx) => {
    // The group's runs are read in one statement, but for those written ahead. A run reported twice
    // in one group is read again for its second report; a row an earlier report's hooks changed
    // fails its guarded write, and the group is then applied again report by report (see reportRun).
    const unread = [...new Set(calls.map((c) => c.input.run_id))].filter((id) => !ahead.has(id));
    const read =
      calls.length > 1 && unread.length > 0
        ? new Map((await loadRuns(tx.db, unread)).map((r) => [r.run_id, r]))
        : new Map<string, RunsTable>();
    const aheadLeft = new Map(ahead);
    const out: Reported[] = [];
    for (const { actor, input } of calls) {
      const written = aheadLeft.get(input.run_id);
      aheadLeft.delete(input.run_id);
      const row = written ?? read.get(input.run_id);
      read.delete(input.run_id);
      const run = row
        ? mustHold(row, actor, input.lease_epoch)
        : await heldRun(tx.db, actor, input.run_id, input.lease_epoch);
      out.push(await applyReport(tx, run, input, leaseMs, written !== undefined));
    }
    return out;
  });
}

async function applyReport(
  tx: Tx,
  held: RunsTable,
  input: RunReportBody,
  leaseMs: number,
  ahead: boolean,
): Promise<Reported> {
  let run = held;
  const events: RunReportEvent[] = [input, ...(input.next ?? [])];
  // The events' row changes are written as one (lifecycle.ts `RunWrite`).
  const row = new RunWrite(run);
  let last: Applied = { state: run.state, set: {} };
  for (const event of events) {
    last = await applyEvent(tx, run, event, leaseMs, row);
    run = { ...run, ...last.set, state: last.state };
  }
  await row.write(tx.db);
  // A report that wrote nothing checked nothing: one applied ahead is applied again from a read.
  if (ahead && !row.wrote) throw conflict(RUN_CHANGED);
  // The next report of a run its daemon still holds may be applied from the row as written.
  if (isPostgres(tx.db) && row.wrote && !isTerminal(last.state)) {
    const written = row.row();
    tx.afterCommit(async () => tx.hub.claims.held(written));
  }
  return {
    run_id: run.run_id,
    state: last.state,
    lease_epoch: run.lease_epoch,
    lease_expires_at: run.lease_expires_at,
    applied: events.length,
  };
}

async function applyEvent(
  tx: Tx,
  run: RunsTable,
  input: RunReportEvent,
  leaseMs: number,
  row: RunWrite,
): Promise<Applied> {
  const hub = tx.hub;
  const to = moveFor[input.event];
  if (to === undefined) return phaseStep(tx, run, input, leaseMs, row);
  // A retried `started` (the hub committed the first one but its reply was lost, say because the
  // process died) changes nothing: this daemon holds this epoch, so the run is already its.
  if (input.event === 'started' && (run.state === 'running' || run.state === 'awaiting_input')) {
    return { state: run.state, set: {} };
  }
  const from = eventFrom[input.event];
  if (from && !from.includes(run.state)) {
    throw conflict(`${input.event} is not allowed while the run is ${run.state}`, { state: run.state });
  }
  const now = hub.now();
  const who = daemonActor(run.daemon_id!);
  const pc = json<PendingControl>(run.pending_control);
  const set: RunChanges = {};
  if (to === 'running' || to === 'awaiting_input') set.lease_expires_at = now + leaseMs;
  if (isTerminal(to)) {
    set.pending_control = null;
    set.error =
      to === 'failed'
        ? (input.error ?? 'failed')
        : to === 'cancelled'
          ? (run.error ?? input.error ?? null)
          : null;
    if (input.outputs && typeof input.outputs === 'object' && !Array.isArray(input.outputs)) {
      const outputs = json<Record<string, unknown>>(run.outputs) ?? {};
      set.outputs = JSON.stringify({ ...outputs, ...(input.outputs as Record<string, unknown>) });
    }
    if (to === 'failed' && input.phase) set.current_phase = input.phase;
    if (pc?.type === 'cancel' && run.control_tx_id !== null) {
      // The daemon ended the run before its ack of the cancel command was processed: the end is
      // the acknowledgement (the ack that follows finds nothing to do).
      set.control_tx_id = null;
      await addHistory(tx.db, hub, run, run.state, {
        type: 'run.cancel_acknowledged',
        phase: run.current_phase,
        actor: who,
      });
    }
    await mustTransition(tx, run, to, {
      set,
      history: { type: 'run.ended', phase: input.phase ?? run.current_phase, error: set.error, actor: who },
      with: row,
    });
    return { state: to, set };
  }
  if (input.event === 'started') {
    const resumed = pc?.type === 'resume';
    if (resumed) set.pending_control = null;
    await mustTransition(tx, run, to, {
      set,
      history: {
        type: resumed ? 'run.resumed' : 'run.started',
        actor: resumed ? { type: 'user', user_id: pc.requested_by } : who,
      },
      with: row,
    });
    return { state: to, set };
  }
  await mustTransition(tx, run, to, {
    set,
    history: {
      type: input.event === 'awaiting_input' ? 'run.awaiting_input' : 'run.input_received',
      phase: input.phase ?? run.current_phase,
      actor: who,
    },
    with: row,
  });
  return { state: to, set };
}

/** phase.started / phase.completed: a step within a running run (no state change). */
async function phaseStep(
  tx: Tx,
  run: RunsTable,
  input: RunReportEvent,
  leaseMs: number,
  row: RunWrite,
): Promise<Applied> {
  if (run.state !== 'running') {
    throw conflict(`${input.event} is not allowed while the run is ${run.state}`, { state: run.state });
  }
  if (!input.phase) throw conflict(`${input.event} needs a phase`);
  const now = tx.hub.now();
  const set: RunChanges = { updated_at: now, lease_expires_at: now + leaseMs };
  if (input.event === 'phase.started') {
    set.current_phase = input.phase;
    set.current_pid = input.pid ?? null;
  } else {
    const outputs = json<Record<string, unknown>>(run.outputs) ?? {};
    outputs[input.phase] = input.outputs ?? {};
    set.outputs = JSON.stringify(outputs);
    set.current_pid = null;
  }
  row.add(run.state, set);
  await addHistory(tx.db, tx.hub, run, run.state, {
    type: input.event,
    from_phase: input.event === 'phase.started' ? run.current_phase : null,
    phase: input.phase,
    actor: daemonActor(run.daemon_id!),
  });
  return { state: run.state, set };
}

/**
 * `runs/renew_lease`: renews every lease this daemon still holds. Leases it no longer holds (older
 * epoch, ended run) are refused: the reply is then `conflict` with `details.refused`, the others
 * are renewed all the same.
 */
export async function renewLeases(hub: Hub, actor: DaemonActor, input: RenewLeaseBody) {
  const leaseMs = await leaseMsOf(hub);
  const until = hub.now() + leaseMs;
  const renewed: string[] = [];
  const refused: { run_id: string; reason: string }[] = [];
  for (const r of input.runs) {
    const held = {
      runId: r.run_id,
      realmId: actor.daemon.realm_id,
      daemonId: actor.daemon.id,
      epoch: r.lease_epoch,
    };
    if (await renewLeaseRow(hub.db, held, until)) renewed.push(r.run_id);
    else refused.push({ run_id: r.run_id, reason: 'not held by this daemon with this lease epoch' });
  }
  if (refused.length > 0) {
    throw conflict(`${refused.length} lease(s) are no longer held by this daemon`, { renewed, refused });
  }
  return { renewed, lease_expires_at: until };
}

/** `runs/append_logs`: appends a batch of lines, numbered after the run's last one. */
export async function appendLogs(hub: Hub, actor: DaemonActor, input: AppendLogsBody) {
  return hub.db.transaction().execute(async (trx) => {
    const run = await heldRun(trx, actor, input.run_id, input.lease_epoch);
    const lastSeq = await appendLogLines(trx, run.run_id, input.lines, hub.now());
    await notifyRunLogged(trx, [run]);
    return { appended: input.lines.length, last_seq: lastSeq };
  });
}

/** The daemon acked a cancel command: the control is no longer pending (history shows it). */
export async function onCommandAck(hub: Hub, txId: string, status: 'ok' | 'error'): Promise<void> {
  const run = await runOfControlTx(hub.db, txId);
  if (!run) return;
  await hub.db.transaction().execute(async (trx) => {
    if (!(await clearControlRow(trx, run.run_id, txId, hub.now()))) return;
    await addHistory(trx, hub, run, run.state, {
      type: 'run.cancel_acknowledged',
      phase: run.current_phase,
      actor: run.daemon_id ? daemonActor(run.daemon_id) : systemActor,
      error: status === 'error' ? 'the daemon refused the cancel command' : null,
    });
  });
}

/**
 * The lease sweeper's pass: a running run whose lease expired becomes `lost` (`state_lost_at`,
 * `run.lost`), or `terminated` with `run_timeout` when it is past its run deadline (its daemon
 * cannot confirm the deadline's cancel). Each move is conditional, so several hub processes may
 * sweep at once.
 */
export async function sweepLeases(hub: Hub): Promise<number> {
  const now = hub.now();
  let ended = 0;
  for (const run of await expiredLeases(hub.db, now, 500)) {
    const expired: RunGuard = (q) => q.where('lease_expires_at', '<', now);
    const moved = await inTx(hub, (tx) =>
      // Past its deadline, its daemon cannot confirm the cancel: terminated for the deadline.
      pastItsDeadline(run, now)
        ? terminateTimedOut(tx, run, expired)
        : transition(tx, run, 'lost', {
            set: { state_lost_at: now },
            guard: expired,
            history: { error: 'the lease expired: its daemon stopped renewing it', actor: systemActor },
          }),
    );
    if (moved) ended++;
  }
  return ended;
}
