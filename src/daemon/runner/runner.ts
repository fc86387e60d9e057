import path from 'node:path';
import type { Kysely } from 'kysely';
import { isTerminal } from '../../shared/api/run-states.js';
import type { Logger } from '../../shared/logger.js';
import type {
  CancelRunBody,
  ChildEndedBody,
  ExecuteRunBody,
  ReviewMessagePayload,
  RunLogLine,
  RunPhase,
} from '../../shared/protocol.js';
import type { DaemonDB } from '../db/schema.js';
import { type HubApi, HubRefusedError, HubUnreachableError } from '../hub-api.js';
import { takeHugMessages } from '../hug/hug.repo.js';
import { HugInbox } from '../hug/inbox.js';
import { type AgentRun, type SpawnFn, startAgent } from './agent.js';

/**
 * The daemon's run executor. `runs/execute` starts a run here and answers at once; the run's phases
 * then go in order: an agent phase is a child process, a team phase one child run per element
 * through the hub. Every step is reported to the hub with the run's lease epoch; a `conflict`
 * means another daemon (or a force-terminate) took the run over, and this daemon stops at once
 * without reporting anything more (fencing).
 */

export interface RunnerOptions {
  db: Kysely<DaemonDB>;
  hub: HubApi;
  log: Logger;
  now: () => number;
  /** The daemon's home: per-run directories and output files live under `<home>/runs/`. */
  home: string;
  spawn?: SpawnFn;
  /** SIGTERM → SIGKILL grace when a run is cancelled (default 5 s). */
  killGraceMs?: number;
  /** Log lines are uploaded this often (default 200 ms). */
  logFlushMs?: number;
  /** A `foreach` phase runs at most this many children at once unless it sets max_parallel. */
  maxParallelChildren?: number;
}

interface ChildResult {
  state: string;
  outputs: Record<string, unknown>;
  error: unknown;
}

/** What a reviewer asked for when they requested changes: the agent gets it as SVC_REVIEW. */
interface ReviewRound {
  action: string;
  comment: string | null;
  round: number;
}

/** This daemon lost the run (a newer epoch exists): stop silently. */
class Fenced extends Error {}
class Closing extends Error {}

interface ActiveRun {
  id: string;
  epoch: number;
  leaseMs: number;
  cancelled: boolean;
  cancelReason: string | null;
  fenced: boolean;
  agents: Set<AgentRun>;
  logs: RunLogLine[];
  flushing: Promise<void>;
  timers: NodeJS.Timeout[];
  abort: AbortController;
  done: Promise<void>;
}

/** A history entry of `runs/get_by_id`, as far as the runner reads it. */
interface HistoryEntry {
  type: string;
  phase?: string | null;
  data?: Record<string, unknown> | null;
}

/** A `review: true` phase that waits for its verdict again after a restart of this daemon. */
interface ReviewWait {
  phase: string;
  reviewId: string;
  round: number;
  /** The outputs of the phases before it, and its own. */
  outputs: Record<string, unknown>;
  phaseOutputs: unknown;
  /** The verdict, when the hub's history already has it (it may have been read before the restart). */
  known: ReviewMessagePayload | null;
}

/** A review's summary: the phase's `summary` output when it is a string, else its outputs as JSON. */
const SUMMARY_MAX = 4096;
export function reviewSummary(outputs: unknown): string {
  const own =
    outputs !== null && typeof outputs === 'object' && !Array.isArray(outputs)
      ? (outputs as { summary?: unknown }).summary
      : undefined;
  const text = typeof own === 'string' ? own : JSON.stringify(outputs ?? {});
  const cut = text.length > SUMMARY_MAX ? `${text.slice(0, SUMMARY_MAX - 1)}…` : text;
  return cut.trim() === '' ? '(no summary)' : cut;
}

export class Runner {
  /** The daemon's local URL, given to agents as SVC_DAEMON_URL. */
  daemonUrl = '';
  private readonly runs = new Map<string, ActiveRun>();
  private readonly childWaiters = new Map<string, (r: ChildResult) => void>();
  private readonly childResults = new Map<string, ChildResult>();
  private closing = false;
  private recovering: Promise<number> | null = null;
  /** `hug/deliver` notifies it; a run waiting for a verdict on a `review: true` phase listens. */
  readonly hugInbox = new HugInbox();

  constructor(private readonly opts: RunnerOptions) {}

  /** Ids of the runs executing now. */
  active(): string[] {
    return [...this.runs.keys()];
  }

  /** The lease epoch of a run executing here, or null. */
  epochOf(runId: string): number | null {
    return this.runs.get(runId)?.epoch ?? null;
  }

  /** Resolves when the run (if active here) has finished its work. */
  async settled(runId: string): Promise<void> {
    await this.runs.get(runId)?.done;
  }

  /** Starts a run in the background. A repeated execute of the same epoch changes nothing. */
  async execute(body: ExecuteRunBody): Promise<{ accepted: boolean; already_running: boolean }> {
    if (this.closing) throw new Closing('the daemon is stopping');
    const existing = this.runs.get(body.run_id);
    if (existing && existing.epoch >= body.lease_epoch) return { accepted: true, already_running: true };
    if (existing) this.stopLocally(existing, true);
    const stored = {
      lease_epoch: body.lease_epoch,
      phase: body.start_phase,
      body: JSON.stringify(body),
      review_id: null,
      review_state: null,
    };
    await this.opts.db
      .insertInto('active_runs')
      .values({ run_id: body.run_id, started_at: this.opts.now(), ...stored })
      .onConflict((oc) => oc.column('run_id').doUpdateSet(stored))
      .execute();
    this.launch(body, null);
    return { accepted: true, already_running: false };
  }

  /** Starts driving a run here: lease renewal, log uploads, and its phases (or its review wait). */
  private launch(body: ExecuteRunBody, resume: ReviewWait | null): void {
    const run: ActiveRun = {
      id: body.run_id,
      epoch: body.lease_epoch,
      leaseMs: body.lease_ms,
      cancelled: false,
      cancelReason: null,
      fenced: false,
      agents: new Set(),
      logs: [],
      flushing: Promise.resolve(),
      timers: [],
      abort: new AbortController(),
      done: Promise.resolve(),
    };
    this.runs.set(run.id, run);
    const renew = setInterval(() => void this.renew(run), Math.max(50, Math.floor(run.leaseMs / 3)));
    renew.unref();
    const flush = setInterval(() => void this.flushLogs(run), this.opts.logFlushMs ?? 200);
    flush.unref();
    run.timers.push(renew, flush);
    run.done = this.drive(run, body, resume).finally(() => this.finish(run));
  }

  /** `runs/cancel`: stops the run's processes and reports `cancelled` (also for a run not running here). */
  async cancel(body: CancelRunBody): Promise<{ acknowledged: true; active: boolean }> {
    const run = this.runs.get(body.run_id);
    if (run) {
      run.cancelled = true;
      run.cancelReason = body.reason ?? null;
      this.stopLocally(run, false);
      return { acknowledged: true, active: true };
    }
    // Not running here (never started, or ended meanwhile): tell the hub; a stale epoch is refused there.
    try {
      await this.opts.hub.call('runs/report', {
        run_id: body.run_id,
        lease_epoch: body.lease_epoch,
        event: 'cancelled',
        ...(body.reason ? { error: body.reason } : {}),
      });
    } catch (err) {
      if (!(err instanceof HubRefusedError))
        this.opts.log.warn({ err, run_id: body.run_id }, 'cancel report failed');
    }
    return { acknowledged: true, active: false };
  }

  /** `runs/child_ended`: a child run of one of our runs ended. */
  childEnded(body: ChildEndedBody): { received: true } {
    const result: ChildResult = { state: body.state, outputs: body.outputs, error: body.error ?? null };
    const waiter = this.childWaiters.get(body.child_run_id);
    if (waiter) waiter(result);
    else this.childResults.set(body.child_run_id, result);
    return { received: true };
  }

  /**
   * Runs that were executing when this daemon stopped (their rows are still here) are reported
   * `failed` with a clear error, but for a run that waited for the review of a `review: true`
   * phase: it waits again (see reattach). Rows stay when the hub cannot be reached, for the next
   * attempt. Calls made while one is in progress share it.
   */
  recover(): Promise<number> {
    this.recovering ??= this.recoverOnce().finally(() => {
      this.recovering = null;
    });
    return this.recovering;
  }

  private async recoverOnce(): Promise<number> {
    const rows = await this.opts.db.selectFrom('active_runs').selectAll().execute();
    let reported = 0;
    for (const row of rows) {
      if (this.runs.has(row.run_id)) continue;
      const waiting = await this.reattach(row).catch((err) => {
        this.opts.log.warn({ err, run_id: row.run_id }, 'could not check a run that waited for a review');
        return 'unknown' as const;
      });
      if (waiting === 'reattached' || waiting === 'unknown') continue;
      try {
        await this.opts.hub.call('runs/report', {
          run_id: row.run_id,
          lease_epoch: row.lease_epoch,
          event: 'failed',
          ...(row.phase ? { phase: row.phase } : {}),
          error: 'the daemon restarted while the run was running; its agent process was stopped',
        });
        reported++;
      } catch (err) {
        if (!(err instanceof HubRefusedError)) {
          this.opts.log.warn({ err, run_id: row.run_id }, 'could not report an interrupted run');
          continue;
        }
      }
      await this.opts.db.deleteFrom('active_runs').where('run_id', '=', row.run_id).execute();
    }
    return reported;
  }

  /**
   * A run that waited for the review of a `review: true` phase when this daemon stopped waits again
   * (its agent had finished): when the hub still has it under the same lease epoch, it is launched
   * again at that review. 'failed' means: report it failed like any interrupted run.
   */
  private async reattach(row: {
    run_id: string;
    lease_epoch: number;
    body: string | null;
    review_id: string | null;
    review_state: string | null;
    phase: string | null;
  }): Promise<'reattached' | 'failed' | 'unknown'> {
    if (!row.body || !row.review_state || !row.phase || this.closing) return 'failed';
    let hubRun: { state: string; history?: HistoryEntry[] };
    try {
      hubRun = await this.opts.hub.call('runs/get_by_id', { run_id: row.run_id, with_history: true });
    } catch (err) {
      if (err instanceof HubRefusedError) return 'failed';
      return 'unknown';
    }
    // A stale epoch (the run went to another daemon meanwhile) is fenced by the first report.
    if (isTerminal(hubRun.state)) return 'failed';
    const state = JSON.parse(row.review_state) as {
      outputs: Record<string, unknown>;
      phase_outputs: unknown;
      round: number | null;
    };
    const history = hubRun.history ?? [];
    // Stopped between the request and noting its id: the phase's newest review is the one.
    const requested = history.filter((h) => h.type === 'review.requested' && h.data?.kind === 'phase');
    const last = requested.reverse().find((h) => h.data?.review_id && h.phase === row.phase);
    const reviewId = row.review_id ?? (last?.data?.review_id as string | undefined);
    if (!reviewId) return 'failed';
    const round = state.round ?? (last?.data?.round as number | undefined) ?? 1;
    const decided = history.find(
      (h) =>
        h.type === 'review.submitted' &&
        h.data?.review_id === reviewId &&
        (h.data?.action === 'approve' || h.data?.action === 'request_changes'),
    );
    const known: ReviewMessagePayload | null = decided
      ? {
          action: decided.data!.action as 'approve' | 'request_changes',
          comment: (decided.data!.comment as string | null) ?? null,
          actor: null,
          review_id: reviewId,
          round,
          run_continues: true,
        }
      : null;
    this.launch(JSON.parse(row.body) as ExecuteRunBody, {
      phase: row.phase,
      reviewId,
      round,
      outputs: state.outputs,
      phaseOutputs: state.phase_outputs,
      known,
    });
    return 'reattached';
  }

  /** Kills every agent at once and stops reporting; rows stay so the next start reports them. */
  async close(): Promise<void> {
    this.closing = true;
    const runs = [...this.runs.values()];
    for (const r of runs) {
      for (const t of r.timers) clearInterval(t);
      r.abort.abort();
      for (const a of r.agents) a.stop(0);
    }
    await Promise.all(runs.map((r) => r.done.catch(() => {})));
  }

  // ── internals ────────────────────────────────────────────────────────────────────────────────

  private stopLocally(run: ActiveRun, fenced: boolean): void {
    if (fenced) run.fenced = true;
    run.abort.abort();
    for (const a of run.agents) a.stop(fenced ? 0 : (this.opts.killGraceMs ?? 5_000));
  }

  private finish(run: ActiveRun): Promise<void> {
    for (const t of run.timers) clearInterval(t);
    if (this.runs.get(run.id) === run) this.runs.delete(run.id);
    if (this.closing) return Promise.resolve();
    return this.opts.db
      .deleteFrom('active_runs')
      .where('run_id', '=', run.id)
      .where('lease_epoch', '=', run.epoch)
      .execute()
      .then(() => undefined);
  }

  /** A hub call for this run; `conflict` means the run is no longer ours. Retries while unreachable. */
  private async call<T>(run: ActiveRun, op: string, body: Record<string, unknown>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      if (this.closing) throw new Closing('the daemon is stopping');
      if (run.fenced) throw new Fenced('fenced');
      try {
        return await this.opts.hub.call<T>(op, body);
      } catch (err) {
        if (err instanceof HubRefusedError && err.status === 409) {
          this.stopLocally(run, true);
          throw new Fenced(err.message);
        }
        if (!(err instanceof HubUnreachableError) || attempt >= 20) throw err;
        await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** attempt)));
      }
    }
  }

  private report(run: ActiveRun, event: string, extra: Record<string, unknown> = {}) {
    return this.call(run, 'runs/report', { run_id: run.id, lease_epoch: run.epoch, event, ...extra });
  }

  private async renew(run: ActiveRun): Promise<void> {
    if (this.closing || run.fenced) return;
    try {
      await this.opts.hub.call('runs/renew_lease', { runs: [{ run_id: run.id, lease_epoch: run.epoch }] });
    } catch (err) {
      if (err instanceof HubRefusedError && err.status === 409) this.stopLocally(run, true);
      else this.opts.log.warn({ err, run_id: run.id }, 'lease renewal failed');
    }
  }

  /** Uploads buffered lines; calls are chained so batches arrive in order. */
  private flushLogs(run: ActiveRun): Promise<void> {
    run.flushing = run.flushing.then(async () => {
      if (run.logs.length === 0 || run.fenced || this.closing) return;
      const lines = run.logs.splice(0, 1000);
      try {
        await this.opts.hub.call('runs/append_logs', { run_id: run.id, lease_epoch: run.epoch, lines });
      } catch (err) {
        if (err instanceof HubRefusedError && err.status === 409) this.stopLocally(run, true);
        else if (err instanceof HubUnreachableError && run.logs.length < 10_000) run.logs.unshift(...lines);
        else this.opts.log.warn({ err, run_id: run.id }, 'log upload failed');
      }
    });
    return run.flushing;
  }

  private async drive(run: ActiveRun, body: ExecuteRunBody, resume: ReviewWait | null): Promise<void> {
    const phases = body.team.phases;
    const start = resume?.phase ?? body.start_phase;
    const from = start
      ? Math.max(
          0,
          phases.findIndex((p) => p.name === start),
        )
      : 0;
    const outputs: Record<string, unknown> = { ...(resume?.outputs ?? body.outputs) };
    // After a restart, the first phase's agent has run already: wait for its verdict again.
    let waitAgain = resume;
    try {
      // A retried `started` of this epoch changes nothing on the hub (also for a run that waits).
      await this.report(run, 'started');
      for (const phase of phases.slice(from)) {
        if (run.cancelled || run.fenced) break;
        await this.opts.db
          .updateTable('active_runs')
          .set({ phase: phase.name })
          .where('run_id', '=', run.id)
          .execute();
        // A `review: true` phase asks for a review after it succeeds; request_changes runs it again
        // with the reviewer's words in SVC_REVIEW.
        let review: ReviewRound | null = null;
        let r: Awaited<ReturnType<Runner['runAgentPhase']>>;
        for (;;) {
          let verdict: ReviewMessagePayload | null;
          if (waitAgain) {
            r = { ok: true, outputs: waitAgain.phaseOutputs };
            this.systemLine(
              run,
              phase.name,
              `waiting again for review ${waitAgain.reviewId} after a restart`,
            );
            verdict = await this.awaitVerdict(
              run,
              phase,
              waitAgain.reviewId,
              waitAgain.round,
              waitAgain.known,
            );
            waitAgain = null;
          } else {
            r = phase.team_version_id
              ? await this.runTeamPhase(run, body, phase, outputs)
              : await this.runAgentPhase(run, body, phase, outputs, review);
            await this.flushLogs(run);
            if (run.cancelled || run.fenced || !r.ok || phase.review !== true || phase.team_version_id) break;
            verdict = await this.reviewPhase(run, phase, outputs, r.outputs);
          }
          if (verdict === null) break; // the wait was stopped (cancel, fencing, daemon stopping)
          await this.opts.db
            .updateTable('active_runs')
            .set({ review_id: null, review_state: null })
            .where('run_id', '=', run.id)
            .where('lease_epoch', '=', run.epoch)
            .execute();
          if (verdict.action === 'approve' && verdict.run_continues) break;
          if (verdict.action === 'request_changes' && verdict.run_continues) {
            review = { action: verdict.action, comment: verdict.comment, round: verdict.round };
            continue;
          }
          // Rejected, expired, or past the round limit: the hub has ended the run; report nothing more.
          run.fenced = true;
          break;
        }
        if (run.cancelled || run.fenced) break;
        if (!r.ok) {
          await this.report(run, 'failed', { phase: phase.name, error: `phase "${phase.name}": ${r.error}` });
          return;
        }
        outputs[phase.name] = r.outputs;
        await this.report(run, 'phase.completed', { phase: phase.name, outputs: r.outputs ?? {} });
      }
      await this.flushLogs(run);
      if (run.fenced) return;
      if (run.cancelled) {
        await this.report(run, 'cancelled', run.cancelReason ? { error: run.cancelReason } : {});
        return;
      }
      await this.report(run, 'succeeded');
    } catch (err) {
      if (err instanceof Fenced || err instanceof Closing) return;
      this.opts.log.error({ err, run_id: run.id }, 'run failed in the daemon');
      try {
        await this.report(run, 'failed', { error: `the daemon could not run it: ${(err as Error).message}` });
      } catch {}
    }
  }

  /**
   * After a `review: true` phase: asks the hub for a review (the run awaits input there) and waits
   * for its verdict, which the hub delivers through `hug/deliver`. Comments go to the run's logs.
   * Null when the wait was stopped (cancel, fencing, the daemon stopping).
   */
  private systemLine(run: ActiveRun, phase: string, text: string): void {
    run.logs.push({ stream: 'system', text, phase, at: this.opts.now() });
  }

  /**
   * After a `review: true` phase: asks the hub for a review (the run awaits input there), notes it in
   * `active_runs` (so a restart waits again rather than failing the run) and waits for the verdict.
   */
  private async reviewPhase(
    run: ActiveRun,
    phase: RunPhase,
    outputs: Record<string, unknown>,
    phaseOutputs: unknown,
  ): Promise<ReviewMessagePayload | null> {
    // Noted before the request, so a stop right after it still finds the review (by the history).
    const note = (set: { review_id: string | null; review_state: string }) =>
      this.opts.db
        .updateTable('active_runs')
        .set(set)
        .where('run_id', '=', run.id)
        .where('lease_epoch', '=', run.epoch)
        .execute();
    const state = (round: number | null) =>
      JSON.stringify({ outputs, phase_outputs: phaseOutputs ?? {}, round });
    await note({ review_id: null, review_state: state(null) });
    const review = await this.call<{ id: string; round: number }>(run, 'reviews/request', {
      run_id: run.id,
      lease_epoch: run.epoch,
      phase: phase.name,
      summary: reviewSummary(phaseOutputs),
      kind: 'phase',
    });
    await note({ review_id: review.id, review_state: state(review.round) });
    this.systemLine(
      run,
      phase.name,
      `waiting for a review of phase ${phase.name} (review ${review.id}, round ${review.round})`,
    );
    return this.awaitVerdict(run, phase, review.id, review.round, null);
  }

  /**
   * Waits for the verdict of a review, which the hub delivers through `hug/deliver`; comments go to
   * the run's logs. `known`: the verdict is known already (the hub's history), the queue is drained.
   * Null when the wait was stopped (cancel, fencing, the daemon stopping).
   */
  private async awaitVerdict(
    run: ActiveRun,
    phase: RunPhase,
    reviewId: string,
    round: number,
    known: ReviewMessagePayload | null,
  ): Promise<ReviewMessagePayload | null> {
    const line = (text: string) => this.systemLine(run, phase.name, text);
    const inbox = this.hugInbox;
    inbox.watch(reviewId);
    try {
      for (;;) {
        if (run.abort.signal.aborted || this.closing) return null;
        const entries = await this.opts.db.transaction().execute((trx) => takeHugMessages(trx, reviewId));
        for (const e of entries) {
          const p = e.payload as Partial<ReviewMessagePayload>;
          if (!e.fromHub) {
            // Another process of this machine queued it: only the hub decides a review.
            line(`ignored a review ${e.type} that did not come from the hub`);
            continue;
          }
          if (e.type === 'verdict') {
            line(
              `review ${p.action ?? '?'}${p.actor ? ` by ${p.actor}` : ''}${p.comment ? `: ${p.comment}` : ''}`,
            );
            return {
              action: p.action ?? 'reject',
              comment: p.comment ?? null,
              actor: p.actor ?? null,
              review_id: reviewId,
              round: p.round ?? round,
              run_continues: p.run_continues === true,
            };
          }
          line(`review comment${p.actor ? ` by ${p.actor}` : ''}: ${p.comment ?? ''}`);
        }
        if (known) {
          line(
            `review ${known.action} (read from the run's history)${known.comment ? `: ${known.comment}` : ''}`,
          );
          return known;
        }
        await inbox.next(reviewId, run.abort.signal, 5_000);
      }
    } finally {
      inbox.unwatch(reviewId);
    }
  }

  private runDir(body: ExecuteRunBody): string {
    return body.workspace_path ?? path.join(this.opts.home, 'runs', body.run_id);
  }

  private async runAgentPhase(
    run: ActiveRun,
    body: ExecuteRunBody,
    phase: RunPhase,
    outputs: Record<string, unknown>,
    review: ReviewRound | null,
  ): Promise<{ ok: true; outputs: unknown } | { ok: false; error: string }> {
    const manifest = phase.agent_id ? body.agents[phase.agent_id] : undefined;
    if (!manifest) return { ok: false, error: `no manifest for agent ${phase.agent ?? '?'}` };
    if (manifest.agent_type !== 'exec')
      return { ok: false, error: `agent type ${manifest.agent_type} is not supported` };
    const agent = startAgent({
      manifest,
      cwd: this.runDir(body),
      outputFile: path.join(
        this.opts.home,
        'runs',
        body.run_id,
        '.outputs',
        `${phase.name}-${run.epoch}.json`,
      ),
      env: {
        SVC_DAEMON_URL: this.daemonUrl,
        SVC_RUN_ID: body.run_id,
        SVC_PHASE: phase.name,
        SVC_INPUTS: JSON.stringify(body.inputs),
        SVC_PHASE_INPUTS: JSON.stringify(phase.inputs ?? {}),
        SVC_PHASE_OUTPUTS: JSON.stringify(outputs),
        ...(review ? { SVC_REVIEW: JSON.stringify(review) } : {}),
      },
      onLine: (line) => run.logs.push({ ...line, phase: phase.name }),
      ...(this.opts.spawn ? { spawn: this.opts.spawn } : {}),
    });
    run.agents.add(agent);
    try {
      if (run.cancelled || run.fenced) agent.stop(this.opts.killGraceMs ?? 5_000);
      await this.report(run, 'phase.started', {
        phase: phase.name,
        ...(agent.pid ? { pid: agent.pid } : {}),
      });
      return await agent.result;
    } catch (err) {
      agent.stop(0);
      await agent.result;
      throw err;
    } finally {
      run.agents.delete(agent);
    }
  }

  private async runTeamPhase(
    run: ActiveRun,
    body: ExecuteRunBody,
    phase: RunPhase,
    outputs: Record<string, unknown>,
  ): Promise<{ ok: true; outputs: unknown } | { ok: false; error: string }> {
    await this.report(run, 'phase.started', { phase: phase.name });
    // A child run's inputs: the parent's, then the phase's own (and, per element, item and index).
    const base = { ...body.inputs, ...(phase.inputs ?? {}) };
    if (phase.foreach === undefined) {
      const r = await this.runChild(run, phase, base, null);
      return r.state === 'succeeded'
        ? { ok: true, outputs: r.outputs }
        : { ok: false, error: `child run ${r.state}${r.error ? `: ${String(r.error)}` : ''}` };
    }
    const items = resolvePath(phase.foreach, { inputs: body.inputs, phases: outputs });
    if (!Array.isArray(items)) return { ok: false, error: `foreach: ${phase.foreach} is not a list` };
    const limit = phase.max_parallel ?? this.opts.maxParallelChildren ?? 8;
    const results: unknown[] = new Array(items.length);
    let failed: string | null = null;
    let next = 0;
    const worker = async () => {
      while (next < items.length && failed === null && !run.cancelled && !run.fenced) {
        const i = next++;
        const item = items[i];
        const key =
          item !== null && typeof item === 'object' && 'key' in item
            ? String((item as { key: unknown }).key)
            : String(i);
        const r = await this.runChild(run, phase, { ...base, item, index: i }, key);
        if (r.state !== 'succeeded')
          failed ??= `child run [${key}] ${r.state}${r.error ? `: ${String(r.error)}` : ''}`;
        results[i] = r.outputs;
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
    return failed === null ? { ok: true, outputs: results } : { ok: false, error: failed };
  }

  /** Starts a child run through the hub and waits for its end (`runs/child_ended`, or polling as a safety net). */
  private async runChild(
    run: ActiveRun,
    phase: RunPhase,
    inputs: Record<string, unknown>,
    iterationKey: string | null,
  ): Promise<ChildResult> {
    let child: { run_id: string };
    try {
      child = await this.call<{ run_id: string }>(run, 'runs/start_child', {
        parent_run_id: run.id,
        lease_epoch: run.epoch,
        parent_phase: phase.name,
        team_version_id: phase.team_version_id,
        inputs,
        iteration_key: iterationKey,
      });
    } catch (err) {
      if (err instanceof HubRefusedError) return { state: 'failed', outputs: {}, error: err.message };
      throw err;
    }
    const early = this.childResults.get(child.run_id);
    if (early) {
      this.childResults.delete(child.run_id);
      return early;
    }
    return new Promise<ChildResult>((resolve) => {
      const done = (r: ChildResult) => {
        clearInterval(poll);
        this.childWaiters.delete(child.run_id);
        run.abort.signal.removeEventListener('abort', onAbort);
        resolve(r);
      };
      const onAbort = () => done({ state: 'cancelled', outputs: {}, error: 'the parent run stopped' });
      this.childWaiters.set(child.run_id, done);
      run.abort.signal.addEventListener('abort', onAbort);
      if (run.abort.signal.aborted) onAbort();
      // Safety net for a lost child_ended command.
      const poll = setInterval(async () => {
        try {
          const r = await this.opts.hub.call<{
            state: string;
            outputs: Record<string, unknown>;
            error: unknown;
          }>('runs/get_by_id', { run_id: child.run_id });
          if (isTerminal(r.state)) done({ state: r.state, outputs: r.outputs ?? {}, error: r.error });
        } catch {}
      }, 5_000);
      poll.unref();
    });
  }
}

/** `inputs.files` → the value at that path in `root`, or undefined. */
export function resolvePath(expr: string, root: Record<string, unknown>): unknown {
  let cur: unknown = root;
  for (const part of expr.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}
